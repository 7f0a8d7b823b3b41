package eval

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadTraces(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join("testdata", "traces.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Trace{
		{
			ID: "shop#0", Benchmark: "webarena", Task: "webarena.1", Step: 0,
			Goal:   "Buy the red shoes",
			AXTree: "RootWebArea 'Shop'\n\t[1] link 'Red shoes'", Action: "click('1')", TargetBID: "1",
			EpisodeSuccess: true,
		},
		{
			ID: "shop#1", Benchmark: "unknown", Step: 1,
			Goal:    "Buy the red shoes",
			History: []Action{{Step: 0, Action: "click('1')"}},
			AXTree:  "RootWebArea 'Red shoes'\n\t[7] button 'Buy'", TargetBID: "7",
		},
	}
	for _, tt := range []struct {
		name  string
		data  []byte
		limit int
		want  []Trace
	}{
		{"plain", plain, 0, want},
		{"gzip", gzipped(t, plain), 0, want},
		{"CRLF line ends", bytes.ReplaceAll(plain, []byte("\n"), []byte("\r\n")), 0, want},
		{"limit", gzipped(t, plain), 1, want[:1]},
		{"limit above the count", plain, 10, want},
		{"empty", nil, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadTraces(bytes.NewReader(tt.data), tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tt.want, tracesEqual) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func tracesEqual(a, b Trace) bool {
	return a.ID == b.ID && a.Benchmark == b.Benchmark && a.Task == b.Task && a.Step == b.Step &&
		a.Goal == b.Goal && slices.Equal(a.History, b.History) && a.AXTree == b.AXTree &&
		a.Action == b.Action && a.TargetBID == b.TargetBID && a.EpisodeSuccess == b.EpisodeSuccess
}

func TestReadTracesErrors(t *testing.T) {
	const ok = `{"id":"a","axtree_txt":"RootWebArea 'x'","target_bid":"1"}` + "\n"
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"bad JSON", []byte(ok + "\n" + `{"id": "b", "axtree_txt": ` + "\n"), "line 3: unexpected end of JSON input"},
		{"not an object", []byte(ok + "[1, 2]\n"), "line 2: json: cannot unmarshal array"},
		{"wrong field type", []byte(`{"step":"one","axtree_txt":"x","target_bid":"1"}`), "line 1: json: cannot unmarshal string"},
		{"no tree", []byte(ok + ok + `{"id":"c","target_bid":"1"}`), "line 3: no axtree_txt"},
		{"no target", []byte(`{"id":"c","axtree_txt":"RootWebArea 'x'"}`), "line 1: no target_bid"},
		{"line too long", []byte(ok + `{"goal":"` + strings.Repeat("x", MaxLineBytes) + `"}`), "line 2: longer than"},
		{"truncated gzip", gzipped(t, []byte(ok+ok))[:40], "unexpected EOF"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadTraces(bytes.NewReader(tt.data), 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v (with %d traces), want one containing %q", err, len(got), tt.want)
			}
		})
	}
}

func TestReadTracesDevSet(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "testdata", "traces", "browsergym-dev.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	traces, err := ReadTraces(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, tr := range traces {
		counts[tr.Benchmark]++
	}
	if len(traces) != 491 || counts["workarena"] != 467 || counts["webarena"] != 24 {
		t.Errorf("read %d steps %v, want 491: 467 workarena, 24 webarena", len(traces), counts)
	}
}

func TestHistoryText(t *testing.T) {
	got := historyText([]Action{
		{Step: 0, Action: "click('a405')"},
		{Step: 1, Action: "fill('a12', 'x')", Error: "element is not visible"},
	})
	want := "step 0: click('a405')\nstep 1: fill('a12', 'x')\n  error: element is not visible"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	var long []Action
	for i := range 1000 {
		long = append(long, Action{Step: i, Action: "scroll(0, 500)"})
	}
	got = historyText(long)
	if len(got) > 8192 || !strings.HasPrefix(got, "step ") || !strings.HasSuffix(got, "step 999: scroll(0, 500)") {
		t.Errorf("long history not cut to its most recent whole lines: %d bytes, %.40q...%q", len(got), got, got[max(len(got)-30, 0):])
	}
}

func FuzzReadTraces(f *testing.F) {
	f.Add([]byte(`{"id":"a","benchmark":"webarena","axtree_txt":"RootWebArea 'x'\n\t[1] link 'y'","target_bid":"1","history":[{"step":0,"action":"noop()","error":""}]}` + "\n\n"))
	f.Add([]byte(`{"axtree_txt":"x","target_bid":"1"}` + "\r\n" + `{"axtree_txt":`))
	f.Add([]byte("\x1f\x8b\x08\x00"))
	f.Add(gzipped(f, []byte(`{"axtree_txt":"x","target_bid":"1"}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		traces, err := ReadTraces(bytes.NewReader(data), 0)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "eval: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		for i, tr := range traces {
			if tr.AXTree == "" || tr.TargetBID == "" || tr.Benchmark == "" {
				t.Fatalf("trace %d accepted without a tree, a target or a benchmark: %+v", i, tr)
			}
		}
	})
}
