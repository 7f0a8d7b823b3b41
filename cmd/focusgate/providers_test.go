package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/config"
)

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
	case focusgate.APIConverse:
		body = map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"text": text}}}}}
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// routePath is a path a client sends on route rt: its variables filled in.
func routePath(p *focusgate.Provider, rt focusgate.Route) string {
	model := map[string]string{
		"openai": "gpt-4.1", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-pro", "azure": "gpt-4o",
		"bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "vertex": "claude-sonnet-4-5@20250929",
	}[p.Name]
	if rt.API == focusgate.APIGemini {
		model = "gemini-2.5-pro"
	}
	r := strings.NewReplacer("{model}", model, "{project}", "acme", "{location}", "us-east5")
	return r.Replace(rt.Pattern)
}

// credentialHeaders are what a retriever call carried in every place a
// provider's clients put a credential.
func credentialHeaders(r *http.Request) string {
	return strings.Join([]string{r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("X-Goog-Api-Key"),
		r.Header.Get("Api-Key"), r.URL.Query().Get("key")}, " ")
}

// A client's credential goes only to a retriever of the provider the client
// speaks to: for every route of every provider, and a retriever called on
// each provider (FOCUSGATE_RETRIEVER_URL with FOCUSGATE_RETRIEVER_API), with
// no credential of the gateway's, the retriever is called with the
// client's credential when both are the same provider, and with none
// otherwise. One API served by two providers (Azure's chat and OpenAI's,
// Bedrock's and Vertex AI's Messages and Anthropic's) makes no difference.
func TestClientKeysReachOnlyTheirProvidersRetriever(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(upstream.Close)
	seen := make(chan string, 1)
	retriever := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case seen <- credentialHeaders(r):
		default: // a re-ask: the first call says enough
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"no key","type":"invalid_request_error"}}`)
	}))
	t.Cleanup(retriever.Close)
	for _, rp := range focusgate.Providers {
		env := map[string]string{
			"FOCUSGATE_RETRIEVER_URL":   retriever.URL,
			"FOCUSGATE_RETRIEVER_API":   rp.Name,
			"FOCUSGATE_RETRIEVER_MODEL": rp.Retrievers[0].Model.Default,
			"FOCUSGATE_MIN_TOKENS":      "100",
			"FOCUSGATE_SKIP_UNECONOMIC": "false",
			// No cloud credentials: each request's own travels.
			"AWS_EC2_METADATA_DISABLED":      "true",
			"GOOGLE_APPLICATION_CREDENTIALS": filepath.Join(t.TempDir(), "none.json"),
		}
		for _, p := range focusgate.Providers {
			env[config.Prefix+p.URL.Name] = upstream.URL
		}
		env["FOCUSGATE_UPSTREAM_URL"] = upstream.URL + "/v1"
		if rp == &focusgate.OpenAIProvider {
			env["FOCUSGATE_RETRIEVER_URL"] = retriever.URL + "/v1"
		}
		gw := startGateway(t, env)
		for _, cp := range focusgate.Providers {
			for _, rt := range cp.Routes {
				if rt.Sizing {
					continue
				}
				path := routePath(cp, rt)
				t.Run(rp.Name+" retriever, "+cp.Name+" client "+path, func(t *testing.T) {
					drain(seen)
					key := "client-key-of-" + cp.Name
					req, _ := http.NewRequest(http.MethodPost, gw.URL+path, bytes.NewReader(pageBody(t, rt.API)))
					req.Header.Set("Content-Type", "application/json")
					cp.Credentials[0].Set(req, key)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status := resp.Header.Get("X-Focusgate-Status")
					if !strings.HasPrefix(status, "failed-open; reason=retriever-") {
						t.Fatalf("status %q, want a failed retriever call", status)
					}
					var sent string
					select {
					case sent = <-seen:
					default:
						// The retriever could not be called for this request
						// (another provider's path names what the request
						// has not): it got no credential either.
						if rp == cp {
							t.Fatalf("status %q: the client's own provider's retriever was not called", status)
						}
						return
					}
					same := rp == cp
					if got := strings.Contains(sent, key); got != same {
						t.Errorf("the retriever got the client's key: %v, want %v (credentials sent: %q)", got, same, sent)
					}
					if !same && strings.TrimSpace(sent) != "" {
						t.Errorf("the retriever got a credential from another provider's client: %q", sent)
					}
				})
			}
		}
	}
}

// `focusgate prune --request` hands the retriever the user's own key of the
// provider the body speaks to (OPENAI_API_KEY, ANTHROPIC_API_KEY,
// GEMINI_API_KEY), and no other.
func TestPruneRequestUsesTheKeyOfTheBodysProvider(t *testing.T) {
	seen := make(chan string, 1)
	retriever := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case seen <- credentialHeaders(r):
		default:
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(retriever.Close)
	userKeys := map[string]string{"OPENAI_API_KEY": "sk-user-openai", "ANTHROPIC_API_KEY": "sk-ant-user", "GEMINI_API_KEY": "AIza-user",
		"AWS_BEARER_TOKEN_BEDROCK": "bedrock-user", "AZURE_OPENAI_API_KEY": "az-user"}
	env := map[string]string{
		"FOCUSGATE_UPSTREAM_URL": retriever.URL + "/v1", "FOCUSGATE_ANTHROPIC_URL": retriever.URL, "FOCUSGATE_GEMINI_URL": retriever.URL,
		"FOCUSGATE_BEDROCK_URL": retriever.URL, "FOCUSGATE_MIN_TOKENS": "100", "FOCUSGATE_SKIP_UNECONOMIC": "false",
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
			sent := <-seen
			for name, key := range userKeys {
				if want := name == providerFor(api).ClientKeyEnv; strings.Contains(sent, key) != want {
					t.Errorf("%s reached the retriever: %v, want %v (sent %q)", name, !want, want, sent)
				}
			}
		})
	}
}

// drain empties c of what an earlier request left in it.
func drain[T any](c chan T) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
