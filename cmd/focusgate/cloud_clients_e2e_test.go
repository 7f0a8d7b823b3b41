//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"
	"golang.org/x/oauth2/google"

	"github.com/focusgate/focusgate/internal/cloudtest"
)

// The real cloud clients (the SDKs of e2e/cloud/lib.mjs, Claude Code on
// Bedrock and on Vertex AI, Codex on Azure OpenAI) run a short web-agent
// tool loop against the fake clouds of internal/cloudtest: the model reads
// the "Place order" ref in the Playwright MCP snapshot it was sent and
// clicks it. Each run must finish, the click must land on that ref, and
// the fake must have accepted every request's credentials: a SigV4
// signature recomputed by the AWS SDK's signer, a Bedrock API key, an
// access token its own token endpoint issued, an Azure key or Entra token.
//
// Each case names its way to the fake (via):
//
//   - viaGateway, every client: the client is configured as a focusgate
//     user configures it (its base URL the gateway's, no cloud credential,
//     the gateway key where the credential would be), and the gateway runs
//     in front of the fake with the cloud's credentials in its environment
//     (AWS keys, a service-account file whose token_uri is the fake's, an
//     Azure key). checkThroughGateway then checks what the gateway did: every
//     request reached the fake signed with the gateway's credentials (but
//     one the client sends without the gateway key, which the gateway
//     refuses: Claude Code's listing of Bedrock's inference profiles); every
//     request whose newest tool output holds a page came back with
//     X-Focusgate-Status: pruned, the target kept and nothing outside the
//     page changed; the page was judged by a retriever call on the same
//     fake with the gateway's credentials; no gateway key reached the fake;
//     Bedrock's event-stream answers came back frame by frame, CRCs intact.
//   - direct: the client talks to the fake with credentials of its own,
//     each way of authenticating the clients have: the fakes accept what
//     the real clients sign, so that their acceptance of the gateway's
//     signatures means something. These runs are what
//     FOCUSGATE_E2E_CAPTURE=DIR records (every request each fake received
//     from the client, into DIR/<client>/<conversation>/ as
//     testdata/agents lays them out, cloudtest.WriteCaptures; see
//     testdata/agents/CLOUDS.md).
//
// The fakes play the gateway's retriever too (fakeModel.cloudAnswer, in
// front of each case's scripted action model): line 1 and the target's
// line of the numbered page a retriever call shows.
//
// The page is e2e/pages/form.html (84 element refs, one of them the
// target): over FOCUSGATE_MIN_TOKENS' default, so the gateway prunes it
// with its default settings. Codex cuts long tool outputs itself, and gets
// a smaller form and a lower threshold.

// via is how a client reaches its fake.
type via int

const (
	direct via = iota
	viaGateway
)

func (v via) String() string {
	if v == viaGateway {
		return "gateway"
	}
	return "direct"
}

// placeOrderButton is the target's line in a Playwright MCP snapshot.
var placeOrderButton = regexp.MustCompile(`button "Place order" \[ref=(\w+)\]`)

// cloudModel is the scripted model behind the fakes for the SDK drivers:
// with the click tool offered and no click made yet, it clicks the ref it
// reads in the request; after the click it is done.
type cloudModel struct {
	mu      sync.Mutex
	clicked string
	lost    bool
}

