package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate/internal/cloudtest"
)

// capturedAgent is one folder of testdata/agents (see its README): what real
// agents sent, one conversation per scenario folder, and what the gateway
// must make of it.
type capturedAgent struct {
	folder string
	// page matches a request body (and a tool output) holding a page
	// snapshot in this agent's syntax; a body without one, like a sizing
	// request, must reach the upstream byte for byte.
	page *regexp.Regexp
	// target matches the tree line of an element the agent acts on next: the
	// scripted retriever keeps it and the pruned page must still hold it.
	target *regexp.Regexp
	// goal matches every goal the retriever is given: the user's task, never
	// the agent's own context (Gemini CLI's <session_context>).
	goal *regexp.Regexp
	// history matches the history the retriever is given once the agent has
	// acted; nil where the tool sends none (Stagehand).
	history *regexp.Regexp
	// anthropicQuery is the query string the agent put on /v1/messages.
	anthropicQuery string
	// openAIRetriever sets FOCUSGATE_RETRIEVER_URL, an OpenAI retriever for
	// every API; otherwise each API's own provider plays the retriever.
	openAIRetriever bool
	// minTokens is FOCUSGATE_MIN_TOKENS where the default would leave the
	// agent's small form alone.
	minTokens string
	// exactEdits: every byte outside the observations the retriever was
	// shown leaves as the agent sent it, and the newest rewritten one holds a
	// line the retriever chose, and all of them. Off where a conversation
	// reads a big page back in chunks (most hold no target) or the gateway
	// shows the retriever a page other than as it stands in the body.
	exactEdits bool
	// everyRequestHasPage: the capture kept only requests whose newest tool
	// output holds the page, so one without it is a capture the test cannot use.
	everyRequestHasPage bool
	// sameTurns: every message (or Gemini content) forwarded in one request
	// comes back byte for byte in the next, so the prompt cache keeps
	// hitting; false where each call is a conversation of its own (Stagehand).
	sameTurns bool
	// cloud names the cloud a folder's client spoke to, "bedrock", "vertex"
	// or "azure" (CLOUDS.md): its requests are NN-<route>.http files, each
	// the request as sent, whose request line gives the path and query,
	// and they are replayed with the gateway key in the client's credential
	// places to a gateway in front of that cloud's fake (internal/cloudtest),
	// which plays the retriever too and checks that every request carries
	// the gateway's own credentials.
	cloud string
}

// maxNewestRefs is the most element refs a pruned newest tool output may
// keep: its first line and the target's, a few refs at most, where the page
// had dozens to thousands.
const maxNewestRefs = 10

// elementRef is an element's ref in Playwright MCP's (`[ref=e102]`,
// `[ref=f1e89]`) and agent-browser's (`[checked=false, ref=e8]`) lines.
var elementRef = regexp.MustCompile(`ref=[a-z0-9]+\]`)

var (
	playwrightPage = regexp.MustCompile(`\[ref=[a-z0-9]+\]`)
	// neededElement matches the tree line of an element the first scripted
	// agents act on, in each tool's syntax: Playwright MCP `button "Add to
	// cart" [ref=e102]`, chrome-devtools-mcp `uid=1_117 button "Add to
	// cart"`, Stagehand `[0-268] button: Add to cart`.
	neededElement = regexp.MustCompile(`(button|textbox)(: | ")(Add to cart|First name|Save Meadow Helmet 108)\b`)
	parkaTask     = regexp.MustCompile(`add the Summit Parka 2000 to the cart`)
	// placeOrderRef is the line of the element the later agents click, in
	// Playwright MCP's and agent-browser's syntax; its ref is the first group.
	placeOrderRef  = regexp.MustCompile(`button "Place order" \[ref=(\w+)\]`)
	placeOrderTask = regexp.MustCompile(`click "?Place order`)
	// saveEmployee is the button Claude Code's and Codex's captures click, in
	// Playwright MCP's, agent-browser's and chrome-devtools-mcp's syntax.
	saveEmployee     = regexp.MustCompile(`button "Save employee"`)
	saveEmployeeTask = regexp.MustCompile(`click Save employee`)
)

