package focusgate

import (
	"maps"
	"net/http"
	"strings"
)

// VertexProvider is Google Vertex AI, one provider that serves two APIs:
// Claude as Anthropic Messages bodies through rawPredict (Claude Code with
// CLAUDE_CODE_USE_VERTEX, the Anthropic Vertex SDK) and Gemini through
// generateContent (the Gen AI SDKs with vertexai), under
// /v1[beta1]/projects/{project}/locations/{location}/publishers/. Requests
// go to FOCUSGATE_VERTEX_URL, by default the host of the location the path
// names, with an access token from Google's application default
// credentials.
var VertexProvider = Provider{
	Name: "vertex",
	Routes: append(vertexClaudeRoutes(),
		geminiRoutes(
			"/v1/projects/{project}/locations/{location}/publishers/google/models/",
			"/v1beta1/projects/{project}/locations/{location}/publishers/google/models/")...),
	// Vertex AI's other calls (models, endpoints, embeddings) pass through
	// to it too.
	Claims: func(r *http.Request) bool {
		p := r.URL.Path
		return strings.HasPrefix(p, "/v1/projects/") || strings.HasPrefix(p, "/v1beta1/projects/")
	},
	Credentials: []Credential{{Kind: CredentialBearer, Name: "Authorization"}},
	URL: Setting{Name: "VERTEX_URL", Default: "https://{location}-aiplatform.googleapis.com",
		Help: "Vertex AI (as ANTHROPIC_VERTEX_BASE_URL is given, without /v1): Claude's rawPredict and Gemini's generateContent under /v1[beta1]/projects/.../publishers/ go there, with a token from Google's application default credentials; by default the host of the location the path names"},
	Resolve:    resolveVertex,
	Cloud:      CloudGoogle,
	CloudScope: "https://www.googleapis.com/auth/cloud-platform",
	Retrievers: []Retriever{
		{API: APIMessages, Speaks: APIMessages, Version: "vertex-2023-10-16",
			Model: Setting{Name: "VERTEX_RETRIEVER_MODEL", Default: "claude-haiku-4-5@20251001",
				Help: "retriever for Vertex AI's Claude requests, called through rawPredict on Vertex AI with the gateway's credentials (Gemini requests there use FOCUSGATE_GEMINI_RETRIEVER_MODEL)"},
			Path: "/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict"},
		{API: APIGemini, Speaks: APIGemini, Model: geminiRetrieverModel,
			Path: "/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent"},
	},
	ErrorBody:       googleError,
	ContextOverflow: vertexContextOverflow,
	Prices:          vertexPrices,
	Windows:         vertexWindows,
}

// vertexClaudeRoutes are Claude's methods on Vertex AI, under both API
// versions. count-tokens names no model: its path says "count-tokens" where
// the model would be.
func vertexClaudeRoutes() []Route {
	var routes []Route
	for _, v := range []string{"/v1", "/v1beta1"} {
		prefix := v + "/projects/{project}/locations/{location}/publishers/anthropic/models/"
		routes = append(routes,
			Route{Pattern: prefix + "count-tokens:rawPredict", API: APIMessages, Sizing: true},
			Route{Pattern: prefix + "{model}:rawPredict", API: APIMessages},
			Route{Pattern: prefix + "{model}:streamRawPredict", API: APIMessages})
	}
	return routes
}

// resolveVertex fills in the location of the default URL from the path.
// The client controls the path, and the request carries the gateway's
// token: only a region's name ("us-east5") or "global" is taken, so that no
// path can send the token to another host.
func resolveVertex(configured string, vars Vars) (string, error) {
	if !strings.Contains(configured, "{location}") {
		return configured, nil
	}
	loc := vars.Get("location")
	switch {
	case loc == "global":
		return strings.ReplaceAll(configured, "{location}-", ""), nil
	case isRegion(loc):
		return strings.ReplaceAll(configured, "{location}", loc), nil
	}
	return "", &URLError{Status: http.StatusBadRequest,
		Message: "focusgate: the path names no Vertex AI location the gateway serves (want a region such as us-east5, or global)"}
}

// isRegion says whether s can be a cloud region's name in a host name:
// lower-case letters, digits and dashes, at most 40 of them.
func isRegion(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// vertexContextOverflow recognises Vertex AI's refusals of a prompt over
// the context window: Gemini's, and Claude's passed on in Anthropic's
// shape.
func vertexContextOverflow(status int, body []byte) bool {
	return geminiContextOverflow(status, body) || anthropicContextOverflow(status, body)
}

// vertexPrices are Claude's and Gemini's list prices, which Vertex AI
// charges.
var vertexPrices = func() map[string]Price {
	m := maps.Clone(claudePrices)
	maps.Copy(m, geminiPrices)
	return m
}()

var vertexWindows = func() map[string]int {
	m := maps.Clone(claudeWindows)
	maps.Copy(m, geminiWindows)
	return m
}()
