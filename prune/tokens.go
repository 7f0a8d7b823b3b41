package prune

import (
	"context"
	"errors"
	"iter"
	"maps"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/memo"
)

const (
	o200k  = "o200k_base"
	cl100k = "cl100k_base"
)

// encodings loads each BPE once per process, on first use: building one
// takes a few hundred milliseconds.
var encodings = map[string]func() (*bpe, error){
	o200k:  sync.OnceValues(func() (*bpe, error) { return loadBPE(o200k+".tiktoken", o200kPattern) }),
	cl100k: sync.OnceValues(func() (*bpe, error) { return loadBPE(cl100k+".tiktoken", cl100kPattern) }),
}

// tokenizer is how a model's tokens are counted: o200k_base for the GPT-4o
// generation and later, and for Gemini (see geminiScale), cl100k_base for
// GPT-4 and GPT-3.5, for Claude (see claudeScale) and for every model it does
// not know, whose tokenizer is unknown anyway; and the factor its counts are
// scaled by (see familyScale). A page's is worked out once, not at each count.
type tokenizer struct {
	encoding string
	scale    float64 // 0 for none
}

func tokenizerOf(model string) tokenizer {
	family := focusgate.FamilyOf(model)
	t := tokenizer{encoding: cl100k, scale: familyScale[family]}
	switch family {
	case focusgate.FamilyGPT4o, focusgate.FamilyReasoning, focusgate.FamilyGemini:
		t.encoding = o200k
	}
	return t
}

// scaled is a count of the model's encoding scaled to the model's family.
func (t tokenizer) scaled(n int) int {
	if t.scale != 0 {
		return int(float64(n)*t.scale + 0.5)
	}
	return n
}

// Counter counts tokens the way the action model's tokenizer does, cheaply
// for text it has seen before.
//
// tiktoken's pre-tokenizer never lets a token cross the start of a line that
// begins with something other than whitespace or '/', so a text's count is
// the sum of the counts of such chunks (see chunks). The counter remembers
// the count of every chunk it encodes and of every whole text it counts, so
// a tree seen again (the same page at the next step, a cache hit, an older
// page of the conversation) costs one look-up, and a tree that changed a
// little (the next step's page, the kept lines of a pruned tree) one look-up
// per line.
//
// A text being counted when it is asked for again is waited for, not counted
// twice: the copies of a page a request holds are pruned at once, and would
// all miss the memo together.
//
// A Counter is safe for concurrent use.
type Counter struct {
	memos map[string]*memo.Memo[int] // by encoding

	mu      sync.Mutex
	flights map[flightKey]*countFlight
}

// flightKey is a text being counted in an encoding.
type flightKey struct{ encoding, text string }

// countFlight is the count of a text in progress: done closes once n or err
// is set.
type countFlight struct {
	done chan struct{}
	n    int
	err  error
}

// errCountAbandoned is the result of a count that ended without one (a
// panic): who waited for it counts the text itself.
var errCountAbandoned = errors.New("prune: token count abandoned")

// NewCounter returns a Counter whose memo holds about maxBytes of text and
// overhead per encoding; zero or less disables the memo.
func NewCounter(maxBytes int) *Counter {
	c := &Counter{memos: map[string]*memo.Memo[int]{}, flights: map[flightKey]*countFlight{}}
	for name := range encodings {
		c.memos[name] = memo.New[int](maxBytes)
	}
	return c
}

// Count returns the number of tokens of text for model. Should an encoding
// fail to load (its BPE file is embedded, so only a broken build could do
// that), it returns an estimate of four bytes per token, which keeps the
// "fewer tokens" decision sound.
func (c *Counter) Count(model, text string) int {
	n, _ := c.CountContext(context.Background(), model, text)
	return n
}

// claudeScale estimates Claude's token counts from cl100k_base's: Anthropic
// does not publish its tokenizer, and public comparisons find cl100k_base
// counting 15 to 20% fewer tokens than Claude on English text, more on code
// and other languages. Both sides of a "fewer tokens" decision are scaled
// alike, so it only moves the absolute counts and the savings estimate.
const claudeScale = 1.2

// geminiScale estimates Gemini's token counts from o200k_base's. Gemini's
// tokenizer is not published; Gemma's, whose 256k-piece vocabulary Gemini is
// reported to share, counts 1.05 to 1.31 times o200k_base's tokens on the
// page trees of testdata/axtrees and detect/testdata/formats (1.2 on
// average) and 1.04 times on English prose (README, "Gemini and Gemini
// CLI").
const geminiScale = 1.2

