//go:build e2e

package main

import (
	"bytes"
	"context"
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
	"strings"
	"sync"
	"testing"
	"time"

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
// Today the clients talk to the fakes directly. Each case's via hook is
// where the gateway goes: it is handed the fake's base URL and returns the
// base URL the client is given, so putting the gateway in between is one
// line (start it with the fake as its upstream, return its URL).
//
// FOCUSGATE_E2E_CAPTURE=DIR writes every request each fake received into
// DIR/<case>/ (cloudtest.WriteCaptures), as testdata/agents/CLOUDS.md says.

// direct is the via hook of a client that talks to the fake itself.
func direct(_ *testing.T, upstream string) string { return upstream }

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

// fakeCloud is what a case needs of a fake: its URL and what it saw.
type fakeCloud interface {
	Requests() []cloudtest.Request
	Authenticated() (ok []cloudtest.Request, refused int)
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
// want, none refused, and the routes the client is known to call.
func checkCloudRun(t *testing.T, name string, fake fakeCloud, want string, routes []string) {
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
		if err := cloudtest.WriteCaptures(filepath.Join(dir, name), fake.Requests()); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d requests, all as %s: %v", len(ok), want, seen)
}

// The SDK drivers of e2e/cloud, each with each way of authenticating.
func TestCloudSDKsAgainstFakeClouds(t *testing.T) {
	node := e2eRequirements(t)
	pages := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(pages.Close)
	page := pages.URL + "/form.html"
	const region = "us-east-1"
	for _, tc := range []struct {
		name, driver, auth string
		cloud              string // bedrock, vertex or azure
		want               string // the Auth every request must be recorded with
		routes             []string
		via                func(t *testing.T, upstream string) string
	}{
		{"bedrock-sdk/sigv4", "bedrock-sdk.mjs", "sigv4", "bedrock", "sigv4:" + cloudtest.TestAccessKeyID, []string{"invoke-with-response-stream", "invoke"}, direct},
		{"bedrock-sdk/apikey", "bedrock-sdk.mjs", "apikey", "bedrock", "bedrock-api-key", []string{"invoke-with-response-stream", "invoke"}, direct},
		{"ai-sdk-bedrock/sigv4", "ai-sdk-bedrock.mjs", "sigv4", "bedrock", "sigv4:" + cloudtest.TestAccessKeyID, []string{"converse-stream", "converse"}, direct},
		{"ai-sdk-bedrock/apikey", "ai-sdk-bedrock.mjs", "apikey", "bedrock", "bedrock-api-key", []string{"converse-stream", "converse"}, direct},
		{"vertex-sdk", "vertex-sdk.mjs", "", "vertex", "oauth", []string{"streamRawPredict", "rawPredict"}, direct},
		{"genai-vertex", "genai-vertex.mjs", "", "vertex", "oauth", []string{"streamGenerateContent", "generateContent"}, direct},
		{"azure-openai/apikey-chat", "azure-openai.mjs", "apikey-chat", "azure", "api-key", []string{"deployments/{deployment}/chat/completions"}, direct},
		{"azure-openai/entra-responses", "azure-openai.mjs", "entra-responses", "azure", "entra", []string{"responses"}, direct},
		{"azure-openai/v1-chat", "azure-openai.mjs", "v1-chat", "azure", "api-key", []string{"v1/chat/completions"}, direct},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := &cloudModel{}
			var fake fakeCloud
			var url string
			env := os.Environ()
			switch tc.cloud {
			case "bedrock":
				b := cloudtest.NewBedrock(t, cloudtest.BedrockOptions{Region: region, Answer: model.answer})
				fake, url = b, b.URL
			case "vertex":
				v := cloudtest.NewVertex(t, cloudtest.VertexOptions{Project: "cloudtest-project", Location: "us-east5", Answer: model.answer})
				fake, url = v, v.URL
				env = append(env, "VERTEX_TOKEN="+vertexToken(t, v))
			case "azure":
				a := cloudtest.NewAzure(t, cloudtest.AzureOptions{Deployments: []string{"gpt-4.1"}, Model: "gpt-4.1-2025-04-14", Answer: model.answer})
				fake, url = a, a.URL
			}
			// A generous bound for a busy machine; a run takes seconds.
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("cloud", tc.driver), tc.via(t, url), page, tc.auth)
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
			checkCloudRun(t, tc.name, fake, tc.want, tc.routes)
		})
	}
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

