package detect

import (
	"bytes"
	"unicode/utf8"
)

// This file finds trees one JSON encoding deeper than the body's strings: an
// agent that puts JSON.stringify(result.content) of an MCP tool call into its
// tool message sends `[{"type":"text","text":"### Snapshot\n```yaml\n- ..."}]`
// as the message's content, a JSON text inside a JSON string. Such a tree is
// reported with Observation.Nested = 1 and its raw span in the body covers the
// tree escaped twice, so that the gateway can write the pruned tree back
// escaped twice and the content still decodes to JSON whose string decodes to
// the pruned tree.

// inner is a tree found in a JSON string inside a segment's text.
type inner struct {
	block Block  // offsets in text
	text  string // the decoded inner string
	lit   span   // the inner string's content in the segment's decoded text
	raw   span   // the tree, escaped once, in the segment's decoded text
}

// innerTrees returns the trees held by the JSON strings of text when text is a
// JSON array or object; nil when it is not.
func innerTrees(text string) []inner {
	b := []byte(text)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' && b[i] != '{' {
		return nil
	}
	var lits []literal
	end, err := collectStrings(b, i, 0, &lits)
	if err != nil || skipSpace(b, end) != len(b) {
		return nil
	}
	var found []inner
	for _, lit := range lits {
		raw := b[lit.start:lit.end]
		if lit.ids < MinIDLines && !hasIDCues(raw) {
			continue
		}
		s := unquote(raw)
		blocks := Blocks(s)
		if len(blocks) == 0 {
			continue
		}
		spans := make([]span, len(blocks))
		for k, bl := range blocks {
			spans[k] = span{bl.Start, bl.End}
		}
		for k, r := range rawSpans(raw, s, spans) {
			found = append(found, inner{
				block: blocks[k],
				text:  s,
				lit:   span{lit.start, lit.end},
				raw:   span{lit.start + r.start, lit.start + r.end},
			})
		}
	}
	return found
}

// collectStrings walks the JSON value at b[i] and collects the string values
// (not member names) that have lines enough to hold a tree.
func collectStrings(b []byte, i, depth int, out *[]literal) (int, error) {
	if i >= len(b) {
		return i, syntaxError(i, "missing value")
	}
	switch b[i] {
	case '"':
		lit, next, err := scanString(b, i)
		if err == nil && lit.newlines >= MinLines-1 {
			*out = append(*out, lit)
		}
		return next, err
	case '{':
		return eachMember(b, i, depth, func(_ []byte, v int) (int, error) {
			return collectStrings(b, v, depth+1, out)
		})
	case '[':
		return eachElement(b, i, depth, func(_, v int) (int, error) {
			return collectStrings(b, v, depth+1, out)
		})
	}
	return skipValue(b, i, depth)
}

// rawOffsets maps offsets of the decoded text of a string literal's content raw
// to offsets in raw, in one pass. The offsets must be sorted. Each escape and
// each invalid byte is measured by decoding it alone with unquote, so the
// mapping agrees with the decoded text by construction; an offset inside an
// escape maps to the escape's start.
func rawOffsets(raw []byte, offsets []int) []int {
	out := make([]int, len(offsets))
	k, d := 0, 0 // next offset to map; decoded length so far
	emit := func(i, width int, plain bool) {
		for ; k < len(offsets) && offsets[k] < d+width; k++ {
			out[k] = i
			if plain && offsets[k] > d {
				out[k] += offsets[k] - d
			}
		}
	}
	for i := 0; i < len(raw) && k < len(offsets); {
		if raw[i] != '\\' {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				j = len(raw) - i
			}
			if run := raw[i : i+j]; utf8.Valid(run) {
				emit(i, j, true)
				i, d = i+j, d+j
				continue
			}
			_, size := utf8.DecodeRune(raw[i:])
			w := size
			if r, _ := utf8.DecodeRune(raw[i:]); r == utf8.RuneError && size == 1 {
				w = len(unquote(raw[i : i+1]))
			}
			emit(i, w, false)
			i, d = i+size, d+w
			continue
		}
		size := 2
		if raw[i+1] == 'u' {
			size = 6
			if r := hex4(raw[i+2 : i+6]); 0xd800 <= r && r < 0xdc00 && i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if lo := hex4(raw[i+8 : i+12]); 0xdc00 <= lo && lo < 0xe000 {
					size = 12
				}
			}
		}
		w := len(unquote(raw[i : i+size]))
		emit(i, w, false)
		i, d = i+size, d+w
	}
	for ; k < len(offsets); k++ {
		out[k] = len(raw)
	}
	return out
}
