package keys_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate/internal/keys"
)

const (
	aliceKey = "fg-alice-0123456789abcdef"
	bobKey   = "fg-bob-0123456789abcdef0"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		names   []string
		wantErr []string // each must appear in the error
	}{
		{"plain and hashed keys, comments, blank lines, CRLF",
			"# team keys\r\n\r\nalice:" + aliceKey + "\r\n  " + keys.Hash("bob", bobKey) + "  \n# end\n",
			[]string{"alice", "bob"}, nil},
		{"a key may contain colons", "alice:fg:0123456789:abcdef\n", []string{"alice"}, nil},
		{"upper-case hex", "bob:sha256:" + strings.ToUpper(strings.TrimPrefix(keys.Hash("bob", bobKey), "bob:sha256:")), []string{"bob"}, nil},
		{"empty file", "# nothing yet\n", nil, nil},
		{"no colon", "alice " + aliceKey, nil, []string{"line 1", "name:key"}},
		{"bad name", "al ice:" + aliceKey + "\n-bob:" + bobKey, nil, []string{"line 1", "line 2", "name must be"}},
		{"reserved name", "anonymous:" + aliceKey, nil, []string{"reserved"}},
		{"empty key", "alice:", nil, []string{"empty"}},
		{"short key", "alice:tooshort1", nil, []string{"shorter than 16"}},
		{"key with a space", "alice:fg-alice 0123456789abcdef", nil, []string{"spaces"}},
		{"bad digest", "bob:sha256:abc", nil, []string{"64 hexadecimal"}},
		{"duplicate name", "alice:" + aliceKey + "\nalice:" + bobKey, nil, []string{"line 2", "already used on line 1"}},
		{"same key twice", "alice:" + aliceKey + "\n" + keys.Hash("carol", aliceKey), nil, []string{"line 2", "same key as line 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := keys.Parse([]byte(tt.file))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if got := set.Names(); !slices.Equal(got, tt.names) {
					t.Errorf("names %v, want %v", got, tt.names)
				}
				return
			}
			if !errors.Is(err, keys.ErrInvalid) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			for _, secret := range []string{aliceKey, bobKey, "tooshort1", "0123456789"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error quotes a key: %v", err)
				}
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	var b strings.Builder
	for i := range keys.MaxKeys + 1 {
		b.WriteString(keys.Hash(fmt.Sprintf("k%d", i), fmt.Sprintf("key-%d", i)) + "\n")
	}
	if _, err := keys.Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d keys: error %v, want a limit error", keys.MaxKeys+1, err)
	}
	if _, err := keys.Parse(make([]byte, keys.MaxFileBytes+1)); !errors.Is(err, keys.ErrInvalid) {
		t.Errorf("an oversized file: %v", err)
	}
}

func TestLookup(t *testing.T) {
	set, err := keys.Parse([]byte("alice:" + aliceKey + "\n" + keys.Hash("bob", bobKey)))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		presented, name string
		ok              bool
	}{
		{aliceKey, "alice", true},
		{bobKey, "bob", true},
		{"", "", false},
		{aliceKey[:len(aliceKey)-1], "", false},
		{aliceKey + "x", "", false},
		{strings.ToUpper(aliceKey), "", false},
		{strings.TrimPrefix(keys.Hash("bob", bobKey), "bob:sha256:"), "", false},
	}
	for _, tt := range tests {
		name, ok := set.Lookup(tt.presented)
		if name != tt.name || ok != tt.ok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.presented, name, ok, tt.name, tt.ok)
		}
	}
	if got := set.Secrets(); !slices.Equal(got, []string{aliceKey}) {
		t.Errorf("Secrets() = %v, want only the plain-text key", got)
	}
}

func TestFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write("# none\n")
	if _, err := keys.Open(path, nil); err == nil || !strings.Contains(err.Error(), "no keys") {
		t.Fatalf("Open of a file without keys: %v", err)
	}
	write("alice:" + aliceKey + "\n")
	f, err := keys.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan error, 8)
	f.Notify(func(_ *keys.Set, err error) { events <- err })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.Watch(ctx, 5*time.Millisecond, nil)
	next := func() error {
		t.Helper()
		select {
		case err := <-events:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("no reload")
			return nil
		}
	}

	write("alice:" + aliceKey + "\nbob:" + bobKey + "\n")
	if err := next(); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Lookup(bobKey); !ok {
		t.Error("bob's key was not added")
	}
	write("bob:" + bobKey + "\nbob:" + aliceKey + "\n")
	if err := next(); !errors.Is(err, keys.ErrInvalid) {
		t.Fatalf("a bad file: %v", err)
	}
	if _, ok := f.Lookup(aliceKey); !ok {
		t.Error("a bad file dropped the keys in use")
	}
	// Emptying the file revokes every key.
	write("")
	if err := next(); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Lookup(aliceKey); ok {
		t.Error("an emptied file kept alice's key")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("alice:" + aliceKey + "\n" + keys.Hash("bob", bobKey) + "\n# c\n"))
	f.Add([]byte("a:b:c\n:\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := keys.Parse(data)
		if err != nil {
			if !errors.Is(err, keys.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		// Every plain-text key finds its own name.
		for _, s := range set.Secrets() {
			if _, ok := set.Lookup(s); !ok {
				t.Fatalf("a parsed key is not found")
			}
		}
	})
}