func (m *cloudModel) answer(c cloudtest.Call) cloudtest.Reply {
	if !slices.Contains(c.Tools(), "browser_click") {
		return cloudtest.Reply{Text: "Nothing to do here."}
	}
	if slices.Contains(c.Calls(), "browser_click") {
		return cloudtest.Reply{Text: "Done: the order is placed."}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sm := placeOrderButton.FindStringSubmatch(c.Unescaped())
	if sm == nil {
		m.lost = true
		return cloudtest.Reply{Text: "The page I was shown has no such button."}
	}
	m.clicked = sm[1]
	return cloudtest.Reply{ToolCalls: []cloudtest.ToolCall{{Name: "browser_click", Input: fmt.Sprintf(`{"element":"Place order button","target":%q}`, sm[1])}}}
}

func (m *cloudModel) result() (clicked string, lost bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clicked, m.lost
}

// vertexToken gets an access token from the fake's token endpoint with
// golang.org/x/oauth2/google and the fake's service account key file, as a
// Go program on Google Cloud would.
func vertexToken(t *testing.T, v *cloudtest.Vertex) string {
	t.Helper()
	creds, err := google.CredentialsFromJSONWithType(context.Background(), v.ServiceAccountJSON(), google.ServiceAccount, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := creds.TokenSource.Token()
	if err != nil {
		t.Fatalf("the fake's token endpoint: %v", err)
	}
	return tok.AccessToken
}

// checkCloudRun checks what the fake saw: every request authenticated with
// want, none refused, and the routes the client is known to call. When
// capturing, it writes what the client sent into DIR/<folder>, folder a
// testdata/agents conversation (<client>/<conversation>).
func checkCloudRun(t *testing.T, folder string, fake fakeCloudRecords, want string, routes []string) {
	t.Helper()
	ok, refused := fake.Authenticated()
	if refused > 0 {
		t.Errorf("the fake refused %d requests", refused)
	}
	var seen []string
	for _, r := range ok {
		if r.Auth != want {
			t.Errorf("%s %s: authenticated as %q, want %q", r.Method, r.Path, r.Auth, want)
		}
		if r.Route != "inference-profiles" {
			seen = append(seen, r.Route)
		}
	}
	for _, r := range routes {
		if !slices.Contains(seen, r) {
			t.Errorf("no request on route %q; routes seen: %v", r, seen)
		}
	}
	if dir := os.Getenv("FOCUSGATE_E2E_CAPTURE"); dir != "" {
		// The token grants are the test's own (vertexToken), not the client's.
		sent := slices.DeleteFunc(fake.Requests(), func(r cloudtest.Request) bool { return r.Route == "token" })
		if err := cloudtest.WriteCaptures(filepath.Join(dir, folder), sent); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d requests, all as %s: %v", len(ok), want, seen)
}

// cloudGateway is the gateway in front of the fakes of one case, and the
// recorder in front of the gateway that the client is given.
type cloudGateway struct {
	front *clientRecorder
	gw    *process
}

// startCloudGateway starts the gateway in front of the fakes that are not
// nil, with their clouds' credentials in its environment and gateway keys
// required (cloudGatewayEnv), and a recorder in front of it.
func startCloudGateway(t *testing.T, b *cloudtest.Bedrock, v *cloudtest.Vertex, a *cloudtest.Azure, minTokens string) *cloudGateway {
	t.Helper()
	env := cloudGatewayEnv(t, b, v, a)
	if minTokens != "" {
		env["FOCUSGATE_MIN_TOKENS"] = minTokens
	}
	gw := startGateway(t, env)
	return &cloudGateway{front: newClientRecorder(t, gw.URL), gw: gw}
}

// gatewayWant is what a cloud's fake must see of the gateway: the
// credential it accepted on every request (the gateway's), and where the
// retriever is called.
type gatewayWant struct {
	auth                           string
	retrieverRoute, retrieverModel string
}

var (
	bedrockGateway       = gatewayWant{"sigv4:" + cloudtest.TestAccessKeyID, "invoke", "us.anthropic.claude-haiku-4-5-20251001-v1:0"}
	vertexClaudeGateway  = gatewayWant{"oauth", "rawPredict", "claude-haiku-4-5@20251001"}
	vertexGeminiGateway  = gatewayWant{"oauth", "generateContent", "gemini-2.5-flash-lite"}
	vertexExpressGateway = gatewayWant{"api-key", "generateContent", "gemini-2.5-flash-lite"}
	azureGateway         = gatewayWant{"api-key", "v1/chat/completions", "gpt-4.1-mini"}
)

// gatewayStats are what a run through the gateway measured.
type gatewayStats struct {
	requests, withPage, pruned, retrievals, frames int
	unkeyed                                        int // requests the client sent without the gateway key
	tokensBefore, tokensAfter                      int // X-Focusgate-Tokens-* summed over the pruned requests
}

func (s gatewayStats) String() string {
	saved := 0.0
	if s.tokensBefore > 0 {
		saved = 100 * (1 - float64(s.tokensAfter)/float64(s.tokensBefore))
	}
	unkeyed := ""
	if s.unkeyed > 0 {
		unkeyed = fmt.Sprintf(" (%d without the gateway key, refused)", s.unkeyed)
	}
	return fmt.Sprintf("%d requests%s, %d with a page in the newest tool output, %d pruned (observation tokens %d -> %d, %.1f%% fewer), %d retriever calls, %d event-stream frames",
		s.requests, unkeyed, s.withPage, s.pruned, s.tokensBefore, s.tokensAfter, saved, s.retrievals, s.frames)
}

// checkThroughGateway checks a client's run through the gateway against
// what its fake received (see the top of the file).
func checkThroughGateway(t *testing.T, fake fakeCloudRecords, cg *cloudGateway, ret *fakeModel, want gatewayWant, target *regexp.Regexp) gatewayStats {
	t.Helper()
	var st gatewayStats
	received := map[string]cloudtest.Request{}
	if _, refused := fake.Authenticated(); refused > 0 {
		t.Errorf("the fake refused %d of the gateway's requests", refused)
	}
	for _, r := range fake.Requests() {
		for _, where := range leaks(r, cloudGatewayKey) {
			t.Errorf("%s %s: the gateway key reached the fake in %s", r.Method, r.Path, where)
		}
		if r.Route == "token" {
			continue // the gateway's own grant of its service account
		}
		if r.Auth != want.auth || r.Status != http.StatusOK {
			t.Errorf("%s %s: HTTP %d, authenticated as %q; want 200 and %q", r.Method, r.Path, r.Status, r.Auth, want.auth)
		}
		if id := r.Header.Get(exchangeHeader); id != "" {
			received[id] = r
			continue
		}
		if !isRetrieverCall(r.Body) {
			t.Errorf("%s %s: a request neither the client nor the retriever sent reached the fake", r.Method, r.Path)
			continue
		}
		st.retrievals++
		if r.Route != want.retrieverRoute || r.Model != want.retrieverModel {
			t.Errorf("a retriever call on %s of %q (%s), want %s of %q", r.Route, r.Model, r.Path, want.retrieverRoute, want.retrieverModel)
		}
	}
	trees := ret.seen()
	for _, x := range cg.front.recorded() {
		st.requests++
		name := fmt.Sprintf("request %s (%s %s)", x.id, x.method, x.path)
		got, ok := received[x.id]
		if !carriesKey(x) {
			// Claude Code's listing of Bedrock's inference profiles goes
			// through the AWS SDK, which sends neither credentials (with
			// CLAUDE_CODE_SKIP_BEDROCK_AUTH) nor ANTHROPIC_CUSTOM_HEADERS:
			// the gateway refuses it, and Claude Code carries on.
			st.unkeyed++
			if ok || x.status != http.StatusUnauthorized {
				t.Errorf("%s came without the gateway key, and the gateway answered %d (forwarded: %v); want 401, and nothing upstream", name, x.status, ok)
			}
			t.Logf("%s came without the gateway key: refused with %d", name, x.status)
			continue
		}
		if !ok {
			t.Errorf("%s never reached the fake: HTTP %d from the gateway, %.300s", name, x.status, x.answerBody)
			continue
		}
		if got.Path != x.path || got.RawQuery != x.rawQuery {
			t.Errorf("%s reached the fake as %s?%s, sent as %s?%s", name, got.Path, got.RawQuery, x.path, x.rawQuery)
		}
		if x.status != got.Status {
			t.Errorf("%s: the fake answered %d, the client got %d", name, got.Status, x.status)
		}
		status := x.answer.Get("X-Focusgate-Status")
		api := bodyAPI(x.body)
		if x.method == http.MethodPost && newestOutputHasPage(api, x.body) {
			st.withPage++
			if !strings.HasPrefix(status, "pruned") {
				t.Errorf("%s: X-Focusgate-Status %q, want pruned: the page in its newest tool output reached the fake whole", name, status)
			}
		}
		if strings.HasPrefix(status, "pruned") {
			st.pruned++
			before, _ := strconv.Atoi(x.answer.Get("X-Focusgate-Tokens-Before"))
			after, _ := strconv.Atoi(x.answer.Get("X-Focusgate-Tokens-After"))
			st.tokensBefore += before
			st.tokensAfter += after
			if after <= 0 || after >= before {
				t.Errorf("%s: pruned from %d to %d tokens", name, before, after)
			}
			checkObservationEdits(t, name, x.body, got.Body, trees)
			if sent := unescape(newestToolOutput(x.body)); target.MatchString(sent) && !target.MatchString(unescape(newestToolOutput(got.Body))) {
				t.Errorf("%s: the target's line was pruned away", name)
			}
		} else if !bytes.Equal(got.Body, x.body) {
			t.Errorf("%s: changed on its way (status %q) though not pruned", name, status)
		}
		if ct := x.answer.Get("Content-Type"); ct == "application/vnd.amazon.eventstream" {
			n, last, err := eventFrames(x.answerBody)
			st.frames += n
			if err != nil || (last != "message_stop" && last != "metadata") {
				t.Errorf("%s: the event stream came back broken after %d frames (last event %q): %v", name, n, last, err)
			}
		}
	}
	if st.withPage == 0 {
		t.Error("no request held a page in its newest tool output")
	}
	if st.retrievals == 0 || len(trees) == 0 {
		t.Errorf("no page was judged by a retriever call on the fake (%d calls, %d read)", st.retrievals, len(trees))
	}
	kept := false
	for _, tr := range trees {
		kept = kept || len(tr.kept) > 0
	}
	if !kept {
		t.Errorf("no page the retriever was shown holds a line matching %s", target)
	}
	return st
}

// carriesKey says whether the client sent the gateway key in a header.
func carriesKey(x exchange) bool {
	for _, vs := range x.header {
		for _, v := range vs {
			if strings.Contains(v, cloudGatewayKey) {
				return true
			}
		}
	}
	return false
}

// leaks lists where secret stands in a request a fake received: its path,
// query, a header, its body.
func leaks(r cloudtest.Request, secret string) []string {
	var where []string
	if strings.Contains(r.Path, secret) || strings.Contains(r.RawQuery, secret) {
		where = append(where, "the path or query")
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, secret) {
				where = append(where, "the header "+k)
			}
		}
	}
	if bytes.Contains(r.Body, []byte(secret)) {
		where = append(where, "the body")
	}
	return where
}

// eventFrames decodes an AWS event stream as a client does, checking each
// frame's CRCs, and returns how many frames it holds and the type of its
// last event: a chunk's Anthropic event type (InvokeModel's stream), else
// the frame's :event-type (ConverseStream's).
func eventFrames(body []byte) (n int, last string, err error) {
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(body)
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			return n, last, err
		}
		n++
		if mt := msg.Headers.Get(":message-type"); mt == nil || mt.String() != "event" {
			return n, last, fmt.Errorf("frame %d is not an event: %v", n, msg.Headers)
		}
		last = msg.Headers.Get(":event-type").String()
		if chunk := gjson.GetBytes(msg.Payload, "bytes"); chunk.Exists() {
			data, err := base64.StdEncoding.DecodeString(chunk.String())
			if err != nil {
				return n, last, fmt.Errorf("frame %d: %v", n, err)
			}
			last = gjson.GetBytes(data, "type").String()
		}
	}
	return n, last, nil
}

