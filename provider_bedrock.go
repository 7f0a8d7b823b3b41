package focusgate

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
)

// BedrockProvider is AWS Bedrock's runtime API: Anthropic Messages bodies
// through invoke (Claude Code with CLAUDE_CODE_USE_BEDROCK, the Anthropic
// Bedrock SDK) and the Converse API (the AWS SDKs, the AI SDK's Bedrock
// provider), at FOCUSGATE_BEDROCK_URL. The gateway signs what it forwards
// with SigV4, with credentials from the AWS SDK's default chain, or sends a
// Bedrock API key.
var BedrockProvider = Provider{
	Name: "bedrock",
	Routes: []Route{
		{Pattern: "/model/{model}/invoke", API: APIMessages},
		{Pattern: "/model/{model}/invoke-with-response-stream", API: APIMessages},
		{Pattern: "/model/{model}/converse", API: APIConverse},
		{Pattern: "/model/{model}/converse-stream", API: APIConverse},
		// count-tokens wraps an invoke or Converse body; it passes through
		// as it came, like any request focusgate cannot read.
	},
	// Bedrock's own paths: its runtime's other operations (count-tokens,
	// asynchronous invocations, guardrails) pass through to it, and so does
	// the inference-profile listing Claude Code sends to the runtime's URL.
	Claims: func(r *http.Request) bool {
		for _, prefix := range []string{"/model/", "/async-invoke", "/guardrail/", "/inference-profiles"} {
			if strings.HasPrefix(r.URL.Path, prefix) {
				return true
			}
		}
		return false
	},
	// A Bedrock API key is a bearer token; a client that signs with SigV4
	// puts its signature in the same header.
	Credentials: []Credential{{Kind: CredentialBearer, Name: "Authorization"}},
	URL: Setting{Name: "BEDROCK_URL", Default: "https://bedrock-runtime.{region}.amazonaws.com",
		Help:   "AWS Bedrock runtime (as ANTHROPIC_BEDROCK_BASE_URL is given): /model/{id}/invoke, /invoke-with-response-stream, /converse, /converse-stream and /count-tokens go there, signed with SigV4 (region from AWS_REGION or AWS_DEFAULT_REGION)",
		Expand: awsRegion},
	Resolve: resolveBedrock,
	Key: Setting{Name: "BEDROCK_API_KEY",
		Help: "a Bedrock API key, sent as a bearer token instead of a SigV4 signature"},
	Cloud:      CloudSigV4,
	CloudScope: "bedrock",
	Retrievers: []Retriever{
		{API: APIMessages, Speaks: APIMessages, Model: bedrockRetrieverModel, Path: "/model/{model}/invoke", Version: "bedrock-2023-05-31"},
		{API: APIConverse, Speaks: APIMessages, Model: bedrockRetrieverModel, Path: "/model/{model}/invoke", Version: "bedrock-2023-05-31"},
	},
	ClientKeyEnv:    "AWS_BEARER_TOKEN_BEDROCK",
	ErrorBody:       bedrockError,
	ErrorHeader:     bedrockErrorHeader,
	ContextOverflow: bedrockContextOverflow,
	Prices:          bedrockPrices,
	Windows:         bedrockWindows,
}

// bedrockRetrieverModel is Claude Haiku 4.5 through the cross-region
// inference profile of the gateway's geography: Bedrock serves Claude 4.5
// only through such profiles, and a profile takes requests only from its
// own geography's regions, so that one fixed "us." profile would fail every
// call made from Frankfurt or Tokyo.
var bedrockRetrieverModel = Setting{Name: "BEDROCK_RETRIEVER_MODEL", Default: "{geo}.anthropic.claude-haiku-4-5-20251001-v1:0",
	Help:   "retriever for Bedrock requests, a Bedrock model id called through invoke on Bedrock with the gateway's credentials; {geo} is the inference profile's geography for AWS_REGION: us, us-gov, eu, or global for any other region",
	Expand: awsGeography}

