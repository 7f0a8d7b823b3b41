package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
)

const (
	requestFile = "../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json"
	treeFile    = "../../testdata/axtrees/bgym-pr301_web_amazon_macbook.txt"
)

func TestChatHasNothingToPrune(t *testing.T) {
	for _, stream := range []bool{false, true} {
		body := Chat(stream)
		if n := len(body); n < 1000 || n > 2048 {
			t.Errorf("Chat(%v) is %d bytes, want 1-2 KB", stream, n)
		}
		var req struct{ Stream bool }
		if err := json.Unmarshal(body, &req); err != nil || req.Stream != stream {
			t.Errorf("Chat(%v): stream = %v, err = %v", stream, req.Stream, err)
		}
		obs, err := detect.Find(body, focusgate.APIChat, detect.Options{All: true})
		if err != nil || len(obs) != 0 {
			t.Errorf("Chat(%v): detect found %d observations (err %v), want none", stream, len(obs), err)
		}
	}
}

func TestNoPageRequestsAreNewEachTimeAndHoldNoPage(t *testing.T) {
	notes, err := os.ReadFile("../../" + NotesFile)
	if err != nil {
		t.Fatal(err)
	}
	noPage := NoPage(string(notes))
	seen := map[string]bool{}
	for _, n := range []uint64{0, 1, 9, 10, 18446744073709551615} {
		body := noPage(n)
		if size := len(body); size < 15<<10 || size > 17<<10 {
			t.Errorf("request %d is %d bytes, want about 16 KB", n, size)
		}
		var req struct {
			Messages []struct{ Content string }
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 2 {
			t.Fatalf("request %d: %d messages, %v", n, len(req.Messages), err)
		}
		if want := fmt.Sprintf("Request %d. Summarise", n); !strings.HasPrefix(req.Messages[1].Content, want) ||
			!strings.HasSuffix(req.Messages[1].Content, string(notes)) {
			t.Errorf("request %d asks %.40q, want %q and then the notes", n, req.Messages[1].Content, want)
		}
		if seen[string(body)] {
			t.Errorf("request %d is the same as an earlier one", n)
		}
		seen[string(body)] = true
		obs, err := detect.Find(body, focusgate.APIChat, detect.Options{All: true})
		if err != nil || len(obs) != 0 {
			t.Errorf("request %d: detect found %d observations (err %v), want none", n, len(obs), err)
		}
	}
}

func TestNewTreeCutsTheObservationToTheBudget(t *testing.T) {
	orig, err := os.ReadFile(requestFile)
	if err != nil {
		t.Fatal(err)
	}
	origObs, err := onlyObservation(orig)
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{2000, 50000} {
		tree, err := NewTree(requestFile, treeFile, budget)
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if tree.Tokens > budget || tree.Tokens < budget*9/10 {
			t.Errorf("budget %d: tree has %d tokens, want at most the budget and close to it", budget, tree.Tokens)
		}
		got, err := onlyObservation(tree.Body)
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if len(got.Lines) != tree.Lines {
			t.Errorf("budget %d: Lines = %d, detect numbers %d", budget, tree.Lines, len(got.Lines))
		}
		// Everything around the observation is the real request, byte for byte.
		if !bytes.Equal(tree.Body[:got.RawStart], orig[:origObs.RawStart]) ||
			!bytes.Equal(tree.Body[got.RawEnd:], orig[origObs.RawEnd:]) {
			t.Errorf("budget %d: the request around the observation changed", budget)
		}
	}
}

func TestNewTreeRejectsABudgetBelowOneLine(t *testing.T) {
	if _, err := NewTree(requestFile, treeFile, 1); err == nil {
		t.Error("NewTree with a budget of 1 token succeeded")
	}
}

func TestKeep(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want [][2]int
	}{
		{1, [][2]int{{1, 1}}},
		{2, [][2]int{{1, 2}}},
		{10, [][2]int{{1, 3}}},
		{12, [][2]int{{1, 3}, {11, 12}}},
		{25, [][2]int{{1, 3}, {11, 13}, {21, 23}}},
	} {
		var got [][2]int
		for _, r := range Keep(tc.n) {
			got = append(got, [2]int{r.From, r.To})
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Keep(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestProseRequestsAreNewEachTimeAndHoldNoPage(t *testing.T) {
	prose := Prose()
	first := prose(1)
	if size := len(first); size < 15<<10 || size > 17<<10 {
		t.Errorf("a prose request is %d bytes, want about 16 KB", size)
	}
	var req struct{ Messages []struct{ Content string } }
	if err := json.Unmarshal(first, &req); err != nil || len(req.Messages) != 2 {
		t.Fatalf("%d messages, %v", len(req.Messages), err)
	}
	if text := req.Messages[1].Content; strings.Contains(text, "\n- ") || strings.ContainsAny(text, "[]|") {
		t.Error("the prose holds list items, brackets or a table")
	}
	if bytes.Equal(first, prose(2)) {
		t.Error("two prose requests are the same")
	}
	obs, err := detect.Find(first, focusgate.APIChat, detect.Options{All: true})
	if err != nil || len(obs) != 0 {
		t.Errorf("detect found %d observations (err %v), want none", len(obs), err)
	}
}

// Every step's page is the tree with the step's number in its first line:
// the same lines but one, a page text never seen whole.
func TestStepsChangeThePageInItsFirstLine(t *testing.T) {
	tree, err := NewTree(requestFile, treeFile, 2000)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := onlyObservation(tree.Body)
	if err != nil {
		t.Fatal(err)
	}
	steps := tree.Steps()
	for _, n := range []uint64{1, 2, 12345} {
		got, err := onlyObservation(steps(n))
		if err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
		want := strings.Replace(orig.Text, "'", fmt.Sprintf("'%d ", n), 1)
		if got.Text != want || len(got.Lines) != tree.Lines {
			t.Errorf("step %d: page starts %.80q with %d lines, want %.80q with %d", n, got.Text, len(got.Lines), want, tree.Lines)
		}
	}
}

// ModelLast moves the model after the conversation and keeps every other
// member's bytes and order; a renumbered request keeps the move.
func TestModelLast(t *testing.T) {
	for _, tt := range []struct{ name, body, want string }{
		{"first", `{"model":"gpt-4.1","messages":[],"temperature":0}`, `{"messages":[],"temperature":0,"model":"gpt-4.1"}`},
		{"spaced", "{\n  \"model\": \"gpt-4.1\",\n  \"messages\": []\n}", "{\n  \"messages\": []\n,\"model\": \"gpt-4.1\"}"},
		{"between", `{"stream":true,"model":"o3","messages":[{"role":"user","content":"model"}]}`, `{"stream":true,"messages":[{"role":"user","content":"model"}],"model":"o3"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ModelLast([]byte(tt.body))
			if err != nil || string(got) != tt.want {
				t.Fatalf("ModelLast = %s, %v; want %s", got, err, tt.want)
			}
			if !json.Valid(got) || detect.Model(got) != detect.Model([]byte(tt.body)) {
				t.Errorf("%s is not the same request with its model last", got)
			}
		})
	}
	for _, body := range []string{`{"messages":[]}`, `{"messages":[],"model":"gpt-4.1"}`, `[1]`} {
		if _, err := ModelLast([]byte(body)); err == nil {
			t.Errorf("ModelLast(%s) did not fail", body)
		}
	}
	bodies := Renumbered(must(ModelLast(Prose()(0))))
	if b := bodies(7); !json.Valid(b) || !bytes.Contains(b, []byte("Request 7.")) || !bytes.HasSuffix(b, []byte(`,"model":"gpt-4.1-2025-04-14"}`)) {
		t.Errorf("the seventh renumbered request is not the prose request with its model last: ...%s", b[len(b)-60:])
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