// capturedAgents is every captured agent the replay runs.
var capturedAgents = []capturedAgent{
	{folder: "playwright-mcp", page: playwrightPage, target: neededElement, goal: parkaTask,
		history: regexp.MustCompile(`browser_navigate\(`), openAIRetriever: true, exactEdits: true, sameTurns: true},
	{folder: "openai-agents", page: playwrightPage, target: neededElement, goal: parkaTask,
		history: regexp.MustCompile(`browser_navigate\(`), openAIRetriever: true, exactEdits: true, sameTurns: true},
	{folder: "stagehand", page: regexp.MustCompile(`\[0-\d+\] RootWebArea`), target: neededElement,
		goal: regexp.MustCompile(`'(Add to cart|First name|Summit Parka 2000)'`), openAIRetriever: true, exactEdits: true},
	{folder: "chrome-devtools-mcp", page: regexp.MustCompile(`uid=\d+_0 RootWebArea`), target: neededElement, goal: parkaTask,
		history: regexp.MustCompile(`navigate_page\(`), openAIRetriever: true, exactEdits: true, sameTurns: true},
	{folder: "claude-code", page: regexp.MustCompile(`\[ref=[a-z0-9]+\]|uid=\d+_0 RootWebArea`), target: saveEmployee, goal: saveEmployeeTask,
		anthropicQuery: "?beta=true", exactEdits: true, sameTurns: true},
	{folder: "codex", page: playwrightPage, target: saveEmployee, goal: saveEmployeeTask,
		openAIRetriever: true, exactEdits: true, sameTurns: true},
	{folder: "claude-agent-sdk", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask,
		anthropicQuery: "?beta=true", sameTurns: true},
	{folder: "pi", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask,
		openAIRetriever: true, sameTurns: true},
	{folder: "gemini-cli", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask,
		sameTurns: true},
	{folder: "opencode", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask,
		openAIRetriever: true, minTokens: "300", everyRequestHasPage: true, sameTurns: true},
	{folder: "copilot", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask,
		openAIRetriever: true, minTokens: "300", everyRequestHasPage: true, sameTurns: true},
	{folder: "qwen-code", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask,
		openAIRetriever: true, minTokens: "300", everyRequestHasPage: true, sameTurns: true},
	{folder: "cline", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask,
		openAIRetriever: true, minTokens: "300", everyRequestHasPage: true, exactEdits: true, sameTurns: true},
	{folder: "claude-code-bedrock", cloud: "bedrock", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask, exactEdits: true, sameTurns: true},
	{folder: "claude-code-vertex", cloud: "vertex", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask, exactEdits: true, sameTurns: true},
	{folder: "bedrock-sdk", cloud: "bedrock", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask, exactEdits: true, sameTurns: true},
	{folder: "ai-sdk-bedrock", cloud: "bedrock", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask, exactEdits: true, sameTurns: true},
	{folder: "vertex-sdk", cloud: "vertex", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask, exactEdits: true, sameTurns: true},
	{folder: "genai-vertex", cloud: "vertex", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask, exactEdits: true, sameTurns: true},
	{folder: "azure-openai", cloud: "azure", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask, exactEdits: true, sameTurns: true},
	// Codex cuts long tool outputs: its capture's form is small.
	{folder: "codex-azure", cloud: "azure", page: playwrightPage, target: placeOrderRef, goal: placeOrderTask, minTokens: "200", exactEdits: true, sameTurns: true},
}

// Every captured conversation, replayed request by request through a fresh
// gateway whose upstream also plays the retriever. A request holding a page
// reaches the upstream pruned, with the element the agent acts on next kept
// where the agent had it; a request without a page, or a sizing request,
// passes through byte for byte; the retriever is told the user's task and
// what the agent did so far.
func TestCapturedAgentsArePrunedFaithfully(t *testing.T) {
	folders, _ := filepath.Glob("../../testdata/agents/*")
	for _, f := range folders {
		if fi, err := os.Stat(f); err == nil && fi.IsDir() && !slices.ContainsFunc(capturedAgents, func(a capturedAgent) bool { return a.folder == filepath.Base(f) }) {
			t.Errorf("testdata/agents/%s has no row in capturedAgents: its captures are never replayed", filepath.Base(f))
		}
	}
	for _, a := range capturedAgents {
		dirs, _ := filepath.Glob(filepath.Join("../../testdata/agents", a.folder, "*"))
		dirs = slices.DeleteFunc(dirs, func(d string) bool { fi, err := os.Stat(d); return err != nil || !fi.IsDir() })
		if len(dirs) == 0 {
			t.Fatalf("no captured conversations under testdata/agents/%s", a.folder)
		}
		var total replayStats
		for _, dir := range dirs {
			t.Run(a.folder+"/"+filepath.Base(dir), func(t *testing.T) {
				st := replayConversation(t, a, dir)
				total.add(st)
				t.Log(st)
			})
		}
		if total.requests > 0 {
			t.Logf("%s total: %s", a.folder, total)
		}
	}
}

