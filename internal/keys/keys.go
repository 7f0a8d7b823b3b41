// Package keys owns focusgate's gateway keys: the file that lists them, its
// parsing, the constant-time look-up of a presented key, and reloading the
// file while requests keep being served.
//
// A keys file has one key per line, "name:key" or "name:sha256:<hex>" (the
// key's SHA-256 digest, so that the file need not hold the key itself).
// Blank lines and lines starting with # are ignored. Errors name the line,
// never its key: a configuration error must not print a secret.
package keys

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Anonymous is the name under which requests without a gateway key are
// accounted: every request when no keys file is configured, and the
// requests a keys file rejects.
const Anonymous = "anonymous"

// Limits of a keys file. They bound memory and, since key names label
// metrics, the number of time series.
const (
	MaxFileBytes = 1 << 20
	MaxKeys      = 1000
	// MinKeyLength rejects keys short enough to guess.
	MinKeyLength = 16
)

// ErrInvalid is wrapped by every error about the file's content.
var ErrInvalid = errors.New("invalid keys file")

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

const hashPrefix = "sha256:"

// Set is one parsed keys file. It is immutable and safe for concurrent use.
type Set struct {
	entries []entry
}

type entry struct {
	name   string
	digest [sha256.Size]byte
	// plain is the key itself when the file holds it, kept only so that
	// logs can be scrubbed of it (see Secrets).
	plain string
}

// Parse reads a keys file. It reports every bad line at once.
func Parse(data []byte) (*Set, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxFileBytes)
	}
	s := &Set{}
	var errs []error
	bad := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...)))
	}
	names := map[string]int{}
	digests := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, secret, ok := strings.Cut(line, ":")
		name, secret = strings.TrimSpace(name), strings.TrimSpace(secret)
		switch {
		case !ok:
			bad(n, "want name:key or name:sha256:<hex>")
			continue
		case !validName.MatchString(name):
			bad(n, "name must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
			continue
		case name == Anonymous:
			bad(n, "the name %q is reserved for requests without a key", Anonymous)
			continue
		}
		e := entry{name: name}
		if hexDigest, ok := strings.CutPrefix(secret, hashPrefix); ok {
			d, err := hex.DecodeString(hexDigest)
			if err != nil || len(d) != sha256.Size {
				bad(n, "key %q: sha256: must be followed by 64 hexadecimal digits", name)
				continue
			}
			copy(e.digest[:], d)
		} else {
			switch {
			case secret == "":
				bad(n, "key %q is empty", name)
				continue
			case strings.ContainsFunc(secret, func(r rune) bool { return r <= ' ' || r == 0x7f }):
				bad(n, "key %q contains spaces or control characters", name)
				continue
			case len(secret) < MinKeyLength:
				bad(n, "key %q is shorter than %d characters", name, MinKeyLength)
				continue
			}
			e.digest, e.plain = sha256.Sum256([]byte(secret)), secret
		}
		if prev, dup := names[name]; dup {
			bad(n, "name %q is already used on line %d", name, prev)
			continue
		}
		if prev, dup := digests[e.digest]; dup {
			bad(n, "key %q is the same key as line %d", name, prev)
			continue
		}
		names[name], digests[e.digest] = n, n
		s.entries = append(s.entries, e)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(s.entries) > MaxKeys {
		errs = append(errs, fmt.Errorf("%d keys, more than the %d allowed", len(s.entries), MaxKeys))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	return s, nil
}

// Lookup returns the name of the key presented by a client. It compares the
// presented key's digest with every configured digest in constant time and
// never stops early, so that the time it takes reveals neither whether nor
// where a key matched.
func (s *Set) Lookup(presented string) (name string, ok bool) {
	if s == nil || presented == "" {
		return "", false
	}
	d := sha256.Sum256([]byte(presented))
	match := -1
	for i := range s.entries {
		eq := subtle.ConstantTimeCompare(d[:], s.entries[i].digest[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return "", false
	}
	return s.entries[match].name, true
}

// Names lists the configured key names in file order.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.name
	}
	return out
}

// Len is the number of keys.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// Secrets lists the keys the file holds in plain text, for scrubbing logs.
func (s *Set) Secrets() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, e := range s.entries {
		if e.plain != "" {
			out = append(out, e.plain)
		}
	}
	return out
}

// Hash returns the line that stores key by its digest: "name:sha256:<hex>".
func Hash(name, key string) string {
	d := sha256.Sum256([]byte(key))
	return name + ":" + hashPrefix + hex.EncodeToString(d[:])
}
