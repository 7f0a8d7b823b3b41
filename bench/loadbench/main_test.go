package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/proxy"
)

func TestPercentile(t *testing.T) {
	ms := func(values ...int) []time.Duration {
		var d []time.Duration
		for _, n := range values {
			d = append(d, time.Duration(n)*time.Millisecond)
		}
		return d
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one value", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd count", ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{"median of even count is the lower middle", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of 100", hundred, 0.99, 99 * time.Millisecond},
		{"p50 of 100", hundred, 0.50, 50 * time.Millisecond},
		{"p100 is the maximum", hundred, 1, 100 * time.Millisecond},
	} {
		if got := percentile(tc.sorted, tc.q); got != tc.want {
			t.Errorf("%s: percentile(q=%v) = %v, want %v", tc.name, tc.q, got, tc.want)
		}
	}
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 49705: "49,705", 1234567: "1,234,567"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDriveSendsExactlyTheRequestsAsked(t *testing.T) {
	var sent atomic.Int64
	lat, _, err := drive(t.Context(), 4, 25, 1, time.Hour, func(context.Context, int) error {
		sent.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lat) != 1 || len(lat[0]) != 25 || sent.Load() != 25 {
		t.Fatalf("%d kinds of latencies for %d requests sent, want 25 of one kind", len(lat), sent.Load())
	}
	if !slices.IsSorted(lat[0]) {
		t.Error("latencies are not sorted")
	}
}

// With several targets, a client sends to each once in every cycle, in an
// order that changes, so that no target always follows the same other.
func TestDriveSendsToEveryTargetInEachCycle(t *testing.T) {
	const kinds, cycles = 3, 40
	var order []int
	lat, _, err := drive(t.Context(), 1, cycles, kinds, time.Hour, func(_ context.Context, k int) error {
		order = append(order, k)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	orders := map[[kinds]int]bool{}
	for c := range cycles {
		var cycle [kinds]int
		copy(cycle[:], order[c*kinds:])
		if sorted := slices.Sorted(slices.Values(cycle[:])); !slices.Equal(sorted, []int{0, 1, 2}) {
			t.Fatalf("cycle %d sent to %v, want each of the 3 targets once", c, cycle)
		}
		orders[cycle] = true
	}
	if len(orders) < 2 {
		t.Errorf("all %d cycles sent in the order %v", cycles, order[:kinds])
	}
	for k, l := range lat {
		if len(l) != cycles {
			t.Errorf("target %d: %d latencies, want %d", k, len(l), cycles)
		}
	}
}

func TestDriveStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var sent atomic.Int64
	_, _, err := drive(t.Context(), 4, 0, 2, time.Hour, func(ctx context.Context, _ int) error {
		if sent.Add(1) == 10 {
			return boom
		}
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Errorf("drive = %v, want %v", err, boom)
	}
}

func TestCheckRejectsWhatTheCaseDoesNotExpect(t *testing.T) {
	tree := bodyCase{name: "tree", answerSize: 10, gatewayStatus: "pruned", cache: "hit"}
	resp := func(status int, header ...string) *http.Response {
		h := http.Header{}
		for i := 0; i < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h}
	}
	fg, bare := target{name: gateway}, target{name: reverseProxy}
	hit := resp(http.StatusOK, proxy.HeaderStatus, "pruned", proxy.HeaderCache, "hit")
	for _, tc := range []struct {
		name string
		t    target
		resp *http.Response
		n    int64
		ok   bool
	}{
		{"a pruned cache hit", fg, hit, 10, true},
		{"a bare proxy's answer carries no focusgate headers", bare, resp(http.StatusOK), 10, true},
		{"an error status", bare, resp(http.StatusBadGateway), 10, false},
		{"a cut answer", bare, resp(http.StatusOK), 9, false},
		{"not pruned", fg, resp(http.StatusOK, proxy.HeaderStatus, "failed-open; reason=timeout", proxy.HeaderCache, "hit"), 10, false},
		{"a cache miss", fg, resp(http.StatusOK, proxy.HeaderStatus, "pruned", proxy.HeaderCache, "miss"), 10, false},
	} {
		if err := tree.check(tc.t, tc.resp, tc.n); (err == nil) != tc.ok {
			t.Errorf("%s: check = %v, want ok = %v", tc.name, err, tc.ok)
		}
	}
}

// TestRunEndToEnd builds focusgate and the bare proxies and runs every case
// briefly, over a path of 1 Gbit/s to the upstream: the report must have a
// row for each run, and focusgate must have asked the retriever once for the
// whole run.
func TestRunEndToEnd(t *testing.T) {
	report := runReport(t, "-requests", "20", "-warmup", "0", "-concurrency", "1,4", "-rounds", "2", "-upstream-mbit", "1000")
	for _, c := range caseNames {
		for _, clients := range []string{"1", "4"} {
			for _, tg := range []string{direct, defaultProxy, reverseProxy, gateway} {
				if tg == defaultProxy && c == "stream" {
					continue // not measured: see run
				}
				if row := "| " + c + " | " + clients + " | " + tg + " | 20 |"; !strings.Contains(report, row) {
					t.Errorf("the report has no row starting %q:\n%s", row, report)
				}
			}
		}
	}
	if !strings.Contains(report, "a path of 1000 Mbit/s") {
		t.Errorf("the report does not say the path's rate:\n%s", report)
	}
	if !strings.Contains(report, "retriever calls in the whole run: 1)") {
		t.Errorf("the report does not show a single retriever call:\n%s", report)
	}
}

// TestRunInterleaved measures a case's targets at once: the requests of a
// run are shared among them, each answered as the case expects.
func TestRunInterleaved(t *testing.T) {
	report := runReport(t, "-interleave", "-requests", "15", "-warmup", "0", "-concurrency", "2", "-cases", "tree,stream")
	for _, row := range []string{
		"| tree | 2 | direct | 15 |", "| tree | 2 | default-proxy | 15 |", "| tree | 2 | reverse-proxy | 15 |", "| tree | 2 | focusgate | 15 |",
		"| stream | 2 | direct | 15 |", "| stream | 2 | reverse-proxy | 15 |", "| stream | 2 | focusgate | 15 |",
	} {
		if !strings.Contains(report, row) {
			t.Errorf("the report has no row starting %q:\n%s", row, report)
		}
	}
	if !strings.Contains(report, "targets run at once") {
		t.Errorf("the report does not say its targets ran at once:\n%s", report)
	}
}

// runReport runs loadbench on the repository's test data with args and
// returns its report.
func runReport(t *testing.T, args ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the gateways")
	}
	var out bytes.Buffer
	err := run(t.Context(), append(args,
		"-tree", "../../testdata/axtrees/bgym-pr301_web_amazon_macbook.txt",
		"-request", "../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json",
		"-notes", filepath.Join("../..", workload.NotesFile),
		"-pages", filepath.Join("../..", workload.PagesDir),
	), &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestCarried(t *testing.T) {
	for _, tc := range []struct {
		bytes         int
		bitsPerSecond float64
		want          time.Duration
	}{
		{125_000, 1e9, time.Millisecond},
		{189_576, 1e8, 15_166_080 * time.Nanosecond},
		{0, 1e8, 0},
	} {
		if got := carried(tc.bytes, tc.bitsPerSecond); got != tc.want {
			t.Errorf("carried(%d, %g) = %v, want %v", tc.bytes, tc.bitsPerSecond, got, tc.want)
		}
	}
}

// TestUpstreamAnswersAtThePathsPace sends the upstream a body that a path of
// 8 Mbit/s carries in 100 ms: however fast or loaded the machine, the answer
// cannot come sooner.
func TestUpstreamAnswersAtThePathsPace(t *testing.T) {
	up, err := serveFake(upstream{bitsPerSecond: 8e6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Close() })
	body := bytes.Repeat([]byte("x"), 100_000)
	start := time.Now()
	resp, err := http.Post(up.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("the answer came %v after the request, sooner than the 100 ms the path takes to carry its body", took)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d, want 200", resp.StatusCode)
	}
}
