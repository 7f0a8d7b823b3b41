// Package cloudtest plays the three clouds that serve LLMs to agents (AWS
// Bedrock, Google Vertex AI and Azure OpenAI) for tests, over real HTTP, so
// that a test can run an unmodified cloud client (an SDK, Claude Code, Codex)
// against them, and later put the gateway in between, without any cloud
// account.
//
// Each fake is an httptest server that serves the routes the real clients
// call, with the paths as they send them (a Bedrock model id's ':' raw or as
// %3A), checks credentials the way the cloud does and answers with the
// cloud's framing:
//
//   - NewBedrock: InvokeModel (/model/{id}/invoke), its stream
//     (/invoke-with-response-stream, AWS event-stream frames whose chunk
//     events carry base64 Anthropic SSE events), Converse and ConverseStream
//     (/converse, /converse-stream), CountTokens (/count-tokens), and the
//     control plane's GET /inference-profiles, which Claude Code calls. It
//     accepts a SigV4 signature (service bedrock, the fake's region) made
//     with the fake's access key, body hash included, recomputed with the AWS
//     SDK's own signer, or a Bedrock API key as a bearer token, and refuses
//     anything else with 403 and Bedrock's x-amzn-ErrorType and
//     {"message": ...}.
//   - NewVertex: Anthropic models (:rawPredict, :streamRawPredict,
//     count-tokens:rawPredict) and Gemini models (:generateContent,
//     :streamGenerateContent, :countTokens) under /v1 and /v1beta1, and an
//     OAuth2 token endpoint (/token) that takes the JWT-bearer grant a
//     service account makes, verifies its RS256 signature against the key
//     pair the fake made for the test and issues access tokens; the API
//     routes accept only those tokens and refuse others with 401 in Google's
//     error shape. CredentialsFile writes the service account's JSON, whose
//     token_uri points at the fake, for GOOGLE_APPLICATION_CREDENTIALS.
//   - NewAzure: chat completions and Responses under /openai/deployments/{d}/,
//     /openai/responses (these three need api-version) and /openai/v1/,
//     with the api-key header or an Entra ID bearer token, refused with 401
//     in Azure's error shape otherwise.
//
// The model itself is a test's Answer function: it gets the request's body
// with the API it is written in (Call) and returns the reply in a neutral
// form (Reply: text, tool calls, or a Refusal), which the fake frames for
// the route, streamed or not. Every request is recorded as it arrived
// (Request: the path as sent, query, headers, body, which credential was
// accepted), so a test can check what a client or the gateway sent upstream.
//
// Nothing here sleeps or times out: a fake answers as soon as the Answer
// returns.
package cloudtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"
)

// The APIs a request body can be written in; Call.API names one.
const (
	// Anthropic is the Messages API as the clouds carry it: Bedrock's
	// InvokeModel and Vertex's rawPredict, with anthropic_version in the
	// body and the model in the path.
	Anthropic = "anthropic"
	// Converse is Bedrock's own model-neutral API.
	Converse = "converse"
	// Gemini is Vertex AI's generateContent.
	Gemini = "gemini"
	// Chat is OpenAI's chat completions, as Azure serves them.
	Chat = "chat"
	// Responses is OpenAI's Responses API, as Azure serves it.
	Responses = "responses"
)

// Call is one model call as the Answer function sees it.
type Call struct {
	API    string // Anthropic, Converse, Gemini, Chat or Responses
	Route  string // the fake's name for the route, e.g. "invoke-with-response-stream"
	Model  string // the model id or deployment, unescaped
	Stream bool   // the answer will be streamed
	Body   []byte
}

// ToolCall is one tool call in a Reply; Input is a JSON object. On the
// Responses API a name "mcp__server__tool" is sent as Codex names its MCP
// tools: namespace "mcp__server", name "tool".
type ToolCall struct {
	ID    string // made up by the fake when empty
	Name  string
	Input string
}

// Reply is the model's answer in a form that is none of the APIs': the fake
// frames it for the route it answers on.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// InputTokens and OutputTokens are the usage reported; the fake makes
	// up small numbers when they are zero.
	InputTokens, OutputTokens int
	// Refusal, when set, is sent instead of an answer, in the cloud's error
	// shape.
	Refusal *Refusal
}

// Refusal is an error answer: Status and Message, with Code the cloud's
// error type (Bedrock's x-amzn-ErrorType, Azure's and OpenAI's code,
// Google's status, Anthropic's error type).
type Refusal struct {
	Status  int
	Code    string
	Message string
}

// T is what the fakes need of a test: testing.TB has it, and so can a
// program that runs the fakes outside a test (cloudrecord).
type T interface {
	Helper()
	Cleanup(func())
}

// Answer is the scripted model.
type Answer func(Call) Reply

// TextAnswer is the model that always says text.
func TextAnswer(text string) Answer {
	return func(Call) Reply { return Reply{Text: text} }
}