// The SDK drivers of e2e/cloud, through the gateway with a gateway key,
// and directly with each way of authenticating.
func TestCloudSDKsAgainstFakeClouds(t *testing.T) {
	node, _, _ := e2eRequirements(t)
	pages := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(pages.Close)
	page := pages.URL + "/form.html"
	const region = "us-east-1"
	for _, tc := range []struct {
		name, driver, auth string
		cloud              string // bedrock, vertex or azure
		want               string // the Auth every request must be recorded with (direct)
		routes             []string
		via                via
		gateway            gatewayWant // what the fake must see of the gateway (viaGateway)
	}{
		{"bedrock-sdk/gateway", "bedrock-sdk.mjs", "gateway", "bedrock", "", []string{"invoke-with-response-stream", "invoke"}, viaGateway, bedrockGateway},
		{"ai-sdk-bedrock/gateway", "ai-sdk-bedrock.mjs", "gateway", "bedrock", "", []string{"converse-stream", "converse"}, viaGateway, bedrockGateway},
		{"vertex-sdk/gateway", "vertex-sdk.mjs", "", "vertex", "", []string{"streamRawPredict", "rawPredict"}, viaGateway, vertexClaudeGateway},
		{"genai-vertex/gateway", "genai-vertex.mjs", "", "vertex", "", []string{"streamGenerateContent", "generateContent"}, viaGateway, vertexGeminiGateway},
		{"genai-vertex/gateway-express", "genai-vertex.mjs", "express", "vertex", "", []string{"streamGenerateContent", "generateContent"}, viaGateway, vertexExpressGateway},
		{"azure-openai/gateway-chat", "azure-openai.mjs", "gateway-chat", "azure", "", []string{"deployments/{deployment}/chat/completions"}, viaGateway, azureGateway},
		{"azure-openai/gateway-responses", "azure-openai.mjs", "gateway-responses", "azure", "", []string{"responses"}, viaGateway, azureGateway},
		{"azure-openai/gatewayv1-chat", "azure-openai.mjs", "gatewayv1-chat", "azure", "", []string{"v1/chat/completions"}, viaGateway, azureGateway},

		{"bedrock-sdk/sigv4", "bedrock-sdk.mjs", "sigv4", "bedrock", "sigv4:" + cloudtest.TestAccessKeyID, []string{"invoke-with-response-stream", "invoke"}, direct, gatewayWant{}},
		{"bedrock-sdk/apikey", "bedrock-sdk.mjs", "apikey", "bedrock", "bedrock-api-key", []string{"invoke-with-response-stream", "invoke"}, direct, gatewayWant{}},
		{"ai-sdk-bedrock/sigv4", "ai-sdk-bedrock.mjs", "sigv4", "bedrock", "sigv4:" + cloudtest.TestAccessKeyID, []string{"converse-stream", "converse"}, direct, gatewayWant{}},
		{"ai-sdk-bedrock/apikey", "ai-sdk-bedrock.mjs", "apikey", "bedrock", "bedrock-api-key", []string{"converse-stream", "converse"}, direct, gatewayWant{}},
		{"vertex-sdk", "vertex-sdk.mjs", "", "vertex", "oauth", []string{"streamRawPredict", "rawPredict"}, direct, gatewayWant{}},
		{"genai-vertex", "genai-vertex.mjs", "", "vertex", "oauth", []string{"streamGenerateContent", "generateContent"}, direct, gatewayWant{}},
		{"azure-openai/apikey-chat", "azure-openai.mjs", "apikey-chat", "azure", "api-key", []string{"deployments/{deployment}/chat/completions"}, direct, gatewayWant{}},
		{"azure-openai/entra-responses", "azure-openai.mjs", "entra-responses", "azure", "entra", []string{"responses"}, direct, gatewayWant{}},
		{"azure-openai/v1-chat", "azure-openai.mjs", "v1-chat", "azure", "api-key", []string{"v1/chat/completions"}, direct, gatewayWant{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := &cloudModel{}
			// The retriever in front of the action model (fakeModel.cloudAnswer).
			ret := &fakeModel{target: placeOrderButton}
			answer := ret.cloudAnswer(model.answer)
			var (
				fake fakeCloudRecords
				url  string
				b    *cloudtest.Bedrock
				v    *cloudtest.Vertex
				a    *cloudtest.Azure
			)
			env := os.Environ()
			switch tc.cloud {
			case "bedrock":
				b = cloudtest.NewBedrock(t, cloudtest.BedrockOptions{Region: region, Answer: answer})
				fake, url = b, b.URL
			case "vertex":
				v = cloudtest.NewVertex(t, cloudtest.VertexOptions{Project: "cloudtest-project", Location: "us-east5", Answer: answer})
				fake, url = v, v.URL
				if tc.via == direct {
					env = append(env, "VERTEX_TOKEN="+vertexToken(t, v))
				} else {
					// AnthropicVertex and GoogleGenAI take the gateway key
					// as the access token they send.
					env = append(env, "VERTEX_TOKEN="+cloudGatewayKey)
				}
			case "azure":
				// The gateway's retriever is a deployment of its own.
				a = cloudtest.NewAzure(t, cloudtest.AzureOptions{Deployments: []string{"gpt-4.1", "gpt-4.1-mini"}, Model: "gpt-4.1-2025-04-14", Answer: answer})
				fake, url = a, a.URL
			}
			var cg *cloudGateway
			if tc.via == viaGateway {
				cg = startCloudGateway(t, b, v, a, "")
				url = cg.front.URL
				env = append(env, "GATEWAY_KEY="+cloudGatewayKey)
			}
			// A generous bound for a busy machine; a run takes seconds.
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("cloud", tc.driver), url, page, tc.auth)
			cmd.Dir = "../../e2e"
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			clicked, lost := model.result()
			if err != nil {
				t.Fatalf("%s did not finish: %v\nstdout: %s\nstderr: %s", tc.name, err, stdout.String(), tail(stderr.String(), 3000))
			}
			var summary struct {
				Clicked, Final string
				Steps          int
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &summary); err != nil {
				t.Fatalf("the driver's summary: %v\n%s", err, stdout.String())
			}
			if lost || clicked == "" || summary.Clicked != clicked {
				t.Errorf("the model read ref %q (lost %v), the driver clicked %q", clicked, lost, summary.Clicked)
			}
			if summary.Final != "Done: the order is placed." {
				t.Errorf("the run ended with %q", summary.Final)
			}
			if tc.via == direct {
				folder := tc.name
				if !strings.Contains(folder, "/") {
					folder += "/playwright-mcp-form"
				}
				checkCloudRun(t, folder, fake, tc.want, tc.routes)
				return
			}
			checkRoutes(t, fake, tc.routes)
			checkClickedTarget(t, cg, clicked)
			t.Logf("%s: %s", tc.name, checkThroughGateway(t, fake, cg, ret, tc.gateway, placeOrderButton))
		})
	}
}

