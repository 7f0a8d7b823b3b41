package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// scriptedRetriever answers every chat completion with content, or fails
// with status when it is not 200.
func scriptedRetriever(t *testing.T, status int, content string) (url string, prompts func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
			return
		}
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"`+content+`"}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func TestPruneCommand(t *testing.T) {
	const file = "../../testdata/axtrees/bgym-pr301_workarena_standard_laptop_form.txt"
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	url, prompts := scriptedRetriever(t, http.StatusOK, "<answer>[(1,2), (150,152)]</answer>")
	env := map[string]string{"FOCUSGATE_RETRIEVER_URL": url, "OPENAI_API_KEY": "sk-user"}
	getenv := func(k string) string { return env[k] }

	for _, tt := range []struct {
		name  string
		args  []string
		stdin io.Reader
	}{
		{"file", []string{"focusgate", "prune", "--goal", "Order 10 laptops", "--mode", "ancestors", file}, nil},
		{"stdin", []string{"focusgate", "prune", "--goal", "Order 10 laptops", "--mode", "ancestors"}, bytes.NewReader(page)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), tt.args, getenv, tt.stdin, &stdout, &stderr); err != nil {
				t.Fatalf("prune: %v\n%s", err, stderr.String())
			}
			if stdout.Len() >= len(page)/2 || !strings.HasPrefix(stdout.String(), "RootWebArea 'Standard Laptop") {
				t.Errorf("stdout is not the pruned page (%d of %d bytes):\n%.300s", stdout.Len(), len(page), stdout.String())
			}
			if !strings.Contains(stderr.String(), "pruned, 199 lines (browsergym)") || !strings.Contains(stderr.String(), "fewer") {
				t.Errorf("stderr lacks the statistics: %q", stderr.String())
			}
		})
	}
	if got := prompts()[0]; !strings.Contains(got, "Order 10 laptops") || !strings.Contains(got, "   1 RootWebArea") {
		t.Errorf("the retriever did not get the goal and the numbered tree: %.300s", got)
	}
}

func TestPruneCommandFailures(t *testing.T) {
	const file = "../../testdata/axtrees/bgym-pr301_workarena_standard_laptop_form.txt"
	page, _ := os.ReadFile(file)

	t.Run("retriever down prints the page unchanged and fails", func(t *testing.T) {
		url, _ := scriptedRetriever(t, http.StatusInternalServerError, "")
		env := map[string]string{"FOCUSGATE_RETRIEVER_URL": url}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"focusgate", "prune", file}, func(k string) string { return env[k] }, nil, &stdout, &stderr)
		if !errors.Is(err, errFailedOpen) || !strings.Contains(err.Error(), "retriever-http-5xx") {
			t.Errorf("error %v, want a failed-open error naming the reason", err)
		}
		if !bytes.Equal(stdout.Bytes(), page) {
			t.Error("the page was not printed unchanged")
		}
	})
	t.Run("no tree in the input", func(t *testing.T) {
		err := run(context.Background(), []string{"focusgate", "prune"}, func(string) string { return "" },
			strings.NewReader("# Notes\n- one\n- two\n"), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "no page observation") {
			t.Errorf("error %v, want no page observation found", err)
		}
	})
}