// Request is one request as a fake received it.
type Request struct {
	Method string
	// Path is the path as it was sent, percent-encoding included (a Bedrock
	// model id's ':' raw or as %3A).
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	// Route is the fake's name for the route it matched ("" for none),
	// Model the model or deployment named in it, unescaped.
	Route string
	Model string
	// Auth says which credential the fake accepted: "sigv4:<access key
	// id>", "bedrock-api-key" (Bedrock), "oauth" (Vertex), "api-key",
	// "bearer-api-key", "entra" (Azure), "open" for anything in open mode;
	// empty when it refused the request (or the route needs none, as the
	// token endpoint).
	Auth   string
	Status int // the status the fake answered with
}

// recorder keeps the requests a fake received, safe for the handlers'
// goroutines and the test's.
type recorder struct {
	mu   sync.Mutex
	reqs []Request
}

func (r *recorder) add(req Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
}

// Requests returns a copy of what was received so far, in arrival order
// (the order the fake finished answering them).
func (r *recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Authenticated returns the requests to API routes whose credential was
// accepted, and how many were refused.
func (r *recorder) Authenticated() (ok []Request, refused int) {
	for _, req := range r.Requests() {
		switch {
		case req.Auth != "":
			ok = append(ok, req)
		case req.Route != "" && req.Route != "token":
			refused++
		}
	}
	return ok, refused
}

// readRequest reads the body and starts the record of r. The path is taken
// from the request line as it was sent.
func readRequest(r *http.Request) (Request, error) {
	body, err := io.ReadAll(r.Body)
	path, query, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(path, "/") { // an absolute URI, as a proxy is sent
		path = r.URL.EscapedPath()
		query = r.URL.RawQuery
	}
	return Request{Method: r.Method, Path: path, RawQuery: query, Header: r.Header.Clone(), Body: body}, err
}

// statusWriter remembers the status written, for the record.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.ResponseWriter.(http.Flusher).Flush()
}

// writeJSON answers with status and v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // a fake's own value; a test bug
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// sse writes one server-sent event, with an event name when typ is not
// empty, and flushes it so the client sees each event as it comes.
func sse(w http.ResponseWriter, typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	if typ != "" {
		fmt.Fprintf(w, "event: %s\n", typ)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	w.(http.Flusher).Flush()
}

// usage fills in made-up token counts.
func (r Reply) usage() (in, out int) {
	in, out = r.InputTokens, r.OutputTokens
	if in == 0 {
		in = 100
	}
	if out == 0 {
		out = 10
	}
	return in, out
}

// callIDs number the tool calls the fakes make up ids for: a client maps
// each result to its call by id, so ids must not repeat in a conversation.
var callIDs atomic.Int64

// callID makes up a tool call's id when the Answer gave none.
func callID(prefix string, _ int, c ToolCall) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("%s%d", prefix, callIDs.Add(1))
}

// input is a tool call's input as a JSON value, {} when empty.
func (c ToolCall) input() json.RawMessage {
	if strings.TrimSpace(c.Input) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(c.Input)
}

// Tools returns the names of the tools the request declares, in any of the
// APIs, so a scripted model can tell an agent's requests from its side
// requests.
func (c Call) Tools() []string {
	var paths []string
	switch c.API {
	case Anthropic, Responses:
		paths = []string{"tools.#.name"}
	case Converse:
		paths = []string{"toolConfig.tools.#.toolSpec.name"}
	case Gemini:
		paths = []string{"tools.#.functionDeclarations.#.name", "tools.#.function_declarations.#.name"}
	case Chat:
		paths = []string{"tools.#.function.name"}
	}
	var names []string
	for _, p := range paths {
		collect(gjson.GetBytes(c.Body, p), &names)
	}
	return names
}

// Calls returns the names of the tool calls the model made so far in the
// conversation, oldest first: a scripted model's step counter.
func (c Call) Calls() []string {
	var paths []string
	switch c.API {
	case Anthropic:
		paths = []string{`messages.#.content.#(type=="tool_use")#.name`}
	case Converse:
		paths = []string{`messages.#.content.#.toolUse.name`}
	case Gemini:
		paths = []string{`contents.#.parts.#.functionCall.name`}
	case Chat:
		paths = []string{`messages.#.tool_calls.#.function.name`}
	case Responses:
		paths = []string{`input.#(type=="function_call")#.name`}
	}
	var names []string
	for _, p := range paths {
		collect(gjson.GetBytes(c.Body, p), &names)
	}
	return names
}

// collect appends the strings of a (nested) gjson array result.
func collect(r gjson.Result, into *[]string) {
	if r.IsArray() {
		r.ForEach(func(_, v gjson.Result) bool {
			collect(v, into)
			return true
		})
		return
	}
	if r.Type == gjson.String {
		*into = append(*into, r.String())
	}
}

// Unescaped is the body with JSON's escaping of quotes and newlines undone,
// so that a pattern written for a page snapshot's text (button "Place
// order" [ref=e12]) finds it in a body that carries the snapshot as a JSON
// string, or as a JSON string inside one (Bedrock's count-tokens body is
// base64, and is decoded first).
func (c Call) Unescaped() string {
	s := string(c.Body)
	for range 3 {
		s = strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n").Replace(s)
	}
	return s
}
