package prune

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

func init() {
	// tiktoken-go, the reference the counter is checked against, downloads
	// its BPE files by default.
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
}

var references = map[string]func() (*tiktoken.Tiktoken, error){
	o200k:  sync.OnceValues(func() (*tiktoken.Tiktoken, error) { return tiktoken.GetEncoding(o200k) }),
	cl100k: sync.OnceValues(func() (*tiktoken.Tiktoken, error) { return tiktoken.GetEncoding(cl100k) }),
}

// encoding returns tiktoken-go's encoding, the reference for counts, or stops
// the test.
func encoding(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	enc, err := references[name]()
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

func TestCounterMatchesTiktokenOnAxtrees(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "axtrees", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no axtrees: %v", err)
	}
	c := NewCounter(64 << 20)
	for _, model := range []string{"gpt-4o", "gpt-4"} {
		enc := encoding(t, tokenizerOf(model).encoding)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			want := len(enc.Encode(text, nil, nil))
			if got := c.Count(model, text); got != want {
				t.Errorf("%s %s: Count = %d, want %d", model, filepath.Base(f), got, want)
			}
			if got := c.Count(model, text); got != want {
				t.Errorf("%s %s: memoised Count = %d, want %d", model, filepath.Base(f), got, want)
			}
		}
	}
}

func TestCounterMatchesTiktokenAtLineEdges(t *testing.T) {
	// Texts where adding up per-line counts naively would go wrong: tokens
	// that span blank lines, whitespace-only lines, "\r\n", or a newline
	// followed by '/'.
	texts := []string{
		"",
		"\n",
		"\n\n\n",
		"a\n\nb",
		"a\n\n\n\tb\n",
		"a\n \t\n\tb",
		"a \n\t b\n",
		"x\r\ny\r\n\r\nz",
		"x\n\ry",
		"x'\n/path\n",
		"url='https://a/'\n/\n//\n",
		"[1] link 'Home',\n\t\t\n\n\t[2] button\n",
		"end with spaces   ",
		"\u00a0nbsp\n\u00a0\n\u2028x\n",
		"StaticText '<|endoftext|>'\n",
	}
	c := NewCounter(1 << 20)
	for _, model := range []string{"gpt-4o", "gpt-3.5-turbo"} {
		enc := encoding(t, tokenizerOf(model).encoding)
		for _, text := range texts {
			if got, want := c.Count(model, text), len(enc.Encode(text, nil, nil)); got != want {
				t.Errorf("%s Count(%q) = %d, want %d", model, text, got, want)
			}
		}
	}
}

func TestEncodingFor(t *testing.T) {
	tests := []struct{ model, want string }{
		{"gpt-4o", o200k},
		{"gpt-4o-mini-2024-07-18", o200k},
		{"chatgpt-4o-latest", o200k},
		{"gpt-4.1", o200k},
		{"GPT-4.1-mini", o200k},
		{"gpt-4.5-preview", o200k},
		{"gpt-5-mini", o200k},
		{"o1", o200k},
		{"o3-mini", o200k},
		{"o4-mini", o200k},
		{"openai/gpt-4o", o200k},
		{"gpt-4", cl100k},
		{"gpt-4-turbo", cl100k},
		{"gpt-3.5-turbo", cl100k},
		{"claude-3-7-sonnet", cl100k},
		{"", cl100k},
	}
	for _, tt := range tests {
		if got := tokenizerOf(tt.model).encoding; got != tt.want {
			t.Errorf("tokenizerOf(%q).encoding = %s, want %s", tt.model, got, tt.want)
		}
	}
}

func TestCounterWithASmallMemoStaysExact(t *testing.T) {
	c := NewCounter(8 << 10) // generations turn over every few texts
	enc := encoding(t, o200k)
	var b strings.Builder
	for i := range 2000 {
		b.WriteString("\t[a")
		b.WriteString(strings.Repeat("x", i%50))
		b.WriteString("] link 'Item'\n")
		if i%100 == 99 {
			text := b.String()
			if got, want := c.Count("gpt-4o", text), len(enc.Encode(text, nil, nil)); got != want {
				t.Fatalf("after %d lines: Count = %d, want %d", i+1, got, want)
			}
		}
	}
}

func TestCounterRemembersLinesAndTexts(t *testing.T) {
	c := NewCounter(1 << 20)
	text := "RootWebArea 'a'\n\t[1] link 'b'\n"
	c.Count("gpt-4o", text)
	for _, key := range []string{"RootWebArea 'a'\n", "\t[1] link 'b'\n", text} {
		if _, ok := c.memos[o200k].Get(key); !ok {
			t.Errorf("%q not memoised", key)
		}
	}
	if _, ok := c.memos[cl100k].Get(text); ok {
		t.Errorf("a count for o200k_base was memoised for cl100k_base too")
	}
}