// checkRoutes checks that the client called each of routes.
func checkRoutes(t *testing.T, fake fakeCloudRecords, routes []string) {
	t.Helper()
	var seen []string
	for _, r := range fake.Requests() {
		seen = append(seen, r.Route)
	}
	for _, r := range routes {
		if !slices.Contains(seen, r) {
			t.Errorf("no request on route %q; routes seen: %v", r, seen)
		}
	}
}

// checkClickedTarget checks that the ref clicked is the target's in the
// first page the client sent, as the browser made it.
func checkClickedTarget(t *testing.T, cg *cloudGateway, clicked string) {
	t.Helper()
	for _, x := range cg.front.recorded() {
		if sm := placeOrderButton.FindStringSubmatch(unescape(newestToolOutput(x.body))); sm != nil {
			if sm[1] != clicked {
				t.Errorf("the click landed on %q; the page the client sent has the target at %q", clicked, sm[1])
			}
			return
		}
	}
	t.Error("no request the client sent held the target")
}

// claudeOnCloud is a scripted Claude Code model (scriptedClaude's steps:
// load each Playwright tool with ToolSearch, navigate, snapshot, click the
// ref read in the snapshot) as a cloudtest Answer.
func claudeOnCloud(page string) (*scriptedClaude, cloudtest.Answer) {
	m := &scriptedClaude{page: page, tools: playwrightTools, target: playwrightTools.target}
	return m, func(c cloudtest.Call) cloudtest.Reply {
		name, input := m.next(c.Body)
		if name == "" {
			return cloudtest.Reply{Text: input}
		}
		return cloudtest.Reply{ToolCalls: []cloudtest.ToolCall{{Name: name, Input: input}}}
	}
}

