package cloudtest

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// Test credentials of the Azure fake when its options name none.
const (
	TestAzureAPIKey     = "0123456789abcdef0123456789abcdef"
	TestAzureEntraToken = "eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.eyJhdWQiOiJodHRwczovL2NvZ25pdGl2ZXNlcnZpY2VzLmF6dXJlLmNvbSJ9.cloudtest"
)

// AzureOptions configure NewAzure; the zero value accepts the Test*
// credentials for any deployment and answers "OK".
type AzureOptions struct {
	APIKey string // the key accepted in the api-key header, or as a bearer token
	// EntraToken is the Microsoft Entra ID access token accepted as
	// Authorization: Bearer.
	EntraToken string
	// Deployments, when set, are the only deployments served; others get
	// DeploymentNotFound.
	Deployments []string
	// Model is the model name answers report (Azure reports the model
	// behind the deployment, as "gpt-4.1-2025-04-14"); the request's
	// deployment or model when empty.
	Model string
	// Open accepts any credential, and none, recording what came.
	Open   bool
	Answer Answer
}

// Azure is a fake Azure OpenAI resource (what https://{resource}.openai.
// azure.com names), stopped when its test ends.
type Azure struct {
	URL string
	recorder
	opts AzureOptions
}

// NewAzure starts a fake Azure OpenAI resource.
func NewAzure(t T, opts AzureOptions) *Azure {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = TestAzureAPIKey
	}
	if opts.EntraToken == "" {
		opts.EntraToken = TestAzureEntraToken
	}
	if opts.Answer == nil {
		opts.Answer = TextAnswer("OK")
	}
	a := &Azure{opts: opts}
	srv := httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// azureRoute reads the paths Azure OpenAI serves chat completions and
// Responses on: per deployment and on the resource (both dated by
// api-version), and the version-less /openai/v1/.
func azureRoute(path string) (api, deployment string, versioned, ok bool) {
	p, err := url.PathUnescape(path)
	if err != nil {
		return "", "", false, false
	}
	p = strings.TrimSuffix(p, "/")
	switch p {
	case "/openai/responses":
		return Responses, "", true, true
	case "/openai/v1/responses":
		return Responses, "", false, true
	case "/openai/v1/chat/completions":
		return Chat, "", false, true
	}
	rest, found := strings.CutPrefix(p, "/openai/deployments/")
	if !found {
		return "", "", false, false
	}
	d, op, _ := strings.Cut(rest, "/")
	switch op {
	case "chat/completions":
		return Chat, d, true, true
	case "responses":
		return Responses, d, true, true
	}
	return "", "", false, false
}

func (a *Azure) serve(w http.ResponseWriter, r *http.Request) {
	req, err := readRequest(r)
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		req.Status = sw.status
		a.add(req)
	}()
	if err != nil {
		azureError(sw, Refusal{http.StatusBadRequest, "BadRequest", err.Error()})
		return
	}
	api, deployment, versioned, ok := azureRoute(req.Path)
	if !ok || r.Method != http.MethodPost {
		azureError(sw, Refusal{http.StatusNotFound, "404", "Resource not found"})
		return
	}
	req.Route = strings.TrimPrefix(req.Path, "/openai/")
	if deployment != "" {
		req.Route = strings.Replace(req.Route, "/"+url.PathEscape(deployment)+"/", "/{deployment}/", 1)
	}
	auth, refusal := a.authenticate(r)
	if refusal != nil && !a.opts.Open {
		azureError(sw, *refusal)
		return
	}
	req.Auth = auth
	if a.opts.Open && auth == "" {
		req.Auth = "open"
	}
	if versioned && r.URL.Query().Get("api-version") == "" {
		azureError(sw, Refusal{http.StatusNotFound, "404", "Resource not found"})
		return
	}
	if !json.Valid(req.Body) {
		azureError(sw, Refusal{http.StatusBadRequest, "BadRequest", "The request body is not valid JSON."})
		return
	}
	model := deployment
	if model == "" {
		model = gjson.GetBytes(req.Body, "model").String()
	}
	req.Model = model
	if len(a.opts.Deployments) > 0 && !slices.Contains(a.opts.Deployments, model) {
		azureError(sw, Refusal{http.StatusNotFound, "DeploymentNotFound",
			"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."})
		return
	}
	call := Call{API: api, Route: req.Route, Model: model, Body: req.Body, Stream: gjson.GetBytes(req.Body, "stream").Bool()}
	reply := a.opts.Answer(call)
	if reply.Refusal != nil {
		azureError(sw, *reply.Refusal)
		return
	}
	name := a.opts.Model
	if name == "" {
		name = model
	}
	switch {
	case api == Chat && call.Stream:
		chatStream(sw, name, reply, gjson.GetBytes(req.Body, "stream_options.include_usage").Bool())
	case api == Chat:
		writeJSON(sw, http.StatusOK, chatAnswer(name, reply))
	case call.Stream:
		responsesStream(sw, name, reply)
	default:
		writeJSON(sw, http.StatusOK, responsesAnswer(name, reply, "completed"))
	}
}

