package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/ui"
)

var updateDocs = flag.Bool("update-docs", false, "write the request page's screenshot to docs/dashboard.png")

// The dashboard test sends three requests through the gateway: one pruned
// with the defender prompt (the retriever flags the pop-up's injection
// lines), the same again (a cache hit), and one whose retriever call fails
// (failed open). Then a real headless Chromium reads the overview, the table
// and the pruned request's page.
const (
	injectedTree = "../../testdata/axtrees/agentlab-tutorial_webarena_shopping_prompt_0_with_doomarena_popup_injection_tabs-restored.txt"
	cleanTree    = "../../testdata/axtrees/agentlab-tutorial_webarena_shopping_prompt_0_tabs-restored.txt"
	shoppingReq  = "../../testdata/requests/genericagent_webarena_shopping_step0.json"

	// The retriever keeps the root, the page header and the reviews, and
	// flags the pop-up's lines that address the agent: line 4 (the close
	// button), 13 (the status text) and 16 (the "I understand" button,
	// which holds the focus).
	retrieverAnswer = "<think>The reviews section answers the goal; the pop-up is addressed to AI agents and asks to visit localhost:4321.</think>\n<answer>[(1,1), (17,40), (150,205)]</answer>\n<injection>[(4,4), (13,13), (16,16)]</injection>"
	failingGoal     = "List out reviewers, if exist, who mention about ear cups being large"
)

// pageRequest is the GenericAgent request of testdata with the doomarena
// pop-up injected into its tree and goal as its goal.
func pageRequest(t *testing.T, goal string) []byte {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	clean, injected := strings.TrimRight(read(cleanTree), "\n"), strings.TrimRight(read(injectedTree), "\n")
	var req map[string]any
	if err := json.Unmarshal([]byte(read(shoppingReq)), &req); err != nil {
		t.Fatal(err)
	}
	delete(req, "_note")
	parts := req["messages"].([]any)[1].(map[string]any)["content"].([]any)
	parts[1].(map[string]any)["text"] = goal
	obs := parts[2].(map[string]any)
	text := obs["text"].(string)
	if !strings.Contains(text, clean) {
		t.Fatal("the request does not hold the clean tree")
	}
	obs["text"] = strings.Replace(text, clean, injected, 1)
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// defenderRetriever answers every question with retrieverAnswer, except
// questions about failingGoal, which get a 500.
func defenderRetriever(t *testing.T) *httptest.Server {
	t.Helper()
	return answeringRetriever(t, retrieverAnswer)
}

// answeringRetriever answers every question with answer, except questions
// about failingGoal, which get a 500.
func answeringRetriever(t *testing.T, answer string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("ear cups being large")) {
			http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusInternalServerError)
			return
		}
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"r1","object":"chat.completion","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":9000,"completion_tokens":60,"total_tokens":9060}}`, content)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sent is what the gateway said about one request in its headers.
type sent struct {
	status, cache string
	before, after int
	savedUSD      float64
}

func send(t *testing.T, gatewayURL string, body []byte) sent {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, gatewayURL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-client-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("gateway answered %s", resp.Status)
	}
	h := resp.Header
	s := sent{status: h.Get("X-Focusgate-Status"), cache: h.Get("X-Focusgate-Cache")}
	s.before, _ = strconv.Atoi(h.Get("X-Focusgate-Tokens-Before"))
	s.after, _ = strconv.Atoi(h.Get("X-Focusgate-Tokens-After"))
	s.savedUSD, _ = strconv.ParseFloat(h.Get("X-Focusgate-Saved-USD"), 64)
	return s
}

// dashboardGateway runs the gateway with the scripted retriever and the
// defender prompt, and sends it the three requests.
func dashboardGateway(t *testing.T, capture bool) (*process, []sent) {
	t.Helper()
	up := fakeOpenAI(t, nil)
	ret := defenderRetriever(t)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":      up.URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL":     ret.URL + "/v1",
		"FOCUSGATE_RETRIEVER_API_KEY": "sk-retriever-secret",
		"FOCUSGATE_PROMPT":            "defender",
		"FOCUSGATE_UI_CAPTURE":        strconv.FormatBool(capture),
	})
	goal := "List out reviewers, if exist, who mention about ear cups being small"
	got := []sent{
		send(t, gw.URL, pageRequest(t, goal)),
		send(t, gw.URL, pageRequest(t, goal)),
		send(t, gw.URL, pageRequest(t, failingGoal)),
	}
	for i, want := range []struct{ status, cache string }{
		{"pruned", "miss"}, {"pruned", "hit"}, {"failed-open; reason=retriever-http-5xx", "miss"},
	} {
		if got[i].status != want.status || got[i].cache != want.cache {
			t.Fatalf("request %d: status %q cache %q, want %q %q", i+1, got[i].status, got[i].cache, want.status, want.cache)
		}
	}
	return gw, got
}

// browser starts Debian's headless Chromium with a fresh profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			t.Skip("chromium is not installed (scripts/install-chromium.sh installs it)")
		}
		path = "/usr/bin/chromium"
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// A busy machine starts a browser slowly; nothing here is timed.
	ctx, cancelRun := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancelRun)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// artifacts is where screenshots go: $FOCUSGATE_ARTIFACTS, else a directory
// that outlives the test.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FOCUSGATE_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "focusgate-dashboard-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	return png
}

// textOf waits until the first element matching css has text containing
// want, and returns its text. The page re-renders as it polls, so the
// element is looked up afresh on every check.
func textOf(t *testing.T, ctx context.Context, css, want string) string {
	t.Helper()
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e && e.textContent.includes(%q) ? e.textContent : null; })()`, css, want)
	got, err := chromedp.Run(ctx, chromedp.Poll[string](expr, chromedp.WithPollingTimeout(0), chromedp.WithPollingMutation()))
	if err != nil {
		now, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || "(no element)"`, css)))
		t.Fatalf("%s never read %q (it reads %q): %v", css, want, now, err)
	}
	return got
}

// texts returns the text of every element matching css.
func texts(t *testing.T, ctx context.Context, css string) []string {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, css)))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func click(t *testing.T, ctx context.Context, css string) {
	t.Helper()
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (e) e.click(); return !!e; })()`, css)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(0), chromedp.WithPollingMutation())); err != nil {
		t.Fatalf("click %s: %v", css, err)
	}
}