// replayConversation posts every request of one captured conversation, in
// order, to a fresh gateway and checks what the upstream received.
func replayConversation(t *testing.T, a capturedAgent, dir string) replayStats {
	ext := "*.json"
	if a.cloud != "" {
		ext = "*.http"
	}
	files, _ := filepath.Glob(filepath.Join(dir, ext))
	if len(files) == 0 {
		t.Fatalf("no requests in %s", dir)
	}
	sort.Strings(files)
	var (
		up    *fakeModel
		cloud fakeCloudRecords
		env   map[string]string
	)
	if a.cloud == "" {
		up = newFakeModel(t, a.target)
		env = map[string]string{
			"FOCUSGATE_UPSTREAM_URL":  up.URL + "/v1",
			"FOCUSGATE_ANTHROPIC_URL": up.URL,
			"FOCUSGATE_GEMINI_URL":    up.URL,
		}
		if a.openAIRetriever {
			env["FOCUSGATE_RETRIEVER_URL"] = up.URL + "/v1"
		}
	} else {
		up = &fakeModel{target: a.target}
		cloud, env = startFakeCloud(t, a.cloud, up.cloudAnswer(nil))
	}
	if a.minTokens != "" {
		env["FOCUSGATE_MIN_TOKENS"] = a.minTokens
	}
	gw := startGateway(t, env)
	var st replayStats
	var prev []byte
	pages, targetShown := 0, false // newest tool outputs that held a page; one held the target
	for _, f := range files {
		name := filepath.Base(f)
		var req *http.Request
		var body []byte
		var sizing bool
		if a.cloud == "" {
			var err error
			if body, err = os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
			var path string
			path, sizing = endpoint(name, a.anthropicQuery)
			req, _ = http.NewRequest(http.MethodPost, gw.URL+path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
		} else {
			req, body = capturedRequest(t, f, gw.URL)
			sizing = strings.Contains(req.URL.Path, "count-tokens") || strings.Contains(req.URL.Path, ":countTokens")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: HTTP %d from the gateway", name, resp.StatusCode)
		}
		if req.Method != http.MethodPost {
			// Claude Code's listing of Bedrock's inference profiles: it
			// reached the fake signed (checkCloudReplay), and holds no body.
			st.requests++
			continue
		}
		sent := up.next(t)
		st.requests++
		status := resp.Header.Get("X-Focusgate-Status")
		if sizing || !a.page.Match(body) {
			if !bytes.Equal(sent, body) {
				t.Errorf("%s: a request without a page or a sizing request was changed (status %q)", name, status)
			}
			continue
		}
		st.withPage++
		if a.sameTurns && prev != nil {
			checkTurnsPrefix(t, name, prev, sent)
		}
		prev = sent
		api := bodyAPI(body)
		if a.everyRequestHasPage && !newestOutputHasPage(api, body) {
			t.Errorf("%s: the newest tool output holds no page: not a capture this test can use", name)
			continue
		}
		if !strings.HasPrefix(status, "pruned") {
			t.Errorf("%s: X-Focusgate-Status %q, want pruned: the page reached the upstream in full", name, status)
			continue
		}
		st.pruned++
		st.addTokens(resp.Header)
		st.bytesBefore += len(body)
		st.bytesAfter += len(sent)
		seen := up.seen()
		if len(seen) == 0 {
			t.Fatalf("%s: pruned, yet the retriever was never asked", name)
		}
		if a.exactEdits {
			checkObservationEdits(t, name, body, sent, seen)
		}
		if got, want := cacheControlPaths(sent), cacheControlPaths(body); !slices.Equal(got, want) {
			t.Errorf("%s: cache_control at %v, the agent had them at %v", name, got, want)
		}
		if last := seen[len(seen)-1]; a.history != nil && !a.history.MatchString(last.history) {
			t.Errorf("%s: the retriever's history %.200q does not match %s", name, last.history, a.history)
		}
		before, after := unescape(newestToolOutput(body)), unescape(newestToolOutput(sent))
		if !a.page.MatchString(before) {
			continue // the page is in an older output: it is re-applied
		}
		pages++
		targetShown = targetShown || a.target.MatchString(before)
		checkNewestOutput(t, a, name, before, after)
		if x, y := blankToolOutputs(api, body), blankToolOutputs(api, sent); !bytes.Equal(x, y) {
			t.Errorf("%s: bytes outside the tool outputs changed", name)
		}
	}
	if st.pruned == 0 {
		t.Error("no request was pruned")
	}
	if cloud != nil {
		checkCloudReplay(t, a.cloud, cloud)
	}
	seen := up.seen()
	if len(seen) == 0 {
		t.Error("the retriever was never asked")
	}
	kept := false
	for _, r := range seen {
		if !a.goal.MatchString(r.goal) || strings.Contains(r.goal, "session_context") {
			t.Errorf("the retriever's goal %.300q does not match %s: want the user's task", r.goal, a.goal)
		}
		kept = kept || len(r.kept) > 0
	}
	// The agent acted on a page it was shown: the target is on one.
	if !kept {
		t.Errorf("no page the retriever was shown holds a line matching %s", a.target)
	}
	if pages > 0 && !targetShown {
		t.Errorf("none of the %d pages in the newest tool outputs holds a line matching %s", pages, a.target)
	}
	return st
}

// checkNewestOutput checks the newest tool output of a pruned request, which
// held a page when the agent sent it (before) and as forwarded (after), both
// unescaped: smaller, the target's line still there, few refs left, and
// every line one the agent sent, or the gateway's "lines pruned" marker.
func checkNewestOutput(t *testing.T, a capturedAgent, name, before, after string) {
	t.Helper()
	if len(after) >= len(before) {
		t.Errorf("%s: the newest tool output went from %d to %d bytes: want its page pruned", name, len(before), len(after))
	}
	if a.target.MatchString(before) && !a.target.MatchString(after) {
		t.Errorf("%s: the target's line was pruned away", name)
	}
	// Every part of the output is pruned: both halves of a cut output, not
	// only the one nearest the end.
	if n := len(elementRef.FindAllStringIndex(after, -1)); n > maxNewestRefs {
		t.Errorf("%s: the newest tool output kept %d element refs of %d, want at most %d", name, n, len(elementRef.FindAllStringIndex(before, -1)), maxNewestRefs)
	}
	for _, line := range strings.Split(after, "\n") {
		if !strings.Contains(before, line) && !strings.Contains(line, "lines pruned") {
			t.Errorf("%s: the pruned output has a line the agent did not send: %q", name, line)
			return
		}
	}
}

// cloudGatewayKey is the gateway key a cloud client presents to the
// gateway, a line of its FOCUSGATE_CLIENT_KEYS_FILE; no cloud knows it.
const cloudGatewayKey = "fg-cloud-e2e-5f0c1d7a9b3e2468"

// cloudGatewayEnv is the gateway's environment in front of the fake clouds
// that are not nil: each one's URL and credentials of the kind the gateway
// finds where it runs (AWS keys, a service account's key file whose
// token_uri is the fake's, an Azure key), and gateway keys required, so
// that the gateway signs with its own credentials.
func cloudGatewayEnv(t *testing.T, b *cloudtest.Bedrock, v *cloudtest.Vertex, a *cloudtest.Azure) map[string]string {
	t.Helper()
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte("cloud-e2e:"+cloudGatewayKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"FOCUSGATE_CLIENT_KEYS_FILE": keys,
		// A busy machine must not turn a retrieval into a timeout.
		"FOCUSGATE_RETRIEVER_TIMEOUT": "10m",
		"AWS_EC2_METADATA_DISABLED":   "true",
	}
	if b != nil {
		env["FOCUSGATE_BEDROCK_URL"] = b.URL
		env["AWS_ACCESS_KEY_ID"] = cloudtest.TestAccessKeyID
		env["AWS_SECRET_ACCESS_KEY"] = cloudtest.TestSecretAccessKey
		env["AWS_REGION"] = "us-east-1"
	}
	if v != nil {
		env["FOCUSGATE_VERTEX_URL"] = v.URL
		env["GOOGLE_APPLICATION_CREDENTIALS"] = v.CredentialsFile(t)
		env["FOCUSGATE_VERTEX_EXPRESS_URL"] = v.URL
		env["FOCUSGATE_VERTEX_API_KEY"] = cloudtest.TestVertexAPIKey
	}
	if a != nil {
		env["FOCUSGATE_AZURE_URL"] = a.URL
		env["FOCUSGATE_AZURE_API_KEY"] = cloudtest.TestAzureAPIKey
	}
	return env
}

// fakeCloudRecords is what a test reads of a fake cloud: what it received.
type fakeCloudRecords interface {
	Requests() []cloudtest.Request
	Authenticated() (ok []cloudtest.Request, refused int)
}

// startFakeCloud starts the fake of cloud ("bedrock", "vertex", "azure")
// with answer as its model, in the region, project and location the
// captures name, and returns it with the environment of a gateway in front
// of it (cloudGatewayEnv).
func startFakeCloud(t *testing.T, cloud string, answer cloudtest.Answer) (fakeCloudRecords, map[string]string) {
	t.Helper()
	switch cloud {
	case "bedrock":
		b := cloudtest.NewBedrock(t, cloudtest.BedrockOptions{Region: "us-east-1", Answer: answer})
		return b, cloudGatewayEnv(t, b, nil, nil)
	case "vertex":
		v := cloudtest.NewVertex(t, cloudtest.VertexOptions{Project: "cloudtest-project", Location: "us-east5", Answer: answer})
		return v, cloudGatewayEnv(t, nil, v, nil)
	case "azure":
		a := cloudtest.NewAzure(t, cloudtest.AzureOptions{Answer: answer})
		return a, cloudGatewayEnv(t, nil, nil, a)
	}
	t.Fatalf("no fake of the cloud %q", cloud)
	return nil, nil
}

// cloudAuth is the credential each cloud's fake must have accepted on
// every request the gateway sent it: the gateway's own.
var cloudAuth = map[string]string{"bedrock": "sigv4:" + cloudtest.TestAccessKeyID, "vertex": "oauth", "azure": "api-key"}

// checkCloudReplay checks what a fake cloud received of a replay: every
// request carried the gateway's credentials, none was refused, and the
// gateway key went nowhere.
func checkCloudReplay(t *testing.T, cloud string, fake fakeCloudRecords) {
	t.Helper()
	ok, refused := fake.Authenticated()
	if refused > 0 {
		t.Errorf("the fake refused %d of the gateway's requests", refused)
	}
	for _, r := range ok {
		if r.Auth != cloudAuth[cloud] {
			t.Errorf("%s %s reached the fake authenticated as %q, want the gateway's %q", r.Method, r.Path, r.Auth, cloudAuth[cloud])
		}
	}
	for _, r := range fake.Requests() {
		h, _ := json.Marshal(r.Header)
		if strings.Contains(r.Path+"?"+r.RawQuery+string(h)+string(r.Body), cloudGatewayKey) {
			t.Errorf("%s %s: the gateway key reached the fake", r.Method, r.Path)
		}
	}
}

// capturedRequest reads a cloud capture (cloudtest's Request.HTTP: the
// request line as sent, the headers with credentials redacted, a blank
// line, the body) into the request a client would send to the gateway at
// base: path and query as captured, the headers but the connection's own
// and AWS's signing ones, and the gateway key in each credential place the
// client used (a SigV4 signature's place too: a client of a keyed gateway
// sends the key as a bearer token).
func capturedRequest(t *testing.T, file, base string) (*http.Request, []byte) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	lines := strings.Split(string(head), "\r\n")
	method, target, _ := strings.Cut(lines[0], " ")
	target, _, _ = strings.Cut(target, " ")
	if !ok || method == "" || !strings.HasPrefix(target, "/") {
		t.Fatalf("%s is not a captured request", file)
	}
	req, err := http.NewRequest(method, base+target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range lines[1:] {
		name, value, _ := strings.Cut(line, ": ")
		switch http.CanonicalHeaderKey(name) {
		case "Content-Length", "Host", "Connection", "Accept-Encoding", "Transfer-Encoding",
			"X-Amz-Date", "X-Amz-Content-Sha256", "X-Amz-Security-Token":
		case "Authorization":
			req.Header.Add(name, "Bearer "+cloudGatewayKey)
		case "Api-Key":
			req.Header.Add(name, cloudGatewayKey)
		default:
			req.Header.Add(name, value)
		}
	}
	return req, body
}

// endpoint is the path a captured file NN-<endpoint>[-stream].json was sent
// to (anthropicQuery on Anthropic's paths), and whether it is a sizing
// request.
func endpoint(file, anthropicQuery string) (path string, sizing bool) {
	name := strings.TrimSuffix(file, ".json")
	method := strings.TrimSuffix(name[strings.IndexByte(name, '-')+1:], "-stream")
	switch {
	case method == "count_tokens":
		return "/v1/messages/count_tokens" + anthropicQuery, true
	case method == "messages":
		return "/v1/messages" + anthropicQuery, false
	case method == "responses":
		return "/v1/responses", false
	case method == "chat":
		return "/v1/chat/completions", false
	case method == "streamGenerateContent":
		return "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", false
	default:
		return "/v1beta/models/gemini-2.5-flash:" + method, method == "countTokens"
	}
}

// checkObservationEdits asserts that sent differs from orig only inside
// observations the retriever was shown, and that the newest rewritten
// observation still holds the element lines the retriever kept.
func checkObservationEdits(t *testing.T, name string, orig, sent []byte, trees []retrieved) {
	t.Helper()
	type span struct {
		start, end int
		tree       retrieved
	}
	var spans []span
	for _, tr := range trees {
		for _, enc := range [][]byte{jsonEscape(tr.text), jsonEscape(string(jsonEscape(tr.text)))} {
			for off := 0; ; {
				i := bytes.Index(orig[off:], enc)
				if i < 0 {
					break
				}
				spans = append(spans, span{off + i, off + i + len(enc), tr})
				off += i + len(enc)
			}
		}
	}
	if len(spans) == 0 {
		t.Errorf("%s: none of the %d trees the retriever was shown occurs in the request (JSON-escaped once or twice)", name, len(trees))
		return
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	merged := spans[:1]
	for _, s := range spans[1:] {
		if last := &merged[len(merged)-1]; s.start < last.end {
			if s.end > last.end {
				last.end, last.tree = s.end, s.tree
			}
			continue
		}
		merged = append(merged, s)
	}
	// Walk orig and sent together: every gap between observations must
	// appear unchanged and in order; what stands between two gaps in sent is
	// the forwarded form of the observation between them in orig.
	var newest *span
	var newestRepl []byte
	pos, sPos := 0, 0
	for i := range merged {
		sp := &merged[i]
		gap := orig[pos:sp.start]
		if !bytes.HasPrefix(sent[sPos:], gap) {
			t.Errorf("%s: bytes before observation %d changed: want %q, got %q", name, i+1, clip(gap), clip(sent[sPos:]))
			return
		}
		sPos += len(gap)
		nextStart := len(orig)
		if i+1 < len(merged) {
			nextStart = merged[i+1].start
		}
		after := orig[sp.end:nextStart]
		var end int
		if i+1 == len(merged) {
			if !bytes.HasSuffix(sent[sPos:], after) {
				t.Errorf("%s: bytes after the last observation changed: want %q, got %q", name, clip(after), clip(sent[sPos:]))
				return
			}
			end = len(sent) - len(after)
		} else {
			j := bytes.Index(sent[sPos:], after)
			if j < 0 || len(after) == 0 {
				t.Errorf("%s: bytes between observations %d and %d not found unchanged in the forwarded body", name, i+1, i+2)
				return
			}
			end = sPos + j
		}
		repl := sent[sPos:end]
		if !bytes.Equal(repl, orig[sp.start:sp.end]) {
			newest, newestRepl = sp, repl
		}
		sPos, pos = end, sp.end
	}
	if newest == nil {
		t.Errorf("%s: status pruned, but every observation was forwarded unchanged", name)
		return
	}
	if len(newest.tree.kept) == 0 {
		t.Errorf("%s: the retriever found no element line the next action needs in the tree it was shown", name)
	}
	for _, line := range newest.tree.kept {
		if !bytes.Contains(newestRepl, jsonEscape(line)) && !bytes.Contains(newestRepl, jsonEscape(string(jsonEscape(line)))) {
			t.Errorf("%s: the pruned observation lost the element line %q", name, line)
		}
	}
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}

// jsonEscape returns s as it stands inside a JSON string written by
// JavaScript's JSON.stringify, which is what every captured tool sends.
func jsonEscape(s string) []byte {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.Bytes()
}

// checkTurnsPrefix checks that the messages (chat, Messages) or contents
// (Gemini) forwarded in prev come back byte for byte at the head of next,
// Anthropic's cache_control markers aside (Claude Code moves its last one).
func checkTurnsPrefix(t *testing.T, name string, prev, next []byte) {
	t.Helper()
	field := "messages"
	if !gjson.GetBytes(prev, field).Exists() {
		field = "contents"
	}
	pm, nm := gjson.GetBytes(prev, field).Array(), gjson.GetBytes(next, field).Array()
	if len(nm) < len(pm) {
		t.Errorf("%s: the conversation shrank from %d to %d %s", name, len(pm), len(nm), field)
		return
	}
	marker := regexp.MustCompile(`,"cache_control":\{"type":"ephemeral"\}`)
	for i := range pm {
		if a, b := marker.ReplaceAllString(pm[i].Raw, ""), marker.ReplaceAllString(nm[i].Raw, ""); a != b {
			t.Errorf("%s: %s %d was forwarded differently than in the request before (%d vs %d bytes): the prompt cache misses from there on", name, field, i, len(a), len(b))
			return
		}
	}
}

// replayStats sums what a replay measured; reductions are means over the
// pruned requests.
type replayStats struct {
	requests, withPage, pruned int
	obsReduction               float64 // summed 1 - after/before of observation tokens
	bytesBefore, bytesAfter    int     // whole request bodies, pruned requests only
}

// addTokens adds the observation token reduction the gateway reported for
// one pruned request.
func (s *replayStats) addTokens(h http.Header) {
	before, _ := strconv.Atoi(h.Get("X-Focusgate-Tokens-Before"))
	after, _ := strconv.Atoi(h.Get("X-Focusgate-Tokens-After"))
	if before > 0 {
		s.obsReduction += 1 - float64(after)/float64(before)
	}
}

func (s *replayStats) add(o replayStats) {
	s.requests += o.requests
	s.withPage += o.withPage
	s.pruned += o.pruned
	s.obsReduction += o.obsReduction
	s.bytesBefore += o.bytesBefore
	s.bytesAfter += o.bytesAfter
}

func (s replayStats) String() string {
	obs, whole := 0.0, 0.0
	if s.pruned > 0 {
		obs = s.obsReduction / float64(s.pruned)
	}
	if s.bytesBefore > 0 {
		whole = 1 - float64(s.bytesAfter)/float64(s.bytesBefore)
	}
	return fmt.Sprintf("%d requests, %d with a page, %d pruned; mean observation token reduction %.1f%%, whole-request byte reduction %.1f%%",
		s.requests, s.withPage, s.pruned, 100*obs, 100*whole)
}

// call is one tool call of a conversation and the output it got.
type call struct {
	name   string // MCP tools without the agent's prefix: browser_navigate
	output string
}

// bodyAPI names the API a request body is written for, from its shape:
// chat, responses, messages, converse (Bedrock's) or gemini.
func bodyAPI(body []byte) string {
	b := gjson.ParseBytes(body)
	switch {
	case b.Get("contents").Exists():
		return "gemini"
	case b.Get("toolConfig").Exists() || b.Get("messages.#.content|@flatten|#.toolResult|#").Int() > 0:
		return "converse"
	case b.Get("input").Exists():
		return "responses"
	case b.Get(`messages.#(role=="tool")`).Exists() || b.Get(`messages.#.tool_calls|@flatten|#`).Int() > 0:
		return "chat"
	case b.Get("system").Exists() || strings.Contains(b.Get("messages.#.content|@flatten|#.type").Raw, `"tool_result"`):
		return "messages"
	}
	return "chat"
}

// conversation reads the tools a request offers and the tool calls of its
// conversation with their outputs, whatever the API.
func conversation(api string, body []byte) (tools []string, calls []call) {
	gjson.GetBytes(body, "tools").ForEach(func(_, tl gjson.Result) bool {
		if n := tl.Get("function.name"); n.Exists() {
			tools = append(tools, n.String())
		} else {
			tools = append(tools, tl.Get("name").String())
		}
		return true
	})
	// outputs are the parts of the newest tool output: a Messages or Gemini
	// turn may answer several calls at once.
	var outputs []string
	walkToolCalls(api, body, func(name string, args gjson.Result) {
		// Qwen Code calls a deferred MCP tool through tool_call.
		if name == "tool_call" {
			name = args.Get("name").String()
		}
		if i := strings.Index(name, "browser_"); i > 0 {
			name = name[i:]
		}
		calls = append(calls, call{name: name})
	}, func(first bool, out gjson.Result) {
		if first {
			outputs = nil
		}
		outputs = append(outputs, text(out))
		if len(calls) > 0 {
			calls[len(calls)-1].output = strings.Join(outputs, "\n")
		}
	})
	return tools, calls
}

// walkToolCalls calls onCall for every tool call of a request body and
// onOutput for every tool output, in order; first marks the first output of
// a turn.
func walkToolCalls(api string, body []byte, onCall func(name string, args gjson.Result), onOutput func(first bool, out gjson.Result)) {
	b := gjson.ParseBytes(body)
	switch api {
	case "chat":
		b.Get("messages").ForEach(func(_, msg gjson.Result) bool {
			msg.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
				onCall(c.Get("function.name").String(), gjson.Parse(c.Get("function.arguments").String()))
				return true
			})
			if msg.Get("role").String() == "tool" {
				onOutput(true, msg.Get("content"))
			}
			return true
		})
	case "responses":
		b.Get("input").ForEach(func(_, it gjson.Result) bool {
			switch it.Get("type").String() {
			case "function_call":
				onCall(it.Get("name").String(), gjson.Parse(it.Get("arguments").String()))
			case "function_call_output":
				onOutput(true, it.Get("output"))
			}
			return true
		})
	case "messages":
		b.Get("messages").ForEach(func(_, msg gjson.Result) bool {
			first := true
			msg.Get("content").ForEach(func(_, block gjson.Result) bool {
				switch block.Get("type").String() {
				case "tool_use":
					onCall(block.Get("name").String(), block.Get("input"))
				case "tool_result":
					onOutput(first, block.Get("content"))
					first = false
				}
				return true
			})
			return true
		})
	case "converse":
		b.Get("messages").ForEach(func(_, msg gjson.Result) bool {
			first := true
			msg.Get("content").ForEach(func(_, block gjson.Result) bool {
				if use := block.Get("toolUse"); use.Exists() {
					onCall(use.Get("name").String(), use.Get("input"))
				}
				if res := block.Get("toolResult.content"); res.Exists() {
					onOutput(first, res)
					first = false
				}
				return true
			})
			return true
		})
	case "gemini":
		b.Get("contents").ForEach(func(_, c gjson.Result) bool {
			first := true
			c.Get("parts").ForEach(func(_, p gjson.Result) bool {
				if fc := p.Get("functionCall"); fc.Exists() {
					onCall(fc.Get("name").String(), fc.Get("args"))
				}
				if out := p.Get("functionResponse.response.output"); out.Exists() {
					onOutput(first, out)
					first = false
				}
				return true
			})
			return true
		})
	}
}