// Claude Code on Bedrock and on Vertex AI drives Playwright MCP against
// the fake clouds: through the gateway, with no cloud credential of its
// own (CLAUDE_CODE_SKIP_BEDROCK_AUTH, CLAUDE_CODE_SKIP_VERTEX_AUTH) and the
// gateway key in ANTHROPIC_CUSTOM_HEADERS; and directly, signing with AWS
// keys itself on Bedrock, with an access token in ANTHROPIC_CUSTOM_HEADERS
// on Vertex AI.
func TestClaudeCodeOnFakeClouds(t *testing.T) {
	node, modules, chromium := e2eRequirements(t)
	claude := e2eBin(t, modules, "claude", "Claude Code")
	pages := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(pages.Close)
	page := pages.URL + "/form.html"
	for _, tc := range []struct {
		cloud string
		via   via
		model string
		want  string // the Auth every request must be recorded with (direct)
		route string
	}{
		{"bedrock", viaGateway, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "", "invoke-with-response-stream"},
		{"vertex", viaGateway, "claude-sonnet-4-5@20250929", "", "streamRawPredict"},
		{"bedrock", direct, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "sigv4:" + cloudtest.TestAccessKeyID, "invoke-with-response-stream"},
		{"vertex", direct, "claude-sonnet-4-5@20250929", "oauth", "streamRawPredict"},
	} {
		name := tc.cloud
		if tc.via == viaGateway {
			name += "/gateway"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, model := claudeOnCloud(page)
			ret := &fakeModel{target: placeOrderButton}
			answer := ret.cloudAnswer(model)
			var (
				fake fakeCloudRecords
				base string
				env  []string
				cg   *cloudGateway
				want gatewayWant
			)
			switch tc.cloud {
			case "bedrock":
				b := cloudtest.NewBedrock(t, cloudtest.BedrockOptions{Region: "us-east-1", Answer: answer})
				fake, base, want = b, b.URL, bedrockGateway
				env = []string{"CLAUDE_CODE_USE_BEDROCK=1", "AWS_REGION=us-east-1"}
				if tc.via == direct {
					env = append(env, "AWS_ACCESS_KEY_ID="+cloudtest.TestAccessKeyID, "AWS_SECRET_ACCESS_KEY="+cloudtest.TestSecretAccessKey)
				} else {
					cg = startCloudGateway(t, b, nil, nil, "")
					base = cg.front.URL
					env = append(env, "CLAUDE_CODE_SKIP_BEDROCK_AUTH=1", "ANTHROPIC_CUSTOM_HEADERS=Authorization: Bearer "+cloudGatewayKey)
				}
				env = append(env, "ANTHROPIC_BEDROCK_BASE_URL="+base)
			case "vertex":
				v := cloudtest.NewVertex(t, cloudtest.VertexOptions{Project: "cloudtest-project", Location: "us-east5", Answer: answer})
				fake, base, want = v, v.URL, vertexClaudeGateway
				env = []string{"CLAUDE_CODE_USE_VERTEX=1", "CLAUDE_CODE_SKIP_VERTEX_AUTH=1",
					"ANTHROPIC_VERTEX_PROJECT_ID=cloudtest-project", "CLOUD_ML_REGION=us-east5"}
				if tc.via == direct {
					env = append(env, "ANTHROPIC_CUSTOM_HEADERS=Authorization: Bearer "+vertexToken(t, v))
				} else {
					cg = startCloudGateway(t, nil, v, nil, "")
					base = cg.front.URL
					env = append(env, "ANTHROPIC_CUSTOM_HEADERS=Authorization: Bearer "+cloudGatewayKey)
				}
				env = append(env, "ANTHROPIC_VERTEX_BASE_URL="+base+"/v1")
			}
			home := t.TempDir()
			mcpConfig := filepath.Join(home, "mcp.json")
			writeJSONFile(mcpConfig, map[string]any{"mcpServers": map[string]any{"playwright": playwrightTools.server(node, modules, chromium, home)}})
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, claude, "-p", "Open "+page+" in the browser and click Place order.",
				"--model", tc.model, "--output-format", "json", "--mcp-config", mcpConfig,
				"--allowedTools", strings.Join([]string{"ToolSearch", playwrightTools.navigate, playwrightTools.snapshot, playwrightTools.click}, ","))
			cmd.Dir = home
			cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"),
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"}, env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("claude: %v\n%s", err, tail(string(out), 3000))
			}
			m.mu.Lock()
			clicked, lost := m.clicked, m.lost
			m.mu.Unlock()
			if lost || clicked == "" {
				t.Fatalf("the model never saw the target in its snapshot (lost %v)\n%s", lost, tail(string(out), 1000))
			}
			var result struct{ Result string }
			if json.Unmarshal(out, &result) != nil || result.Result != "Done: the order is placed." {
				t.Errorf("Claude Code ended with %s", tail(string(out), 1000))
			}
			if tc.via == direct {
				checkCloudRun(t, "claude-code-"+tc.cloud+"/playwright-mcp-form", fake, tc.want, []string{tc.route})
				return
			}
			checkRoutes(t, fake, []string{tc.route})
			checkClickedTarget(t, cg, clicked)
			t.Logf("claude-code-%s: %s", tc.cloud, checkThroughGateway(t, fake, cg, ret, want, placeOrderButton))
		})
	}
}