// familyScale is the factor of each family whose tokenizer is estimated.
var familyScale = map[focusgate.Family]float64{focusgate.FamilyClaude: claudeScale, focusgate.FamilyGemini: geminiScale}

// CountContext is Count that gives up with ctx.Err() once ctx ends. Encoding
// a page nobody has seen is the most expensive thing focusgate does to a
// request (seconds for a 10 MB page), so a request past its deadline must
// not keep a core busy with it.
func (c *Counter) CountContext(ctx context.Context, model, text string) (int, error) {
	return c.countScaled(ctx, tokenizerOf(model), text)
}

// countScaled is CountContext for a model's tokenizer.
func (c *Counter) countScaled(ctx context.Context, tok tokenizer, text string) (int, error) {
	n, err := c.count(ctx, tok.encoding, text)
	if err != nil {
		return n, err
	}
	return tok.scaled(n), nil
}

// countTree is countScaled of a page's text, taken from and recorded in
// what is known of it.
func (c *Counter) countTree(ctx context.Context, tok tokenizer, t Tree) (int, error) {
	n, ok := t.Known.Count(tok.encoding)
	if !ok {
		var err error
		if n, err = c.count(ctx, tok.encoding, t.Text); err != nil {
			return n, err
		}
		t.Known.SetCount(tok.encoding, n)
	}
	return tok.scaled(n), nil
}

// checkEvery is how many chunks are encoded between two looks at the
// context: a few milliseconds of work.
const checkEvery = 256

func (c *Counter) count(ctx context.Context, name, text string) (int, error) {
	enc, err := encodings[name]()
	if err != nil {
		return (len(text) + 3) / 4, nil
	}
	m := c.memos[name]
	if n, ok := m.Get(text); ok {
		return n, nil
	}
	key := flightKey{name, text}
	c.mu.Lock()
	f, counting := c.flights[key]
	if !counting {
		f = &countFlight{done: make(chan struct{}), err: errCountAbandoned}
		c.flights[key] = f
	}
	c.mu.Unlock()
	if counting {
		select {
		case <-f.done:
			if f.err == nil {
				return f.n, nil
			}
			// It gave up (its request's context ended): count it here.
			return countChunks(ctx, enc, m, text)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	defer func() {
		c.mu.Lock()
		delete(c.flights, key)
		c.mu.Unlock()
		close(f.done)
	}()
	n, err := countChunks(ctx, enc, m, text)
	f.n, f.err = n, err
	return n, err
}

// countChunks counts text as the sum of its chunks' counts, looking each up
// in m first, and remembers them and the whole.
func countChunks(ctx context.Context, enc *bpe, m *memo.Memo[int], text string) (int, error) {
	total := 0
	var misses []string
	m.GetAll(chunks(text), func(s string, n int, ok bool) {
		if ok {
			total += n
		} else {
			misses = append(misses, s)
		}
	})
	var err error
	counted := make(map[string]int, min(len(misses), 1<<16))
	for i, s := range misses {
		if i%checkEvery == checkEvery-1 {
			if err = ctx.Err(); err != nil {
				break
			}
		}
		n, ok := counted[s]
		if !ok {
			n = enc.count(s)
			counted[s] = n
		}
		total += n
	}
	// What was counted is remembered even when ctx ended, so that the same
	// page sent again gets further.
	m.PutAll(maps.All(counted))
	if err != nil {
		return 0, err
	}
	m.Put(text, total, 0)
	return total, nil
}

// chunks splits text into pieces whose token counts add up to the count of
// the whole. It cuts after a newline when the next line starts, after spaces
// and tabs, with a character that is not whitespace, and when that line does
// not start with '/'. The pre-tokenizers of o200k_base and cl100k_base let a
// token run past a newline only through more whitespace ending in a newline
// (`\s*[\r\n]+`) or through punctuation followed by newlines and, in
// o200k_base, slashes (` ?[^\s\p{L}\p{N}]+[\r\n/]*`); so a blank or
// whitespace-only line, or one starting with '\r' or '/', stays with the
// chunk before it.
func chunks(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i < len(text); {
			nl := strings.IndexByte(text[i:], '\n')
			if nl < 0 {
				break
			}
			i += nl + 1
			if cutsBefore(text[i:]) {
				if !yield(text[start:i]) {
					return
				}
				start = i
			}
		}
		if start < len(text) {
			yield(text[start:])
		}
	}
}

// cutsBefore reports whether a chunk may start at the beginning of line.
func cutsBefore(line string) bool {
	if line == "" || line[0] == '/' {
		return false
	}
	rest := strings.TrimLeft(line, " \t")
	if rest == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsSpace(r)
}