// authenticate accepts the resource's key in api-key, an Entra ID token as
// a bearer token, and the key as a bearer token too: the OpenAI client on
// /openai/v1/ and Codex (env_key) send it so.
func (a *Azure) authenticate(r *http.Request) (string, *Refusal) {
	if key := r.Header.Get("Api-Key"); key != "" {
		if subtle.ConstantTimeCompare([]byte(key), []byte(a.opts.APIKey)) == 1 {
			return "api-key", nil
		}
		return "", azureDenied()
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		switch {
		case subtle.ConstantTimeCompare([]byte(tok), []byte(a.opts.EntraToken)) == 1:
			return "entra", nil
		case subtle.ConstantTimeCompare([]byte(tok), []byte(a.opts.APIKey)) == 1:
			return "bearer-api-key", nil
		}
		return "", &Refusal{http.StatusUnauthorized, "PermissionDenied",
			"Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired."}
	}
	return "", azureDenied()
}

func azureDenied() *Refusal {
	return &Refusal{http.StatusUnauthorized, "401",
		"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}
}

// AzureContextLengthExceeded is Azure OpenAI's refusal of a prompt over the
// model's context window.
func AzureContextLengthExceeded(tokens, window int) *Refusal {
	return &Refusal{http.StatusBadRequest, "context_length_exceeded",
		fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, tokens)}
}

// azureError answers in Azure OpenAI's error shape: OpenAI's, with the
// code a string, an HTTP status for the front end's own refusals.
func azureError(w http.ResponseWriter, ref Refusal) {
	e := map[string]any{"code": ref.Code, "message": ref.Message}
	if ref.Code == "context_length_exceeded" {
		e["type"], e["param"] = "invalid_request_error", "messages"
	}
	writeJSON(w, ref.Status, map[string]any{"error": e})
}

var completionIDs atomic.Int64

// contentFilter is Azure's content-filter annotation: nothing filtered.
func contentFilter() map[string]any {
	safe := map[string]any{"filtered": false, "severity": "safe"}
	return map[string]any{"hate": safe, "self_harm": safe, "sexual": safe, "violence": safe}
}

func promptFilter() []any {
	return []any{map[string]any{"prompt_index": 0, "content_filter_results": contentFilter()}}
}