// awsRegion fills in the region of Bedrock's default URL, as the AWS SDKs
// find it in the environment.
func awsRegion(value string, getenv func(string) string) string {
	region := envRegion(getenv)
	if region == "" {
		return value
	}
	return strings.ReplaceAll(value, "{region}", region)
}

// envRegion is the AWS region the environment names, as the AWS SDKs find
// it, or "".
func envRegion(getenv func(string) string) string {
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	if !isRegion(region) {
		return ""
	}
	return region
}

// awsGeography fills in the geography of the retriever's inference
// profile from the environment's region. A region outside the geographies
// named is served by the global profile, which takes requests from every
// commercial region; without a region, Bedrock's requests need
// FOCUSGATE_BEDROCK_URL, and the retriever the US profile, as before
// geographies were told apart.
func awsGeography(value string, getenv func(string) string) string {
	region := envRegion(getenv)
	geo := "global"
	switch {
	case region == "":
		geo = "us"
	case strings.HasPrefix(region, "us-gov-"):
		geo = "us-gov"
	case strings.HasPrefix(region, "us-"):
		geo = "us"
	case strings.HasPrefix(region, "eu-"):
		geo = "eu"
	}
	return strings.ReplaceAll(value, "{geo}", geo)
}

// resolveBedrock refuses requests while the URL still lacks its region.
func resolveBedrock(configured string, _ Vars) (string, error) {
	if strings.Contains(configured, "{region}") {
		return "", &URLError{Status: http.StatusBadGateway,
			Message: "focusgate: AWS Bedrock needs a region: set AWS_REGION (or FOCUSGATE_BEDROCK_URL) where the gateway runs"}
	}
	return configured, nil
}

// bedrockPrices are Claude's list prices, which Bedrock charges, and those
// of Amazon's Nova models, which the Converse API serves.
var bedrockPrices = func() map[string]Price {
	m := maps.Clone(claudePrices)
	maps.Copy(m, map[string]Price{
		"nova-premier": {2.50, 12.50},
		"nova-pro":     {0.80, 3.20},
		"nova-lite":    {0.06, 0.24},
		"nova-micro":   {0.035, 0.14},
	})
	return m
}()

var bedrockWindows = func() map[string]int {
	m := maps.Clone(claudeWindows)
	maps.Copy(m, map[string]int{"nova-premier": 1_000_000, "nova-pro": 300_000, "nova-lite": 300_000, "nova-micro": 128_000})
	return m
}()

// bedrockErrorType is the exception Bedrock names for a status, in its
// x-amzn-errortype header, which the AWS SDKs read an error's kind from.
func bedrockErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return "AccessDeniedException"
	case http.StatusNotFound:
		return "ResourceNotFoundException"
	case http.StatusRequestTimeout:
		return "ModelTimeoutException"
	case http.StatusTooManyRequests:
		return "ThrottlingException"
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return "ServiceUnavailableException"
	}
	if status >= 500 {
		return "InternalServerException"
	}
	return "ValidationException"
}

func bedrockErrorHeader(h http.Header, status int) {
	h.Set("X-Amzn-Errortype", bedrockErrorType(status))
}

// bedrockError is Bedrock's error body, {"message":"..."}.
func bedrockError(_ int, message, _, _ string) []byte {
	body, _ := json.Marshal(struct {
		Message string `json:"message"`
	}{message})
	return body
}

// bedrockContextOverflow recognises Bedrock's refusal of a prompt over the
// context window: 400 ValidationException "Input is too long for requested
// model." (Converse adds "The model returned the following errors: "), or
// Claude's own "prompt is too long: N tokens > M maximum" passed on by
// invoke.
func bedrockContextOverflow(status int, body []byte) bool {
	if status != http.StatusBadRequest {
		return false
	}
	var e struct {
		Message      string `json:"message"`
		LegacyFormat string `json:"Message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	msg := strings.ToLower(e.Message + e.LegacyFormat)
	return strings.Contains(msg, "input is too long") || strings.Contains(msg, "prompt is too long")
}
