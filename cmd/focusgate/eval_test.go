package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/focusgate/focusgate/eval"
)

const devTraces = "../../testdata/traces/browsergym-dev.jsonl.gz"

// targetRetriever plays a good retriever on the dev traces: it reads the
// numbered tree in the prompt and keeps every line that holds one of the
// first n steps' target elements, with two lines either side. It answers
// with a 500 when failing is set.
func targetRetriever(t *testing.T, n int, failing bool) (url string, auth func() []string) {
	t.Helper()
	f, err := os.Open(devTraces)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	traces, err := eval.ReadTraces(f, n)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, tr := range traces {
		targets[tr.TargetBID] = true
	}
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if failing {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"the model is overloaded","type":"server_error"}}`)
			return
		}
		var req openai.ChatCompletionRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		prompt := req.Messages[len(req.Messages)-1].Content
		var ranges []string
		for line := range strings.Lines(prompt) {
			// "  12 \t\t[a405] button 'Order'": the number, then the line.
			f := strings.Fields(line)
			if len(f) < 2 || !strings.HasPrefix(f[1], "[") {
				continue
			}
			num, err := strconv.Atoi(f[0])
			if err == nil && targets[strings.Trim(f[1], "[]")] {
				ranges = append(ranges, fmt.Sprintf("(%d,%d)", max(num-2, 1), num+2))
			}
		}
		resp := openai.ChatCompletionResponse{
			Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{
				Role:    openai.ChatMessageRoleAssistant,
				Content: "<think>The target and its neighbours.</think><answer>[" + strings.Join(ranges, ", ") + "]</answer>",
			}}},
			Usage: openai.Usage{PromptTokens: len(prompt) / 4, CompletionTokens: 20},
		}
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(keys)
	}
}

func runEval(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), append([]string{"focusgate", "eval"}, args...), func(k string) string { return env[k] }, nil, &out, &errOut)
	return out.String(), errOut.String(), err
}

// decodeReport reads --json output, which must be the only thing on stdout.
func decodeReport(t *testing.T, stdout string) map[string]map[string]map[string]any {
	t.Helper()
	var report struct {
		ActionModel string                               `json:"action_model"`
		Strategies  map[string]map[string]map[string]any `json:"strategies"`
		Skipped     []any                                `json:"skipped"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&report); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON report (%v):\n%.500s", err, stdout)
	}
	if report.ActionModel != "gpt-4.1" || report.Skipped == nil {
		t.Errorf("action_model %q, skipped %v; want gpt-4.1 and a list", report.ActionModel, report.Skipped)
	}
	return report.Strategies
}

func keys[M ~map[string]V, V any](m M) []string { return slices.Sorted(maps.Keys(m)) }

func TestEvalLLMEndToEnd(t *testing.T) {
	url, auth := targetRetriever(t, 20, false)
	env := map[string]string{"FOCUSGATE_RETRIEVER_URL": url, "OPENAI_API_KEY": "sk-user"}
	stdout, stderr, err := runEval(t, env, "--data", devTraces, "--strategy", "llm,bm25", "--limit", "20", "--json")
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, stderr)
	}
	strategies := decodeReport(t, stdout)

	if got := keys(strategies); !slices.Equal(got, []string{"bm25@2000", "llm"}) {
		t.Fatalf("strategies %v, want llm and bm25@2000", got)
	}
	rowKeys := []string{"mean_reduction", "recall", "recall_without_focus", "saved_usd", "steps", "target_focused", "tokens_p50", "tokens_p95"}
	for name, rows := range strategies {
		if got := keys(rows); !slices.Equal(got, []string{"all", "workarena"}) {
			t.Errorf("%s rows %v, want all and workarena (the first 20 steps are WorkArena's)", name, got)
		}
		want := rowKeys
		if name == "llm" {
			want = append(slices.Clone(rowKeys), "retriever")
		}
		if got := slices.Sorted(maps.Keys(rows["all"])); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("%s row fields %v, want %v", name, got, want)
		}
	}

	llm := strategies["llm"]["all"]
	retriever, _ := llm["retriever"].(map[string]any)
	if got := keys(retriever); !slices.Equal(got, []string{"completion_tokens", "cost_usd", "failed_open", "failures", "latency_p50_ms", "latency_p95_ms", "model", "prompt_tokens"}) {
		t.Errorf("retriever fields %v", got)
	}
	if llm["steps"] != 20.0 || llm["recall"] != 1.0 || llm["mean_reduction"].(float64) < 0.5 {
		t.Errorf("llm: %v, want 20 steps, recall 1 and most tokens removed", llm)
	}
	if cost, _ := retriever["cost_usd"].(float64); cost <= 0 || retriever["model"] != "gpt-4.1-mini" || retriever["failed_open"] != 0.0 {
		t.Errorf("llm retriever: %v, want a positive cost for gpt-4.1-mini and no failure", retriever)
	}
	if bm25 := strategies["bm25@2000"]["all"]; bm25["recall"].(float64) >= 1 {
		t.Errorf("bm25: %v; the fake retriever should beat it", bm25)
	}
	calls := auth()
	if len(calls) != 20 || slices.ContainsFunc(calls, func(a string) bool { return a != "Bearer sk-user" }) {
		t.Errorf("retriever calls with Authorization %q, want 20 with the user's key", calls)
	}
	if !strings.Contains(stderr, "focusgate eval: 20 steps of "+devTraces+" (0 skipped)") {
		t.Errorf("stderr lacks the summary line: %q", stderr)
	}
}

