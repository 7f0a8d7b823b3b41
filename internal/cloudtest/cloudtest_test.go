package cloudtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/tidwall/gjson"
	"golang.org/x/oauth2/google"
)

// signedRequest builds a Bedrock request signed by the AWS SDK's signer as
// the AWS SDKs send one: the body's hash in X-Amz-Content-Sha256, signed.
func signedRequest(t *testing.T, base, path, body string, creds aws.Credentials, region string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	sum := sha256.Sum256([]byte(body))
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, "bedrock", region, time.Now()); err != nil {
		t.Fatal(err)
	}
	return req
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

var testCreds = aws.Credentials{AccessKeyID: TestAccessKeyID, SecretAccessKey: TestSecretAccessKey}

const invokeBody = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"Say OK."}]}`

// Bedrock checks SigV4 as AWS does: the request signed with the test's
// keys is accepted whether the model id's ':' is sent raw (Claude Code,
// the Anthropic Bedrock SDK) or as %3A (the AWS SDKs, the AI SDK); any
// change to what was signed, another key, another region, and no or a
// wrong credential are refused with 403 and Bedrock's error type.
func TestBedrockChecksCredentials(t *testing.T) {
	b := NewBedrock(t, BedrockOptions{})
	raw := "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke"
	escaped := "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"
	tamper := func(f func(r *http.Request)) func(*testing.T) *http.Request {
		return func(t *testing.T) *http.Request {
			r := signedRequest(t, b.URL, raw, invokeBody, testCreds, "us-east-1")
			f(r)
			return r
		}
	}
	for _, tc := range []struct {
		name    string
		req     func(t *testing.T) *http.Request
		status  int
		errType string
		auth    string
	}{
		{"sigv4, raw colon", func(t *testing.T) *http.Request {
			return signedRequest(t, b.URL, raw, invokeBody, testCreds, "us-east-1")
		}, 200, "", "sigv4:" + TestAccessKeyID},
		{"sigv4, escaped colon", func(t *testing.T) *http.Request {
			return signedRequest(t, b.URL, escaped, invokeBody, testCreds, "us-east-1")
		}, 200, "", "sigv4:" + TestAccessKeyID},
		{"body changed after signing", tamper(func(r *http.Request) {
			changed := strings.Replace(invokeBody, "Say OK.", "Say no.", 1)
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(changed)), int64(len(changed))
			sum := sha256.Sum256([]byte(changed))
			r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
		}), 403, "InvalidSignatureException", ""},
		{"body changed, hash header kept", tamper(func(r *http.Request) {
			changed := strings.Replace(invokeBody, "Say OK.", "Say no.", 1)
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(changed)), int64(len(changed))
		}), 403, "InvalidSignatureException", ""},
		{"signed header changed", tamper(func(r *http.Request) { r.Header.Set("Accept", "text/plain") }), 403, "InvalidSignatureException", ""},
		{"path changed", tamper(func(r *http.Request) {
			r.URL.Path = strings.Replace(r.URL.Path, "sonnet", "opus", 1)
		}), 403, "InvalidSignatureException", ""},
		{"another secret", func(t *testing.T) *http.Request {
			return signedRequest(t, b.URL, raw, invokeBody, aws.Credentials{AccessKeyID: TestAccessKeyID, SecretAccessKey: "not-the-secret"}, "us-east-1")
		}, 403, "InvalidSignatureException", ""},
		{"another key id", func(t *testing.T) *http.Request {
			return signedRequest(t, b.URL, raw, invokeBody, aws.Credentials{AccessKeyID: "AKIAOTHER", SecretAccessKey: TestSecretAccessKey}, "us-east-1")
		}, 403, "UnrecognizedClientException", ""},
		{"another region", func(t *testing.T) *http.Request {
			return signedRequest(t, b.URL, raw, invokeBody, testCreds, "eu-west-1")
		}, 403, "InvalidSignatureException", ""},
		{"Bedrock API key", func(t *testing.T) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, b.URL+raw, strings.NewReader(invokeBody))
			r.Header.Set("Authorization", "Bearer "+TestBedrockAPIKey)
			return r
		}, 200, "", "bedrock-api-key"},
		{"wrong API key", func(t *testing.T) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, b.URL+raw, strings.NewReader(invokeBody))
			r.Header.Set("Authorization", "Bearer ABSKnot-the-key")
			return r
		}, 403, "UnrecognizedClientException", ""},
		{"no credential", func(t *testing.T) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, b.URL+raw, strings.NewReader(invokeBody))
			return r
		}, 403, "MissingAuthenticationTokenException", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(b.Requests())
			resp, body := do(t, tc.req(t))
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if got, _, _ := strings.Cut(resp.Header.Get("X-Amzn-Errortype"), ":"); got != tc.errType {
				t.Errorf("x-amzn-ErrorType %q, want %q", got, tc.errType)
			}
			if tc.status != 200 && !gjson.GetBytes(body, "message").Exists() {
				t.Errorf("error body %s has no message", body)
			}
			reqs := b.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("%d requests recorded, want %d", len(reqs), before+1)
			}
			if got := reqs[before]; got.Auth != tc.auth || got.Status != tc.status || got.Route != "invoke" || !strings.HasPrefix(got.Model, "us.anthropic.claude-") || strings.Contains(got.Model, "%") {
				t.Errorf("recorded auth %q status %d route %q model %q", got.Auth, got.Status, got.Route, got.Model)
			}
		})
	}
	_, refused := b.Authenticated()
	if refused != 9 {
		t.Errorf("%d refused requests counted, want 9", refused)
	}
}

// decodeFrames reads an event-stream body with the AWS SDK's decoder,
// which checks every frame's prelude and message CRCs.
func decodeFrames(t *testing.T, body []byte) (types []string, payloads [][]byte) {
	t.Helper()
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(body)
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			t.Fatalf("frame %d: %v", len(types), err)
		}
		if mt := msg.Headers.Get(":message-type"); mt == nil || mt.String() != "event" {
			t.Errorf("frame %d: :message-type %v", len(types), mt)
		}
		types = append(types, msg.Headers.Get(":event-type").String())
		payloads = append(payloads, msg.Payload)
	}
	return types, payloads
}

// InvokeModelWithResponseStream answers with event-stream frames that the
// AWS SDK's decoder reads, each a chunk whose base64 bytes are one
// Anthropic streaming event; ConverseStream with Converse's events.
func TestBedrockStreamsEventStreamFrames(t *testing.T) {
	b := NewBedrock(t, BedrockOptions{Answer: func(c Call) Reply {
		return Reply{Text: "Clicking.", ToolCalls: []ToolCall{{Name: "browser_click", Input: `{"ref":"e12"}`}}}
	}})
	send := func(path, body string) (*http.Response, []byte) {
		return do(t, signedRequest(t, b.URL, path, body, testCreds, "us-east-1"))
	}

	resp, body := send("/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream", invokeBody)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	types, payloads := decodeFrames(t, body)
	var events []string
	var input string
	for i, p := range payloads {
		if types[i] != "chunk" {
			t.Errorf("event %d is %q, want chunk", i, types[i])
		}
		raw, err := base64.StdEncoding.DecodeString(gjson.GetBytes(p, "bytes").String())
		if err != nil || !json.Valid(raw) {
			t.Fatalf("chunk %d: bytes %q are no base64 JSON: %v", i, p, err)
		}
		ev := gjson.ParseBytes(raw)
		events = append(events, ev.Get("type").String())
		input += ev.Get("delta.partial_json").String()
		if i == len(payloads)-1 && !ev.Get("amazon-bedrock-invocationMetrics.outputTokenCount").Exists() {
			t.Errorf("the last chunk has no invocation metrics: %s", raw)
		}
	}
	want := "message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(events, " ") != want {
		t.Errorf("events %v, want %s", events, want)
	}
	if input != `{"ref":"e12"}` {
		t.Errorf("tool input %q", input)
	}

	resp, body = send("/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream", `{"messages":[{"role":"user","content":[{"text":"Say OK."}]}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("converse-stream: status %d: %s", resp.StatusCode, body)
	}
	types, payloads = decodeFrames(t, body)
	want = "messageStart contentBlockDelta contentBlockStop contentBlockStart contentBlockDelta contentBlockStop messageStop metadata"
	if strings.Join(types, " ") != want {
		t.Errorf("converse-stream events %v, want %s", types, want)
	}
	if got := gjson.GetBytes(payloads[4], "delta.toolUse.input").String(); got != `{"ref":"e12"}` {
		t.Errorf("tool input delta %q", got)
	}
	if got := gjson.GetBytes(payloads[6], "stopReason").String(); got != "tool_use" {
		t.Errorf("stop reason %q", got)
	}

	resp, body = send("/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse", `{"messages":[{"role":"user","content":[{"text":"Say OK."}]}]}`)
	if resp.StatusCode != 200 || gjson.GetBytes(body, "output.message.content.1.toolUse.input.ref").String() != "e12" {
		t.Errorf("converse: status %d: %s", resp.StatusCode, body)
	}
}

