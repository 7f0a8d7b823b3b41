package logbuf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/focusgate/focusgate/internal/testlog"
)

// recorder is an out that keeps each write apart and says when one came.
type recorder struct {
	mu     sync.Mutex
	writes []string
	err    error
	wrote  chan struct{}
}

func newRecorder() *recorder { return &recorder{wrote: make(chan struct{}, 100)} }

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, string(p))
	err := r.err
	r.mu.Unlock()
	r.wrote <- struct{}{}
	return len(p), err
}

// wait returns once out has been written to. Its deadline only turns a
// Writer that never writes into a failure instead of a hang.
func (r *recorder) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.wrote:
	case <-time.After(time.Minute):
		t.Fatal("nothing was written")
	}
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

// A line held goes out without a Flush, and so does the next one: the
// delay starts again with each line that finds the Writer empty.
func TestHeldLinesGoOutAfterTheDelay(t *testing.T) {
	out := newRecorder()
	w := New(out)
	w.delay = time.Millisecond
	fmt.Fprintln(w, "one")
	out.wait(t)
	fmt.Fprintln(w, "two")
	out.wait(t)
	if got, want := out.got(), []string{"one\n", "two\n"}; !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
}

func TestAFullWriterWritesWhatItHolds(t *testing.T) {
	out := newRecorder()
	w := New(out)
	w.delay = time.Hour
	w.size = 10
	for _, line := range []string{"abcd\n", "efgh\n", "ijkl\n", strings.Repeat("z", 12) + "\n"} {
		if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", line, n, err)
		}
	}
	// The first two lines fill it; the third waits; the long one goes
	// straight out after the third.
	want := []string{"abcd\nefgh\n", "ijkl\n", strings.Repeat("z", 12) + "\n"}
	if got := out.got(); !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.got(); !slices.Equal(got, want) {
		t.Fatalf("a Flush with nothing held wrote: %q", got)
	}
}

func TestFlushReportsAFailedWrite(t *testing.T) {
	out := newRecorder()
	out.err = errors.New("disk full")
	w := New(out)
	w.delay = time.Hour
	fmt.Fprintln(w, "lost")
	if err := w.Flush(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Flush = %v, want the write's error", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("a second Flush = %v, want nil: the error was reported", err)
	}
}

func TestWarningsGoOutWhenLogged(t *testing.T) {
	out := newRecorder()
	w := New(out)
	w.delay = time.Hour
	log := slog.New(NewHandler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}), w)).With("replica", "a")
	log.Info("request", "status", 200)
	log.WithGroup("g").Debug("detail")
	if got := out.got(); len(got) != 0 {
		t.Fatalf("info and debug lines were written at once: %q", got)
	}
	log.Warn("upstream slow")
	got := out.got()
	if len(got) != 1 {
		t.Fatalf("writes %q, want one holding every line", got)
	}
	for _, want := range []string{"msg=request replica=a status=200\n", "msg=detail replica=a\n", "msg=\"upstream slow\" replica=a\n"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("the write lacks %q:\n%s", want, got[0])
		}
	}
	log.Error("gave up")
	if got := out.got(); len(got) != 2 || !strings.Contains(got[1], "gave up") {
		t.Fatalf("writes %q, want the error written when logged", got)
	}
}

// Lines written from many goroutines come out whole, each once.
func TestConcurrentLinesStayWhole(t *testing.T) {
	out := testlog.New()
	w := New(out)
	w.size = 256 // many flushes by size, and some by time
	w.delay = time.Microsecond
	log := slog.New(NewHandler(slog.NewTextHandler(w, nil), w))
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				log.InfoContext(context.Background(), "line", "writer", g, "i", i)
			}
		})
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		i := strings.Index(line, "msg=line ")
		if i < 0 {
			t.Fatalf("a broken line: %q", line)
		}
		if seen[line[i:]] {
			t.Fatalf("a line written twice: %q", line)
		}
		seen[line[i:]] = true
	}
	if len(seen) != writers*lines {
		t.Fatalf("%d lines, want %d", len(seen), writers*lines)
	}
}
