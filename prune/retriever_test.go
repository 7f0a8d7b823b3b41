package prune

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/focusgate/focusgate"
)

// reply is one scripted response of the fake chat-completions endpoint.
type reply struct {
	status  int    // HTTP status; 0 means 200
	content string // the assistant message
	finish  string // the finish reason; empty means "stop"
	hang    bool   // block until the request's context ends
}

// sentChat is what the fake endpoint received.
type sentChat struct {
	auth string
	body openai.ChatCompletionRequest
	raw  map[string]any
}

// chatServer plays an OpenAI-compatible chat-completions endpoint over real
// HTTP, answering with scripted replies in turn (the last one repeats) and
// recording every request.
type chatServer struct {
	url string

	mu       sync.Mutex
	replies  []reply
	requests []sentChat
}

func newChatServer(t *testing.T, replies ...reply) *chatServer {
	t.Helper()
	s := &chatServer{replies: replies}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/v1"
	return s
}

func (s *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := sentChat{auth: r.Header.Get("Authorization")}
	if err := json.Unmarshal(b, &req.body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := json.Unmarshal(b, &req.raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	rep := s.replies[min(len(s.requests), len(s.replies))-1]
	s.mu.Unlock()

	switch {
	case rep.hang:
		<-r.Context().Done()
	case rep.status != 0 && rep.status != http.StatusOK:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		io.WriteString(w, `{"error":{"message":"scripted failure","type":"test"}}`)
	default:
		finish := rep.finish
		if finish == "" {
			finish = "stop"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id":      "chatcmpl-test",
			"object":  "chat.completion",
			"created": time.Now().Unix(),
			"model":   req.body.Model,
			"choices": []map[string]any{{
				"index":         0,
				"message":       map[string]string{"role": "assistant", "content": rep.content},
				"finish_reason": finish,
			}},
			"usage": map[string]int{"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
		})
	}
}

func (s *chatServer) received() []sentChat {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func TestSelectSendsGoalHistoryAndNumberedTree(t *testing.T) {
	srv := newChatServer(t, reply{content: "<think>The cart link.</think><answer>[(2,3)]</answer>"})
	r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Signer: bearer("retriever-key"), Model: "gpt-4.1-mini"})
	tree := browserGymTree("RootWebArea 'Shop'\n\t[12] link 'Cart'\n\t\tStaticText 'Cart'\n\t[13] link 'Help'\n")
	q := Query{
		Goal:     "Open the cart",
		History:  "step 1: click('11')",
		Numbered: Number(tree),
		Lines:    len(tree.Lines),
		Variant:  focusgate.VariantLine,
	}
	sel, err := r.Select(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if want := []focusgate.Range{{From: 2, To: 3}}; !slices.Equal(sel.Ranges, want) {
		t.Errorf("Ranges = %v, want %v", sel.Ranges, want)
	}
	if want := (focusgate.RetrieverUsage{PromptTokens: 1000, CompletionTokens: 50}); sel.Usage != want {
		t.Errorf("Usage = %+v, want %+v", sel.Usage, want)
	}
	reqs := srv.received()
	if len(reqs) != 1 {
		t.Fatalf("retriever got %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.auth != "Bearer retriever-key" {
		t.Errorf("Authorization = %q", got.auth)
	}
	if got.body.Model != "gpt-4.1-mini" {
		t.Errorf("model = %q", got.body.Model)
	}
	if len(got.body.Messages) != 2 || got.body.Messages[0].Role != "system" || got.body.Messages[1].Role != "user" {
		t.Fatalf("messages = %+v, want system then user", got.body.Messages)
	}
	user := got.body.Messages[1].Content
	for _, want := range []string{
		"Open the cart",
		"step 1: click('11')",
		"   1 RootWebArea 'Shop'\n   2 \t[12] link 'Cart'\n   3 \t\tStaticText 'Cart'\n   4 \t[13] link 'Help'",
	} {
		if !strings.Contains(user, want) {
			t.Errorf("user message lacks %q:\n%s", want, user)
		}
	}
	if !strings.Contains(got.body.Messages[0].Content, "<answer>") {
		t.Errorf("system message does not ask for an <answer> tag:\n%s", got.body.Messages[0].Content)
	}
}

func TestSelectWithoutHistory(t *testing.T) {
	srv := newChatServer(t, reply{content: "<answer>[(1,1)]</answer>"})
	r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-4.1-mini"})
	if _, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 RootWebArea 'a'", Lines: 1}); err != nil {
		t.Fatal(err)
	}
	if user := srv.received()[0].body.Messages[1].Content; strings.Contains(user, "What the agent did so far") {
		t.Errorf("history section sent without history:\n%s", user)
	}
}

func TestSelectAPIKey(t *testing.T) {
	tests := []struct {
		name, own, client, want string
	}{
		{"retriever key wins", "retriever-key", "client-key", "Bearer retriever-key"},
		{"client key as fallback", "", "client-key", "Bearer client-key"},
		{"no key at all", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newChatServer(t, reply{content: "<answer>[(1,1)]</answer>"})
			r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Signer: bearer(tt.own), Model: "gpt-4.1-mini"})
			if _, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 x", Lines: 1, Credential: clientBearer(tt.client)}); err != nil {
				t.Fatal(err)
			}
			if got := srv.received()[0].auth; got != tt.want {
				t.Errorf("Authorization = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSelectTemperature(t *testing.T) {
	tests := []struct {
		model string
		sent  bool
	}{
		{"gpt-4.1-mini", true},
		{"gpt-4o-mini", true},
		{"gpt-5-mini", false},
		{"o3-mini", false},
		{"o4-mini", false},
		{"openai/gpt-5-nano", false},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			srv := newChatServer(t, reply{content: "<answer>[(1,1)]</answer>"})
			r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: tt.model})
			if _, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 x", Lines: 1}); err != nil {
				t.Fatal(err)
			}
			temp, sent := srv.received()[0].raw["temperature"]
			if sent != tt.sent {
				t.Fatalf("temperature sent = %v (%v), want sent = %v", sent, temp, tt.sent)
			}
			if sent && temp.(float64) > 1e-6 {
				t.Errorf("temperature = %v, want 0", temp)
			}
		})
	}
}