// newestToolOutput is the text of the newest tool output of a request
// body, its parts joined.
func newestToolOutput(body []byte) string {
	_, calls := conversation(bodyAPI(body), body)
	if len(calls) == 0 {
		return ""
	}
	return calls[len(calls)-1].output
}

// text is a content value as text: a string, or the text of its parts.
func text(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.String()
	}
	return strings.Join(stringsOfAll(v.Get("#.text")), "\n")
}

// stringsOfAll is the strings of a gjson array.
func stringsOfAll(r gjson.Result) []string {
	var out []string
	r.ForEach(func(_, v gjson.Result) bool { out = append(out, v.String()); return true })
	return out
}

// unescape undoes the JSON escaping an agent may have wrapped a tool output
// in (Cline sends the MCP result as JSON), so the model reads quotes.
func unescape(s string) string {
	for range 2 {
		s = strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n").Replace(s)
	}
	return s
}

// savedFile is where an agent says it saved a tool output too big to show:
// "Saved to: PATH" (Copilot CLI), "Full output saved to: PATH" (Qwen Code),
// "...saved to: PATH" (opencode).
var savedFile = regexp.MustCompile(`(?i)saved to:?\s+(/[^\s"'<>]+)`)

// newestOutputHasPage reports whether the newest tool output of a request
// holds page lines (or a chunk of them).
func newestOutputHasPage(api string, body []byte) bool {
	_, calls := conversation(api, body)
	if len(calls) == 0 {
		return false
	}
	out := unescape(calls[len(calls)-1].output)
	return !isPreview(out) && strings.Count(out, "[ref=") >= 5
}