func TestCounterDoesNotRememberACountCutShort(t *testing.T) {
	c := NewCounter(1 << 20)
	text := readTree(t, "bgym-pr301_web_amazon_macbook.txt").Text // more lines than checkEvery
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.CountContext(ctx, "gpt-4o", text); !errors.Is(err, context.Canceled) {
		t.Fatalf("CountContext with an ended context: err = %v, want context.Canceled", err)
	}
	if n, ok := c.memos[o200k].Get(text); ok {
		t.Fatalf("a count cut short was memoised for the whole text: %d", n)
	}
	want := len(encoding(t, o200k).Encode(text, nil, nil))
	if got := c.Count("gpt-4o", text); got != want {
		t.Errorf("Count after a cut-short count = %d, want %d", got, want)
	}
}

func TestCounterConcurrentUse(t *testing.T) {
	enc := encoding(t, o200k)
	texts := []string{readTree(t, "bgym-pr301_workarena_catalog.txt").Text, readTree(t, "bgym-pr301_workarena_order_status.txt").Text}
	var want []int
	for _, text := range texts {
		want = append(want, len(enc.Encode(text, nil, nil)))
	}
	c := NewCounter(64 << 10) // small, so generations turn over while counting
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 6 {
				k := (g + i) % len(texts)
				if got := c.Count("gpt-4o", texts[k]); got != want[k] {
					t.Errorf("Count = %d, want %d", got, want[k])
				}
			}
		})
	}
	wg.Wait()
}

// Copies of a page pruned at once (a saved result that holds the page many
// times) are counted once: the others wait for that count. Counted in bytes
// allocated, which sixteen counts of the same text would multiply.
func TestCopiesCountedAtOnceAreCountedOnce(t *testing.T) {
	text := readTree(t, "bgym-pr301_web_apple_buy_ipad_pro.txt").Text
	alone := NewCounter(64 << 20)
	alone.Count("gpt-4o", "the tables load once")
	want := alone.Count("gpt-4o", text)
	_, once := allocated(func() { NewCounter(64<<20).Count("gpt-4o", text) })

	c := NewCounter(64 << 20)
	start := make(chan struct{})
	var wg sync.WaitGroup
	_, copies := allocated(func() {
		for range 16 {
			wg.Go(func() {
				<-start
				if got := c.Count("gpt-4o", text); got != want {
					t.Errorf("Count = %d, want %d", got, want)
				}
			})
		}
		close(start)
		wg.Wait()
	})
	if copies > 3*once {
		t.Errorf("16 copies counted at once allocated %d bytes, one count %d: counted more than once", copies, once)
	}
}

// allocated returns the allocations and bytes allocated while f runs.
func allocated(f func()) (mallocs, bytes uint64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

func FuzzCount(f *testing.F) {
	for _, s := range []string{
		"RootWebArea 'a'\n\t[1] link 'b'\n",
		"a\n\n\tb",
		"x'\n/y",
		"x\r\n\r\ny",
		" \n \n",
		"- link \"Home\" [ref=e1]\n  - /url: /home\n",
	} {
		f.Add(s)
	}
	c := NewCounter(1 << 20)
	o, cl := encoding(f, o200k), encoding(f, cl100k)
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			t.Skip("request text is valid UTF-8 after JSON decoding")
		}
		if len(text) > 512 {
			// tiktoken-go's BPE is quadratic in the length of one pre-token
			// and crawls under coverage instrumentation; what this target
			// explores is line structure, which short inputs cover.
			t.Skip("too long to encode quickly")
		}
		if got, want := c.Count("gpt-4o", text), len(o.Encode(text, nil, nil)); got != want {
			t.Errorf("o200k Count(%q) = %d, want %d", text, got, want)
		}
		if got, want := c.Count("gpt-4", text), len(cl.Encode(text, nil, nil)); got != want {
			t.Errorf("cl100k Count(%q) = %d, want %d", text, got, want)
		}
	})
}

// Claude's tokenizer is not public: its counts are cl100k_base's scaled by
// claudeScale, under any name of a Claude model.
func TestClaudeCountsAreEstimated(t *testing.T) {
	c := NewCounter(1 << 20)
	text := strings.Repeat("- button \"Save employee\" [ref=e79]\n", 40)
	base := c.Count("gpt-4", text)
	for _, model := range []string{"claude-sonnet-4-5", "anthropic/claude-haiku-4-5", "Claude-Opus-4-1"} {
		if got, want := c.Count(model, text), int(float64(base)*claudeScale+0.5); got != want {
			t.Errorf("%s: %d tokens, want %d (cl100k_base's %d scaled)", model, got, want, base)
		}
	}
}

// Gemini's tokenizer is not public either: its counts are o200k_base's
// scaled by geminiScale, under any name of a Gemini model.
func TestGeminiCountsAreEstimated(t *testing.T) {
	c := NewCounter(1 << 20)
	text := strings.Repeat("- button \"Save employee\" [ref=e79]\n", 40)
	base := c.Count("gpt-4.1", text)
	for _, model := range []string{"gemini-2.5-flash", "models/gemini-3-pro-preview", "google/gemini-2.5-pro"} {
		if got, want := c.Count(model, text), int(float64(base)*geminiScale+0.5); got != want {
			t.Errorf("%s: %d tokens, want %d (o200k_base's %d scaled)", model, got, want, base)
		}
	}
}
