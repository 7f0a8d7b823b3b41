package cloudtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/tidwall/gjson"
)

// Test credentials of the Bedrock fake when its options name none. They
// are AWS's documented example keys, which no account has.
const (
	TestAccessKeyID     = "AKIAIOSFODNN7EXAMPLE"
	TestSecretAccessKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	TestBedrockAPIKey   = "ABSKY2xvdWR0ZXN0LW5vdC1hLXJlYWwta2V5"
)

// BedrockOptions configure NewBedrock; the zero value is a fake in
// us-east-1 with the Test* credentials that answers "OK".
type BedrockOptions struct {
	Region                       string // the region signatures must be scoped to; us-east-1 when empty
	AccessKeyID, SecretAccessKey string // the one signing identity accepted
	// SessionToken, when set, must come as X-Amz-Security-Token, signed,
	// as temporary credentials send it.
	SessionToken string
	// APIKey is the Bedrock API key accepted as Authorization: Bearer.
	APIKey string
	// Open accepts any credential, and none, recording what came: for
	// capturing what a client sends before its credentials are known.
	Open   bool
	Answer Answer
	// InferenceProfiles are the ids GET /inference-profiles lists (Claude
	// Code asks for them); a few US Claude profiles when empty.
	InferenceProfiles []string
}

// Bedrock is a fake Bedrock Runtime endpoint (what a client's
// bedrock-runtime.{region}.amazonaws.com base URL names), stopped when its
// test ends.
type Bedrock struct {
	URL string
	recorder
	opts   BedrockOptions
	signer *v4.Signer
}

// NewBedrock starts a fake Bedrock Runtime.
func NewBedrock(t T, opts BedrockOptions) *Bedrock {
	t.Helper()
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.AccessKeyID == "" {
		opts.AccessKeyID, opts.SecretAccessKey = TestAccessKeyID, TestSecretAccessKey
	}
	if opts.APIKey == "" {
		opts.APIKey = TestBedrockAPIKey
	}
	if opts.Answer == nil {
		opts.Answer = TextAnswer("OK")
	}
	b := &Bedrock{opts: opts, signer: v4.NewSigner()}
	srv := httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(srv.Close)
	b.URL = srv.URL
	return b
}

// The Bedrock Runtime operations the fake serves, by the last segment of
// their path.
var bedrockRoutes = map[string]bool{
	"invoke": true, "invoke-with-response-stream": true, "converse": true, "converse-stream": true, "count-tokens": true,
}

// bedrockRoute splits /model/{modelId}/{operation}; the model id is
// unescaped (a ':' may come as %3A, an ARN's '/' as %2F).
func bedrockRoute(path string) (model, route string, ok bool) {
	rest, found := strings.CutPrefix(path, "/model/")
	if !found {
		return "", "", false
	}
	i := strings.LastIndex(rest, "/")
	if i <= 0 || !bedrockRoutes[rest[i+1:]] {
		return "", "", false
	}
	model, err := url.PathUnescape(rest[:i])
	return model, rest[i+1:], err == nil
}

