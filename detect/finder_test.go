package detect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// corpus is every request body the tests hold, recorded agents' included, in a
// stable order, with the API each was sent to.
func corpus(t *testing.T) (paths []string, apis []focusgate.API) {
	t.Helper()
	paths = requestFiles(t)
	agents, err := filepath.Glob("../testdata/agents/*/*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(agents)
	paths = append(paths, agents...)
	for _, p := range paths {
		api := apiOf(p)
		if strings.Contains(filepath.Base(p), "responses") {
			api = focusgate.APIResponses
		}
		apis = append(apis, api)
	}
	return paths, apis
}

func TestFinderFindsWhatFindFinds(t *testing.T) {
	paths, apis := corpus(t)
	f := NewFinder(64 << 20)
	for round := range 2 { // the second round finds every page in the memory
		for i, p := range paths {
			body, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, all := range []bool{false, true} {
				want, wantErr := Find(body, apis[i], Options{All: all})
				got, gotErr := f.Find(body, apis[i], Options{All: all})
				for k := range got {
					got[k].written = nil // the memory it writes back through, not what it found
				}
				if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) {
					t.Fatalf("round %d, %s, All=%v: Finder.Find differs from Find:\n got %d observations, %v\nwant %d, %v",
						round, p, all, len(got), gotErr, len(want), wantErr)
				}
			}
		}
	}
	if n := f.seen.m.Len(); n == 0 {
		t.Fatalf("the Finder remembered nothing of %d bodies", len(paths))
	}
}

func TestFinderOwnsWhatItRemembers(t *testing.T) {
	tree := readFile(t, "testdata/formats/browsergym.txt")
	a := genericAgentBody(t, "Open the catalog", tree, "", "")
	b := genericAgentBody(t, "Open the catalog", strings.ReplaceAll(tree, "link", "LINK"), "", "")
	if len(a) != len(b) {
		t.Fatalf("the two bodies must have the same length to share a buffer")
	}
	f := NewFinder(64 << 20)
	buf := bytes.Clone(a)
	first, err := f.Find(buf, focusgate.APIChat, Options{})
	if err != nil || len(first) != 1 {
		t.Fatalf("Find(a) = %d observations, %v", len(first), err)
	}
	text := strings.Clone(first[0].Text)
	copy(buf, b) // the gateway reads the next request into reused memory
	second, err := f.Find(buf, focusgate.APIChat, Options{})
	if err != nil || len(second) != 1 {
		t.Fatalf("Find(b) = %d observations, %v", len(second), err)
	}
	if !strings.Contains(second[0].Text, "LINK") {
		t.Errorf("the second body's page was answered from the first's memory")
	}
	if first[0].Text != text {
		t.Errorf("the first page's text changed with the buffer it was read from")
	}
	again, err := f.Find(a, focusgate.APIChat, Options{})
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Errorf("the first body found again differs: %v", err)
	}
}

func TestNilFinderIsFind(t *testing.T) {
	body := genericAgentBody(t, "Open the catalog", readFile(t, "testdata/formats/browsergym.txt"), "", "")
	var f *Finder
	got, err := f.Find(body, focusgate.APIChat, Options{})
	want, _ := Find(body, focusgate.APIChat, Options{})
	if err != nil || !reflect.DeepEqual(got, want) || len(got) != 1 {
		t.Errorf("nil Finder found %d observations (%v), Find %d", len(got), err, len(want))
	}
}

