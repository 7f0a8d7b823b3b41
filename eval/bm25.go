package eval

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// Okapi BM25 parameters, at the values most implementations default to.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// terms splits s into lowercased runs of letters and digits: "[a405]
// button 'Order Now'" gives a405, button, order, now.
func terms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// bm25Rank orders docs by their Okapi BM25 score against query, best first;
// docs that score the same stay in their original order. The inverse
// document frequency is Lucene's, ln(1 + (N-n+0.5)/(n+0.5)), which stays
// positive for terms found in most docs, so a match never lowers a score.
func bm25Rank(docs [][]string, query []string) []int {
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	n := float64(len(docs))
	df := map[string]int{}
	total := 0
	for _, d := range docs {
		total += len(d)
		seen := map[string]bool{}
		for _, t := range d {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	if total == 0 {
		return order
	}
	avgLen := float64(total) / n
	idf := map[string]float64{}
	for _, q := range query {
		f := float64(df[q])
		idf[q] = math.Log(1 + (n-f+0.5)/(f+0.5))
	}

	scores := make([]float64, len(docs))
	tf := map[string]int{}
	for i, d := range docs {
		clear(tf)
		for _, t := range d {
			if _, ok := idf[t]; ok {
				tf[t]++
			}
		}
		norm := bm25K1 * (1 - bm25B + bm25B*float64(len(d))/avgLen)
		for _, q := range query {
			if f := float64(tf[q]); f > 0 {
				scores[i] += idf[q] * f * (bm25K1 + 1) / (f + norm)
			}
		}
	}

	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return 0
	})
	return order
}