// Claude Code on Bedrock (signing with AWS keys itself) and on Vertex AI
// (an access token in ANTHROPIC_CUSTOM_HEADERS, as a proxy setup gives it)
// drives Playwright MCP against the fake clouds.
func TestClaudeCodeOnFakeClouds(t *testing.T) {
	node := e2eRequirements(t)
	claude, _ := filepath.Abs("../../e2e/node_modules/.bin/claude")
	if _, err := os.Stat(claude); err != nil {
		t.Fatalf("Claude Code is not installed (%v): run scripts/install-e2e.sh", err)
	}
	modules, _ := filepath.Abs("../../e2e/node_modules")
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	pages := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(pages.Close)
	page := pages.URL + "/form.html"
	for _, tc := range []struct {
		name  string
		model string
		start func(t *testing.T, answer cloudtest.Answer) (fake fakeCloud, url string, env []string)
		want  string
		route string
		via   func(t *testing.T, upstream string) string
	}{
		{"bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", func(t *testing.T, answer cloudtest.Answer) (fakeCloud, string, []string) {
			b := cloudtest.NewBedrock(t, cloudtest.BedrockOptions{Region: "us-east-1", Answer: answer})
			return b, b.URL, []string{"CLAUDE_CODE_USE_BEDROCK=1", "AWS_REGION=us-east-1",
				"AWS_ACCESS_KEY_ID=" + cloudtest.TestAccessKeyID, "AWS_SECRET_ACCESS_KEY=" + cloudtest.TestSecretAccessKey}
		}, "sigv4:" + cloudtest.TestAccessKeyID, "invoke-with-response-stream", direct},
		{"vertex", "claude-sonnet-4-5@20250929", func(t *testing.T, answer cloudtest.Answer) (fakeCloud, string, []string) {
			v := cloudtest.NewVertex(t, cloudtest.VertexOptions{Project: "cloudtest-project", Location: "us-east5", Answer: answer})
			return v, v.URL, []string{"CLAUDE_CODE_USE_VERTEX=1", "CLAUDE_CODE_SKIP_VERTEX_AUTH=1",
				"ANTHROPIC_VERTEX_PROJECT_ID=cloudtest-project", "CLOUD_ML_REGION=us-east5",
				"ANTHROPIC_CUSTOM_HEADERS=Authorization: Bearer " + vertexToken(t, v)}
		}, "oauth", "streamRawPredict", direct},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, answer := claudeOnCloud(page)
			fake, url, env := tc.start(t, answer)
			base := tc.via(t, url)
			if tc.name == "bedrock" {
				env = append(env, "ANTHROPIC_BEDROCK_BASE_URL="+base)
			} else {
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
			checkCloudRun(t, "claude-code-"+tc.name, fake, tc.want, []string{tc.route})
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
// which Codex sends as a bearer token.
func TestCodexOnFakeAzure(t *testing.T) {
	node := e2eRequirements(t)
	codex, _ := filepath.Abs("../../e2e/node_modules/.bin/codex")
	if _, err := os.Stat(codex); err != nil {
		t.Fatalf("Codex is not installed (%v): run scripts/install-e2e.sh", err)
	}
	modules, _ := filepath.Abs("../../e2e/node_modules")
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	// Codex cuts the middle of a long tool output itself: a small form
	// keeps its button.
	var form strings.Builder
	form.WriteString("<!doctype html><title>Checkout</title><h1>Checkout</h1><form>")
	for i := range 12 {
		fmt.Fprintf(&form, "<label>Field %d <input name=f%d></label>", i, i)
	}
	form.WriteString("<button type=button>Place order</button></form>")
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, form.String())
	}))
	t.Cleanup(pages.Close)
	via := direct

	m := &codexOnAzure{page: pages.URL + "/checkout"}
	azure := cloudtest.NewAzure(t, cloudtest.AzureOptions{Model: "gpt-4.1-2025-04-14", Answer: m.answer})
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
`, via(t, azure.URL)+"/openai", s["command"], args)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"Open "+m.page+" in the browser and click Place order.")
	cmd.Dir = work
	cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "PATH=" + os.Getenv("PATH"), "AZURE_OPENAI_API_KEY=" + cloudtest.TestAzureAPIKey}
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
		if r.Path != "/openai/responses" || !strings.Contains(r.RawQuery, "api-version=2025-04-01-preview") {
			t.Errorf("Codex called %s?%s", r.Path, r.RawQuery)
		}
	}
	checkCloudRun(t, "codex-azure", azure, "bearer-api-key", []string{"responses"})
}
