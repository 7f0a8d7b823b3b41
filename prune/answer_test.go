package prune

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// The four answers that older parsing read as a selection of one or two
// lines of a 1,446-line page.
var misreadAnswers = []struct{ name, answer string }{
	{"element id in prose", "The agent should click [a405] 'Order Now' to finish the order."},
	{"element ids in the tag", "<think>The order button and the price matter.</think><answer>['a252', 'a524']</answer>"},
	{"cut off inside the reasoning", "<think>The page lists the catalog. The relevant element is [a49] and then the"},
	{"negative ranges", "[(-5,-1), (-100,-50)]"},
}

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		name    string
		answer  string
		n       int
		want    []focusgate.Range
		flagged []int
		err     error
	}{
		// Where the ranges are.
		{"answer tag after reasoning", "<think>Line 3 is the search box; 99 is noise.</think>\n<answer>[(1,3), (20,25)]</answer>", 50, []focusgate.Range{{From: 1, To: 3}, {From: 20, To: 25}}, nil, nil},
		{"tag in capitals", "<ANSWER>[(2,4)]</ANSWER>", 50, []focusgate.Range{{From: 2, To: 4}}, nil, nil},
		{"several answer tags: their union", "<answer>[(1,1)]</answer> on second thought <answer>[(7,8)]</answer>", 50, []focusgate.Range{{From: 1, To: 1}, {From: 7, To: 8}}, nil, nil},
		{"a tag wins over a fence", "<answer>[(1,2)]</answer>\n```\n[(5,6)]\n```", 50, []focusgate.Range{{From: 1, To: 2}}, nil, nil},
		{"tag inside a fence", "```\n<answer>[(4,5)]</answer>\n```", 50, []focusgate.Range{{From: 4, To: 5}}, nil, nil},
		{"json fence of lists", "Here you go:\n```json\n[[1, 3], [5, 6]]\n```", 50, []focusgate.Range{{From: 1, To: 3}, {From: 5, To: 6}}, nil, nil},
		{"fence of tuples", "```\n[(10,12)]\n```", 50, []focusgate.Range{{From: 10, To: 12}}, nil, nil},
		{"several fences: their union", "First:\n```\n[(1,2)]\n```\nthen:\n```\n[(5,6)]\n```", 50, []focusgate.Range{{From: 1, To: 2}, {From: 5, To: 6}}, nil, nil},
		{"a fence of prose is passed over", "```text\nkeep lines 1 to 3\n```\n```\n[(7,7)]\n```", 50, []focusgate.Range{{From: 7, To: 7}}, nil, nil},
		{"bare list of tuples", "[(1,3), (20,25)]", 50, []focusgate.Range{{From: 1, To: 3}, {From: 20, To: 25}}, nil, nil},
		{"bare tuples without list", "(1,3), (20,25)", 50, []focusgate.Range{{From: 1, To: 3}, {From: 20, To: 25}}, nil, nil},
		{"bare dashed ranges and a line", "1-3, 7", 50, []focusgate.Range{{From: 1, To: 3}, {From: 7, To: 7}}, nil, nil},
		{"bare list after a stray closing tag", "[(1,3)]</answer>", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},

		// Reasoning is never the answer.
		{"reasoning before a bare list", "<think>keep 40-45</think>\n[(1,3)]", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"thinking tag", "<thinking>line 40</thinking><answer>[(2,2)]</answer>", 50, []focusgate.Range{{From: 2, To: 2}}, nil, nil},
		{"reasoning opened by the chat template", "Line 40 looks useful, and [(40,45)] too.</think>\n[(1,3)]", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"an answer, then reasoning cut off", "<answer>[(1,3)]</answer><think>and line 40", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"tags mentioned while reasoning", "<think>Attacks would go in <injection> and lines in <answer>.</think><answer>[(1,3)]</answer>", 10, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"reasoning only", "<think>Line 3 matters.</think>", 50, nil, nil, ErrBadAnswer},
		{"a list only inside unclosed reasoning", "<think>[(1,3)]", 50, nil, nil, ErrBadAnswer},

		// How ranges are written.
		{"list of lists", "[[1,3],[8,9]]", 50, []focusgate.Range{{From: 1, To: 3}, {From: 8, To: 9}}, nil, nil},
		{"list of single lines", "[1, 5, 9]", 50, []focusgate.Range{{From: 1, To: 1}, {From: 5, To: 5}, {From: 9, To: 9}}, nil, nil},
		{"adjacent lines merge", "[1, 2, 3, 5]", 50, []focusgate.Range{{From: 1, To: 3}, {From: 5, To: 5}}, nil, nil},
		{"quoted dashed ranges", `<answer>["1-3", "10-12", "15"]</answer>`, 50, []focusgate.Range{{From: 1, To: 3}, {From: 10, To: 12}, {From: 15, To: 15}}, nil, nil},
		{"en dash and double dot", "<answer>3–5, 9..11</answer>", 50, []focusgate.Range{{From: 3, To: 5}, {From: 9, To: 11}}, nil, nil},
		{"spaced dash", "<answer>3 - 5</answer>", 50, []focusgate.Range{{From: 3, To: 5}}, nil, nil},
		{"words", "<answer>lines 3 to 5 and 8</answer>", 50, []focusgate.Range{{From: 3, To: 5}, {From: 8, To: 8}}, nil, nil},
		{"mixed forms", `<answer>[(1,2), 4, "6-7", [9, 10]]</answer>`, 50, []focusgate.Range{{From: 1, To: 2}, {From: 4, To: 4}, {From: 6, To: 7}, {From: 9, To: 10}}, nil, nil},
		{"json object in the tag", `<answer>{"ranges": [[3, 4], [6, 6]]}</answer>`, 50, []focusgate.Range{{From: 3, To: 4}, {From: 6, To: 6}}, nil, nil},
		{"markdown bullets are single lines", "- 5\n- 7", 50, []focusgate.Range{{From: 5, To: 5}, {From: 7, To: 7}}, nil, nil},
		{"reversed", "[(9,5)]", 50, []focusgate.Range{{From: 5, To: 9}}, nil, nil},
		{"clipped at the end", "[(45,80)]", 50, []focusgate.Range{{From: 45, To: 50}}, nil, nil},
		{"line zero clipped", "[(0,3)]", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"wholly out of range dropped", "[(60,80), (2,2)]", 50, []focusgate.Range{{From: 2, To: 2}}, nil, nil},
		{"overlapping merged", "[(1,10), (5,20), (21,22), (30,31)]", 50, []focusgate.Range{{From: 1, To: 22}, {From: 30, To: 31}}, nil, nil},
		{"unsorted", "[(30,31), (1,2)]", 50, []focusgate.Range{{From: 1, To: 2}, {From: 30, To: 31}}, nil, nil},
		{"huge number", "[(1, 99999999999999999999999999)]", 50, []focusgate.Range{{From: 1, To: 50}}, nil, nil},
		{"deeply nested", strings.Repeat("(", 40) + "1,2" + strings.Repeat(")", 40), 50, []focusgate.Range{{From: 1, To: 2}}, nil, nil},

		// A token with letters is never a line number.
		{"element ids beside ranges", "<answer>[(12,14), 'a405', ea12, [a7]]</answer>", 50, []focusgate.Range{{From: 12, To: 14}}, nil, nil},
		{"ordinals and units", "<answer>2nd, 3px, 4</answer>", 50, []focusgate.Range{{From: 4, To: 4}}, nil, nil},
		{"an id alone in the tag", "<answer>[a405]</answer>", 1446, nil, nil, ErrBadAnswer},
		{"ids in a fence", "```\n['a12', 'a13']\n```", 50, nil, nil, ErrBadAnswer},

		// Negative numbers make their range invalid.
		{"a negative range beside a good one", "[(1,3), (-5,-1)]", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"one negative end", "<answer>[(-2, 4)]</answer>", 50, nil, nil, ErrBadAnswer},
		{"a negative line in a list", "<answer>[4, -7]</answer>", 50, []focusgate.Range{{From: 4, To: 4}}, nil, nil},
		{"a dash after a comma is a minus", "<answer>1-3, -7</answer>", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"unicode minus", "<answer>[(−5, 2)]</answer>", 50, nil, nil, ErrBadAnswer},
		{"whole decimals", "<answer>[(2.0, 4.00)]</answer>", 50, []focusgate.Range{{From: 2, To: 4}}, nil, nil},
		{"a fraction is no line", "<answer>[(1.5,2)]</answer>", 50, nil, nil, ErrBadAnswer},
		{"a fraction beside a good range", "<answer>[(1,3), (7.5,9)]</answer>", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"a full stop after a range", "<answer>1-3. 7..9.</answer>", 50, []focusgate.Range{{From: 1, To: 3}, {From: 7, To: 9}}, nil, nil},

		// A list cut off mid-way keeps its complete ranges.
		{"cut after a comma", "<answer>[(1,3), (20,25), (30,", 50, []focusgate.Range{{From: 1, To: 3}, {From: 20, To: 25}}, nil, nil},
		{"cut inside a tuple", "<answer>[(1,3), (20,25", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"cut inside a dashed range", "<answer>1-3, 7-1", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"cut after a line number", "<answer>[1, 5, 9", 50, []focusgate.Range{{From: 1, To: 1}, {From: 5, To: 5}}, nil, nil},
		{"cut after a range operator", "<answer>1-3, 7-", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"unclosed tag, complete list", "<answer>[(2,4), (8,9)]", 50, []focusgate.Range{{From: 2, To: 4}, {From: 8, To: 9}}, nil, nil},
		{"unclosed fence", "```python\n[(10,12), (14,1", 50, []focusgate.Range{{From: 10, To: 12}}, nil, nil},
		{"tuple never closed in a closed tag", "<answer>[(1,3), (20,</answer>", 50, []focusgate.Range{{From: 1, To: 3}}, nil, nil},

		// The defender prompt's report of attack lines.
		{"injection reported", "<answer>[(1,3)]</answer>\n<injection>[(5,6)]</injection>", 10, []focusgate.Range{{From: 1, To: 3}}, []int{5, 6}, nil},
		{"injection before answer", "<injection>[(2,2)]</injection><answer>[(1,9)]</answer>", 10, []focusgate.Range{{From: 1, To: 9}}, []int{2}, nil},
		{"several injection tags", "<answer>[(1,9)]</answer><injection>[2]</injection><injection>[(7,8)]</injection>", 10, []focusgate.Range{{From: 1, To: 9}}, []int{2, 7, 8}, nil},
		{"no injection", "<answer>[(1,3)]</answer><injection>[]</injection>", 10, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"only injection: keep the rest", "<answer>[]</answer><injection>[(5,6)]</injection>", 10, []focusgate.Range{{From: 1, To: 10}}, []int{5, 6}, nil},
		{"injection out of range", "<answer>[(1,3)]</answer><injection>[(40,41)]</injection>", 10, []focusgate.Range{{From: 1, To: 3}}, nil, nil},
		{"injection without an answer", "<injection>[(5,6)]</injection>", 10, nil, nil, ErrBadAnswer},

		// Nothing usable.
		{"empty", "", 50, nil, nil, ErrBadAnswer},
		{"blank", "  \n", 50, nil, nil, ErrBadAnswer},
		{"empty tag", "<answer></answer>", 50, nil, nil, ErrBadAnswer},
		{"empty list in tag", "<think>nothing matters</think><answer>[]</answer>", 50, nil, nil, ErrBadAnswer},
		{"bare empty list", "[]", 50, nil, nil, ErrBadAnswer},
		{"prose with a number", "I cannot help with that (error 42).", 50, nil, nil, ErrBadAnswer},
		{"a list inside prose", "Sure! Keep [(4,6), (8,8)] please.", 50, nil, nil, ErrBadAnswer},
		{"a json object without a tag", `{"ranges": [[3, 4]]}`, 50, nil, nil, ErrBadAnswer},
		{"everything out of range", "<answer>[(100,200)]</answer>", 50, nil, nil, ErrBadAnswer},
		{"tree of no lines", "[(1,2)]", 0, nil, nil, ErrBadAnswer},
	}
	for _, m := range misreadAnswers {
		tests = append(tests, struct {
			name    string
			answer  string
			n       int
			want    []focusgate.Range
			flagged []int
			err     error
		}{"misread before: " + m.name, m.answer, 1446, nil, nil, ErrBadAnswer})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnswer(tt.answer, tt.n)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("ParseAnswer() = %v, error %v; want error %v", got.Ranges, err, tt.err)
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

// An answer cut off at the output-token cap (finish_reason "length") may end
// in the middle of a number even where no tag or fence was left open.
func TestParseAnswerCutOffByTheTokenCap(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   []focusgate.Range
		err    error
	}{
		{"bare list ending in a number", "[(1,3), 7", []focusgate.Range{{From: 1, To: 3}}, nil},
		{"bare dashed range", "1-3, 12-4", []focusgate.Range{{From: 1, To: 3}}, nil},
		{"trailing space after the number", "1-3, 7 ", []focusgate.Range{{From: 1, To: 3}}, nil},
		{"bare list that closed", "[(1,3), (7,9)]", []focusgate.Range{{From: 1, To: 3}, {From: 7, To: 9}}, nil},
		{"closed tag, cut later", "<answer>[(1,3)]</answer><injection>[(5", []focusgate.Range{{From: 1, To: 3}}, nil},
		{"nothing complete", "[(1,", nil, ErrBadAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAnswer(tt.answer, 50, true)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("parseAnswer() error = %v, want %v", err, tt.err)
			}
			if !slices.Equal(got.Ranges, tt.want) {
				t.Errorf("Ranges = %v, want %v", got.Ranges, tt.want)
			}
		})
	}
}