// Bedrock's refusals come in its shape: a prompt over the window, and an
// InvokeModel body the model's schema refuses.
func TestBedrockRefusals(t *testing.T) {
	b := NewBedrock(t, BedrockOptions{Answer: func(Call) Reply { return Reply{Refusal: BedrockInputTooLong()} }})
	for _, tc := range []struct {
		name, body, message string
	}{
		{"too long", invokeBody, "Input is too long for requested model."},
		{"model in the body", `{"anthropic_version":"bedrock-2023-05-31","model":"x","max_tokens":1,"messages":[]}`, "extraneous key [model]"},
		{"no version", `{"max_tokens":1,"messages":[]}`, "required key [anthropic_version]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, signedRequest(t, b.URL, "/model/anthropic.claude-3-haiku-20240307-v1:0/invoke", tc.body, testCreds, "us-east-1"))
			if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("X-Amzn-Errortype"), "ValidationException:") ||
				!strings.Contains(gjson.GetBytes(body, "message").String(), tc.message) {
				t.Errorf("status %d, type %q, body %s", resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), body)
			}
		})
	}
}

// The Vertex fake's token endpoint serves the service account flow of
// golang.org/x/oauth2/google, end to end: the JWT it signs with the key
// file's private key is verified, and the access token it returns is
// accepted by the API routes, which refuse any other.
func TestVertexTokenFlow(t *testing.T) {
	v := NewVertex(t, VertexOptions{Project: "p", Location: "us-east5", Answer: TextAnswer("Hello there")})
	creds, err := google.CredentialsFromJSONWithType(context.Background(), v.ServiceAccountJSON(), google.ServiceAccount, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := creds.TokenSource.Token()
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	if file, err := os.ReadFile(v.CredentialsFile(t)); err != nil || !bytes.Equal(file, v.ServiceAccountJSON()) {
		t.Errorf("the credentials file holds %q (%v)", file, err)
	}
	post := func(path, token, body string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, v.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		return do(t, req)
	}
	gemini := "/v1/projects/p/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent"
	resp, body := post(gemini, tok.AccessToken, `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`)
	if resp.StatusCode != 200 || gjson.GetBytes(body, "candidates.0.content.parts.0.text").String() != "Hello there" {
		t.Fatalf("with the issued token: %d %s", resp.StatusCode, body)
	}
	resp, body = post(gemini, "ya29.not-issued", `{}`)
	if resp.StatusCode != 401 || gjson.GetBytes(body, "error.status").String() != "UNAUTHENTICATED" {
		t.Errorf("with another token: %d %s", resp.StatusCode, body)
	}
	resp, body = post(strings.Replace(gemini, "/p/", "/other/", 1), tok.AccessToken, `{}`)
	if resp.StatusCode != 403 || gjson.GetBytes(body, "error.status").String() != "PERMISSION_DENIED" {
		t.Errorf("another project: %d %s", resp.StatusCode, body)
	}

	// A key file whose key is not the fake's is refused at the token
	// endpoint.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other := newVertex(t, VertexOptions{Project: "p"}, key)
	forged := strings.Replace(string(v.ServiceAccountJSON()), v.TokenURL, other.TokenURL, 1)
	forged = strings.Replace(forged, v.ClientEmail, other.ClientEmail, 1)
	creds, err = google.CredentialsFromJSONWithType(context.Background(), []byte(forged), google.ServiceAccount, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := creds.TokenSource.Token(); err == nil || !strings.Contains(err.Error(), "Invalid JWT Signature") {
		t.Errorf("a JWT signed by another key: %v", err)
	}

	// Claude's routes: SSE on streamRawPredict, and the version required.
	claude := "/v1beta1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
	resp, body = post(claude, tok.AccessToken, `{"anthropic_version":"vertex-2023-10-16","stream":true,"max_tokens":5,"messages":[]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("streamRawPredict: %d %s", resp.StatusCode, body)
	}
	var events []string
	for sc := bufio.NewScanner(bytes.NewReader(body)); sc.Scan(); {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, name)
		}
	}
	if strings.Join(events, " ") != "message_start content_block_start content_block_delta content_block_stop message_delta message_stop" {
		t.Errorf("events %v", events)
	}
	resp, body = post(strings.Replace(claude, "streamRawPredict", "rawPredict", 1), tok.AccessToken, `{"max_tokens":5,"messages":[]}`)
	if resp.StatusCode != 400 || gjson.GetBytes(body, "error.type").String() != "invalid_request_error" {
		t.Errorf("no anthropic_version: %d %s", resp.StatusCode, body)
	}
	ok, refused := v.Authenticated()
	if len(ok) != 4 || refused != 1 { // another project's request is authenticated, then denied
		t.Errorf("%d accepted, %d refused; want 4 and 1", len(ok), refused)
	}
}

// Gemini's stream comes as SSE with alt=sse and as a JSON array without.
func TestVertexGeminiStreams(t *testing.T) {
	v := NewVertex(t, VertexOptions{Answer: TextAnswer("Hello there")})
	path := v.URL + "/v1/projects/p/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent"
	for _, tc := range []struct {
		query string
		parse func([]byte) []gjson.Result
	}{
		{"?alt=sse", func(b []byte) (out []gjson.Result) {
			for _, ev := range strings.Split(strings.TrimSpace(string(b)), "\r\n\r\n") {
				out = append(out, gjson.Parse(strings.TrimPrefix(ev, "data: ")))
			}
			return out
		}},
		{"", func(b []byte) []gjson.Result { return gjson.ParseBytes(b).Array() }},
	} {
		req, _ := http.NewRequest(http.MethodPost, path+tc.query, strings.NewReader(`{"contents":[]}`))
		req.Header.Set("Authorization", "Bearer "+v.Token())
		resp, body := do(t, req)
		if resp.StatusCode != 200 {
			t.Fatalf("%q: %d %s", tc.query, resp.StatusCode, body)
		}
		text := ""
		chunks := tc.parse(body)
		for _, c := range chunks {
			text += c.Get("candidates.0.content.parts.0.text").String()
		}
		if text != "Hello there" || chunks[len(chunks)-1].Get("candidates.0.finishReason").String() != "STOP" {
			t.Errorf("%q: %s", tc.query, body)
		}
	}
}

// Express mode's paths name no project and take the API key alone, in
// x-goog-api-key or ?key=; an access token or a wrong key is refused.
func TestVertexExpressTakesItsAPIKey(t *testing.T) {
	v := NewVertex(t, VertexOptions{Project: "p", Location: "us-east5", Answer: TextAnswer("Hi")})
	for _, tc := range []struct {
		name, path, header, value string
		want                      int
	}{
		{"header", "/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent", "X-Goog-Api-Key", TestVertexAPIKey, 200},
		{"query", "/v1/publishers/google/models/gemini-2.5-flash:countTokens?key=" + TestVertexAPIKey, "", "", 200},
		{"wrong key", "/v1/publishers/google/models/gemini-2.5-flash:generateContent", "X-Goog-Api-Key", "AQ.other", 400},
		{"access token", "/v1/publishers/google/models/gemini-2.5-flash:generateContent", "Authorization", "Bearer " + v.Token(), 400},
		{"Claude", "/v1/publishers/anthropic/models/claude-sonnet-4-5:rawPredict", "X-Goog-Api-Key", TestVertexAPIKey, 404},
	} {
		req, _ := http.NewRequest(http.MethodPost, v.URL+tc.path, strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`))
		if tc.header != "" {
			req.Header.Set(tc.header, tc.value)
		}
		if resp, body := do(t, req); resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.want)
		}
	}
	if ok, refused := v.Authenticated(); len(ok) != 2 || ok[0].Auth != "api-key" || refused != 2 {
		t.Errorf("%d authenticated (%+v), %d refused; want 2 with the API key, 2 refused", len(ok), ok, refused)
	}
}

