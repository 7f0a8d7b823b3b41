package focusgate

import (
	"net/http"
	"strings"
)

// VertexExpressProvider is Vertex AI in express mode: Gemini through
// generateContent under /v1[beta1]/publishers/google/models/, authorised by
// a Vertex AI API key instead of a project, a location and Google
// credentials (the Gen AI SDKs with vertexai and an API key). Its requests
// go to FOCUSGATE_VERTEX_EXPRESS_URL with the client's key, or the
// gateway's, in x-goog-api-key, as the Gemini API's do; they must not reach
// the Gemini API, which does not know the key, nor carry the gateway's
// Vertex AI token, which the express endpoint does not take.
var VertexExpressProvider = Provider{
	Name:   "vertex-express",
	Routes: geminiRoutes("/v1/publishers/google/models/", "/v1beta1/publishers/google/models/"),
	// Express mode's other calls (the publisher's model list) pass
	// through to it too.
	Claims: func(r *http.Request) bool {
		p := r.URL.Path
		return strings.HasPrefix(p, "/v1/publishers/") || strings.HasPrefix(p, "/v1beta1/publishers/")
	},
	Credentials: []Credential{{Kind: CredentialHeader, Name: "X-Goog-Api-Key"}, {Kind: CredentialQuery, Name: "key"}},
	URL: Setting{Name: "VERTEX_EXPRESS_URL", Default: "https://aiplatform.googleapis.com",
		Help: "Vertex AI in express mode (an API key, no project), as the Gen AI SDKs' base URL is given: /v1[beta1]/publishers/google/models/{model}:generateContent, :streamGenerateContent and :countTokens go there"},
	Key: Setting{Name: "VERTEX_API_KEY",
		Help: "Vertex AI express mode API key sent upstream as x-goog-api-key: with client keys, in place of the client's gateway key; without, only when the client sends no credential"},
	Retrievers: []Retriever{{API: APIGemini, Speaks: APIGemini, Model: geminiRetrieverModel,
		Path: "/v1/publishers/google/models/{model}:generateContent"}},
	ClientKeyEnv:    "GOOGLE_API_KEY",
	ErrorBody:       googleError,
	ContextOverflow: geminiContextOverflow,
	Prices:          geminiPrices,
	Windows:         geminiWindows,
}