func TestSelectPromptVariants(t *testing.T) {
	tests := []struct {
		variant     focusgate.Variant
		contains    string
		notContains string
	}{
		{focusgate.VariantLine, "keep it", "<injection>"},
		{focusgate.VariantRestrictive, "drop it", "<injection>"},
		{focusgate.VariantNeutral, "<answer>", "When you are unsure"},
		{focusgate.VariantDefender, "<injection>", "drop it"},
	}
	seen := map[string]focusgate.Variant{}
	for _, tt := range tests {
		t.Run(string(tt.variant), func(t *testing.T) {
			srv := newChatServer(t, reply{content: "<answer>[(1,1)]</answer>"})
			r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-4.1-mini"})
			if _, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 x", Lines: 1, Variant: tt.variant}); err != nil {
				t.Fatal(err)
			}
			system := srv.received()[0].body.Messages[0].Content
			if !strings.Contains(system, tt.contains) || strings.Contains(system, tt.notContains) {
				t.Errorf("system prompt should contain %q and not %q:\n%s", tt.contains, tt.notContains, system)
			}
			if other, dup := seen[system]; dup {
				t.Errorf("same prompt as %s", other)
			}
			seen[system] = tt.variant
		})
	}
}

func TestSelectReasksOnceAfterUnreadableAnswer(t *testing.T) {
	srv := newChatServer(t,
		reply{content: "The relevant part is the cart link."},
		reply{content: "<answer>[(2,2)]</answer>"},
	)
	r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-4.1-mini"})
	sel, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 a\n   2 b\n   3 c", Lines: 3})
	if err != nil {
		t.Fatal(err)
	}
	if want := []focusgate.Range{{From: 2, To: 2}}; !slices.Equal(sel.Ranges, want) {
		t.Errorf("Ranges = %v, want %v", sel.Ranges, want)
	}
	if want := (focusgate.RetrieverUsage{PromptTokens: 2000, CompletionTokens: 100}); sel.Usage != want {
		t.Errorf("Usage = %+v, want both calls: %+v", sel.Usage, want)
	}
	reqs := srv.received()
	if len(reqs) != 2 {
		t.Fatalf("retriever got %d requests, want 2", len(reqs))
	}
	msgs := reqs[1].body.Messages
	if len(msgs) != 4 || msgs[2].Role != "assistant" || msgs[2].Content != "The relevant part is the cart link." ||
		msgs[3].Role != "user" || !strings.Contains(msgs[3].Content, "from 1 to 3") {
		t.Errorf("re-ask messages = %+v, want the first answer and a correction", msgs)
	}
}