// Azure takes its key in api-key or as a bearer token, an Entra token as a
// bearer token, and refuses a wrong key with 401 in its shape; the dated
// routes need api-version.
func TestAzureChecksCredentials(t *testing.T) {
	a := NewAzure(t, AzureOptions{Deployments: []string{"gpt-4.1"}, Model: "gpt-4.1-2025-04-14"})
	chat := `{"messages":[{"role":"user","content":"Hi"}]}`
	for _, tc := range []struct {
		name, path, header, value string
		status                    int
		auth                      string
	}{
		{"api-key", "/openai/deployments/gpt-4.1/chat/completions?api-version=2025-04-01-preview", "Api-Key", TestAzureAPIKey, 200, "api-key"},
		{"wrong api-key", "/openai/deployments/gpt-4.1/chat/completions?api-version=2025-04-01-preview", "Api-Key", "wrong", 401, ""},
		{"key as bearer", "/openai/v1/chat/completions", "Authorization", "Bearer " + TestAzureAPIKey, 200, "bearer-api-key"},
		{"entra", "/openai/deployments/gpt-4.1/chat/completions?api-version=2025-04-01-preview", "Authorization", "Bearer " + TestAzureEntraToken, 200, "entra"},
		{"wrong bearer", "/openai/v1/chat/completions", "Authorization", "Bearer wrong", 401, ""},
		{"no credential", "/openai/v1/chat/completions", "X-None", "x", 401, ""},
		{"no api-version", "/openai/deployments/gpt-4.1/chat/completions", "Api-Key", TestAzureAPIKey, 404, "api-key"},
		{"unknown deployment", "/openai/deployments/gpt-5/chat/completions?api-version=2025-04-01-preview", "Api-Key", TestAzureAPIKey, 404, "api-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := chat
			if strings.HasPrefix(tc.path, "/openai/v1/") {
				body = `{"model":"gpt-4.1","messages":[{"role":"user","content":"Hi"}]}`
			}
			req, _ := http.NewRequest(http.MethodPost, a.URL+tc.path, strings.NewReader(body))
			req.Header.Set(tc.header, tc.value)
			resp, got := do(t, req)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, got)
			}
			if tc.status == 200 && gjson.GetBytes(got, "choices.0.message.content").String() != "OK" {
				t.Errorf("answer %s", got)
			}
			if tc.status != 200 && !gjson.GetBytes(got, "error.code").Exists() {
				t.Errorf("error body %s", got)
			}
			reqs := a.Requests()
			if last := reqs[len(reqs)-1]; last.Auth != tc.auth {
				t.Errorf("recorded auth %q, want %q", last.Auth, tc.auth)
			}
		})
	}
}