// codexOnAzure is the scripted model of a Codex run on Azure's Responses
// API: navigate, snapshot, click the ref read in the last tool output,
// done. Codex names an MCP tool by its server's namespace, which the fake
// splits off a "mcp__server__tool" name.
type codexOnAzure struct {
	page    string
	mu      sync.Mutex
	clicked string
}

func (m *codexOnAzure) answer(c cloudtest.Call) cloudtest.Reply {
	if !slices.Contains(c.Tools(), "mcp__playwright") {
		// Codex sends its first turn before an MCP server is up unless the
		// server is required.
		return cloudtest.Reply{Text: "Playwright MCP's tools were not offered."}
	}
	call := func(name, input string) cloudtest.Reply {
		return cloudtest.Reply{ToolCalls: []cloudtest.ToolCall{{Name: "mcp__playwright__" + name, Input: input}}}
	}
	switch len(c.Calls()) {
	case 0:
		return call("browser_navigate", fmt.Sprintf(`{"url":%q}`, m.page))
	case 1:
		return call("browser_snapshot", `{}`)
	case 2:
		sm := placeOrderButton.FindStringSubmatch(c.Unescaped())
		if sm == nil {
			return cloudtest.Reply{Text: "The page I was shown has no such button."}
		}
		m.mu.Lock()
		m.clicked = sm[1]
		m.mu.Unlock()
		return call("browser_click", fmt.Sprintf(`{"element":"Place order button","target":%q}`, sm[1]))
	}
	return cloudtest.Reply{Text: "Done: the order is placed."}
}