// pathologicalAnswers are large answers built to make a parser quadratic;
// parsing each takes milliseconds (see BenchmarkParseAnswer).
var pathologicalAnswers = []struct {
	name, answer string
	want         []focusgate.Range
}{
	{"empty reasoning blocks, 1.6 MB", strings.Repeat("a<think></think>", 100_000), nil},
	{"empty reasoning blocks before an answer", strings.Repeat("a<think></think>", 100_000) + "<answer>[(1,2)]</answer>", []focusgate.Range{{From: 1, To: 2}}},
	{"unclosed tags", strings.Repeat("<answer><think><injection>", 50_000) + "</answer>", nil},
	{"stray closing reasoning tags", strings.Repeat("</think>", 100_000) + "[(3,4)]", []focusgate.Range{{From: 3, To: 4}}},
	{"a long bare list", strings.Repeat("(1,2), ", 100_000), []focusgate.Range{{From: 1, To: 2}}},
	{"deep brackets", strings.Repeat("[(", 100_000) + "5,6" + strings.Repeat(")]", 100_000), []focusgate.Range{{From: 5, To: 6}}},
	{"fences", strings.Repeat("```\n", 100_000), nil},
	{"dashes", "<answer>" + strings.Repeat("1-", 200_000) + "</answer>", []focusgate.Range{{From: 1, To: 1}}},
}

