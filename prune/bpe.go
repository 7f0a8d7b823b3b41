package prune

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// bpe counts tokens exactly as tiktoken-go's EncodeOrdinary does (the same
// pre-tokenizer, the same merges), from a rank table that holds no pointers.
//
// tiktoken-go keeps an encoding as maps of strings, some 200,000 small objects
// and 20–30 MB for o200k_base, which every garbage collection must mark: on a
// gateway serving cache hits that was a fifth of its CPU. Here all token bytes
// are one slice and the ranks an open-addressing table of integers, a few
// megabytes that the collector never looks inside.
type bpe struct {
	split *regexp2.Regexp
	data  []byte   // every token's bytes, back to back
	ends  []uint32 // token i is data[ends[i-1]:ends[i]], the first from 0
	ranks []uint32 // rank of token i
	slots []uint32 // by hash of the bytes: a token's index + 1; 0 is empty
	seed  maphash.Seed
}

// Pre-tokenizer patterns, as tiktoken-go v0.1.8 (and OpenAI's tiktoken)
// define them.
const (
	o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}` +
		`| ?[^\s\p{L}\p{N}]+[\r\n/]*` +
		`|\s*[\r\n]+` +
		`|\s+(?!\S)` +
		`|\s+`
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// loadBPE builds an encoding from its BPE file embedded by
// tiktoken-go-loader: one token per line, base64, a space and its rank.
func loadBPE(file, pattern string) (*bpe, error) {
	split, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("prune: compiling the pre-tokenizer of %s: %w", file, err)
	}
	contents, err := assets.Assets.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("prune: reading %s: %w", file, err)
	}
	n := bytes.Count(contents, []byte("\n")) + 1
	b := &bpe{
		split: split,
		data:  make([]byte, 0, n*8),
		ends:  make([]uint32, 0, n),
		ranks: make([]uint32, 0, n),
		slots: make([]uint32, 1<<bits.Len(uint(2*n))),
		seed:  maphash.MakeSeed(),
	}
	for line := range bytes.Lines(contents) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			continue
		}
		token64, rankText, ok := bytes.Cut(line, []byte(" "))
		rank, err := strconv.ParseUint(string(rankText), 10, 32)
		if !ok || err != nil {
			return nil, fmt.Errorf("prune: %s: bad line %q", file, line)
		}
		start := len(b.data)
		if b.data, err = base64.StdEncoding.AppendDecode(b.data, token64); err != nil {
			return nil, fmt.Errorf("prune: %s: bad token %q: %w", file, token64, err)
		}
		if err := b.add(b.data[start:], uint32(rank)); err != nil {
			return nil, fmt.Errorf("prune: %s: %w", file, err)
		}
	}
	return b, nil
}

// add indexes the token that ends the data.
func (b *bpe) add(token []byte, rank uint32) error {
	if len(b.ends)+1 >= len(b.slots)/2 {
		return errors.New("more tokens than lines")
	}
	mask := uint64(len(b.slots) - 1)
	for i := maphash.Bytes(b.seed, token) & mask; ; i = (i + 1) & mask {
		if b.slots[i] == 0 {
			b.ends = append(b.ends, uint32(len(b.data)))
			b.ranks = append(b.ranks, rank)
			b.slots[i] = uint32(len(b.ends))
			return nil
		}
		if bytes.Equal(b.token(b.slots[i]-1), token) {
			return fmt.Errorf("token %q listed twice", token)
		}
	}
}

func (b *bpe) token(i uint32) []byte {
	start := uint32(0)
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.data[start:b.ends[i]]
}

// rank returns the rank of a token, or false when piece is not one.
func (b *bpe) rank(piece []byte) (int, bool) {
	mask := uint64(len(b.slots) - 1)
	for i := maphash.Bytes(b.seed, piece) & mask; ; i = (i + 1) & mask {
		t := b.slots[i]
		if t == 0 {
			return 0, false
		}
		if bytes.Equal(b.token(t-1), piece) {
			return int(b.ranks[t-1]), true
		}
	}
}

// count returns the number of tokens of text. Like tiktoken-go, it reads text
// as runes, so each byte of invalid UTF-8 counts as U+FFFD.
func (b *bpe) count(text string) int {
	runes := []rune(text)
	var piece []byte
	var parts []part
	n := 0
	m, _ := b.split.FindRunesMatch(runes)
	for m != nil {
		piece = piece[:0]
		for _, r := range runes[m.Index : m.Index+m.Length] {
			piece = utf8.AppendRune(piece, r)
		}
		var k int
		k, parts = b.pieceTokens(piece, parts)
		n += k
		m, _ = b.split.FindNextMatch(m)
	}
	return n
}

// part is a piece's byte offset and the rank of the pair starting there.
type part struct{ at, rank int }

// pieceTokens counts the tokens of one pre-tokenized piece: one if the piece
// is a token, else what byte-pair merging leaves, merging the pair of lowest
// rank first as tiktoken's bytePairMerge does. parts is scratch space, returned
// for reuse.
func (b *bpe) pieceTokens(piece []byte, parts []part) (int, []part) {
	if len(piece) <= 1 {
		return len(piece), parts
	}
	if _, ok := b.rank(piece); ok {
		return 1, parts
	}
	parts = parts[:0]
	for i := range len(piece) + 1 {
		parts = append(parts, part{i, math.MaxInt})
	}
	pairRank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := b.rank(piece[parts[i].at:parts[i+skip+2].at]); ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = pairRank(i, 0)
	}
	for len(parts) > 1 {
		lowest, at := math.MaxInt, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < lowest {
				lowest, at = parts[i].rank, i
			}
		}
		if at < 0 {
			break
		}
		parts[at].rank = pairRank(at, 1)
		if at > 0 {
			parts[at-1].rank = pairRank(at-1, 1)
		}
		parts = append(parts[:at+1], parts[at+2:]...)
	}
	return len(parts) - 1, parts
}