// After an empty answer there is no assistant message to send back (an
// assistant message without content is refused): the correction follows the
// question.
func TestSelectReasksAfterAnEmptyAnswer(t *testing.T) {
	srv := newChatServer(t, reply{content: ""}, reply{content: "<answer>[(2,3)]</answer>"})
	r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-4.1-mini"})
	sel, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 a\n   2 b\n   3 c", Lines: 3})
	if err != nil {
		t.Fatal(err)
	}
	if want := []focusgate.Range{{From: 2, To: 3}}; !slices.Equal(sel.Ranges, want) {
		t.Errorf("Ranges = %v, want %v", sel.Ranges, want)
	}
	reqs := srv.received()
	if len(reqs) != 2 {
		t.Fatalf("retriever got %d requests, want 2", len(reqs))
	}
	msgs := reqs[1].body.Messages
	if len(msgs) != 3 || msgs[1].Role != "user" || msgs[2].Role != "user" || !strings.Contains(msgs[2].Content, "from 1 to 3") {
		t.Errorf("re-ask messages = %+v, want the question and a correction", msgs)
	}
}

// Every answer that names no usable lines is asked again once, then given
// up as a bad answer.
func TestSelectGivesUpAfterOneReask(t *testing.T) {
	answers := []string{"no idea", "", "<answer>[]</answer>", "<answer>[(5000,6000)]</answer>"}
	for _, m := range misreadAnswers {
		answers = append(answers, m.answer)
	}
	for _, answer := range answers {
		t.Run(answer, func(t *testing.T) {
			srv := newChatServer(t, reply{content: answer})
			r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-4.1-mini"})
			_, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 a", Lines: 1446})
			if Reason(err) != "bad-answer" {
				t.Errorf("error = %v, want a bad answer", err)
			}
			if n := len(srv.received()); n != 2 {
				t.Errorf("retriever got %d requests, want 2", n)
			}
		})
	}
}

// The output-token cap goes out as max_tokens, which every OpenAI-compatible
// server knows, except to reasoning models, which refuse it and take
// max_completion_tokens (reasoning included).
func TestSelectCapsOutputTokens(t *testing.T) {
	tests := []struct {
		model     string
		maxTokens int
		field     string // the field that carries the cap; empty: none
	}{
		{"gpt-4.1-mini", 4096, "max_tokens"},
		{"gpt-4o-mini", 512, "max_tokens"},
		{"gpt-5-mini", 4096, "max_completion_tokens"},
		{"o4-mini", 4096, "max_completion_tokens"},
		{"openai/gpt-5-nano", 4096, "max_completion_tokens"},
		{"gpt-4.1-mini", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+strconv.Itoa(tt.maxTokens), func(t *testing.T) {
			srv := newChatServer(t, reply{content: "<answer>[(1,1)]</answer>"})
			r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: tt.model, MaxTokens: tt.maxTokens})
			if _, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 x", Lines: 1}); err != nil {
				t.Fatal(err)
			}
			raw := srv.received()[0].raw
			for _, field := range []string{"max_tokens", "max_completion_tokens"} {
				v, sent := raw[field]
				switch {
				case field == tt.field && v != float64(tt.maxTokens):
					t.Errorf("%s = %v, want %d", field, v, tt.maxTokens)
				case field != tt.field && sent:
					t.Errorf("%s = %v sent, want it absent", field, v)
				}
			}
		})
	}
}

