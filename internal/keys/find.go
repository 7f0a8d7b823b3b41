package keys

import (
	"encoding/base64"
	"net/url"
	"strings"
	"unicode/utf8"
)

// maxFindDepth bounds how many layers of encoding (percent-encoding, base64)
// Scanner.Holds undoes, one inside the other: a Basic credential of a
// percent-encoded key is two layers; nobody wraps a key four times in good
// faith.
const maxFindDepth = 4

// minBase64Len is the length of the shortest base64 text that can hold a key
// of MinKeyLength bytes; shorter base64 tokens are not decoded.
const minBase64Len = (MinKeyLength*4 + 2) / 3

// Scanner finds gateway keys inside arbitrary text: a header value that
// quotes a key among other words, inside a URL, percent-encoded, or
// base64-encoded (the Basic credential a client builds from a base URL with
// "user:KEY@"). A key whose plain text is known (the one the request
// presented) is found wherever it appears; any other key is found as a word
// of its own, split at any character that is not a letter, digit, '-' or
// '_' (or at the separators of URLs and headers), and looked up. A Scanner
// is cheap to make: make one per request.
type Scanner struct {
	// needles are the known keys and, for each, the base64 text that every
	// base64 encoding of a text holding the key contains, whatever the
	// key's offset in that text.
	needles []string
	lookup  func(string) (string, bool)
}

// NewScanner returns a Scanner that finds the keys in known by their text
// and any other key by lookup, word by word.
func NewScanner(known []string, lookup func(string) (string, bool)) *Scanner {
	sc := &Scanner{lookup: lookup}
	for _, k := range known {
		sc.needles = appendNeedles(sc.needles, k)
	}
	return sc
}

// Scanner returns a Scanner for the keys of s and presented, the key the
// request at hand authenticated with: that one is found wherever it
// appears, the others as words of their own. (Searching every request for
// the text of every key would cost a pass per key.)
func (s *Set) Scanner(presented string) *Scanner {
	return NewScanner([]string{presented}, s.Lookup)
}

// Scanner returns a Scanner for the keys in use (see Set.Scanner).
func (f *File) Scanner(presented string) *Scanner { return f.cur.Load().Scanner(presented) }

// appendNeedles appends key and the cores of its base64 encodings: for each
// of the three byte offsets the key can have in the encoded text, and for
// both the standard and the URL alphabet, the encoded characters that
// depend on the key's bytes alone.
func appendNeedles(needles []string, key string) []string {
	if len(key) < MinKeyLength {
		return needles
	}
	needles = append(needles, key)
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for off := range 3 {
			buf := make([]byte, off+len(key))
			copy(buf[off:], key)
			s := enc.EncodeToString(buf)
			first := (8*off + 5) / 6         // first character made of key bits only
			last := 8 * (off + len(key)) / 6 // characters past it include padding bits
			needles = append(needles, s[first:last])
		}
	}
	return needles
}

// Holds reports whether text holds a gateway key anywhere in it, also once
// percent-decoded and once any base64 token in it is decoded.
func (sc *Scanner) Holds(text string) bool {
	return sc.holds(text, 0)
}

func (sc *Scanner) holds(text string, depth int) bool {
	if len(text) < MinKeyLength {
		return false
	}
	for _, n := range sc.needles {
		if strings.Contains(text, n) {
			return true
		}
	}
	if sc.lookup != nil && sc.hasKeyWord(text, isSeparator) {
		return true
	}
	// Split finer only where that makes other words ("KEY.x").
	if sc.lookup != nil && strings.ContainsFunc(text, splitsFiner) && sc.hasKeyWord(text, isNotWordChar) {
		return true
	}
	if depth == maxFindDepth {
		return false
	}
	if strings.ContainsAny(text, "%+") {
		if u, err := url.QueryUnescape(text); err == nil && u != text && sc.holds(u, depth+1) {
			return true
		}
		if u, err := url.PathUnescape(text); err == nil && u != text && sc.holds(u, depth+1) {
			return true
		}
	}
	for tok := range strings.FieldsFuncSeq(text, isNotBase64) {
		if d, ok := decodeBase64(tok); ok && sc.holds(d, depth+1) {
			return true
		}
	}
	return false
}

// hasKeyWord looks up every word of text long enough to be a key.
func (sc *Scanner) hasKeyWord(text string, sep func(rune) bool) bool {
	for w := range strings.FieldsFuncSeq(text, sep) {
		if len(w) >= MinKeyLength {
			if _, ok := sc.lookup(w); ok {
				return true
			}
		}
	}
	return false
}

// isSeparator splits at spaces and the separators of headers, cookies,
// query strings and URLs: what cannot be part of a key in a keys file, or
// rarely is.
func isSeparator(r rune) bool {
	if r <= ' ' || r == 0x7f {
		return true
	}
	return strings.ContainsRune(",;=\"'&:/()#?@[]{}<>\\|`", r)
}

// isNotWordChar splits at everything but letters, digits, '-' and '_', the
// characters API keys are usually made of: "KEY.x" yields KEY.
func isNotWordChar(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
}

// splitsFiner is a character that isNotWordChar splits at and isSeparator
// does not.
func splitsFiner(r rune) bool { return isNotWordChar(r) && !isSeparator(r) }

func isNotBase64(r rune) bool {
	return isNotWordChar(r) && r != '+' && r != '/' && r != '='
}

// decodeBase64 decodes tok in the standard or the URL alphabet, padded or
// not, when it is long enough to hold a key and decodes to text.
func decodeBase64(tok string) (string, bool) {
	tok = strings.TrimRight(tok, "=")
	if len(tok) < minBase64Len || strings.Contains(tok, "=") {
		return "", false
	}
	enc := base64.RawStdEncoding
	if strings.ContainsAny(tok, "-_") {
		if strings.ContainsAny(tok, "+/") {
			return "", false
		}
		enc = base64.RawURLEncoding
	}
	if len(tok)%4 == 1 {
		tok = tok[:len(tok)-1] // a stray character after the encoding
	}
	d, err := enc.DecodeString(tok)
	if err != nil || !utf8.Valid(d) {
		return "", false
	}
	return string(d), true
}
