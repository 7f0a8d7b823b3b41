package prune

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/focusgate/focusgate"
)

// Query is one question to the retriever.
type Query struct {
	Goal     string
	History  string // empty when history is not used
	Numbered string // the tree as Number renders it
	Lines    int    // how many numbered lines; answers are checked against it
	Variant  focusgate.Variant
	// Credential is the client's own, used only when the retriever has no
	// credential of the gateway's, in the place the client put it.
	Credential focusgate.ClientCredential
	// Vars are the request's route variables, which the call's path may
	// name (Vertex AI's project and location).
	Vars focusgate.Vars
}

// RetrieverConfig configures a retriever client.
type RetrieverConfig struct {
	// Speaks is the API of its calls: focusgate.APIChat (an
	// OpenAI-compatible chat completion), APIMessages or APIGemini.
	Speaks focusgate.API
	// BaseURL is where its calls go, e.g. https://api.openai.com/v1; Path
	// is joined onto it (default: the API's own path, callPaths). Resolve,
	// when set, fills in the base's variables for a request (Vertex AI's
	// location); Path's "{model}" is Model and its other variables are the
	// request's route variables.
	BaseURL string
	Resolve func(base string, vars focusgate.Vars) (string, error)
	Path    string
	// Version, when set, is the anthropic_version a Messages call names in
	// place of a model, which its path names (Bedrock, Vertex AI).
	Version string
	Model   string
	// Signer authorizes its calls with the gateway's credential; when nil
	// or not ready, a call carries the client's own (Query.Credential).
	Signer focusgate.Signer
	// Timeout bounds one Select, a re-ask included; zero means no bound
	// beyond the caller's context.
	Timeout time.Duration
	// MaxTokens caps the output tokens of each call, so that a model that
	// rambles costs a bounded amount and time; zero sends the API's default
	// cap, or none. Reasoning models count their hidden reasoning in it.
	MaxTokens  int
	HTTPClient *http.Client // nil: a client of its own
}

// maxAnswerBytes caps what is read of one retriever response: an answer is a
// few hundred tokens, and a misbehaving endpoint must not exhaust memory.
const maxAnswerBytes = 4 << 20

// caller makes one call to a retriever model of one API: the system prompt
// and the turns in, the reply out. What the APIs share (prompts, the re-ask,
// parsing, the deadline, where the call goes and how it is authorized) is
// ask's and the client's.
type caller func(ctx context.Context, c *client, x exchange, system string, turns []turn) (answer, focusgate.RetrieverUsage, error)

// callers are the retriever clients, by the API they speak; callPaths are
// where each API's calls go when the configuration names no path.
var (
	callers = map[focusgate.API]caller{
		focusgate.APIChat:     chatCall,
		focusgate.APIMessages: messagesCall,
		focusgate.APIGemini:   geminiCall,
	}
	callPaths = map[focusgate.API]string{
		focusgate.APIChat:     "/chat/completions",
		focusgate.APIMessages: "/v1/messages",
		focusgate.APIGemini:   "/v1beta/models/{model}:generateContent",
	}
)

// NewRetriever returns the retriever client cfg describes.
func NewRetriever(cfg RetrieverConfig) (Retriever, error) {
	call, ok := callers[cfg.Speaks]
	if !ok {
		return nil, fmt.Errorf("prune: no retriever speaks the %s API", cfg.Speaks)
	}
	if cfg.Path == "" {
		cfg.Path = callPaths[cfg.Speaks]
	}
	cfg.HTTPClient = cappedClient(cfg.HTTPClient)
	cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/")
	return &client{cfg: cfg, call: call}, nil
}

// client is a retriever client of one API. It is safe for concurrent use.
type client struct {
	cfg  RetrieverConfig
	call caller
}

var _ completer = (*client)(nil)

// exchange is where one question's calls go, and how each is authorized.
type exchange struct {
	endpoint  string
	authorize func(ctx context.Context, r *http.Request, body []byte) error
}

// Select asks the retriever for the lines that matter to q (see ask).
func (c *client) Select(ctx context.Context, q Query) (Selection, error) {
	x, err := c.exchange(ctx, q)
	if err != nil {
		return Selection{}, err
	}
	return ask(ctx, c, x, c.cfg.Timeout, q)
}

func (c *client) complete(ctx context.Context, x exchange, system string, turns []turn) (answer, focusgate.RetrieverUsage, error) {
	return c.call(ctx, c, x, system, turns)
}

// exchange resolves where q's calls go and how they are authorized: with
// the gateway's credential when it has one, else with the client's own,
// where the client put it.
func (c *client) exchange(ctx context.Context, q Query) (exchange, error) {
	base := c.cfg.BaseURL
	if c.cfg.Resolve != nil {
		var err error
		if base, err = c.cfg.Resolve(base, q.Vars); err != nil {
			return exchange{}, fmt.Errorf("prune: retriever: %w", err)
		}
	}
	path, ok := q.Vars.Fill(c.cfg.Path, func(name string) string {
		if name == "model" {
			return c.cfg.Model
		}
		return ""
	})
	if !ok {
		return exchange{}, fmt.Errorf("prune: retriever: the request names no value for a variable of %s", c.cfg.Path)
	}
	x := exchange{endpoint: joinPath(base, path)}
	if s := c.cfg.Signer; s != nil && s.Ready(ctx) {
		x.authorize = s.Sign
		return x, nil
	}
	cred := q.Credential
	x.authorize = func(_ context.Context, r *http.Request, _ []byte) error {
		if cred.Value != "" {
			cred.Place.Set(r, cred.Value)
		}
		return nil
	}
	return x, nil
}