func (b *Bedrock) serve(w http.ResponseWriter, r *http.Request) {
	req, err := readRequest(r)
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		req.Status = sw.status
		b.add(req)
	}()
	if err != nil {
		bedrockError(sw, Refusal{http.StatusBadRequest, "SerializationException", err.Error()})
		return
	}
	if req.Path == "/inference-profiles" && r.Method == http.MethodGet {
		// The control plane's ListInferenceProfiles, which Claude Code
		// calls on the runtime's base URL to pick its models.
		req.Route = "inference-profiles"
		if auth, refusal := b.authenticate(r, req); refusal != nil && !b.opts.Open {
			bedrockError(sw, *refusal)
		} else {
			req.Auth = auth
			writeJSON(sw, http.StatusOK, b.inferenceProfiles())
		}
		return
	}
	model, route, ok := bedrockRoute(req.Path)
	if !ok || r.Method != http.MethodPost {
		bedrockError(sw, Refusal{http.StatusNotFound, "UnknownOperationException", ""})
		return
	}
	req.Route, req.Model = route, model
	auth, refusal := b.authenticate(r, req)
	if refusal != nil && !b.opts.Open {
		bedrockError(sw, *refusal)
		return
	}
	req.Auth = auth
	if b.opts.Open && auth == "" {
		req.Auth = "open"
	}
	if !json.Valid(req.Body) {
		bedrockError(sw, Refusal{http.StatusBadRequest, "ValidationException", "Malformed input request, please reformat your input and try again."})
		return
	}
	if strings.HasPrefix(route, "invoke") {
		// InvokeModel validates an Anthropic body against the model's
		// schema: the version is required, the model is in the path only.
		if !gjson.GetBytes(req.Body, "anthropic_version").Exists() {
			bedrockError(sw, Refusal{http.StatusBadRequest, "ValidationException", "Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again."})
			return
		}
		if gjson.GetBytes(req.Body, "model").Exists() {
			bedrockError(sw, Refusal{http.StatusBadRequest, "ValidationException", "Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again."})
			return
		}
	}
	if route == "count-tokens" {
		// The tokens of the body counted, without a model: about four
		// bytes a token.
		writeJSON(sw, http.StatusOK, map[string]int{"inputTokens": len(req.Body)/4 + 1})
		return
	}
	call := Call{API: Anthropic, Route: route, Model: model, Body: req.Body,
		Stream: route == "invoke-with-response-stream" || route == "converse-stream"}
	if strings.HasPrefix(route, "converse") {
		call.API = Converse
	}
	reply := b.opts.Answer(call)
	if reply.Refusal != nil {
		bedrockError(sw, *reply.Refusal)
		return
	}
	switch route {
	case "invoke":
		in, out := reply.usage()
		sw.Header().Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(in))
		sw.Header().Set("X-Amzn-Bedrock-Output-Token-Count", strconv.Itoa(out))
		sw.Header().Set("X-Amzn-Bedrock-Invocation-Latency", "1")
		writeJSON(sw, http.StatusOK, anthropicMessage(model, reply))
	case "invoke-with-response-stream":
		bedrockInvokeStream(sw, model, reply)
	case "converse":
		writeJSON(sw, http.StatusOK, converseAnswer(reply))
	case "converse-stream":
		converseStream(sw, reply)
	}
}

// BedrockInputTooLong is Bedrock's refusal of a prompt over the model's
// context window, for InvokeModel and its stream. (Converse says "The model
// returned the following errors: Input is too long for requested model.")
func BedrockInputTooLong() *Refusal {
	return &Refusal{http.StatusBadRequest, "ValidationException", "Input is too long for requested model."}
}

