package proxy

import (
	"bytes"
	"compress/gzip"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/focusgate/focusgate/internal/budget"
)

// bomb is size bytes of zeros, gzipped: a few kilobytes that decode to
// size.
func bomb(t testing.TB, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for n := 0; n < size; n += len(zeros) {
		zw.Write(zeros[:min(len(zeros), size-n)])
	}
	zw.Close()
	return b.Bytes()
}

// A compressed bomb costs at most the memory budget while it decodes, and
// gives it back: decoding stops holding bytes once the budget is full and
// only counts the rest, so each bomb still gets its 413. Before, every
// bomb's buffer doubled past the cap (70-160 MB each at the default cap).
func TestBombsDecodeWithinTheMemoryBudget(t *testing.T) {
	const limit = 32 << 20
	mem := budget.New(8 << 20)
	b := bomb(t, limit+(1<<20))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, _, errs[i] = decode(b, "gzip", limit, mem) })
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	for i, err := range errs {
		if !errors.Is(err, errBodyTooLarge) {
			t.Errorf("bomb %d: %v, want errBodyTooLarge", i, err)
		}
	}
	if used := mem.Used(); used != 0 {
		t.Errorf("%d bytes of the budget still held after the bombs", used)
	}
	// What the eight decodes allocated, all told: buffers within the 8 MiB
	// budget (each growth copies, so up to twice that per decode) and the
	// decoders' own state. A buffer that grew to the cap would be 32 MiB.
	if perBomb := (after.TotalAlloc - before.TotalAlloc) / n; perBomb > 20<<20 {
		t.Errorf("each bomb allocated %d MiB; the budget allows some 16", perBomb>>20)
	}
}

// A body that fits under the cap but not in a full budget is not held: it
// is counted and forwarded as it came, uninspected.
func TestDecodeWithAFullBudgetCountsOnly(t *testing.T) {
	mem := budget.New(1 << 20)
	if !mem.Acquire(1 << 20) {
		t.Fatal("could not fill the budget")
	}
	_, charged, err := decode(bomb(t, 4<<20), "gzip", 8<<20, mem)
	if !errors.Is(err, errBusy) || charged != 0 {
		t.Errorf("decode: %v, %d bytes charged; want errBusy, none", err, charged)
	}
	if _, _, err := decode(bomb(t, 16<<20), "gzip", 8<<20, mem); !errors.Is(err, errBodyTooLarge) {
		t.Errorf("a bomb with a full budget: %v, want errBodyTooLarge", err)
	}
}

// A zstd frame that asks for a window larger than the cap cannot decode
// within it: 413, never forwarded raw.
func TestZstdWindowBeyondTheCap(t *testing.T) {
	var b bytes.Buffer
	zw, err := zstd.NewWriter(&b, zstd.WithWindowSize(8<<20), zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(bytes.Repeat([]byte("0123456789abcdef"), 1<<16)) // 1 MiB
	zw.Close()
	for _, check := range []func() error{
		func() error { _, _, err := decode(b.Bytes(), "zstd", 4<<20, nil); return err },
		func() error { return checkDecodedSize(b.Bytes(), "zstd", 4<<20) },
	} {
		if err := check(); !errors.Is(err, errBodyTooLarge) {
			t.Errorf("a frame with an 8 MiB window under a 4 MiB cap: %v, want errBodyTooLarge", err)
		}
	}
}
