package pipeline

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// maxPanicSites bounds the sites a pipeline remembers having logged a panic
// at; past it, a panic at a new site is logged without its stack.
const maxPanicSites = 256

// panicLog remembers where inspections have panicked. A defect that panics
// on one shape of request panics on every request of that shape: its stack
// says everything the first time, and a 3 KB stack per request after that
// would only bury the rest of the log.
type panicLog struct {
	mu    sync.Mutex
	sites map[string]int // panics seen per site
}

// seen counts a panic at site and returns how many there have been there,
// and whether its stack is to be logged.
func (l *panicLog) seen(site string) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sites == nil {
		l.sites = map[string]int{}
	}
	n, known := l.sites[site]
	if !known && len(l.sites) >= maxPanicSites {
		return 1, false
	}
	l.sites[site] = n + 1
	return n + 1, !known
}

// logPanic logs a panic recovered while inspecting a request, which then
// goes out as it came: the first at each site as one error line with the
// stack, later ones there at debug level with their count.
func (p *Pipeline) logPanic(ctx context.Context, v any) {
	site := panicSite()
	n, first := p.panics.seen(site)
	if !first {
		p.log.LogAttrs(ctx, slog.LevelDebug, "panic inspecting a request again; forwarded as it came",
			slog.Any("panic", v), slog.String("site", site), slog.Int("count", n))
		return
	}
	p.log.LogAttrs(ctx, slog.LevelError, "panic inspecting a request; forwarded as it came (later ones at this site are logged at debug level)",
		slog.Any("panic", v), slog.String("site", site), slog.String("stack", string(debug.Stack())))
}

// panicSite names the function and line that panicked, as seen from a
// deferred function that recovered the panic: the first frame below the
// runtime's panic machinery.
func panicSite() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return f.Function + " (" + f.File + ":" + strconv.Itoa(f.Line) + ")"
		}
		if !more {
			return "unknown"
		}
	}
}
