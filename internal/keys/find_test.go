package keys

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

const (
	presentedKey = "fg-alice-0123456789abcdef"
	digestKey    = "fg-bob-0123456789abcdef0"
)

func testScanner(t testing.TB) *Scanner {
	t.Helper()
	s, err := Parse([]byte("alice:" + presentedKey + "\n" + Hash("bob", digestKey) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s.Scanner(presentedKey)
}

func percentAll(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func TestScannerHolds(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	sc := testScanner(t)
	for _, key := range []string{presentedKey, digestKey} {
		for _, text := range []string{
			key,
			"user:" + key,
			"/p/" + key + "/",
			key + ".x",
			"(" + key + ")",
			"https://x/#" + key,
			b64(key),
			"Basic " + b64(":"+key),
			"Basic " + b64("user:"+key),
			percentAll(key),
			strings.ReplaceAll(percentAll("user:"+key), "%", "%25"),
			strings.ReplaceAll(b64(":"+key), "=", "%3D"),
		} {
			if !sc.Holds(text) {
				t.Errorf("%q: key not found", text)
			}
		}
	}
	// The presented key is found however it is glued to other text, and
	// inside base64 at any offset.
	for _, text := range []string{
		"abc" + presentedKey + "xyz",
		b64("x" + presentedKey),
		b64("xy" + presentedKey + "z"),
		"prefix" + b64("xyz"+presentedKey),
		base64.RawURLEncoding.EncodeToString([]byte("?" + presentedKey)),
	} {
		if !sc.Holds(text) {
			t.Errorf("%q: presented key not found", text)
		}
	}
	for _, text := range []string{
		"",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		b64("a harmless base64 text of some length"),
		"fg-alice-0123456789abcde", // one character short
		presentedKey[1:],
		"Basic " + b64("user:password-of-the-upstream"),
	} {
		if sc.Holds(text) {
			t.Errorf("%q: a key found where there is none", text)
		}
	}
}

// FuzzScannerHolds checks that the presented key is found wherever it is
// put inside any text, and that no text makes the scanner fail.
func FuzzScannerHolds(f *testing.F) {
	f.Add("user:", "@host")
	f.Add("%", "%%")
	f.Add("Basic ", "==")
	sc := testScanner(f)
	f.Fuzz(func(t *testing.T, before, after string) {
		if !sc.Holds(before + presentedKey + after) {
			t.Errorf("key not found in %q + key + %q", before, after)
		}
		sc.Holds(before + after)
	})
}

// BenchmarkScannerTypicalHeaders scans the headers an SDK sends with every
// request, none of which holds a key: the cost the scan adds to a request.
func BenchmarkScannerTypicalHeaders(b *testing.B) {
	headers := []string{
		"application/json",
		"OpenAI/JS 5.12.0",
		"gzip, deflate, br",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"MacOS", "arm64", "node", "v22.11.0", "5.12.0",
		"2", "600000", "stainless-node-retry-1b4f5a2e-77f3-4c34-9a3b-2c1d0e9f8a7b",
		"Bearer sk-upstream-company-key-0123456789",
	}
	sc := testScanner(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, h := range headers {
			if sc.Holds(h) {
				b.Fatal(h)
			}
		}
	}
}
