package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// clientOf is how a client of each API sends its own key.
var clientOf = map[focusgate.API]struct {
	path   string
	header string
	key    string
}{
	focusgate.APIChat:      {"/v1/chat/completions", "Authorization", "sk-client-chat"},
	focusgate.APIResponses: {"/v1/responses", "Authorization", "sk-client-responses"},
	focusgate.APIMessages:  {"/v1/messages", "X-Api-Key", "sk-ant-client"},
	focusgate.APIGemini:    {"/v1beta/models/gemini-2.5-pro:generateContent", "X-Goog-Api-Key", "AIza-client"},
}

// pageBody is a request of api whose user text holds a task and a page.
func pageBody(t *testing.T, api focusgate.API) []byte {
	t.Helper()
	page, err := os.ReadFile("../../detect/testdata/formats/playwright.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := "Add the Summit Parka to the cart.\n" + string(page)
	var body any
	switch api {
	case focusgate.APIChat:
		body = map[string]any{"model": "gpt-4.1", "messages": []any{map[string]any{"role": "user", "content": text}}}
	case focusgate.APIResponses:
		body = map[string]any{"model": "gpt-4.1", "input": text}
	case focusgate.APIMessages:
		body = map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": []any{map[string]any{"role": "user", "content": text}}}
	case focusgate.APIGemini:
		body = map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}}}
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A client's credential goes only to a retriever of the provider the client
// speaks to: for every pair of client API and retriever API, with no
// retriever key and no upstream key configured, the retriever is called
// with the client's key when both are the same provider's, and with none
// otherwise.
func TestClientKeysReachOnlyTheirProvidersRetriever(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(upstream.Close)
	seen := make(chan http.Header, 1)
	retriever := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case seen <- r.Header.Clone():
		default: // a re-ask: the first call says enough
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"no key","type":"invalid_request_error"}}`)
	}))
	t.Cleanup(retriever.Close)
	retrieverURL := map[string]string{"openai": retriever.URL + "/v1", "anthropic": retriever.URL, "gemini": retriever.URL}
	for _, rp := range focusgate.Providers {
		gw := startGateway(t, map[string]string{
			"FOCUSGATE_UPSTREAM_URL":    upstream.URL + "/v1",
			"FOCUSGATE_ANTHROPIC_URL":   upstream.URL,
			"FOCUSGATE_GEMINI_URL":      upstream.URL,
			"FOCUSGATE_RETRIEVER_URL":   retrieverURL[rp.Name],
			"FOCUSGATE_RETRIEVER_API":   rp.Name,
			"FOCUSGATE_RETRIEVER_MODEL": rp.Settings.DefaultRetrieverModel,
			"FOCUSGATE_MIN_TOKENS":      "100",
			"FOCUSGATE_SKIP_UNECONOMIC": "false",
		})
		for _, api := range focusgate.APIs {
			t.Run(api.String()+" client, "+rp.Name+" retriever", func(t *testing.T) {
				drain(seen)
				c := clientOf[api]
				req, _ := http.NewRequest(http.MethodPost, gw.URL+c.path, bytes.NewReader(pageBody(t, api)))
				req.Header.Set("Content-Type", "application/json")
				if c.header == "Authorization" {
					req.Header.Set(c.header, "Bearer "+c.key)
				} else {
					req.Header.Set(c.header, c.key)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if got := resp.Header.Get("X-Focusgate-Status"); got != "failed-open; reason=retriever-http-4xx" {
					t.Fatalf("status %q, want a failed retriever call", got)
				}
				h := <-seen
				sent := strings.Join([]string{h.Get("Authorization"), h.Get("X-Api-Key"), h.Get("X-Goog-Api-Key")}, " ")
				same := focusgate.ProviderOf(api) == rp
				if got := strings.Contains(sent, c.key); got != same {
					t.Errorf("the retriever got the client's key: %v, want %v (credentials sent: %q)", got, same, sent)
				}
				if !same && strings.TrimSpace(sent) != "" {
					t.Errorf("the retriever got a credential from another provider's client: %q", sent)
				}
			})
		}
	}
}

// `focusgate prune --request` hands the retriever the user's own key of the
// provider the body speaks to (OPENAI_API_KEY, ANTHROPIC_API_KEY,
// GEMINI_API_KEY), and no other.
func TestPruneRequestUsesTheKeyOfTheBodysProvider(t *testing.T) {
	seen := make(chan http.Header, 1)
	retriever := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case seen <- r.Header.Clone():
		default:
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(retriever.Close)
	userKeys := map[string]string{"OPENAI_API_KEY": "sk-user-openai", "ANTHROPIC_API_KEY": "sk-ant-user", "GEMINI_API_KEY": "AIza-user"}
	env := map[string]string{
		"FOCUSGATE_UPSTREAM_URL": retriever.URL + "/v1", "FOCUSGATE_ANTHROPIC_URL": retriever.URL, "FOCUSGATE_GEMINI_URL": retriever.URL,
		"FOCUSGATE_MIN_TOKENS": "100", "FOCUSGATE_SKIP_UNECONOMIC": "false",
	}
	for k, v := range userKeys {
		env[k] = v
	}
	for _, api := range focusgate.APIs {
		t.Run(api.String(), func(t *testing.T) {
			drain(seen)
			var stdout, stderr bytes.Buffer
			run(t.Context(), []string{"focusgate", "prune", "--request", "--api", api.String()}, func(k string) string { return env[k] },
				bytes.NewReader(pageBody(t, api)), &stdout, &stderr)
			if !strings.Contains(stderr.String(), "reason=retriever-http-4xx") {
				t.Fatalf("stderr %q: want a failed retriever call", stderr.String())
			}
			h := <-seen
			sent := strings.Join([]string{h.Get("Authorization"), h.Get("X-Api-Key"), h.Get("X-Goog-Api-Key")}, " ")
			for name, key := range userKeys {
				if want := name == focusgate.ProviderOf(api).ClientKeyEnv; strings.Contains(sent, key) != want {
					t.Errorf("%s reached the retriever: %v, want %v (sent %q)", name, !want, want, sent)
				}
			}
		})
	}
}

// drain empties c of what an earlier request left in it.
func drain(c chan http.Header) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