// bedrockError answers as Bedrock's REST-JSON protocol does: the error type
// in x-amzn-ErrorType (with the namespace AWS appends) and the message in
// the body.
func bedrockError(w http.ResponseWriter, ref Refusal) {
	w.Header().Set("X-Amzn-Errortype", ref.Code+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.Header().Set("X-Amzn-Requestid", "00000000-0000-4000-8000-000000000000")
	writeJSON(w, ref.Status, map[string]string{"message": ref.Message})
}

// authenticate checks the request's credential as Bedrock does: a Bedrock
// API key as a bearer token, or a SigV4 signature of the request, body
// included, by the fake's one identity, scoped to its region and to the
// bedrock service. It returns what it accepted, or the refusal.
func (b *Bedrock) authenticate(r *http.Request, req Request) (string, *Refusal) {
	authz := r.Header.Get("Authorization")
	if key, ok := strings.CutPrefix(authz, "Bearer "); ok {
		if subtle.ConstantTimeCompare([]byte(key), []byte(b.opts.APIKey)) == 1 {
			return "bedrock-api-key", nil
		}
		return "", &Refusal{http.StatusForbidden, "UnrecognizedClientException", "Invalid API Key format: Must start with pre-defined prefix"}
	}
	if authz == "" {
		return "", &Refusal{http.StatusForbidden, "MissingAuthenticationTokenException", "Missing Authentication Token"}
	}
	sig, problem := parseSigV4(authz)
	if problem != "" {
		return "", &Refusal{http.StatusForbidden, "IncompleteSignatureException", problem}
	}
	if sig.accessKeyID != b.opts.AccessKeyID {
		return "", &Refusal{http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."}
	}
	if sig.region != b.opts.Region {
		return "", &Refusal{http.StatusForbidden, "InvalidSignatureException", fmt.Sprintf("Credential should be scoped to a valid region, not '%s'. ", sig.region)}
	}
	if sig.service != "bedrock" {
		return "", &Refusal{http.StatusForbidden, "InvalidSignatureException", "Credential should be scoped to correct service: 'bedrock'. "}
	}
	if b.opts.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != b.opts.SessionToken {
		return "", &Refusal{http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."}
	}
	if problem := b.verify(r, req, sig); problem != "" {
		return "", &Refusal{http.StatusForbidden, "InvalidSignatureException", problem}
	}
	return "sigv4:" + sig.accessKeyID, nil
}

// sigV4 is the Authorization header of a SigV4-signed request.
type sigV4 struct {
	accessKeyID, date, region, service string
	signedHeaders                      []string
	signature                          string
}

// parseSigV4 reads "AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/
// bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=hex".
func parseSigV4(authz string) (s sigV4, problem string) {
	rest, ok := strings.CutPrefix(authz, "AWS4-HMAC-SHA256 ")
	if !ok {
		return s, "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters with AWS4-HMAC-SHA256"
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			scope := strings.Split(v, "/")
			if len(scope) != 5 || scope[4] != "aws4_request" {
				return s, "Credential should be scoped correctly: " + v
			}
			s.accessKeyID, s.date, s.region, s.service = scope[0], scope[1], scope[2], scope[3]
		case "SignedHeaders":
			s.signedHeaders = strings.Split(v, ";")
		case "Signature":
			s.signature = v
		}
	}
	if s.accessKeyID == "" || len(s.signedHeaders) == 0 || s.signature == "" {
		return s, "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters"
	}
	return s, ""
}

// verify signs a copy of the request with the AWS SDK's signer and the
// fake's secret and compares the signatures. The copy carries exactly the
// headers the client says it signed, the path and query as they were sent
// (the signer escapes the path once more, as SigV4 does for every service
// but S3) and the hash of the body as received, so any change to the body,
// the path, the query or a signed header is refused.
func (b *Bedrock) verify(r *http.Request, req Request, sig sigV4) (problem string) {
	signed := map[string]bool{}
	for _, h := range sig.signedHeaders {
		signed[h] = true
	}
	if !signed["host"] {
		return "'Host' must be a 'SignedHeader' in the AWS Authorization."
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || !signed["x-amz-date"] || at.Format("20060102") != sig.date {
		return "Date must be in ISO-8601 'basic format' and signed, as x-amz-date"
	}
	sum := sha256.Sum256(req.Body)
	payloadHash := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != "UNSIGNED-PAYLOAD" && h != payloadHash {
		return "The provided 'x-amz-content-sha256' header does not match what was computed."
	}
	u := &url.URL{Scheme: "http", Host: r.Host, Path: req.Path, RawQuery: req.RawQuery}
	if p, err := url.PathUnescape(req.Path); err == nil {
		u.Path, u.RawPath = p, req.Path
	}
	if u.EscapedPath() != req.Path {
		return "the path " + req.Path + " cannot be signed as it was sent"
	}
	c, err := http.NewRequest(r.Method, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return err.Error()
	}
	c.URL = u
	c.Host = r.Host
	c.ContentLength = 0 // signed only when the client signed it
	for h := range signed {
		switch h {
		case "host":
		case "content-length":
			c.ContentLength = r.ContentLength
		default:
			if _, ok := r.Header[http.CanonicalHeaderKey(h)]; !ok {
				return "the signed header " + h + " is missing"
			}
			c.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	creds := aws.Credentials{AccessKeyID: b.opts.AccessKeyID, SecretAccessKey: b.opts.SecretAccessKey}
	if err := b.signer.SignHTTP(context.Background(), creds, c, payloadHash, sig.service, sig.region, at, func(o *v4.SignerOptions) {
		o.DisableSessionToken = true
	}); err != nil {
		return err.Error()
	}
	want, _ := parseSigV4(c.Header.Get("Authorization"))
	if strings.Join(want.signedHeaders, ";") != strings.Join(sig.signedHeaders, ";") {
		return fmt.Sprintf("the signed headers %v cannot be reproduced (%v)", sig.signedHeaders, want.signedHeaders)
	}
	if subtle.ConstantTimeCompare([]byte(want.signature), []byte(sig.signature)) != 1 {
		return "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	}
	return ""
}

// eventWriter writes AWS event-stream messages, each flushed as it is
// written, as Bedrock streams its answers.
type eventWriter struct {
	w   http.ResponseWriter
	enc *eventstream.Encoder
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Requestid", "00000000-0000-4000-8000-000000000000")
	w.WriteHeader(http.StatusOK)
	return &eventWriter{w: w, enc: eventstream.NewEncoder()}
}

// event writes one event message: its type in :event-type, its payload
// JSON. Bedrock pads each payload with a "p" member of random length so
// that the frames' sizes do not tell the text; the fake pads too, so that
// clients meet the member.
func (e *eventWriter) event(typ string, payload map[string]any) {
	payload["p"] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[:len(typ)%20+4]
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	var h eventstream.Headers
	h.Set(":event-type", eventstream.StringValue(typ))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue("event"))
	if err := e.enc.Encode(e.w, eventstream.Message{Headers: h, Payload: b}); err != nil {
		return // the client went away
	}
	e.w.(http.Flusher).Flush()
}

// bedrockInvokeStream answers InvokeModelWithResponseStream: each Anthropic
// SSE event's JSON, base64-encoded, in a chunk event; the last one carries
// Bedrock's invocation metrics.
func bedrockInvokeStream(w http.ResponseWriter, model string, r Reply) {
	w.Header().Set("X-Amzn-Bedrock-Content-Type", "application/json")
	ew := newEventWriter(w)
	in, out := r.usage()
	evs := anthropicEvents(model, r)
	for i, ev := range evs {
		if i == len(evs)-1 {
			ev.Data["amazon-bedrock-invocationMetrics"] = map[string]int{
				"inputTokenCount": in, "outputTokenCount": out, "invocationLatency": 1, "firstByteLatency": 1}
		}
		b, err := json.Marshal(ev.Data)
		if err != nil {
			panic(err)
		}
		ew.event("chunk", map[string]any{"bytes": base64.StdEncoding.EncodeToString(b)})
	}
}

func converseStop(r Reply) string {
	if len(r.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func converseUsage(r Reply) map[string]int {
	in, out := r.usage()
	return map[string]int{"inputTokens": in, "outputTokens": out, "totalTokens": in + out}
}

// converseAnswer is Converse's answer.
func converseAnswer(r Reply) map[string]any {
	content := []any{}
	if r.Text != "" {
		content = append(content, map[string]any{"text": r.Text})
	}
	for i, c := range r.ToolCalls {
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": callID("tooluse_cloudtest_", i, c), "name": c.Name, "input": c.input()}})
	}
	return map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": converseStop(r), "usage": converseUsage(r), "metrics": map[string]int{"latencyMs": 1},
	}
}

// converseStream answers ConverseStream with its events: messageStart, a
// block's deltas (a text block has no contentBlockStart; a tool call's
// start names it and its input comes as a JSON string), contentBlockStop,
// messageStop with the stop reason, and metadata with the usage.
func converseStream(w http.ResponseWriter, r Reply) {
	ew := newEventWriter(w)
	ew.event("messageStart", map[string]any{"role": "assistant"})
	index := 0
	if r.Text != "" {
		ew.event("contentBlockDelta", map[string]any{"contentBlockIndex": index, "delta": map[string]any{"text": r.Text}})
		ew.event("contentBlockStop", map[string]any{"contentBlockIndex": index})
		index++
	}
	for i, c := range r.ToolCalls {
		ew.event("contentBlockStart", map[string]any{"contentBlockIndex": index, "start": map[string]any{
			"toolUse": map[string]any{"toolUseId": callID("tooluse_cloudtest_", i, c), "name": c.Name}}})
		ew.event("contentBlockDelta", map[string]any{"contentBlockIndex": index, "delta": map[string]any{
			"toolUse": map[string]any{"input": string(c.input())}}})
		ew.event("contentBlockStop", map[string]any{"contentBlockIndex": index})
		index++
	}
	ew.event("messageStop", map[string]any{"stopReason": converseStop(r)})
	ew.event("metadata", map[string]any{"usage": converseUsage(r), "metrics": map[string]int{"latencyMs": 1}})
}

// inferenceProfiles is ListInferenceProfiles' answer: the system-defined
// cross-region profiles, each routing to one foundation model.
func (b *Bedrock) inferenceProfiles() map[string]any {
	ids := b.opts.InferenceProfiles
	if len(ids) == 0 {
		ids = []string{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us.anthropic.claude-haiku-4-5-20251001-v1:0", "us.anthropic.claude-opus-4-1-20250805-v1:0"}
	}
	var list []any
	for _, id := range ids {
		_, model, _ := strings.Cut(id, ".")
		list = append(list, map[string]any{
			"inferenceProfileName": id, "inferenceProfileId": id, "description": "Routes requests to " + model,
			"inferenceProfileArn": "arn:aws:bedrock:" + b.opts.Region + ":000000000000:inference-profile/" + id,
			"models":              []any{map[string]string{"modelArn": "arn:aws:bedrock:" + b.opts.Region + "::foundation-model/" + model}},
			"status":              "ACTIVE", "type": "SYSTEM_DEFINED",
			"createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-01-01T00:00:00Z",
		})
	}
	return map[string]any{"inferenceProfileSummaries": list}
}