func usd(v float64) string {
	sign := ""
	if v < 0 {
		sign, v = "−", -v
	}
	if v >= 1 {
		return fmt.Sprintf("%s$%.2f", sign, v)
	}
	return fmt.Sprintf("%s$%.4f", sign, v)
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func TestDashboardInABrowser(t *testing.T) {
	gw, sent := dashboardGateway(t, true)
	ctx := browser(t)
	dir := artifacts(t)

	var before, after int
	var net float64
	for _, s := range sent {
		before, after, net = before+s.before, after+s.after, net+s.savedUSD
	}
	if before == after || net == 0 {
		t.Fatalf("the requests saved nothing (tokens %d → %d, $%v): nothing to show", before, after, net)
	}

	// Overview: what a person reads in the "Since start" card.
	if err := chromedp.Do(ctx, chromedp.Navigate(gw.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	textOf(t, ctx, `#total [data-k=requests] .v`, "3")
	for _, c := range []struct{ key, want string }{
		{"pruned", "66.7%"},
		{"failed_open", "33.3%"},
		{"skipped", "0.0%"},
		{"tokens", thousands(before) + " → " + thousands(after)},
		{"net_usd", usd(net)},
		{"cache", "33.3%"}, // one hit in three look-ups
		{"cache", "1 hit · 2 miss · 0 shared"},
		{"flagged", "6"}, // three lines, in the miss and in the hit
	} {
		textOf(t, ctx, `#total [data-k=`+c.key+`]`, c.want)
		textOf(t, ctx, `#hour [data-k=`+c.key+`]`, c.want)
	}
	textOf(t, ctx, `#total .reasons`, "failed-open: retriever-http-5xx × 1")
	textOf(t, ctx, `#total [data-k=latency] .v`, " ms / ")
	textOf(t, ctx, `#models tbody`, "gpt-4.1-2025-04-14")
	if bars := texts(t, ctx, `#chart-svg rect.bar-pruned title`); len(bars) == 0 {
		t.Error("the chart draws no bar of pruned requests")
	}
	textOf(t, ctx, `#capture`, "page text captured")
	screenshot(t, ctx, dir, "overview.png")

	// The table, newest first, then filtered.
	click(t, ctx, `nav a[data-nav=requests]`)
	textOf(t, ctx, `#requests tbody tr:nth-child(3)`, "pruned")
	rows := texts(t, ctx, `#requests tbody tr td:nth-child(4)`)
	if want := []string{"failed-open: retriever-http-5xx", "pruned", "pruned"}; strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("status column reads %q, want %q", rows, want)
	}
	caches := texts(t, ctx, `#requests tbody tr td:nth-child(7)`)
	if want := []string{"miss", "hit", "miss"}; strings.Join(caches, "|") != strings.Join(want, "|") {
		t.Errorf("cache column reads %q, want %q", caches, want)
	}
	textOf(t, ctx, `#requests tbody tr:nth-child(3) td:nth-child(6)`, thousands(sent[0].before)+" → "+thousands(sent[0].after))
	textOf(t, ctx, `#requests tbody tr:nth-child(3) td:nth-child(10)`, usd(sent[0].savedUSD))
	screenshot(t, ctx, dir, "requests.png")
	click(t, ctx, `.filters button[data-status=failed-open]`)
	textOf(t, ctx, `.filters button.on`, "failed-open")
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#requests tbody tr").length === 1`, chromedp.WithPollingTimeout(0), chromedp.WithPollingMutation())); err != nil {
		t.Fatal(err)
	}
	textOf(t, ctx, `#requests tbody tr`, "retriever-http-5xx")
	click(t, ctx, `.filters button[data-status=all]`)

	// The pruned request that asked the retriever: the oldest row.
	click(t, ctx, `#requests tbody tr[data-id="1"]`)
	textOf(t, ctx, `#facts`, "pruned")
	textOf(t, ctx, `#facts`, "defender")
	facts := textOf(t, ctx, `#page-0 .facts`, "retriever ranges")
	for _, want := range []string{"browsergym", "retriever ranges1, 17–40, 150–205", "4, 13, 16", "line 16", "miss"} {
		if !strings.Contains(facts, want) {
			t.Errorf("observation facts %q lack %q", facts, want)
		}
	}
	textOf(t, ctx, `#reasoning-0`, "the pop-up is addressed to AI agents")
	textOf(t, ctx, `#goal-0`, "ear cups being small")

	flagged := texts(t, ctx, `#annotated .ln.flagged`)
	if len(flagged) != 3 {
		t.Fatalf("%d lines marked as injection, want 3: %q", len(flagged), flagged)
	}
	for _, l := range flagged {
		if !strings.Contains(l, "IMPORTANT NOTICE FOR AGENTS") {
			t.Errorf("flagged line %q is not the pop-up's", l)
		}
	}
	if f := texts(t, ctx, `#annotated .ln.focused`); len(f) != 1 || !strings.Contains(f[0], "[1845] button") {
		t.Errorf("focused line reads %q, want the [1845] button", f)
	}
	kept := strings.Join(texts(t, ctx, `#annotated > .ln.kept`), "\n")
	for _, want := range []string{"RootWebArea '6S Wireless Headphones", "[261] link 'My Account'"} {
		if !strings.Contains(kept, want) {
			t.Errorf("kept lines lack %q", want)
		}
	}
	runs := texts(t, ctx, `#annotated details.run > summary`)
	if len(runs) == 0 || runs[0] != "… 2 lines pruned (2–3)" {
		t.Errorf("pruned runs read %q, want the first to be lines 2–3", runs)
	}
	click(t, ctx, `#annotated details.run:nth-of-type(1) > summary`)
	textOf(t, ctx, `#annotated details.run[open] .ln`, "[1833] dialog")
	forwarded := textOf(t, ctx, `#forwarded-0`, "lines pruned")
	if strings.Contains(forwarded, "IMPORTANT NOTICE FOR AGENTS") {
		t.Error("the text the action model received still holds the injection")
	}
	detail := screenshot(t, ctx, dir, "detail.png")

	// The same overview as a phone shows it.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(gw.URL+"/ui#/")); err != nil {
		t.Fatal(err)
	}
	textOf(t, ctx, `#total [data-k=requests] .v`, "3")
	screenshot(t, ctx, dir, "overview-phone.png")
	if err := chromedp.Do(ctx, chromedp.Navigate(gw.URL+"/ui#/requests/1")); err != nil {
		t.Fatal(err)
	}
	textOf(t, ctx, `#annotated .ln.flagged`, "IMPORTANT NOTICE FOR AGENTS")
	screenshot(t, ctx, dir, "detail-phone.png")

	if *updateDocs {
		if err := os.WriteFile("../../docs/dashboard.png", smallPNG(t, detail), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// With capture off (the default), nothing of the page, the goal or the
// retriever's reasoning reaches /ui or its API, for the same three requests.
func TestDashboardWithoutCaptureShowsNoPageText(t *testing.T) {
	gw, _ := dashboardGateway(t, false)
	var all strings.Builder
	for _, path := range []string{"/ui", "/ui/static/app.js", "/ui/api/overview", "/ui/api/requests",
		"/ui/api/requests/1", "/ui/api/requests/2", "/ui/api/requests/3"} {
		resp, err := http.Get(gw.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		all.Write(b)
	}
	for _, secret := range []string{"IMPORTANT NOTICE", "My Account", "Emma Lopez", "ear cups", "pop-up is addressed", "lines pruned ...", "sk-client-secret", "sk-retriever-secret"} {
		if strings.Contains(all.String(), secret) {
			t.Errorf("capture off, yet /ui shows %q", secret)
		}
	}
	if !strings.Contains(all.String(), `"flagged":[4,13,16]`) {
		t.Error("capture off: the flagged line numbers are missing")
	}
}

// smallPNG re-encodes a screenshot with a palette of its 256 most frequent
// colours, which keeps a page of flat colours and text legible at a
// fraction of the size, for the README.
func smallPNG(t *testing.T, data []byte) []byte {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		colors = append(colors, c)
	}
	slices.SortFunc(colors, func(a, b color.RGBA) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(uint32(a.R)<<16|uint32(a.G)<<8|uint32(a.B), uint32(b.R)<<16|uint32(b.G)<<8|uint32(b.B)))
	})
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(256, len(colors))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	draw.Draw(out, b, img, b.Min, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FOCUSGATE_UI=false removes the dashboard: /ui is then a path like any
// other, passed to the upstream.
func TestDashboardOff(t *testing.T) {
	seen := make(chan *http.Request, 4)
	up := fakeOpenAI(t, seen)
	gw := startGateway(t, map[string]string{"FOCUSGATE_UPSTREAM_URL": up.URL + "/v1", "FOCUSGATE_UI": "false"})
	for _, path := range []string{"/ui", "/ui/api/overview"} {
		resp, err := http.Get(gw.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || bytes.Contains(body, []byte("focusgate")) {
			t.Errorf("%s with the dashboard off: %s %q, want the upstream's 404", path, resp.Status, body)
		}
		if r := <-seen; r.URL.Path != "/v1"+path {
			t.Errorf("upstream saw %s, want /v1%s", r.URL.Path, path)
		}
	}
}

// elementHeight is the rendered height, in CSS pixels, of the first element
// matching css.
func elementHeight(t *testing.T, ctx context.Context, css string) float64 {
	t.Helper()
	h, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`document.querySelector(%q).getBoundingClientRect().height`, css)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// apiJSON reads one of the dashboard's JSON answers.
func apiJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// A request rescued from its model's context window shows its rescue beside
// its status in the table, on its page and in its JSON; and a selection of
// over a hundred line ranges stays a few lines tall, capped with "… N more".
// The gateway's window table makes the action model's window smaller than
// the request, so the pipeline prunes it whole before sending it (a rescue
// foreseen, not one after a refusal: the dashboard shows both alike).
func TestDashboardShowsARescueAndLongRangeLists(t *testing.T) {
	var ranges []string
	for l := 1; l <= 219; l += 2 {
		ranges = append(ranges, fmt.Sprintf("(%d,%d)", l, l))
	}
	up := fakeOpenAI(t, nil)
	ret := answeringRetriever(t, "<answer>["+strings.Join(ranges, ", ")+"]</answer>\n<injection>[]</injection>")
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":      up.URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL":     ret.URL + "/v1",
		"FOCUSGATE_RETRIEVER_API_KEY": "sk-retriever-secret",
		"FOCUSGATE_PROMPT":            "defender",
		"FOCUSGATE_CONTEXT_WINDOWS":   `{"gpt-4.1": 1000}`,
	})
	got := send(t, gw.URL, pageRequest(t, "List out reviewers, if exist, who mention about ear cups being small"))
	if got.status != "pruned; rescue=rescued" {
		t.Fatalf("X-Focusgate-Status %q, want a pruned request rescued", got.status)
	}
	var detail struct {
		Status       string `json:"status"`
		Rescue       string `json:"rescue"`
		RescuedEarly bool   `json:"rescued_early"`
		Pages        []struct {
			Ranges      []map[string]int `json:"ranges"`
			FocusedLine int              `json:"focused_line"`
			Segments    []struct {
				From int `json:"from"`
				To   int `json:"to"`
			} `json:"segments"`
		} `json:"pages"`
	}
	apiJSON(t, gw.URL+"/ui/api/requests/1", &detail)
	if detail.Status != "pruned" || detail.Rescue != "rescued" || !detail.RescuedEarly || len(detail.Pages) != 1 || len(detail.Pages[0].Ranges) != len(ranges) {
		t.Fatalf("/ui/api/requests/1: %+v, want pruned, rescued early, %d ranges", detail, len(ranges))
	}
	if r := detail.Pages[0].Ranges[1]; r["from"] != 3 || r["to"] != 3 {
		t.Errorf("second range %v, want from 3 to 3", r)
	}

	ctx := browser(t)
	dir := artifacts(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(gw.URL+"/ui#/requests")); err != nil {
		t.Fatal(err)
	}
	status := textOf(t, ctx, `#requests tbody tr td:nth-child(4)`, "context rescue")
	if status != "pruned context rescue: rescued (foreseen)" {
		t.Errorf("the status cell reads %q, want the rescue beside pruned", status)
	}
	textOf(t, ctx, `#requests tbody tr td:nth-child(4) .also`, "context rescue: rescued (foreseen)")
	screenshot(t, ctx, dir, "requests-rescue.png")

	click(t, ctx, `#requests tbody tr[data-id="1"]`)
	textOf(t, ctx, `#status`, "context rescue: rescued (foreseen)")
	list := textOf(t, ctx, `#ranges-0`, "more")
	if want := "1, 3, 5, "; !strings.HasPrefix(list, want) || !strings.Contains(list, fmt.Sprintf("… %d more", len(ranges)-24)) {
		t.Errorf("the retriever's ranges read %q, want the first 24 and … %d more", list, len(ranges)-24)
	}
	textOf(t, ctx, `#kept-0`, "more")
	// A hundred ranges once made a column about 1,000 px tall; the facts of
	// one observation now fit in a few lines.
	if h := elementHeight(t, ctx, `#page-0 .facts`); h > 300 {
		t.Errorf("the observation's facts are %.0f px tall, want a few lines", h)
	}
	// Without page text, the runs of kept and pruned lines are listed the
	// same way: over two hundred runs, not two hundred list items.
	segs, focus := detail.Pages[0].Segments, ""
	for _, sg := range segs {
		if sg.From <= detail.Pages[0].FocusedLine && detail.Pages[0].FocusedLine <= sg.To {
			focus = fmt.Sprintf("%d–%d", sg.From, sg.To)
		}
	}
	runs := textOf(t, ctx, `#segments-0`, "more")
	if !strings.HasPrefix(runs, "1 2 3 ") || !strings.Contains(runs, fmt.Sprintf("… %d more", len(segs)-96)) {
		t.Errorf("the runs of lines read %q, want the first 96 of %d and … %d more", runs, len(segs), len(segs)-96)
	}
	if f := texts(t, ctx, `#segments-0 .seg.focused`); len(f) != 1 || f[0] != focus {
		t.Errorf("the run with the focused element reads %q, want %s", f, focus)
	}
	if h := elementHeight(t, ctx, `#page-0`); h > 600 {
		t.Errorf("the observation's card is %.0f px tall, want a few lines", h)
	}
	screenshot(t, ctx, dir, "detail-rescue.png")
	click(t, ctx, `#ranges-0 button.more`)
	all := textOf(t, ctx, `#ranges-0`, "219")
	if strings.Contains(all, "more") || strings.Count(all, ",") != len(ranges)-1 {
		t.Errorf("opened, the ranges read %q, want all %d", all, len(ranges))
	}
	if h := elementHeight(t, ctx, `#ranges-0`); h > 200 {
		t.Errorf("all %d ranges take %.0f px, want a wrapped paragraph", len(ranges), h)
	}
}

// staticHoldout reports a fixed comparison of the arms.
type staticHoldout focusgate.HoldoutReport

func (s staticHoldout) Report() focusgate.HoldoutReport { return focusgate.HoldoutReport(s) }

// The dashboard's own checks of what the gateway reports, on a dashboard fed
// directly: a held-out Gemini request whose outcome names its model is
// counted under that model, with no "(none)" row; a relative difference
// over a holdout value near zero is not shown as a percentage.
func TestDashboardModelsAndNearZeroDifferences(t *testing.T) {
	rel := func(v float64) *float64 { return &v }
	report := staticHoldout{
		Share: 0.05,
		Arms:  []focusgate.ArmTotal{{Arm: "pruned", Conversations: 40, Steps: 320}, {Arm: "holdout", Conversations: 40, Steps: 400}},
		Metrics: []focusgate.Comparison{
			{Name: "steps", Label: "steps per conversation", Pruned: 8, Holdout: 10, N: [2]int{40, 40}, Diff: -2, Low: -3, High: -1, Relative: rel(-0.2), Verdict: "lower"},
			// The case: a held-out value near zero made "+70539.5%".
			{Name: "errors", Label: "upstream errors per conversation", Pruned: 0.7054, Holdout: 0.001, N: [2]int{40, 40}, Diff: 0.7044, Low: 0.1, High: 1.3, Relative: rel(704.395), Verdict: "higher"},
			// Zero in the holdout: no relative difference at all.
			{Name: "usd", Label: "dollars per conversation", Pruned: 0.5, Holdout: 0, N: [2]int{40, 40}, Diff: 0.5, Low: 0.2, High: 0.8, Verdict: "higher"},
		},
	}
	d := ui.New(ui.Options{Holdout: report})
	d.Observe("", focusgate.Outcome{API: focusgate.APIGemini, Status: focusgate.StatusSkipped, Reason: focusgate.ReasonHoldout, Model: "gemini-2.5-pro"})
	d.Observe("", focusgate.Outcome{API: focusgate.APIChat, Status: focusgate.StatusSkipped, Reason: focusgate.ReasonNoObservation, Model: "gpt-4.1"})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)

	ctx := browser(t)
	dir := artifacts(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	textOf(t, ctx, `#models tbody`, "gemini-2.5-pro")
	if names := texts(t, ctx, `#models tbody tr td:first-child`); strings.Join(names, "|") != "gemini-2.5-pro|gpt-4.1" {
		t.Errorf("the models table names %q, want each request under its model", names)
	}
	for _, c := range []struct{ metric, want string }{
		{"steps", "−2.00 (−20.0%)"},
		{"errors", "+0.70 (—)"},
		{"usd", "+$0.5000 (—)"},
	} {
		if got := textOf(t, ctx, `#holdout-all tr[data-metric=`+c.metric+`] td.diff`, "("); got != c.want {
			t.Errorf("%s: the difference reads %q, want %q", c.metric, got, c.want)
		}
	}
	screenshot(t, ctx, dir, "overview-holdout.png")
}