// A long string the Finder remembers is recognised by its bytes and not
// validated again; the rest of the body still is, and where the string sits
// still decides whether it is a page.
func TestRememberedStringsAreReadWhereTheySit(t *testing.T) {
	page := strings.TrimSpace(readFile(t, filepath.Join(sharedAXTrees, "bgym-pr301_web_amazon_macbook.txt")))
	f := NewFinder(64 << 20)
	escaped, err := json.Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	tool := func(role string, after string) []byte {
		return []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"Buy the MacBook"},{"role":"` + role + `","content":` + string(escaped) + `}` + after + `]}`)
	}
	body := tool("tool", "")
	first, err := f.Find(body, focusgate.APIChat, Options{})
	if err != nil || len(first) != 1 {
		t.Fatalf("Find = %d observations, %v", len(first), err)
	}
	if again, err := f.Find(body, focusgate.APIChat, Options{}); err != nil || !reflect.DeepEqual(again, first) {
		t.Errorf("found again: %d observations, %v", len(again), err)
	}
	if obs, err := f.Find(tool("assistant", ""), focusgate.APIChat, Options{}); err != nil || len(obs) != 0 {
		t.Errorf("the page in an assistant's turn: %d observations, %v; want none", len(obs), err)
	}
	if _, err := f.Find(tool("tool", `,{"role":"user","content":"\q"}`), focusgate.APIChat, Options{}); !errors.Is(err, ErrNotJSON) {
		t.Errorf("an invalid escape after the remembered page: %v, want ErrNotJSON", err)
	}
}

// A page the Finder remembers comes with the same Known in every request
// that sends it again, so that what pruning worked out about it once holds;
// another page, or the same page found anew, comes with a Known of its own.
func TestARememberedPageComesWithWhatIsKnownOfIt(t *testing.T) {
	paths, apis := corpus(t)
	body, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	f := NewFinder(64 << 20)
	first, err := f.Find(body, apis[0], Options{})
	if err != nil || len(first) == 0 {
		t.Fatalf("%s: %d observations, %v", paths[0], len(first), err)
	}
	again, _ := f.Find(bytes.Clone(body), apis[0], Options{})
	if first[0].Known == nil || again[0].Known != first[0].Known {
		t.Fatalf("the page sent again comes with Known %p, want the first request's %p (not nil)", again[0].Known, first[0].Known)
	}
	if anew, _ := NewFinder(64<<20).Find(body, apis[0], Options{}); anew[0].Known == first[0].Known {
		t.Fatal("another Finder gave the same Known")
	}
}

// A tree found through a Finder and written back again as the same pieces,
// in a later request, is copied from the bytes it was written as the first
// time: the same bytes Find's tree writes. Pieces made anew are written
// anew, equal to the old ones or not.
func TestFinderCopiesATreeWrittenBackAgain(t *testing.T) {
	body, err := os.ReadFile(genericAgentTemplate)
	if err != nil {
		t.Fatal(err)
	}
	newest := func(f *Finder, body []byte) Observation {
		t.Helper()
		obs, err := f.Find(body, focusgate.APIChat, Options{})
		if err != nil || len(obs) != 1 {
			t.Fatalf("Find = %d observations, %v; want 1", len(obs), err)
		}
		return obs[0]
	}
	write := func(o Observation, body []byte, pieces []focusgate.Piece) []byte {
		t.Helper()
		out := o.AppendPruned([]byte("before:"), body, pieces)
		if size := o.PrunedSize(pieces); size > len(out)-len("before:") {
			t.Fatalf("%d bytes written, %d foreseen", len(out)-len("before:"), size)
		}
		return out
	}
	n := len(newest(nil, body).Lines)
	stubs := make([]focusgate.Piece, n)
	for k := range stubs {
		stubs[k] = focusgate.Piece{Kind: focusgate.PieceKept, From: k, To: k + 1}
		if k%2 == 1 {
			stubs[k] = focusgate.Piece{Kind: focusgate.PieceStub, From: k, To: k + 1, Text: fmt.Sprintf("[%d] \"stub\"\t", k)}
		}
	}
	markers := []focusgate.Piece{{Kind: focusgate.PieceKept, From: 0, To: 1}, {Kind: focusgate.PieceMarker, From: 1, To: n, Text: "\t... pruned ..."}}
	wantStubs, wantMarkers := write(newest(nil, body), body, stubs), write(newest(nil, body), body, markers)

	f := NewFinder(64 << 20)
	for i, step := range []struct {
		pieces  []focusgate.Piece
		want    []byte
		copied  bool
		written int // trees the Finder holds as written back, after
	}{
		{stubs, wantStubs, false, 1},
		{stubs, wantStubs, true, 1},
		{slices.Clone(stubs), wantStubs, false, 2},
		{markers, wantMarkers, false, 3},
		{markers, wantMarkers, true, 3},
	} {
		again := slices.Clone(body) // each request comes in a buffer of its own
		o := newest(f, again)
		if step.copied {
			// A copy does not read the body: what is there now is not
			// what goes out.
			clear(again[o.RawStart:o.RawEnd])
		}
		if got := write(o, again, step.pieces); !bytes.Equal(got, step.want) {
			t.Fatalf("step %d: written back as %d bytes that differ from Find's %d", i, len(got), len(step.want))
		}
		if got := f.written.Len(); got != step.written {
			t.Errorf("step %d: the Finder holds %d trees written back, want %d", i, got, step.written)
		}
	}
}