// isPreview reports whether a tool output is an agent's short preview of
// an output it saved to a file, which may stay as it is.
func isPreview(out string) bool {
	return len(out) < 4096 && savedFile.MatchString(out)
}

// blankToolOutputs returns body with every tool output's value replaced by
// an empty string, so that two bodies can be compared outside them.
func blankToolOutputs(api string, body []byte) []byte {
	var spans []gjson.Result
	walkToolCalls(api, body, func(string, gjson.Result) {}, func(_ bool, out gjson.Result) { spans = append(spans, out) })
	out := slices.Clone(body)
	for _, s := range slices.Backward(spans) {
		out = slices.Concat(out[:s.Index], []byte(`""`), out[s.Index+len(s.Raw):])
	}
	return out
}

// retrieved is one page the scripted retriever was shown, with the element
// lines it kept.
type retrieved struct {
	text          string
	kept          []string
	goal, history string // the prompt's goal and history sections
}

// fakeModel plays the action model and the retriever of every API at one
// address. It keeps the body of each action request and answers it with an
// empty JSON object; a retriever call (told apart by the retriever's
// instructions) it answers in the shape of the API it came in, keeping line
// 1 and every line of an element target matches.
type fakeModel struct {
	*httptest.Server
	target *regexp.Regexp
	mu     sync.Mutex
	bodies [][]byte
	trees  []retrieved
}