func chatStop(r Reply) string {
	if len(r.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func chatUsage(r Reply) map[string]any {
	in, out := r.usage()
	return map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out,
		"prompt_tokens_details": map[string]int{"cached_tokens": 0}, "completion_tokens_details": map[string]int{"reasoning_tokens": 0}}
}

// chatAnswer is a chat completion as Azure sends it, with its content
// filter results.
func chatAnswer(model string, r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if r.Text != "" {
		msg["content"] = r.Text
	}
	if len(r.ToolCalls) > 0 {
		var calls []any
		for i, c := range r.ToolCalls {
			calls = append(calls, map[string]any{"id": callID("call_cloudtest_", i, c), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": string(c.input())}})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-cloudtest-%d", completionIDs.Add(1)), "object": "chat.completion", "created": time.Now().Unix(),
		"model": model, "system_fingerprint": "fp_cloudtest", "prompt_filter_results": promptFilter(),
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": chatStop(r), "logprobs": nil, "content_filter_results": contentFilter()}},
		"usage":   chatUsage(r),
	}
}

// chatStream streams a chat completion as Azure does: first a chunk with
// no choices and the prompt's filter results, then the deltas, the finish
// reason, the usage when asked for, and [DONE].
func chatStream(w http.ResponseWriter, model string, r Reply, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	sse(w, "", map[string]any{"choices": []any{}, "created": 0, "id": "", "model": "", "object": "", "prompt_filter_results": promptFilter()})
	id, created := fmt.Sprintf("chatcmpl-cloudtest-%d", completionIDs.Add(1)), time.Now().Unix()
	chunk := func(delta map[string]any, finish any, extra map[string]any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "system_fingerprint": "fp_cloudtest",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil, "content_filter_results": map[string]any{}}}}
		for k, v := range extra {
			c[k] = v
		}
		sse(w, "", c)
	}
	chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil, nil)
	if r.Text != "" {
		chunk(map[string]any{"content": r.Text}, nil, nil)
	}
	for i, c := range r.ToolCalls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID("call_cloudtest_", i, c), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": string(c.input())}}}}, nil, nil)
	}
	chunk(map[string]any{}, chatStop(r), nil)
	if usage {
		sse(w, "", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": chatUsage(r)})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	w.(http.Flusher).Flush()
}

// responsesItems are a reply's output items in the Responses API. A tool
// call named "namespace__tool" (Codex's MCP tools, "mcp__server__tool")
// is split into namespace and name as Codex expects.
func responsesItems(r Reply) []map[string]any {
	var items []map[string]any
	if r.Text != "" {
		items = append(items, map[string]any{"type": "message", "id": fmt.Sprintf("msg_cloudtest_%d", messageIDs.Add(1)), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}}})
	}
	for i, c := range r.ToolCalls {
		item := map[string]any{"type": "function_call", "id": callID("fc_cloudtest_", i, c), "call_id": callID("call_cloudtest_", i, c),
			"name": c.Name, "arguments": string(c.input()), "status": "completed"}
		if ns, name, ok := strings.Cut(strings.TrimPrefix(c.Name, "mcp__"), "__"); ok && strings.HasPrefix(c.Name, "mcp__") {
			item["namespace"], item["name"] = "mcp__"+ns, name
		}
		items = append(items, item)
	}
	return items
}

// responsesAnswer is a Responses API response object.
func responsesAnswer(model string, r Reply, status string) map[string]any {
	in, out := r.usage()
	output := []any{}
	if status == "completed" {
		for _, it := range responsesItems(r) {
			output = append(output, it)
		}
	}
	resp := map[string]any{"id": "resp_cloudtest", "object": "response", "created_at": time.Now().Unix(), "status": status,
		"model": model, "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "error": nil,
		"incomplete_details": nil}
	if status == "completed" {
		resp["usage"] = map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out,
			"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}
	}
	return resp
}

// responsesStream streams a Responses answer, each output item added, its
// text or arguments in one delta, done, and the response completed.
func responsesStream(w http.ResponseWriter, model string, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	seq := 0
	event := func(typ string, data map[string]any) {
		data["type"], data["sequence_number"] = typ, seq
		seq++
		sse(w, typ, data)
	}
	event("response.created", map[string]any{"response": responsesAnswer(model, r, "in_progress")})
	event("response.in_progress", map[string]any{"response": responsesAnswer(model, r, "in_progress")})
	for i, it := range responsesItems(r) {
		id := it["id"]
		switch it["type"] {
		case "message":
			text := r.Text
			event("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
				"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}})
			event("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			event("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": text, "logprobs": []any{}})
			event("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
			event("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		case "function_call":
			added := map[string]any{}
			for k, v := range it {
				added[k] = v
			}
			added["arguments"], added["status"] = "", "in_progress"
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			event("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": it["arguments"]})
			event("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": it["arguments"]})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	event("response.completed", map[string]any{"response": responsesAnswer(model, r, "completed")})
}