// `focusgate prune --request` prints the very bytes the gateway forwards with
// the same settings. With the team's Redis, it also sees the selections the
// gateway stored, so the older pages of a conversation come out re-applied
// exactly as the gateway sent them: every request of each conversation is
// sent through a running gateway, then given to the command.
func TestPruneRequestPrintsWhatTheGatewayForwards(t *testing.T) {
	redis := redistest.Start(t)
	retriever := newFakeModel(t, neededElement)
	upstream := newFakeModel(t, nil)
	env := map[string]string{
		"FOCUSGATE_UPSTREAM_URL":  upstream.URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL": retriever.URL + "/v1",
		"FOCUSGATE_REDIS_URL":     redis.URL(),
		"FOCUSGATE_REDIS_TIMEOUT": cachetest.CallTimeout.String(),
		"FOCUSGATE_MODE":          "ancestors",
	}
	gw := startGateway(t, maps.Clone(env))
	getenv := func(k string) string { return env[k] }

	for _, conv := range []string{
		"../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json",
		"../../testdata/agents/playwright-mcp/chat",
		"../../testdata/agents/playwright-mcp/chat-json-content",
		"../../testdata/agents/openai-agents/responses-stream",
		"../../testdata/agents/chrome-devtools-mcp/chat",
		"../../testdata/agents/stagehand/responses",
	} {
		files := []string{conv}
		if filepath.Ext(conv) != ".json" {
			files, _ = filepath.Glob(filepath.Join(conv, "*.json"))
			slices.Sort(files)
		}
		pruned := 0
		for _, f := range files {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			path := "/v1/chat/completions"
			if strings.Contains(filepath.Base(f), "responses") {
				path = "/v1/responses"
			}
			resp, err := http.Post(gw.URL+path, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status := resp.Header.Get("X-Focusgate-Status")
			forwarded := upstream.next(t)

			var stdout, stderr bytes.Buffer
			err = run(context.Background(), []string{"focusgate", "prune", "--request", f}, getenv, nil, &stdout, &stderr)
			if err != nil {
				t.Fatalf("%s: prune --request: %v\n%s", f, err, stderr.String())
			}
			if !bytes.Equal(stdout.Bytes(), forwarded) {
				t.Errorf("%s (gateway: %s): prune --request printed %d bytes, the gateway forwarded %d other ones", f, status, stdout.Len(), len(forwarded))
			}
			want := "status=" + strings.SplitN(status, ";", 2)[0]
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("%s: stderr %q does not say %s", f, stderr.String(), want)
			}
			if strings.HasPrefix(status, "pruned") {
				pruned++
			}
		}
		if pruned == 0 {
			t.Errorf("%s: no request was pruned: the comparison proved nothing", conv)
		}
	}
}

func TestPruneRequestAPIFlag(t *testing.T) {
	body := []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hello"}]}`)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"focusgate", "prune", "--request", "--api", "responses"}, func(string) string { return "" }, bytes.NewReader(body), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), body) || !strings.Contains(stderr.String(), "api=responses") || !strings.Contains(stderr.String(), "reason=no-observation") {
		t.Errorf("stdout %q, stderr %q: want the body unchanged, api=responses, no-observation", stdout.String(), stderr.String())
	}
	err = run(context.Background(), []string{"focusgate", "prune", "--request", "--api", "soap"}, func(string) string { return "" }, bytes.NewReader(body), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--api") {
		t.Errorf("unknown --api accepted: %v", err)
	}
}

// FOCUSGATE_BYPASS_MODELS reaches the pipeline: a matching action model's
// request goes out as it came, before the retriever is asked anything.
func TestBypassModelsSetting(t *testing.T) {
	const file = "../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json"
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	url, prompts := scriptedRetriever(t, http.StatusOK, "<answer>[(1,2)]</answer>")
	env := map[string]string{"FOCUSGATE_RETRIEVER_URL": url, "FOCUSGATE_BYPASS_MODELS": "o3*, gpt-4.1*"}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"focusgate", "prune", "--request", file}, func(k string) string { return env[k] }, nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), body) || !strings.Contains(stderr.String(), "reason=bypass-model") || len(prompts()) != 0 {
		t.Errorf("stderr %q, %d retriever calls, body changed: %v; want bypass-model, no call, the body as it came", stderr.String(), len(prompts()), !bytes.Equal(stdout.Bytes(), body))
	}
	env["FOCUSGATE_BYPASS_MODELS"] = "o3["
	err = run(context.Background(), []string{"focusgate", "prune", "--request", file}, func(k string) string { return env[k] }, nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "FOCUSGATE_BYPASS_MODELS") {
		t.Errorf("a malformed pattern: error %v, want one naming FOCUSGATE_BYPASS_MODELS", err)
	}
}