var numberedLine = regexp.MustCompile(`^ {0,3}(\d+) `)

func newFakeModel(t *testing.T, target *regexp.Regexp) *fakeModel {
	t.Helper()
	m := &fakeModel{target: target}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	w.Header().Set("Content-Type", "application/json")
	if !isRetrieverCall(body) {
		m.mu.Lock()
		m.bodies = append(m.bodies, body)
		m.mu.Unlock()
		io.WriteString(w, `{}`)
		return
	}
	got, text, ok := readRetrieval(body, m.target)
	if !ok {
		http.Error(w, "no numbered page in the retriever's prompt", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.trees = append(m.trees, got)
	m.mu.Unlock()
	answer, _ := json.Marshal(text)
	switch {
	case strings.Contains(r.URL.Path, ":generateContent"):
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":%s}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":10,"totalTokenCount":110}}`, answer)
	case strings.HasSuffix(r.URL.Path, "/messages") || strings.HasSuffix(r.URL.Path, "/invoke") || strings.HasSuffix(r.URL.Path, ":rawPredict"):
		// Anthropic's Messages API, and Claude on Bedrock and Vertex AI.
		fmt.Fprintf(w, `{"id":"msg_r","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":100,"output_tokens":10}}`, answer)
	default:
		fmt.Fprintf(w, `{"id":"r","object":"chat.completion","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`, answer)
	}
}