func TestParseAnswerPathological(t *testing.T) {
	for _, tt := range pathologicalAnswers {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnswer(tt.answer, 1446)
			if tt.want == nil && !errors.Is(err, ErrBadAnswer) {
				t.Errorf("ParseAnswer() = %v, %v; want ErrBadAnswer", got.Ranges, err)
			}
			if tt.want != nil && (err != nil || !slices.Equal(got.Ranges, tt.want)) {
				t.Errorf("ParseAnswer() = %v, %v; want %v", got.Ranges, err, tt.want)
			}
		})
	}
}

func BenchmarkParseAnswer(b *testing.B) {
	cases := append([]struct {
		name, answer string
		want         []focusgate.Range
	}{{"typical", "<think>The quantity field is on line 133 and the order button on 182.</think>\n<answer>[(61,61), (133,147), (161,171), (182,185)]</answer>", nil}},
		pathologicalAnswers...)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.answer)))
			b.ReportAllocs()
			for b.Loop() {
				ParseAnswer(c.answer, 1446)
			}
		})
	}
}

// numberTokens are the numbers written in s as numbers: runs of digits with
// no letter, digit or '_' either side. A line number ParseAnswer selects must
// be one of them (or the edge of the tree it was clipped to).
var numberToken = regexp.MustCompile(`(^|[^A-Za-z0-9_])([0-9]+)`)