// Azure streams chat completions with its leading prompt-filter chunk and
// [DONE], and Responses as typed events ending in response.completed.
func TestAzureStreams(t *testing.T) {
	a := NewAzure(t, AzureOptions{Answer: func(c Call) Reply {
		return Reply{ToolCalls: []ToolCall{{Name: "mcp__playwright__browser_click", Input: `{"ref":"e7"}`}}}
	}})
	post := func(path, body string) []byte {
		req, _ := http.NewRequest(http.MethodPost, a.URL+path, strings.NewReader(body))
		req.Header.Set("Api-Key", TestAzureAPIKey)
		resp, got := do(t, req)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, got)
		}
		return got
	}
	body := post("/openai/deployments/d/chat/completions?api-version=2024-10-21", `{"stream":true,"stream_options":{"include_usage":true},"messages":[]}`)
	var data []string
	for _, line := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
	if !gjson.Get(data[0], "prompt_filter_results").Exists() || data[len(data)-1] != "[DONE]" || !gjson.Get(data[len(data)-2], "usage.total_tokens").Exists() {
		t.Errorf("chat stream %s", body)
	}
	if !strings.Contains(string(body), `"arguments":"{\"ref\":\"e7\"}"`) {
		t.Errorf("no tool call arguments in %s", body)
	}

	body = post("/openai/responses?api-version=2025-04-01-preview", `{"model":"d","stream":true,"input":"Hi"}`)
	var events []string
	var done gjson.Result
	for _, line := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			events = append(events, gjson.Get(d, "type").String())
			if gjson.Get(d, "type").String() == "response.output_item.done" {
				done = gjson.Get(d, "item")
			}
		}
	}
	if events[0] != "response.created" || events[len(events)-1] != "response.completed" {
		t.Errorf("responses events %v", events)
	}
	if done.Get("namespace").String() != "mcp__playwright" || done.Get("name").String() != "browser_click" {
		t.Errorf("function call item %s", done.Raw)
	}
}