// isRetrieverCall tells the gateway's retriever calls, by the retriever's
// instructions, from an agent's requests.
func isRetrieverCall(body []byte) bool {
	return bytes.Contains(body, []byte("You work in front of a web agent"))
}

// readRetrieval reads a retriever call of any API (its prompt in a chat or
// Messages message, or a Gemini part): the goal, the history and the
// numbered page it shows, and the scripted answer, which keeps line 1 and
// every line of an element target matches (none when target is nil). ok
// is false when the prompt holds no numbered page.
func readRetrieval(body []byte, target *regexp.Regexp) (got retrieved, answer string, ok bool) {
	var prompt string
	for _, p := range []string{"messages.#.content", "contents.#.parts|@flatten|#.text"} {
		for _, s := range stringsOfAll(gjson.GetBytes(body, p)) {
			if strings.Contains(s, "# Goal\n") {
				prompt = s
			}
		}
	}
	head, _, _ := strings.Cut(prompt, "\n\n# Page snapshot (")
	goal, history, _ := strings.Cut(strings.TrimPrefix(head, "# Goal\n"), "\n\n# What the agent did so far\n")
	_, numbered, ok := strings.Cut(prompt, " lines)\n")
	numbered, _, _ = strings.Cut(numbered, "\n\nWhich lines does the agent need")
	if !ok {
		return got, "", false
	}
	var tree strings.Builder
	var kept []string
	ranges := []string{"(1,1)"}
	for i, line := range strings.Split(numbered, "\n") {
		if i > 0 {
			tree.WriteByte('\n')
		}
		if len(line) >= 5 {
			tree.WriteString(line[5:])
		}
		if sm := numberedLine.FindStringSubmatch(line); sm != nil && len(line) > 5 && target != nil && target.MatchString(line[5:]) {
			ranges = append(ranges, "("+sm[1]+","+sm[1]+")")
			kept = append(kept, line[5:])
		}
	}
	got = retrieved{text: tree.String(), kept: kept, goal: goal, history: history}
	return got, "<answer>[" + strings.Join(ranges, ", ") + "]</answer>", true
}