// An answer that stopped at the token cap keeps its complete ranges; one
// with none left is asked again.
func TestSelectReadsAnAnswerCutOffByTheCap(t *testing.T) {
	tests := []struct {
		name    string
		replies []reply
		want    []focusgate.Range
		calls   int
	}{
		{"cut inside a tuple", []reply{{content: "<answer>[(1,3), (20,2", finish: "length"}}, []focusgate.Range{{From: 1, To: 3}}, 1},
		{"cut after a line number", []reply{{content: "1-3, 7", finish: "length"}}, []focusgate.Range{{From: 1, To: 3}}, 1},
		{"the same answer complete", []reply{{content: "1-3, 7"}}, []focusgate.Range{{From: 1, To: 3}, {From: 7, To: 7}}, 1},
		{"cut inside the reasoning", []reply{{content: "<think>Line 40 is", finish: "length"}, {content: "<answer>[(40,41)]</answer>"}}, []focusgate.Range{{From: 40, To: 41}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newChatServer(t, tt.replies...)
			r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-4.1-mini", MaxTokens: 64})
			sel, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 x", Lines: 50})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sel.Ranges, tt.want) {
				t.Errorf("Ranges = %v, want %v", sel.Ranges, tt.want)
			}
			if n := len(srv.received()); n != tt.calls {
				t.Errorf("retriever got %d requests, want %d", n, tt.calls)
			}
		})
	}
}

func TestSelectNamesTheCapWhenACutAnswerIsUnusable(t *testing.T) {
	srv := newChatServer(t, reply{content: "<think>The relevant", finish: "length"})
	r := chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-5-mini", MaxTokens: 64})
	_, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 x", Lines: 50})
	if !errors.Is(err, ErrBadAnswer) || !strings.Contains(err.Error(), "output-token cap") {
		t.Errorf("error = %v, want a bad answer that names the output-token cap", err)
	}
}

// An endpoint that answers with an endless body must not make the gateway
// read it all: the answer is cut at maxAnswerBytes and the call fails.
func TestSelectCapsTheResponseBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"`)
		chunk := strings.Repeat("a", 64<<10)
		for written := 0; written <= 2*maxAnswerBytes; written += len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		io.WriteString(w, `"}}]}`)
	}))
	t.Cleanup(srv.Close)
	r := chatRetriever(RetrieverConfig{BaseURL: srv.URL + "/v1", Model: "gpt-4.1-mini"})
	if _, err := r.Select(context.Background(), Query{Goal: "g", Numbered: "   1 a", Lines: 1}); Reason(err) != "retriever-error" {
		t.Errorf("error = %v, want a retriever error for an oversized answer", err)
	}
}

func TestReasoningOf(t *testing.T) {
	long := "a" + strings.Repeat("é", maxReasoningBytes/2) // byte maxReasoningBytes is inside an é
	tests := []struct{ name, answer, want string }{
		{"think block", "<think> Line 3 is the box. </think>\n<answer>[(3,3)]</answer>", "Line 3 is the box."},
		{"unclosed think", "<think>still thinking", "still thinking"},
		{"prose before the answer", "The box is on line 3.\n<answer>[(3,3)]</answer>", "The box is on line 3."},
		{"bare list", "[(3,3)]", ""},
		{"cut at the bound, on a rune", "<think>" + long + "</think>", long[:maxReasoningBytes-1] + " …"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasoningOf(tt.answer); got != tt.want {
				t.Errorf("reasoningOf = %.60q…, want %.60q…", got, tt.want)
			}
		})
	}
}
