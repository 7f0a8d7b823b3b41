package prune

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		name    string
		answer  string
		n       int
		want    []Range
		flagged []int
		err     error
	}{
		{"answer tag after reasoning", "<think>Line 3 is the search box; 99 is noise.</think>\n<answer>[(1,3), (20,25)]</answer>", 50, []Range{{1, 3}, {20, 25}}, nil, nil},
		{"tag in capitals", "<ANSWER>[(2,4)]</ANSWER>", 50, []Range{{2, 4}}, nil, nil},
		{"unclosed answer tag", "<answer>[(2,4), (8,9)]", 50, []Range{{2, 4}, {8, 9}}, nil, nil},
		{"last answer tag wins", "<answer>[(1,1)]</answer> on second thought <answer>[(7,8)]</answer>", 50, []Range{{7, 8}}, nil, nil},
		{"json fence of lists", "Here you go:\n```json\n[[1, 3], [5, 6]]\n```", 50, []Range{{1, 3}, {5, 6}}, nil, nil},
		{"fence of tuples", "```\n[(10,12)]\n```", 50, []Range{{10, 12}}, nil, nil},
		{"unclosed fence", "```python\n[(10,12)]", 50, []Range{{10, 12}}, nil, nil},
		{"bare list of tuples", "[(1,3), (20,25)]", 50, []Range{{1, 3}, {20, 25}}, nil, nil},
		{"bare tuples without list", "(1,3), (20,25)", 50, []Range{{1, 3}, {20, 25}}, nil, nil},
		{"bare dashed ranges and a line", "1-3, 7", 50, []Range{{1, 3}, {7, 7}}, nil, nil},
		{"list of lists", "[[1,3],[8,9]]", 50, []Range{{1, 3}, {8, 9}}, nil, nil},
		{"list of single lines", "[1, 5, 9]", 50, []Range{{1, 1}, {5, 5}, {9, 9}}, nil, nil},
		{"adjacent lines merge", "[1, 2, 3, 5]", 50, []Range{{1, 3}, {5, 5}}, nil, nil},
		{"quoted dashed ranges", `<answer>["1-3", "10-12", "15"]</answer>`, 50, []Range{{1, 3}, {10, 12}, {15, 15}}, nil, nil},
		{"en dash and double dot", "<answer>3–5, 9..11</answer>", 50, []Range{{3, 5}, {9, 11}}, nil, nil},
		{"words", "<answer>lines 3 to 5 and 8</answer>", 50, []Range{{3, 5}, {8, 8}}, nil, nil},
		{"mixed forms", `<answer>[(1,2), 4, "6-7", [9, 10]]</answer>`, 50, []Range{{1, 2}, {4, 4}, {6, 7}, {9, 10}}, nil, nil},
		{"json object", `{"ranges": [[3, 4], [6, 6]]}`, 50, []Range{{3, 4}, {6, 6}}, nil, nil},
		{"reversed", "[(9,5)]", 50, []Range{{5, 9}}, nil, nil},
		{"clipped at the end", "[(45,80)]", 50, []Range{{45, 50}}, nil, nil},
		{"line zero clipped", "[(0,3)]", 50, []Range{{1, 3}}, nil, nil},
		{"wholly out of range dropped", "[(60,80), (2,2)]", 50, []Range{{2, 2}}, nil, nil},
		{"overlapping merged", "[(1,10), (5,20), (21,22), (30,31)]", 50, []Range{{1, 22}, {30, 31}}, nil, nil},
		{"unsorted", "[(30,31), (1,2)]", 50, []Range{{1, 2}, {30, 31}}, nil, nil},
		{"huge number", "[(1, 99999999999999999999999999)]", 50, []Range{{1, 50}}, nil, nil},
		{"deeply nested", strings.Repeat("(", 40) + "1,2" + strings.Repeat(")", 40), 50, []Range{{1, 2}}, nil, nil},
		{"list inside prose", "Sure! Keep [(4,6), (8,8)] please.", 50, []Range{{4, 6}, {8, 8}}, nil, nil},

		{"injection reported", "<answer>[(1,3)]</answer>\n<injection>[(5,6)]</injection>", 10, []Range{{1, 3}}, []int{5, 6}, nil},
		{"injection before answer", "<injection>[(2,2)]</injection><answer>[(1,9)]</answer>", 10, []Range{{1, 9}}, []int{2}, nil},
		{"tags mentioned while reasoning", "<think>Attacks would go in <injection> and lines in <answer>.</think><answer>[(1,3)]</answer>", 10, []Range{{1, 3}}, nil, nil},
		{"no injection", "<answer>[(1,3)]</answer><injection>[]</injection>", 10, []Range{{1, 3}}, nil, nil},
		{"only injection: keep the rest", "<answer>[]</answer><injection>[(5,6)]</injection>", 10, []Range{{1, 10}}, []int{5, 6}, nil},
		{"injection out of range", "<answer>[(1,3)]</answer><injection>[(40,41)]</injection>", 10, []Range{{1, 3}}, nil, nil},

		{"blank", "  \n", 50, nil, nil, ErrEmptyAnswer},
		{"empty tag", "<answer></answer>", 50, nil, nil, ErrEmptyAnswer},
		{"empty list in tag", "<think>nothing matters</think><answer>[]</answer>", 50, nil, nil, ErrEmptyAnswer},
		{"bare empty list", "[]", 50, nil, nil, ErrEmptyAnswer},
		{"prose with a number", "I cannot help with that (error 42).", 50, nil, nil, ErrBadAnswer},
		{"reasoning only", "<think>Line 3 matters.</think>", 50, nil, nil, ErrBadAnswer},
		{"everything out of range", "<answer>[(100,200)]</answer>", 50, nil, nil, ErrBadAnswer},
		{"tree of no lines", "[(1,2)]", 0, nil, nil, ErrBadAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnswer(tt.answer, tt.n)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("ParseAnswer() error = %v, want %v", err, tt.err)
			}
			if !slices.Equal(got.Ranges, tt.want) {
				t.Errorf("Ranges = %v, want %v", got.Ranges, tt.want)
			}
			if !slices.Equal(got.Flagged, tt.flagged) {
				t.Errorf("Flagged = %v, want %v", got.Flagged, tt.flagged)
			}
		})
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		"<think>keep 3</think><answer>[(1,3), (20,25)]</answer>",
		"```json\n[[1, 3], [5, 6]]\n```",
		"[(1,3), (20,25)]",
		"(9,5), (0,2)",
		`["1-3", "10-12"]`,
		"1-3, 7, 99999999999999999999",
		"[1, 2, 3]",
		"<answer>[(1,10), (5,20)]</answer><injection>[(4,4)]</injection>",
		"<answer>lines 3 to 5</answer>",
		"((([[[1,2]]])))",
		"garbage ] ) [ ( - – .. to",
		"",
	} {
		f.Add(s, 40)
	}
	f.Fuzz(func(t *testing.T, answer string, n int) {
		n %= 5000
		sel, err := ParseAnswer(answer, n)
		if err != nil {
			if !errors.Is(err, ErrEmptyAnswer) && !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(sel.Ranges) == 0 {
			t.Fatal("no error and no ranges")
		}
		for i, r := range sel.Ranges {
			if r.From < 1 || r.To > n || r.From > r.To {
				t.Fatalf("range %v outside [1,%d] or reversed", r, n)
			}
			if i > 0 && r.From <= sel.Ranges[i-1].To {
				t.Fatalf("ranges %v and %v overlap or are unsorted", sel.Ranges[i-1], r)
			}
		}
		for i, l := range sel.Flagged {
			if l < 1 || l > n || (i > 0 && l <= sel.Flagged[i-1]) {
				t.Fatalf("flagged lines %v not sorted, unique and inside [1,%d]", sel.Flagged, n)
			}
		}
	})
}
