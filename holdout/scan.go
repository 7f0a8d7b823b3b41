package holdout

import "strings"

// The keyers find what names a conversation without reading the rest of the
// body: a request of a tool loop holds every page the agent has seen, and an
// AgentLab prompt holds the page in its first user message, after the goal.
// These helpers find a member or an element by skipping the values before
// it, strings a run at a time, without decoding or validating them; gjson
// then reads the small values found.

// skipSpace returns the offset of the first byte at or after i that is not
// JSON white space.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset just past the string whose opening quote is
// s[i], or -1 when it does not end.
func skipString(s string, i int) int {
	for j := i + 1; ; {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		escapes := 0
		for p := q - 1; p > i && s[p] == '\\'; p-- {
			escapes++
		}
		if escapes%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// skipValue returns the offset just past the value that starts at s[i], or
// -1 when none ends there.
func skipValue(s string, i int) int {
	if i < 0 || i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				if i = skipString(s, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // a number, true, false or null
		end := i
		for end < len(s) && !strings.ContainsRune(",:]} \t\n\r", rune(s[end])) {
			end++
		}
		if end == i {
			return -1
		}
		return end
	}
}

// members returns where the values of the object s[i:]'s first members of
// the given names start, -1 for each it does not have. It stops reading as
// soon as it has found them all, so members after them are never read.
func members(s string, i int, names ...string) []int {
	at := make([]int, len(names))
	for k := range at {
		at[k] = -1
	}
	left := len(names)
	if i = skipSpace(s, i); i >= len(s) || s[i] != '{' {
		return at
	}
	i++
	for left > 0 {
		if i = skipSpace(s, i); i >= len(s) || s[i] != '"' {
			return at
		}
		end := skipString(s, i)
		if end < 0 {
			return at
		}
		key := s[i+1 : end-1]
		if i = skipSpace(s, end); i >= len(s) || s[i] != ':' {
			return at
		}
		v := skipSpace(s, i+1)
		for k, name := range names {
			if key == name && at[k] < 0 {
				at[k] = v
				left--
			}
		}
		if left == 0 {
			break
		}
		end = skipValue(s, v)
		if end < 0 {
			return at
		}
		if i = skipSpace(s, end); i >= len(s) || s[i] != ',' {
			return at
		}
		i++
	}
	return at
}

// member is members for one name.
func member(s string, i int, name string) int {
	return members(s, i, name)[0]
}

// elements calls f with each element of the array that starts at s[i], raw,
// in order, until f returns false.
func elements(s string, i int, f func(elem string) bool) {
	if i < 0 || i >= len(s) || s[i] != '[' {
		return
	}
	i++
	for {
		if i = skipSpace(s, i); i < len(s) && s[i] == ']' {
			return
		}
		end := skipValue(s, i)
		if end < 0 || !f(s[i:end]) {
			return
		}
		if i = skipSpace(s, end); i >= len(s) || s[i] != ',' {
			return
		}
		i++
	}
}

// value returns the raw value that starts at s[i], or "" when none does.
func value(s string, i int) string {
	end := skipValue(s, i)
	if end < 0 {
		return ""
	}
	return s[i:end]
}