func numberTokens(s string) (tokens map[int]bool, aboveN func(n int) bool) {
	tokens = map[int]bool{}
	big := false
	for _, m := range numberToken.FindAllStringSubmatchIndex(s, -1) {
		end := m[5]
		if end < len(s) && isASCIIWord(s[end]) {
			continue // "12a": a word, not a number
		}
		v, err := strconv.Atoi(s[m[4]:end])
		if err != nil || v > 1<<40 {
			big = true
			continue
		}
		tokens[v] = true
	}
	return tokens, func(n int) bool {
		if big {
			return true
		}
		for v := range tokens {
			if v > n {
				return true
			}
		}
		return false
	}
}

func isASCIIWord(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z' || c == '_'
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
		"<answer>[(12,14), 'a405', ea12]</answer>",
		"<answer>[(1,3), (20,25), (30,",
		"reasoning</think>[(1,3)]",
		"((([[[1,2]]])))",
		"garbage ] ) [ ( - – .. to",
		"",
	} {
		f.Add(s, "line 7 matters", 40)
	}
	for _, m := range misreadAnswers {
		f.Add(m.answer, "", 1446)
	}
	f.Fuzz(func(t *testing.T, answer, reasoning string, n int) {
		n %= 5000
		sel, err := ParseAnswer(answer, n)

		// Reasoning before an answer never changes what it says.
		reasoning = strings.ReplaceAll(reasoning, "<", "")
		withReasoning, err2 := ParseAnswer("<think>"+reasoning+"</think>"+answer, n)
		if (err == nil) != (err2 == nil) || !slices.Equal(sel.Ranges, withReasoning.Ranges) || !slices.Equal(sel.Flagged, withReasoning.Flagged) {
			t.Fatalf("a <think> block before the answer changed the result: %v (%v) became %v (%v)", sel, err, withReasoning, err2)
		}

		if err != nil {
			if !errors.Is(err, ErrBadAnswer) {
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

		// Every selected line number is a number token of the answer: the
		// ends of each range were written as numbers (or clipped to the
		// tree), never taken from an element id such as "a405".
		if len(sel.Flagged) > 0 && slices.Equal(sel.Ranges, []focusgate.Range{{From: 1, To: n}}) {
			return // flagged lines and an empty list: keep the rest
		}
		tokens, aboveN := numberTokens(answer)
		for _, r := range sel.Ranges {
			if !tokens[r.From] && !(r.From == 1 && tokens[0]) {
				t.Fatalf("range %v starts at %d, which is no number token of %q", r, r.From, answer)
			}
			if !tokens[r.To] && !(r.To == n && aboveN(n)) {
				t.Fatalf("range %v ends at %d, which is no number token of %q", r, r.To, answer)
			}
		}
	})
}
