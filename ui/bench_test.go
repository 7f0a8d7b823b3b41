package ui_test

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/ui"
)

// realRecord is a captured record of the doomarena page (220 lines, 10 KB),
// pruned to about a third.
func realRecord(b *testing.B) ui.Record {
	b.Helper()
	raw, err := os.ReadFile("../testdata/axtrees/agentlab-tutorial_webarena_shopping_prompt_0_with_doomarena_popup_injection_tabs-restored.txt")
	if err != nil {
		b.Fatal(err)
	}
	text := strings.TrimRight(string(raw), "\n")
	var lines []focusgate.Line
	start := 0
	for _, l := range strings.Split(text, "\n") {
		lines = append(lines, focusgate.Line{Start: start, End: start + len(l)})
		start += len(l) + 1
	}
	r := pageRecord()
	o := &r.Observations[0]
	o.Lines, o.Original, o.Forwarded = lines, text, text[:len(text)/3]
	o.Ranges = []focusgate.Range{{From: 1, To: 1}, {From: 17, To: 40}, {From: 150, To: 205}}
	o.Kept, o.Flagged = o.Ranges, []int{4, 13, 16}
	return r
}

// BenchmarkRingUnderLoad records captured requests from parallel goroutines
// into a ring bounded at 8 MiB, then reports the heap the dashboard holds
// (heap-MiB, after a GC) next to its bound and its own estimate (ring-MiB).
func BenchmarkRingUnderLoad(b *testing.B) {
	for _, capture := range []bool{true, false} {
		name := "capture"
		if !capture {
			name = "numbers-only"
		}
		b.Run(name, func(b *testing.B) { ringUnderLoad(b, capture) })
	}
}

func ringUnderLoad(b *testing.B, capture bool) {
	const bound = 8 << 20
	rec := realRecord(b)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	d := ui.New(ui.Options{Capture: capture, MaxRequests: 1 << 20, MaxBytes: bound})
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rec
		for pb.Next() {
			r.Time = time.Now()
			d.Record(r)
		}
	})
	b.StopTimer()

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	o := overviewOf(b, d)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-MiB")
	b.ReportMetric(float64(o.Ring.Bytes)/(1<<20), "ring-MiB")
	b.ReportMetric(float64(o.Ring.Requests), "requests-held")
	runtime.KeepAlive(d)
}

func overviewOf(b *testing.B, d *ui.Dashboard) ui.Overview {
	b.Helper()
	var o ui.Overview
	resp := get(b, d, "/ui/api/overview", "127.0.0.1:1", nil)
	if err := jsonDecode(resp.Body, &o); err != nil {
		b.Fatal(err)
	}
	return o
}
