package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// keyRecorder is a retriever that refuses every call and records the key it
// was called with: "Bearer …" or "x-api-key …", or "none".
type keyRecorder struct {
	URL  string
	mu   sync.Mutex
	keys []string
}

func newKeyRecorder(t *testing.T) *keyRecorder {
	k := &keyRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got := "none"
		switch {
		case r.Header.Get("Authorization") != "":
			got = r.Header.Get("Authorization")
		case r.Header.Get("X-Api-Key") != "":
			got = "x-api-key " + r.Header.Get("X-Api-Key")
		}
		k.mu.Lock()
		k.keys = append(k.keys, got)
		k.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid key"}}`)
	}))
	t.Cleanup(srv.Close)
	k.URL = srv.URL
	return k
}

func (k *keyRecorder) got() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys...)
}

// `focusgate prune` calls each retriever with the user's key of the
// provider that retriever speaks: OPENAI_API_KEY for an OpenAI one,
// ANTHROPIC_API_KEY for Claude, whatever API the body was written for; with
// no key of that provider, without a key. Another provider's key is never
// sent.
func TestPruneUsesTheKeyOfTheRetrieversProvider(t *testing.T) {
	const (
		chatBody     = "../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json"
		messagesBody = "../../testdata/agents/claude-code/playwright-mcp-admin/05-messages-stream.json"
		page         = "../../testdata/axtrees/bgym-pr301_workarena_standard_laptop_form.txt"
	)
	both := map[string]string{"OPENAI_API_KEY": "sk-openai-user", "ANTHROPIC_API_KEY": "sk-ant-user"}
	onlyOpenAI := map[string]string{"OPENAI_API_KEY": "sk-openai-user"}
	onlyAnthropic := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-user"}
	for _, tt := range []struct {
		name      string
		args      []string
		keys      map[string]string
		retriever string // "openai", "anthropic": FOCUSGATE_RETRIEVER_URL and _API; "": each API's own
		openai    string // the key the OpenAI retriever must get ("" if not called)
		anthropic string // the key the Anthropic retriever must get ("" if not called)
	}{
		{"chat body, OpenAI retriever", []string{"--request", chatBody}, both, "", "Bearer sk-openai-user", ""},
		{"Messages body, Claude retriever", []string{"--request", messagesBody}, both, "", "", "x-api-key sk-ant-user"},
		{"chat body, Claude retriever", []string{"--request", chatBody}, both, "anthropic", "", "x-api-key sk-ant-user"},
		{"Messages body, OpenAI retriever", []string{"--request", messagesBody}, both, "openai", "Bearer sk-openai-user", ""},
		{"Messages body, no Anthropic key", []string{"--request", messagesBody}, onlyOpenAI, "", "", "none"},
		{"chat body, Claude retriever, no Anthropic key", []string{"--request", chatBody}, onlyOpenAI, "anthropic", "", "none"},
		{"chat body, no OpenAI key", []string{"--request", chatBody}, onlyAnthropic, "", "none", ""},
		{"one page, Claude retriever", []string{"--goal", "Order 10 laptops", page}, both, "anthropic", "", "x-api-key sk-ant-user"},
		{"one page, OpenAI retriever", []string{"--goal", "Order 10 laptops", page}, both, "", "Bearer sk-openai-user", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			openai, anthropic := newKeyRecorder(t), newKeyRecorder(t)
			env := map[string]string{
				"FOCUSGATE_UPSTREAM_URL":  openai.URL + "/v1",
				"FOCUSGATE_ANTHROPIC_URL": anthropic.URL,
				"FOCUSGATE_MIN_TOKENS":    "1",
			}
			switch tt.retriever {
			case "openai":
				env["FOCUSGATE_RETRIEVER_URL"], env["FOCUSGATE_RETRIEVER_API"] = openai.URL+"/v1", "openai"
			case "anthropic":
				env["FOCUSGATE_RETRIEVER_URL"], env["FOCUSGATE_RETRIEVER_API"] = anthropic.URL, "anthropic"
			}
			for k, v := range tt.keys {
				env[k] = v
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"focusgate", "prune"}, tt.args...), func(k string) string { return env[k] }, nil, &stdout, &stderr)
			if err == nil || !strings.Contains(stderr.String(), "retriever-http-4xx") {
				t.Fatalf("want a refused retriever call and a failed-open exit, got %v:\n%s", err, stderr.String())
			}
			for _, r := range []struct {
				name string
				rec  *keyRecorder
				want string
			}{{"OpenAI", openai, tt.openai}, {"Anthropic", anthropic, tt.anthropic}} {
				got := r.rec.got()
				if r.want == "" && len(got) > 0 {
					t.Errorf("the %s retriever was called (with %q)", r.name, got)
				}
				if r.want != "" && len(got) == 0 {
					t.Errorf("the %s retriever was not called", r.name)
				}
				for _, k := range got {
					if k != r.want {
						t.Errorf("the %s retriever got %q, want %q", r.name, k, r.want)
					}
				}
			}
		})
	}
}