func TestEvalReportsFailedOpenSteps(t *testing.T) {
	url, _ := targetRetriever(t, 5, true)
	env := map[string]string{"FOCUSGATE_RETRIEVER_URL": url, "FOCUSGATE_RETRIEVER_API_KEY": "sk-retriever"}
	stdout, stderr, err := runEval(t, env, "--data", devTraces, "--strategy", "llm", "--limit", "5")
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		"llm       workarena  5      100.0%  100.0%            0.0%",
		"llm on workarena: 5 steps failed open and went unpruned:\n  retriever-http-500: 5 (",
		"the model is overloaded",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
}

func TestEvalWithoutKeyRunsTheBaselines(t *testing.T) {
	stdout, stderr, err := runEval(t, map[string]string{}, "--data", devTraces, "--limit", "5", "--json")
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, stderr)
	}
	if got := keys(decodeReport(t, stdout)); !slices.Equal(got, []string{"bm25@2000", "truncate@2000"}) {
		t.Errorf("strategies %v, want the baselines only", got)
	}
	if !strings.Contains(stderr, "no API key") || !strings.Contains(stderr, "llm skipped") {
		t.Errorf("stderr does not say why llm was skipped: %q", stderr)
	}
}

func TestEvalBudgets(t *testing.T) {
	stdout, _, err := runEval(t, map[string]string{}, "--data", devTraces, "--limit", "10", "--strategy", "truncate", "--budget", "4000, 1000", "--budget", "1000")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for line := range strings.Lines(stdout) {
		if f := strings.Fields(line)[0]; f == "strategy" || strings.Contains(f, "@") { // not a note below the table
			rows = append(rows, f)
		}
	}
	if want := []string{"strategy", "truncate@1000", "truncate@4000"}; !slices.Equal(rows, want) {
		t.Errorf("table rows %v, want %v:\n%s", rows, want, stdout)
	}
}

func TestEvalErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"axtree_txt":"x","target_bid":"1"}`+"\n{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown strategy", []string{"--data", devTraces, "--strategy", "llm,grep"}, `unknown strategy "grep"`},
		{"zero budget", []string{"--data", devTraces, "--budget", "1000,0"}, `budget "0" is not a positive number`},
		{"budget not a number", []string{"--data", devTraces, "--budget", "lots"}, `budget "lots"`},
		{"no data here", nil, "--data is required"},
		{"missing file", []string{"--data", filepath.Join(dir, "nope.jsonl")}, "no such file"},
		{"bad line", []string{"--data", bad}, "bad.jsonl: eval: line 2: invalid character"},
		{"no steps", []string{"--data", empty}, "no steps in"},
		{"argument", []string{"--data", devTraces, "traces.jsonl"}, "eval takes no arguments"},
		{"concurrency", []string{"--data", devTraces, "--concurrency", "0"}, "--concurrency must be at least 1"},
		{"bad configuration", []string{"--data", devTraces, "--mode", "shrink"}, "FOCUSGATE_MODE"},
		{"mode off", []string{"--data", devTraces, "--mode", "off"}, "eval: mode off prunes nothing to measure"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runEval(t, map[string]string{}, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestEvalHelp(t *testing.T) {
	stdout, _, err := runEval(t, map[string]string{}, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Usage: focusgate eval", "--data", "--strategy", "--budget", "--limit", "--json", "--model", "--concurrency", "FOCUSGATE_RETRIEVER_URL", "FOCUSGATE_MODE"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("eval --help lacks %q", want)
		}
	}
}

// Prices configured for the gateway value the saving in eval too.
func TestEvalUsesConfiguredPrices(t *testing.T) {
	var stdout bytes.Buffer
	env := map[string]string{"FOCUSGATE_PRICES": `{"my-action-model": {"input": 1000, "output": 0}}`}
	err := run(context.Background(), []string{"focusgate", "eval", "--data", "../../testdata/traces/browsergym-dev.jsonl.gz",
		"--strategy", "truncate", "--limit", "5", "--model", "my-action-model", "--json"},
		func(k string) string { return env[k] }, nil, &stdout, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Strategies map[string]map[string]struct {
			SavedUSD *float64 `json:"saved_usd"`
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	row := report.Strategies["truncate@2000"]["workarena"]
	if row.SavedUSD == nil || *row.SavedUSD <= 0 {
		t.Errorf("saved_usd = %v for a model priced only in FOCUSGATE_PRICES", row.SavedUSD)
	}
}
