package eval

import (
	"slices"
	"strings"
	"testing"
)

func TestTerms(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"\t[a405] button 'Order Now', focused", []string{"a405", "button", "order", "now", "focused"}},
		{`Order 2 "iPad pro" {'Choose the colour': 'Space Grey'}`, []string{"order", "2", "ipad", "pro", "choose", "the", "colour", "space", "grey"}},
		{"Straße Ünïcode 東京 42", []string{"straße", "ünïcode", "東京", "42"}},
		{"--- '' ,,", nil},
	} {
		if got := terms(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBM25Rank(t *testing.T) {
	lines := func(s string) [][]string {
		var docs [][]string
		for l := range strings.Lines(s) {
			docs = append(docs, terms(l))
		}
		return docs
	}
	const catalog = `RootWebArea 'Catalog'
	[10] link 'Hardware'
	[11] link 'Software'
	[12] StaticText 'Browse the catalog'
	[20] link 'Standard Laptop'
	[21] link 'Apple iPad pro'
	[22] link 'Apple MacBook Pro'
	[23] button 'Order Now'`
	for _, tt := range []struct {
		name, tree, goal string
		first            int // index of the line that must rank first
	}{
		{"the line naming the goal's item", catalog, `Order 2 "iPad pro"`, 5},
		{"a rare term outweighs a common one", catalog, "apple browse", 3},
		{"more of the goal's terms win", catalog, "Open the Apple MacBook", 6},
		{"case and punctuation do not matter", catalog, "STANDARD-LAPTOP!", 4},
		{"a short line beats a long one with the same match", "RootWebArea 'x'\n\t[1] link 'Laptop bag, sleeve, charger, mouse, dock, stand'\n\t[2] link 'Laptop'", "laptop", 2},
		{"repeated terms saturate instead of winning outright", "RootWebArea 'x'\n\t[1] StaticText 'order order order order order'\n\t[2] button 'Order laptop'", "order laptop", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			order := bm25Rank(lines(tt.tree), terms(tt.goal))
			if order[0] != tt.first {
				t.Errorf("ranking %v, want line %d first", order, tt.first)
			}
		})
	}

	t.Run("no match keeps the original order", func(t *testing.T) {
		if got := bm25Rank(lines(catalog), terms("zebra")); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
			t.Errorf("ranking %v, want the lines in order", got)
		}
	})
	t.Run("empty documents", func(t *testing.T) {
		if got := bm25Rank([][]string{nil, nil}, terms("x")); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("ranking %v", got)
		}
	})
}
