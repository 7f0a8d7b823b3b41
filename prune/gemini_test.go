package prune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/focusgate/focusgate"
)

// fakeGemini plays the Gemini API's generateContent: it records each
// request and answers with the scripted parts in turn, or with status when
// it is not 200.
type fakeGemini struct {
	*httptest.Server
	mu       sync.Mutex
	requests []geminiRequest
	headers  []http.Header
	paths    []string
}

func newFakeGemini(t *testing.T, status int, finish string, answers ...[]geminiPart) *fakeGemini {
	t.Helper()
	f := &fakeGemini{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req geminiRequest
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
			fmt.Fprintf(w, `{"error":{"code":%d,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`, status)
			return
		}
		parts, _ := json.Marshal(answers[min(n, len(answers)-1)])
		fmt.Fprintf(w, `{"candidates":[{"content":{"parts":%s,"role":"model"},"finishReason":%q,"index":0}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":9,"thoughtsTokenCount":30,"totalTokenCount":159},"modelVersion":"gemini-2.5-flash-lite"}`, parts, finish)
	}))
	t.Cleanup(f.Close)
	return f
}

func TestGeminiRetrieverAsksGemini(t *testing.T) {
	gemini := newFakeGemini(t, http.StatusOK, "STOP", []geminiPart{
		{Text: "Which lines? Line 9 is a trap.", Thought: true},
		{Text: "<think>The button.</think><answer>[(1,1), (3,4)]</answer>"},
	})
	q := Query{Goal: "Save the employee", Numbered: "   1 root\n   2 a\n   3 b\n   4 c", Lines: 4, Variant: focusgate.VariantLine,
		Credential: focusgate.ClientCredential{Place: focusgate.GeminiProvider.Credentials[0], Value: "AIza-client"}}
	for _, base := range []string{gemini.URL, gemini.URL + "/", gemini.URL + "/v1beta"} {
		r := geminiRetriever(RetrieverConfig{BaseURL: base, Model: "gemini-2.5-flash-lite", MaxTokens: 2048})
		sel, err := r.Select(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(sel.Ranges); got != "[{1 1} {3 4}]" {
			t.Errorf("ranges %s, want the answer's, thoughts aside", got)
		}
		if sel.Usage.PromptTokens != 120 || sel.Usage.CompletionTokens != 39 {
			t.Errorf("usage %+v, want 120 prompt and 9+30 completion tokens", sel.Usage)
		}
	}
	if len(gemini.paths) != 3 {
		t.Fatalf("%d calls, want 3", len(gemini.paths))
	}
	for i, p := range gemini.paths {
		if p != "/v1beta/models/gemini-2.5-flash-lite:generateContent" {
			t.Errorf("call %d to %s", i, p)
		}
		if h := gemini.headers[i]; h.Get("X-Goog-Api-Key") != "AIza-client" || h.Get("Authorization") != "" {
			t.Errorf("call %d: key in x-goog-api-key %q, Authorization %q", i, h.Get("X-Goog-Api-Key"), h.Get("Authorization"))
		}
	}
	req := gemini.requests[0]
	if len(req.SystemInstruction.Parts) != 1 || req.SystemInstruction.Parts[0].Text == "" {
		t.Error("no system instruction")
	}
	if len(req.Contents) != 1 || req.Contents[0].Role != "user" || req.GenerationConfig.MaxOutputTokens != 2048 {
		t.Errorf("request %+v", req)
	}
}

func TestGeminiRetrieverFailures(t *testing.T) {
	q := Query{Goal: "g", Numbered: "   1 root\n   2 a", Lines: 2, Variant: focusgate.VariantLine}
	t.Run("an error status is a StatusError with Google's message", func(t *testing.T) {
		gemini := newFakeGemini(t, http.StatusServiceUnavailable, "")
		_, err := geminiRetriever(RetrieverConfig{BaseURL: gemini.URL, Model: "gemini-2.5-flash-lite", Signer: staticKey{focusgate.GeminiProvider.Credentials[0], "AIza-own"}}).Select(context.Background(), q)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != http.StatusServiceUnavailable {
			t.Fatalf("err %v, want a 503 StatusError", err)
		}
		if got := gemini.headers[0].Get("X-Goog-Api-Key"); got != "AIza-own" {
			t.Errorf("key %q, want the retriever's own", got)
		}
	})
	t.Run("a client's OAuth token goes as the client sent it", func(t *testing.T) {
		gemini := newFakeGemini(t, http.StatusOK, "STOP", []geminiPart{{Text: "<answer>[(1,2)]</answer>"}})
		q := q
		q.Credential = clientBearer("ya29.a0token")
		if _, err := geminiRetriever(RetrieverConfig{BaseURL: gemini.URL, Model: "gemini-2.5-flash-lite"}).Select(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		if h := gemini.headers[0]; h.Get("Authorization") != "Bearer ya29.a0token" || h.Get("X-Goog-Api-Key") != "" {
			t.Errorf("headers %v", h)
		}
	})
}

// Every API a provider's retriever speaks has a client, and no other API
// has one.
func TestEveryProviderHasARetriever(t *testing.T) {
	for _, p := range focusgate.Providers {
		for _, r := range p.Retrievers {
			if _, err := NewRetriever(RetrieverConfig{Speaks: r.Speaks, BaseURL: "http://127.0.0.1:1", Model: "m"}); err != nil {
				t.Errorf("%s: %v", p.Name, err)
			}
		}
	}
	if _, err := NewRetriever(RetrieverConfig{Speaks: focusgate.APIConverse}); err == nil {
		t.Error("Converse has a retriever client, which no provider calls")
	}
}
