package detect

import "strings"

// RawLines maps the lines of o.Text (split at '\n') onto raw, the bytes
// body[o.RawStart:o.RawEnd] of the body o was found in: lines[k] is line k
// as the client escaped it, and newline how it escaped the first line break
// ("\n", "\u000a", "\\n" for a tree escaped twice). A caller that writes
// a pruned tree back uses them to keep the lines it keeps exactly as they
// came, `\/` and `\u00e9` included, where the standard escaping of the
// same text would differ. It is false when raw does not decode to o.Text.
func (o Observation) RawLines(raw []byte) (lines []string, newline string, ok bool) {
	levels := make([][]byte, o.Nested+1)
	levels[0] = raw
	for i := range o.Nested + 1 {
		if lit, _, ok := stringContent(string(levels[i]), 0); !ok || lit.end != len(levels[i]) {
			return nil, "", false
		}
		decoded := unquote(levels[i])
		if i == o.Nested {
			if decoded != o.Text {
				return nil, "", false
			}
			break
		}
		levels[i+1] = []byte(decoded)
	}
	var offsets []int
	for at := 0; ; {
		e := strings.IndexByte(o.Text[at:], '\n')
		if e < 0 {
			offsets = append(offsets, at, len(o.Text))
			break
		}
		offsets = append(offsets, at, at+e)
		at += e + 1
	}
	for i := o.Nested; i >= 0; i-- {
		offsets = rawOffsets(levels[i], offsets)
	}
	lines = make([]string, len(offsets)/2)
	for k := range lines {
		lines[k] = string(raw[offsets[2*k]:offsets[2*k+1]])
	}
	if len(lines) > 1 {
		newline = string(raw[offsets[1]:offsets[2]])
	}
	return lines, newline, true
}