// cloudAnswer is the fake model as a fake cloud's scripted model
// (internal/cloudtest): the retriever, in front of front, or, when front
// is nil, of an action model that keeps each body, as serve does, and says
// "OK" in the framing of the route.
func (m *fakeModel) cloudAnswer(front cloudtest.Answer) cloudtest.Answer {
	return func(c cloudtest.Call) cloudtest.Reply {
		if !isRetrieverCall(c.Body) {
			if front != nil {
				return front(c)
			}
			m.mu.Lock()
			m.bodies = append(m.bodies, c.Body)
			m.mu.Unlock()
			return cloudtest.Reply{Text: "OK"}
		}
		got, text, ok := readRetrieval(c.Body, m.target)
		if !ok {
			return cloudtest.Reply{Refusal: &cloudtest.Refusal{Status: http.StatusBadRequest, Code: "invalid_request_error", Message: "no numbered page in the retriever's prompt"}}
		}
		m.mu.Lock()
		m.trees = append(m.trees, got)
		m.mu.Unlock()
		return cloudtest.Reply{Text: text}
	}
}

// next is the body of the action request the gateway forwarded last; it
// fails the test when the gateway answered without forwarding.
func (m *fakeModel) next(t *testing.T) []byte {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.bodies) == 0 {
		t.Fatal("the gateway answered without forwarding the request upstream")
	}
	b := m.bodies[len(m.bodies)-1]
	m.bodies = m.bodies[:0]
	return b
}

// seen is every page the retriever was shown, in order.
func (m *fakeModel) seen() []retrieved {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.trees)
}

// callCount is how many times the retriever was asked.
func (m *fakeModel) callCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.trees)
}
