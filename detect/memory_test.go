package detect

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/focusgate/focusgate"
)

// manyParts is a chat body of one user message made of n one-word text
// parts: a few bytes of body each, a segment each for detection.
func manyParts(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"gpt-4.1","messages":[{"role":"user","content":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"text","text":"w%d"}`, i%10)
	}
	b.WriteString(`]}]}`)
	return b.Bytes()
}

// tally is a reserve that grants up to limit bytes and counts what it gave.
type tally struct{ granted, limit int64 }

func (r *tally) reserve(n int64) bool {
	if r.granted+n > r.limit {
		return false
	}
	r.granted += n
	return true
}

func TestReserveIsChargedWhatDetectionHolds(t *testing.T) {
	const parts = 100_000
	body := manyParts(parts)
	r := &tally{limit: 1 << 40}
	if _, err := (*Finder)(nil).Read(body, focusgate.APIChat, Options{All: true, Reserve: r.reserve}); err != nil {
		t.Fatal(err)
	}
	// A segment per part, and the arrays the list outgrew on the way.
	if least := parts * segmentSize; r.granted < least {
		t.Errorf("charged %d bytes for %d parts, want at least %d (one segment each)", r.granted, parts, least)
	}
	if most := 3 * parts * segmentSize; r.granted > most {
		t.Errorf("charged %d bytes for %d parts, want at most %d: growing the list by doubling leaves one array behind", r.granted, parts, most)
	}
}

func TestRefusedReserveStopsDetection(t *testing.T) {
	body := manyParts(100_000)
	r := &tally{limit: int64(len(body))}
	_, err := (*Finder)(nil).Read(body, focusgate.APIChat, Options{All: true, Reserve: r.reserve})
	if !errors.Is(err, ErrOverBudget) {
		t.Fatalf("Read = %v, want ErrOverBudget", err)
	}
	if r.granted > r.limit {
		t.Errorf("granted %d of a limit of %d", r.granted, r.limit)
	}
}

// A reserve that admits everything changes nothing that is found, in any
// body the tests hold, and a page costs a few times its size, not dozens.
func TestReserveChangesNothingFound(t *testing.T) {
	paths, apis := corpus(t)
	for i, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := Find(body, apis[i], Options{All: true})
		r := &tally{limit: 1 << 40}
		got, gotErr := (*Finder)(nil).Read(body, apis[i], Options{All: true, Reserve: r.reserve})
		if !reflect.DeepEqual(got.Observations, want) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%s: with a reserve, %d observations, %v; without, %d, %v", p, len(got.Observations), gotErr, len(want), wantErr)
		}
		if len(want) > 0 && r.granted > 4*int64(len(body)) {
			t.Errorf("%s: charged %d bytes for a body of %d", p, r.granted, len(body))
		}
	}
}

// A body that inspection cannot hold is given up as soon as that shows: a
// text that would be peeled out of a wrapper is charged before it is
// searched, so a numbered read too large to search costs its decoding and
// one peel, not the search of every layer (issue 35: a 27 MB read ran for
// 15 s before it went out as busy).
func TestOverBudgetStopsBeforeTheSearch(t *testing.T) {
	body := repeatedRead(t, longPage(t), 200)
	r := &tally{limit: int64(len(body)) * 3 / 2} // its decoded text fits, the text peeled out of it does not
	var err error
	_, allocs := allocated(func() { _, err = (*Finder)(nil).Read(body, focusgate.APIChat, Options{All: true, Reserve: r.reserve}) })
	if !errors.Is(err, ErrOverBudget) {
		t.Fatalf("Read = %v, want ErrOverBudget", err)
	}
	if most := 5 * uint64(len(body)) / 2; allocs > most {
		t.Errorf("allocated %d bytes for a body of %d before giving up, want at most %d", allocs, len(body), most)
	}
}