// cappedClient is c, or a client of its own, with every response body
// capped at maxAnswerBytes.
func cappedClient(c *http.Client) *http.Client {
	client := http.Client{}
	if c != nil {
		client = *c
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client.Transport = capBodies{base}
	return &client
}

// capBodies caps every response body at maxAnswerBytes.
type capBodies struct{ base http.RoundTripper }

func (t capBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		resp.Body = cappedBody{io.LimitReader(resp.Body, maxAnswerBytes), resp.Body}
	}
	return resp, err
}

type cappedBody struct {
	io.Reader
	io.Closer
}

// StatusError is an HTTP error status from the retriever endpoint.
type StatusError struct {
	Code int
	Err  error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("prune: retriever returned HTTP %d: %v", e.Code, e.Err)
}

func (e *StatusError) Unwrap() error { return e.Err }

// turn is one message of a conversation with the retriever model after the
// system prompt: the user's question or correction, or the model's answer.
type turn struct {
	assistant bool
	content   string
}

// joinPath joins a call's path onto its base URL. A base given with the
// path's first segment (an Anthropic URL that ends in /v1, as some clients
// take it) does not repeat it.
func joinPath(base, path string) string {
	if first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/"); first != "" && strings.HasSuffix(base, "/"+first) {
		base = strings.TrimSuffix(base, "/"+first)
	}
	return base + path
}

// completer makes one call to a retriever model: the system prompt and the
// turns in, the reply out. What every API shares (prompts, the re-ask,
// parsing, the deadline) is ask's.
type completer interface {
	complete(ctx context.Context, x exchange, system string, turns []turn) (answer, focusgate.RetrieverUsage, error)
}

// ask asks the model behind c for the lines that matter to q, within
// timeout (zero: only the caller's context bounds it). When the answer names
// no usable lines (ErrBadAnswer, an empty answer included) it asks once
// more, with a short correction, within the same deadline: models that drift
// from the format usually comply when told. Usage covers both calls. Errors
// are context errors, *StatusError, ErrBadAnswer, or transport errors.
func ask(ctx context.Context, c completer, x exchange, timeout time.Duration, q Query) (Selection, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	system := systemPrompt(q.Variant)
	turns := []turn{{content: userPrompt(q)}}
	ans, usage, err := c.complete(ctx, x, system, turns)
	if err != nil {
		return Selection{Usage: usage}, err
	}
	sel, err := ans.parse(q.Lines)
	if errors.Is(err, ErrBadAnswer) {
		if ans.content != "" {
			// An assistant message without content is refused; after an
			// empty answer the correction follows the question directly.
			turns = append(turns, turn{assistant: true, content: ans.content})
		}
		turns = append(turns, turn{content: correction(q)})
		var u focusgate.RetrieverUsage
		ans, u, err = c.complete(ctx, x, system, turns)
		usage.Add(u)
		if err != nil {
			return Selection{Usage: usage}, err
		}
		sel, err = ans.parse(q.Lines)
	}
	sel.Usage = usage
	sel.Reasoning = reasoningOf(ans.content)
	return sel, err
}

// answer is the retriever's reply to one call.
type answer struct {
	content string
	// cut says the reply stopped at the output-token cap, so that its last
	// range may be incomplete.
	cut bool
}

func (a answer) parse(lines int) (Selection, error) {
	sel, err := parseAnswer(a.content, lines, a.cut)
	if err != nil && a.cut {
		err = fmt.Errorf("%w (the answer stopped at the output-token cap)", err)
	}
	return sel, err
}

// maxReasoningBytes bounds the reasoning kept from one answer.
const maxReasoningBytes = 8 << 10

// reasoningOf is what the retriever wrote to explain its answer: its
// <think> block, else the prose before the answer, cut at
// maxReasoningBytes.
func reasoningOf(answer string) string {
	var r string
	if i := strings.Index(answer, "<think>"); i >= 0 {
		r = answer[i+len("<think>"):]
		if j := strings.Index(r, "</think>"); j >= 0 {
			r = r[:j]
		}
	} else if i := strings.Index(answer, "<answer>"); i >= 0 {
		r = answer[:i]
	}
	r = strings.TrimSpace(r)
	if len(r) > maxReasoningBytes {
		r = strings.ToValidUTF8(r[:maxReasoningBytes], "") + " …"
	}
	return r
}

// postCall marshals req and posts it with postJSON.
func postCall(ctx context.Context, c *client, x exchange, header http.Header, req, out any, describe func() string) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("prune: retriever request: %w", err)
	}
	return postJSON(ctx, c.cfg.HTTPClient, x, header, body, out, describe)
}

// postJSON posts a JSON body to x's endpoint, authorized as x says, and
// decodes a 200 answer into out: the exchange every retriever client makes.
// Another status is a *StatusError whose message is what describe reads of
// the decoded answer (its error object), or the status's text when the
// answer says nothing.
func postJSON(ctx context.Context, client *http.Client, x exchange, header http.Header, body []byte, out any, describe func() string) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, x.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("prune: retriever: %w", err)
	}
	if header != nil {
		hr.Header = header.Clone()
	}
	hr.Header.Set("Content-Type", "application/json")
	if err := x.authorize(ctx, hr, body); err != nil {
		return fmt.Errorf("prune: retriever: %w", err)
	}
	resp, err := client.Do(hr)
	if err != nil {
		return fmt.Errorf("prune: retriever: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("prune: retriever: reading the answer: %w", err)
	}
	jsonErr := json.Unmarshal(raw, out)
	if resp.StatusCode != http.StatusOK {
		msg := http.StatusText(resp.StatusCode)
		if jsonErr == nil {
			msg = cmp.Or(describe(), msg)
		}
		return &StatusError{Code: resp.StatusCode, Err: errors.New(msg)}
	}
	if jsonErr != nil {
		return fmt.Errorf("prune: retriever: decoding the answer: %w", jsonErr)
	}
	return nil
}