// Codex on Azure OpenAI: a model provider with base_url .../openai,
// api-version in query_params, the Responses API and the key from env_key,
// which Codex sends as a bearer token: the gateway key through the gateway,
// the Azure key directly.
func TestCodexOnFakeAzure(t *testing.T) {
	node, modules, chromium := e2eRequirements(t)
	codex := e2eBin(t, modules, "codex", "Codex")
	// Codex cuts the middle of a tool output longer than about 1,600
	// tokens itself: a form of 24 fields keeps its button, and the gateway
	// prunes pages from 300 tokens on.
	var form strings.Builder
	form.WriteString("<!doctype html><title>Checkout</title><h1>Checkout</h1><form>")
	for i := range 24 {
		fmt.Fprintf(&form, "<label>Field %d <input name=f%d></label>", i, i)
	}
	form.WriteString("<button type=button>Place order</button></form>")
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, form.String())
	}))
	t.Cleanup(pages.Close)
	for _, v := range []via{viaGateway, direct} {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			m := &codexOnAzure{page: pages.URL + "/checkout"}
			ret := &fakeModel{target: placeOrderButton}
			azure := cloudtest.NewAzure(t, cloudtest.AzureOptions{Model: "gpt-4.1-2025-04-14", Answer: ret.cloudAnswer(m.answer)})
			base, key := azure.URL, cloudtest.TestAzureAPIKey
			var cg *cloudGateway
			if v == viaGateway {
				cg = startCloudGateway(t, nil, nil, azure, "300")
				base, key = cg.front.URL, cloudGatewayKey
			}
			home := t.TempDir()
			codexHome, work := filepath.Join(home, "codex"), filepath.Join(home, "work")
			for _, d := range []string{codexHome, work} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			s := playwrightTools.server(node, modules, chromium, home)
			args, _ := json.Marshal(s["args"])
			config := fmt.Sprintf(`model = "gpt-4.1"
model_provider = "azure"

[model_providers.azure]
name = "Azure OpenAI"
base_url = %q
env_key = "AZURE_OPENAI_API_KEY"
query_params = { api-version = "2025-04-01-preview" }
wire_api = "responses"

[mcp_servers.playwright]
command = %q
args = %s
required = true
`, base+"/openai", s["command"], args)
			if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
				"Open "+m.page+" in the browser and click Place order.")
			cmd.Dir = work
			cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "PATH=" + os.Getenv("PATH"), "AZURE_OPENAI_API_KEY=" + key}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("codex: %v\n%s", err, tail(string(out), 3000))
			}
			m.mu.Lock()
			clicked := m.clicked
			m.mu.Unlock()
			if clicked == "" {
				t.Fatalf("the model never saw the target in the snapshot\n%s", tail(string(out), 2000))
			}
			if !strings.Contains(string(out), "Done: the order is placed.") {
				t.Errorf("Codex did not finish:\n%s", tail(string(out), 2000))
			}
			for _, r := range azure.Requests() {
				if isRetrieverCall(r.Body) {
					continue
				}
				if r.Path != "/openai/responses" || !strings.Contains(r.RawQuery, "api-version=2025-04-01-preview") {
					t.Errorf("Codex called %s?%s", r.Path, r.RawQuery)
				}
			}
			if v == direct {
				checkCloudRun(t, "codex-azure/playwright-mcp-form", azure, "bearer-api-key", []string{"responses"})
				return
			}
			checkClickedTarget(t, cg, clicked)
			t.Logf("codex-azure: %s", checkThroughGateway(t, azure, cg, ret, azureGateway, placeOrderButton))
		})
	}
}
