package prune

import (
	"testing"

	"github.com/focusgate/focusgate"
)

// BenchmarkHotPath measures what a cache hit costs the gateway: rendering a
// cached selection of the 80k-token amazon tree and counting the result's
// tokens with a warm counter.
func BenchmarkHotPath(b *testing.B) {
	tree := readTree(b, "bgym-pr301_web_amazon_macbook.txt")
	sel := Selection{Ranges: []focusgate.Range{{From: 40, To: 120}, {From: 600, To: 700}, {From: 1200, To: 1210}}}
	for _, mode := range []focusgate.Mode{focusgate.ModeRemove, focusgate.ModeAncestors, focusgate.ModeStubs} {
		b.Run(string(mode), func(b *testing.B) {
			c := NewCounter(64 << 20)
			before := c.Count("gpt-4.1", tree.Text)
			out, err := Apply(tree, sel, mode)
			if err != nil {
				b.Fatal(err)
			}
			c.Count("gpt-4.1", out)
			b.ReportAllocs()
			for b.Loop() {
				out, _ := Apply(tree, sel, mode)
				if c.Count("gpt-4.1", out) >= before {
					b.Fatal("no reduction")
				}
			}
		})
	}
}

// BenchmarkCount compares a warm Counter with encoding the whole text, which
// is what the counter saves on every request after the first.
func BenchmarkCount(b *testing.B) {
	tree := readTree(b, "bgym-pr301_web_amazon_macbook.txt")
	b.Run("warm", func(b *testing.B) {
		c := NewCounter(64 << 20)
		c.Count("gpt-4.1", tree.Text)
		b.ReportAllocs()
		for b.Loop() {
			c.Count("gpt-4.1", tree.Text)
		}
	})
	b.Run("encode-whole-text", func(b *testing.B) {
		enc := loaded(b, o200k)
		b.ReportAllocs()
		for b.Loop() {
			enc.count(tree.Text)
		}
	})
	b.Run("tiktoken-go-whole-text", func(b *testing.B) {
		enc := encoding(b, o200k)
		b.ReportAllocs()
		for b.Loop() {
			enc.EncodeOrdinary(tree.Text)
		}
	})
}

// BenchmarkNumber measures numbering the tree for the retriever on a miss.
func BenchmarkNumber(b *testing.B) {
	tree := readTree(b, "bgym-pr301_web_amazon_macbook.txt")
	b.ReportAllocs()
	for b.Loop() {
		Number(tree)
	}
}
