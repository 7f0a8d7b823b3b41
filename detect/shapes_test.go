package detect

import (
	"reflect"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// The shape of the unit around a page, its text outside the page and its
// sections, is recalled with the page: a prompt sent again is not copied or
// scanned again, and what is found in it is what a read without memory
// finds. A part of the unit that changed, or another page, is a new shape.
func TestShapesAreRecalledWithTheirPages(t *testing.T) {
	tree := readFile(t, "testdata/formats/browsergym.txt")
	other := strings.ReplaceAll(tree, "link", "LINK")
	f := NewFinder(64 << 20)
	steps := []struct {
		name, goal, tree string
		recalled         bool
	}{
		{"first", "Open the catalog", tree, false},
		{"sent again", "Open the catalog", tree, true},
		{"another goal, as long", "Shut the catalog", tree, false},
		{"another page", "Shut the catalog", other, false},
		{"the first again", "Open the catalog", tree, true},
	}
	for _, s := range steps {
		body := genericAgentBody(t, s.goal, s.tree, "", "fill('12', 'x')")
		got, c, err := f.read(body, focusgate.APIChat, Options{})
		if err != nil || len(got.Observations) != 1 {
			t.Fatalf("%s: %d observations, %v", s.name, len(got.Observations), err)
		}
		want, err := Find(body, focusgate.APIChat, Options{})
		if err != nil {
			t.Fatal(err)
		}
		o := got.Observations[0]
		o.written, o.Known, want[0].Known = nil, nil, nil
		if !reflect.DeepEqual(o, want[0]) {
			t.Errorf("%s: found %+v\nwithout memory %+v", s.name, o, want[0])
		}
		if o.Goal != s.goal {
			t.Errorf("%s: goal %q, want %q", s.name, o.Goal, s.goal)
		}
		recalled := false
		for _, u := range c.units {
			recalled = recalled || u.ctx != nil && u.ctx.recalled
		}
		if recalled != s.recalled {
			t.Errorf("%s: the unit's shape recalled = %v, want %v", s.name, recalled, s.recalled)
		}
	}
}
