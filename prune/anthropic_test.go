package prune

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/focusgate/focusgate"
)

// fakeClaude plays the Anthropic Messages API: it records each request and
// answers with the scripted texts in turn, or with status when it is not
// 200.
type fakeClaude struct {
	*httptest.Server
	mu       sync.Mutex
	requests []anthropicRequest
	headers  []http.Header
	paths    []string
}

func newFakeClaude(t *testing.T, status int, texts ...string) *fakeClaude {
	t.Helper()
	f := &fakeClaude{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req anthropicRequest
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "bad request body", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		n := len(f.requests)
		f.requests, f.headers, f.paths = append(f.requests, req), append(f.headers, r.Header.Clone()), append(f.paths, r.URL.Path)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if status != http.StatusOK {
			w.WriteHeader(status)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		text, _ := json.Marshal(texts[min(n, len(texts)-1)])
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":120,"output_tokens":9}}`, text)
	}))
	t.Cleanup(f.Close)
	return f
}

func TestAnthropicRetrieverAsksClaude(t *testing.T) {
	claude := newFakeClaude(t, http.StatusOK, "<think>The button.</think><answer>[(1,1), (3,4)]</answer>")
	r := messagesRetriever(RetrieverConfig{BaseURL: claude.URL + "/", Model: "claude-haiku-4-5", MaxTokens: 2048})
	q := Query{Goal: "Save the employee", Numbered: "   1 root\n   2 a\n   3 b\n   4 c", Lines: 4, Variant: focusgate.VariantDefender,
		Credential: focusgate.ClientCredential{Place: focusgate.AnthropicProvider.Credentials[0], Value: "sk-ant-client"}}
	sel, err := r.Select(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sel.Ranges) != "[{1 1} {3 4}]" || sel.Usage != (focusgate.RetrieverUsage{PromptTokens: 120, CompletionTokens: 9}) || sel.Reasoning != "The button." {
		t.Errorf("selection %+v", sel)
	}
	req, h := claude.requests[0], claude.headers[0]
	if claude.paths[0] != "/v1/messages" || h.Get("X-Api-Key") != "sk-ant-client" || h.Get("Anthropic-Version") != anthropicVersion {
		t.Errorf("request to %s with x-api-key %q, anthropic-version %q", claude.paths[0], h.Get("X-Api-Key"), h.Get("Anthropic-Version"))
	}
	if req.Model != "claude-haiku-4-5" || req.MaxTokens != 2048 || req.System != systemPrompt(focusgate.VariantDefender) ||
		len(req.Messages) != 1 || req.Messages[0].Role != "user" || req.Messages[0].Content != userPrompt(q) {
		t.Errorf("request %+v: want the shared prompts, the model and the output cap", req)
	}
}

// A client's own credential goes where the client put it (a subscription's
// OAuth token as a bearer token); the gateway's key beats the client's.
func TestAnthropicRetrieverCredentials(t *testing.T) {
	apiKey := focusgate.AnthropicProvider.Credentials[0]
	for _, tt := range []struct {
		configured string
		client     focusgate.ClientCredential
		wantKey    string
		wantAuth   string
	}{
		{"", clientBearer("sk-ant-oat01-xyz"), "", "Bearer sk-ant-oat01-xyz"},
		{"", focusgate.ClientCredential{Place: apiKey, Value: "sk-ant-client"}, "sk-ant-client", ""},
		{"sk-ant-team", focusgate.ClientCredential{Place: apiKey, Value: "sk-ant-client"}, "sk-ant-team", ""},
	} {
		claude := newFakeClaude(t, http.StatusOK, "<answer>[(1,1)]</answer>")
		r := messagesRetriever(RetrieverConfig{BaseURL: claude.URL, Model: "m", Signer: staticKey{apiKey, tt.configured}})
		if _, err := r.Select(context.Background(), Query{Numbered: "   1 x", Lines: 1, Credential: tt.client}); err != nil {
			t.Fatal(err)
		}
		if h := claude.headers[0]; h.Get("X-Api-Key") != tt.wantKey || h.Get("Authorization") != tt.wantAuth {
			t.Errorf("x-api-key %q, Authorization %q; want %q, %q", h.Get("X-Api-Key"), h.Get("Authorization"), tt.wantKey, tt.wantAuth)
		}
	}
}

// An answer without usable lines is asked again once, with the model's
// answer and the correction as the next turns.
func TestAnthropicRetrieverReasks(t *testing.T) {
	claude := newFakeClaude(t, http.StatusOK, "I think the second one.", "<answer>[(2,2)]</answer>")
	r := messagesRetriever(RetrieverConfig{BaseURL: claude.URL, Model: "m"})
	q := Query{Numbered: "   1 x\n   2 y", Lines: 2}
	sel, err := r.Select(context.Background(), q)
	if err != nil || fmt.Sprint(sel.Ranges) != "[{2 2}]" || sel.Usage != (focusgate.RetrieverUsage{PromptTokens: 240, CompletionTokens: 18}) {
		t.Fatalf("selection %+v, %v", sel, err)
	}
	msgs := claude.requests[1].Messages
	if len(msgs) != 3 || msgs[1].Role != "assistant" || msgs[1].Content != "I think the second one." || msgs[2].Content != correction(q) {
		t.Errorf("re-ask %+v", msgs)
	}
	if claude.requests[0].MaxTokens != defaultAnthropicMaxTokens {
		t.Errorf("max_tokens %d without a configured cap, want %d (the API requires one)", claude.requests[0].MaxTokens, defaultAnthropicMaxTokens)
	}
}

// Anthropic's HTTP errors fail open with the same reasons as OpenAI's.
func TestAnthropicRetrieverErrors(t *testing.T) {
	for status, want := range map[int]focusgate.Reason{
		http.StatusUnauthorized:        focusgate.ReasonRetrieverHTTP4xx,
		http.StatusTooManyRequests:     focusgate.ReasonRetrieverHTTP4xx,
		529:                            focusgate.ReasonRetrieverHTTP5xx,
		http.StatusInternalServerError: focusgate.ReasonRetrieverHTTP5xx,
	} {
		claude := newFakeClaude(t, status)
		_, err := messagesRetriever(RetrieverConfig{BaseURL: claude.URL, Model: "m"}).Select(context.Background(), Query{Numbered: "   1 x", Lines: 1})
		if got := Reason(err); got != want || !strings.Contains(err.Error(), fmt.Sprint(status)) {
			t.Errorf("HTTP %d: reason %s (%v), want %s", status, got, err, want)
		}
	}
}

// What the retriever's cloud says of a refused call is in the error, which
// the gateway logs: Bedrock's {"message": …} as Anthropic's error object.
func TestAnthropicRetrieverErrorSays(t *testing.T) {
	for _, tc := range []struct{ answer, want string }{
		{`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`, "invalid_request_error: max_tokens: too large"},
		{`{"message":"The provided model identifier is invalid."}`, "The provided model identifier is invalid."},
		{`{"error":{"code":400,"message":"Publisher model not found.","status":"NOT_FOUND"}}`, "Publisher model not found."},
		{`<html>Bad Request</html>`, "Bad Request"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, tc.answer)
		}))
		t.Cleanup(srv.Close)
		_, err := messagesRetriever(RetrieverConfig{BaseURL: srv.URL, Model: "m"}).Select(context.Background(), Query{Numbered: "   1 x", Lines: 1})
		if err == nil || !strings.HasSuffix(err.Error(), ": "+tc.want) {
			t.Errorf("answer %s: error %v, want one ending in %q", tc.answer, err, tc.want)
		}
	}
}
