package focusgate

import (
	"net/http"
	"strings"
)

// AzureProvider is Azure OpenAI: OpenAI's chat and Responses bodies on an
// Azure resource (the OpenAI SDKs' Azure clients, Codex and Copilot CLI
// with an Azure provider), at FOCUSGATE_AZURE_URL. A deployment route names
// its deployment, which names the model (FOCUSGATE_AZURE_DEPLOYMENTS maps
// the two where they differ).
var AzureProvider = Provider{
	Name: "azure",
	Routes: []Route{
		{Pattern: "/openai/deployments/{model}/chat/completions", API: APIChat},
		{Pattern: "/openai/deployments/{model}/responses", API: APIResponses},
		{Pattern: "/openai/responses", API: APIResponses},
		{Pattern: "/openai/v1/chat/completions", API: APIChat},
		{Pattern: "/openai/v1/responses", API: APIResponses},
	},
	Claims: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/openai/") },
	// An Azure key travels in api-key, an Entra ID token as a bearer token.
	Credentials: []Credential{{Kind: CredentialHeader, Name: "Api-Key"}, {Kind: CredentialBearer, Name: "Authorization"}},
	URL: Setting{Name: "AZURE_URL",
		Help: "Azure OpenAI resource, https://{resource}.openai.azure.com: /openai/deployments/{d}/chat/completions and /responses, /openai/responses and /openai/v1/... go there, path and query as they came"},
	Resolve: resolveAzure,
	Key: Setting{Name: "AZURE_API_KEY",
		Help: "Azure OpenAI key sent upstream as api-key: with client keys, in place of the client's gateway key; without, only when the client sends no credential"},
	Retrievers: []Retriever{
		{API: APIChat, Speaks: APIChat, Model: azureRetriever, Path: "/openai/v1/chat/completions"},
		{API: APIResponses, Speaks: APIChat, Model: azureRetriever, Path: "/openai/v1/chat/completions"},
	},
	Models: Setting{Name: "AZURE_DEPLOYMENTS",
		Help: "the model of each Azure deployment whose name is not its model's, for prices and context windows: deployment=model pairs, comma-separated (prod-4o=gpt-4o)"},
	ClientKeyEnv:    "AZURE_OPENAI_API_KEY",
	ErrorBody:       openAIError,
	ContextOverflow: openAIContextOverflow,
	Prices:          openAIPrices,
	Windows:         openAIWindows,
}

var azureRetriever = Setting{Name: "AZURE_RETRIEVER_DEPLOYMENT", Default: "gpt-4.1-mini",
	Help: "retriever for Azure OpenAI requests: a deployment on the same resource, called through /openai/v1/chat/completions with the gateway's key or the client's credential"}

// resolveAzure refuses Azure requests while no resource is configured:
// Azure has no default host.
func resolveAzure(configured string, _ Vars) (string, error) {
	if configured == "" {
		return "", &URLError{Status: http.StatusBadGateway,
			Message: "focusgate: Azure OpenAI requests need FOCUSGATE_AZURE_URL, the resource's https://{resource}.openai.azure.com"}
	}
	return configured, nil
}
