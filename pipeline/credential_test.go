package pipeline_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/pipeline"
)

// The client's own key reaches a retriever only where the retrieval says
// it speaks the client's provider (Retrieval.ClientKey); any other
// retriever never sees it.
func TestClientKeyReachesOnlyARetrieverOfTheClientsProvider(t *testing.T) {
	body := readFile(t, laptopRequest)
	for _, clientKey := range []bool{false, true} {
		t.Run(map[bool]string{false: "another provider's retriever", true: "the client's provider's retriever"}[clientKey], func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Get("Authorization"))
				mu.Unlock()
				http.Error(w, `{"error":{"message":"scripted","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			}))
			t.Cleanup(srv.Close)
			pr := retrieverPruner(&retriever{URL: srv.URL + "/v1"}, "gpt-4.1-mini", cache.NewMemory(1<<20, time.Hour))
			p := retrieverPipeline(pr, func(o *pipeline.Options) {
				o.Retrievals = map[pipeline.RetrievalKey]pipeline.Retrieval{
					{Provider: "openai", API: focusgate.APIChat}: {Pruner: pr, RetrieverModel: "gpt-4.1-mini", ClientKey: clientKey},
				}
			})
			_, out := rewrite(p, focusgate.Request{API: focusgate.APIChat, Provider: &focusgate.OpenAIProvider, Body: body, Credential: ownKey("sk-client-own")})
			if out.Status != focusgate.StatusFailedOpen || out.Reason != focusgate.ReasonRetrieverHTTP4xx {
				t.Fatalf("%s %s, want failed-open retriever-http-4xx", out.Status, out.Reason)
			}
			mu.Lock()
			defer mu.Unlock()
			want := ""
			if clientKey {
				want = "Bearer sk-client-own"
			}
			if len(seen) == 0 {
				t.Fatal("the retriever was not called")
			}
			for _, got := range seen {
				if got != want {
					t.Errorf("the retriever got Authorization %q, want %q", got, want)
				}
			}
		})
	}
}
