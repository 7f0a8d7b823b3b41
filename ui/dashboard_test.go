package ui_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate"

	"github.com/focusgate/focusgate/ui"
)

const adminKey = "admin-key-for-tests-0123456789"

// page is a small observation whose every line is text a dashboard with
// capture off must never show.
const page = "RootWebArea 'Secret Shop'\n\t[12] link 'Order #4711 for Jane Roe'\n\t[13] button 'Pay with card 4242'"

func pageRecord() ui.Record {
	second, third := strings.Index(page, "\t[12]"), strings.Index(page, "\t[13]")
	lines := []focusgate.Line{{Start: 0, End: second - 1, Depth: 0, Role: "RootWebArea"},
		{Start: second, End: third - 1, Depth: 1, BID: "12", Role: "link"},
		{Start: third, End: len(page), Depth: 1, BID: "13", Role: "button"}}
	return ui.Record{
		Time: time.Now(), Route: "chat", Model: "gpt-4.1", Status: "pruned", Mode: "remove", Prompt: "defender",
		TokensBefore: 30, TokensAfter: 12, Cache: "miss", Retriever: 420 * time.Millisecond, Flagged: 1,
		Priced: true, SavedUSD: 0.002, RetrieverUSD: 0.0005,
		Observations: []ui.Observation{{
			Format: "browsergym", Status: "pruned", TokensBefore: 30, TokensAfter: 12, Cache: "miss",
			Retriever: 420 * time.Millisecond,
			Ranges:    []focusgate.Range{{From: 1, To: 2}}, Kept: []focusgate.Range{{From: 1, To: 2}}, Flagged: []int{3},
			Lines: lines, FocusedBID: "12",
			Goal: "Find the order of Jane Roe", History: "clicked 'My orders'",
			Reasoning: "Line 2 is Jane Roe's order", Original: page,
			Forwarded: "RootWebArea 'Secret Shop'\n\t[12] link 'Order #4711 for Jane Roe'\n\t... 1 line pruned ...",
		}},
	}
}

func get(t testing.TB, h http.Handler, path, remote string, header http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = remote
	for k, v := range header {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Result()
}

func TestAccess(t *testing.T) {
	withKey := ui.New(ui.Options{AdminKey: adminKey})
	withoutKey := ui.New(ui.Options{})
	bearer := func(k string) http.Header { return http.Header{"Authorization": {"Bearer " + k}} }
	tests := []struct {
		name   string
		d      *ui.Dashboard
		path   string
		remote string
		header http.Header
		want   int
	}{
		{"loopback IPv4, no key", withKey, "/ui", "127.0.0.1:5000", nil, 200},
		{"loopback IPv6, no key", withKey, "/ui/api/overview", "[::1]:5000", nil, 200},
		{"loopback without an admin key configured", withoutKey, "/ui/api/requests", "127.0.0.1:5000", nil, 200},
		{"other address, no key", withKey, "/ui", "192.0.2.7:5000", nil, 401},
		{"other address, no key, API", withKey, "/ui/api/overview", "192.0.2.7:5000", nil, 401},
		{"other address, wrong key", withKey, "/ui/api/overview", "192.0.2.7:5000", bearer("not-the-key"), 401},
		{"other address, key as a prefix", withKey, "/ui/api/overview", "192.0.2.7:5000", bearer(adminKey[:10]), 401},
		{"other address, the key", withKey, "/ui/api/overview", "192.0.2.7:5000", bearer(adminKey), 200},
		{"other address, the key, page", withKey, "/ui", "192.0.2.7:5000", bearer(adminKey), 200},
		{"other address, the key, one request", withKey, "/ui/api/requests/1", "192.0.2.7:5000", bearer(adminKey), 404},
		{"other address, session cookie", withKey, "/ui/api/overview", "192.0.2.7:5000", nil, 200}, // cookie set below
		{"other address, forged cookie", withKey, "/ui/api/overview", "192.0.2.7:5000", http.Header{"Cookie": {"focusgate_ui=" + adminKey}}, 401},
		{"other address, no admin key configured", withoutKey, "/ui/api/overview", "192.0.2.7:5000", bearer(""), 401},
		{"loopback behind a local proxy", withKey, "/ui/api/overview", "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"198.51.100.3"}}, 401},
		{"loopback behind a local proxy, the key", withKey, "/ui/api/overview", "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"198.51.100.3"}, "Authorization": {"Bearer " + adminKey}}, 200},
		{"stylesheet of the login form", withKey, "/ui/static/app.css", "192.0.2.7:5000", nil, 200},
	}
	cookie := login(t, withKey)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			if tt.name == "other address, session cookie" {
				h = http.Header{"Cookie": {cookie.String()}}
			}
			resp := get(t, tt.d, tt.path, tt.remote, h)
			if resp.StatusCode != tt.want {
				t.Fatalf("%s from %s: %d, want %d", tt.path, tt.remote, resp.StatusCode, tt.want)
			}
			if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

// login posts the admin key to the sign-in form and returns the session
// cookie it sets; a wrong key gets the form again with 401.
func login(t *testing.T, d *ui.Dashboard) *http.Cookie {
	t.Helper()
	post := func(key string) *http.Response {
		req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = "192.0.2.7:5000"
		w := httptest.NewRecorder()
		d.ServeHTTP(w, req)
		return w.Result()
	}
	if resp := post("wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong key: %d, want 401", resp.StatusCode)
	}
	resp := post(adminKey)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d, want 303", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "focusgate_ui" {
			if strings.Contains(c.Value, adminKey) || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("session cookie %+v: must not hold the key, must be HttpOnly and SameSite=Strict", c)
			}
			return c
		}
	}
	t.Fatal("login set no session cookie")
	return nil
}

// everything fetches every page, asset and endpoint of the dashboard.
func everything(t *testing.T, d *ui.Dashboard) string {
	t.Helper()
	var all strings.Builder
	for _, path := range []string{"/ui", "/ui/static/app.js", "/ui/static/app.css", "/ui/api/overview",
		"/ui/api/requests", "/ui/api/requests?status=pruned", "/ui/api/requests/1"} {
		resp := get(t, d, path, "127.0.0.1:1", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		b, _ := io.ReadAll(resp.Body)
		all.Write(b)
	}
	return all.String()
}

func TestCaptureOffShowsNoPageText(t *testing.T) {
	d := ui.New(ui.Options{Capture: false})
	d.Record(pageRecord())
	all := everything(t, d)
	// The page's numbers are looked for with their words: bare digits turn up
	// in the request's timestamp now and then.
	for _, secret := range []string{"Secret Shop", "Jane Roe", "#4711", "card 4242", "My orders", "line pruned"} {
		if strings.Contains(all, secret) {
			t.Errorf("capture off, yet the dashboard shows %q", secret)
		}
	}
	// The numbers and ranges are still there.
	var det ui.RequestDetail
	decode(t, d, "/ui/api/requests/1", &det)
	p := det.Pages[0]
	if det.Captured || p.FocusedLine != 2 || p.Lines != 3 || len(p.Flagged) != 1 || p.TokensBefore != 30 {
		t.Errorf("capture off: detail %+v", det)
	}
	want := []ui.Segment{{Kind: "kept", From: 1, To: 2}, {Kind: "flagged", From: 3, To: 3}}
	if got, _ := json.Marshal(p.Segments); string(got) != mustJSON(want) {
		t.Errorf("segments %s, want %s", got, mustJSON(want))
	}
}

func TestCaptureOnShowsThePage(t *testing.T) {
	d := ui.New(ui.Options{Capture: true})
	d.Record(pageRecord())
	var det ui.RequestDetail
	decode(t, d, "/ui/api/requests/1", &det)
	p := det.Pages[0]
	if !det.Captured || p.Goal != "Find the order of Jane Roe" || p.Reasoning == "" || !strings.Contains(p.Forwarded, "1 line pruned") {
		t.Fatalf("capture on: %+v", det)
	}
	want := []ui.Segment{
		{Kind: "kept", From: 1, To: 2, Text: []string{"RootWebArea 'Secret Shop'", "\t[12] link 'Order #4711 for Jane Roe'"}},
		{Kind: "flagged", From: 3, To: 3, Text: []string{"\t[13] button 'Pay with card 4242'"}},
	}
	if got := mustJSON(p.Segments); got != mustJSON(want) {
		t.Errorf("segments %s, want %s", got, mustJSON(want))
	}
}

func decode(t *testing.T, d *ui.Dashboard, path string, v any) {
	t.Helper()
	resp := get(t, d, path, "127.0.0.1:1", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestOverviewAddsUp(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 30, 0, time.UTC)
	d := ui.New(ui.Options{Now: func() time.Time { return now }})
	rec := func(ago time.Duration, status focusgate.Status, reason focusgate.Reason, cache focusgate.CacheOutcome, model, key string, ms int) ui.Record {
		r := ui.Record{Time: now.Add(-ago), Model: model, Key: key, Status: status, Reason: reason,
			TokensBefore: 1000, TokensAfter: 1000, Cache: cache}
		if status == "pruned" {
			r.TokensAfter, r.Priced, r.SavedUSD, r.RetrieverUSD = 400, true, 0.01, 0.002
		}
		if cache != "" {
			r.Observations = []ui.Observation{{Cache: cache, Retriever: time.Duration(ms) * time.Millisecond}}
		}
		return r
	}
	for _, r := range []ui.Record{
		rec(2*time.Hour, "pruned", "", "miss", "gpt-4.1", "team-a", 800), // before the last hour
		rec(30*time.Minute, "pruned", "", "hit", "gpt-4.1", "team-a", 0),
		rec(10*time.Minute, "pruned", "", "miss", "gpt-4.1", "team-b", 1000),
		rec(5*time.Minute, "failed-open", "timeout", "miss", "gpt-4o", "team-b", 20000),
		rec(time.Minute, "skipped", "below-min-tokens", "", "gpt-4o", "", 0),
		rec(0, "skipped", "below-min-tokens", "", "gpt-4o", "", 0),
	} {
		d.Record(r)
	}
	var o ui.Overview
	decode(t, d, "/ui/api/overview", &o)

	if o.Total.Requests != 6 || o.Hour.Requests != 5 {
		t.Errorf("requests: total %d, hour %d; want 6 and 5", o.Total.Requests, o.Hour.Requests)
	}
	if o.Total.Pruned != 3 || o.Total.Skipped != 2 || o.Total.FailedOpen != 1 {
		t.Errorf("total by status: %+v", o.Total)
	}
	if want := []ui.ReasonCount{{"skipped", "below-min-tokens", 2}, {"failed-open", "timeout", 1}}; mustJSON(o.Total.Reasons) != mustJSON(want) {
		t.Errorf("reasons %+v, want %+v", o.Total.Reasons, want)
	}
	if o.Total.TokensBefore != 6000 || o.Total.TokensAfter != 4200 || o.Hour.TokensAfter != 3800 {
		t.Errorf("tokens: total %d → %d, hour → %d", o.Total.TokensBefore, o.Total.TokensAfter, o.Hour.TokensAfter)
	}
	if d := o.Total.NetUSD - 3*0.008; d > 1e-9 || d < -1e-9 {
		t.Errorf("net saved %v, want 0.024", o.Total.NetUSD)
	}
	if o.Total.CacheHit != 1 || o.Total.CacheMiss != 3 || o.Total.CacheHitRate != 0.25 {
		t.Errorf("cache: %d hit %d miss rate %v", o.Total.CacheHit, o.Total.CacheMiss, o.Total.CacheHitRate)
	}
	// Three waits: 800 ms, 1 s and 20 s. The median is about a second, the
	// 95th percentile in the 20 s bucket; buckets are 25% wide.
	if p := o.Total.RetrieverP50Ms; p == nil || *p < 800 || *p > 1250 {
		t.Errorf("p50 %v ms, want about 1000", p)
	}
	if p := o.Total.RetrieverP95Ms; p == nil || *p < 16000 || *p > 25000 {
		t.Errorf("p95 %v ms, want about 20000", p)
	}
	if len(o.Series) != 60 {
		t.Fatalf("%d points in the series, want 60", len(o.Series))
	}
	var inSeries int64
	for _, p := range o.Series {
		inSeries += p.Requests
	}
	if last := o.Series[59]; inSeries != 5 || last.Requests != 1 || last.Skipped != 1 {
		t.Errorf("series holds %d requests, the last minute %+v", inSeries, last)
	}
	if mustJSON(rowNames(o.Models)) != `["gpt-4.1","gpt-4o"]` || mustJSON(rowNames(o.Keys)) != `["team-a","team-b"]` {
		t.Errorf("breakdowns: models %v, keys %v", rowNames(o.Models), rowNames(o.Keys))
	}
}

func rowNames(rows []ui.Row) []string {
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	return names
}

func TestRecentRequestsNewestFirstAndFiltered(t *testing.T) {
	d := ui.New(ui.Options{})
	for _, st := range []focusgate.Status{focusgate.StatusPruned, focusgate.StatusSkipped, focusgate.StatusFailedOpen, focusgate.StatusPruned} {
		d.Record(ui.Record{Status: st})
	}
	var list struct{ Requests []ui.RequestSummary }
	decode(t, d, "/ui/api/requests", &list)
	var got []string
	for _, r := range list.Requests {
		got = append(got, string(r.Status))
	}
	if mustJSON(got) != `["pruned","failed-open","skipped","pruned"]` {
		t.Errorf("newest first: %v", got)
	}
	decode(t, d, "/ui/api/requests?status=pruned", &list)
	if len(list.Requests) != 2 || list.Requests[0].ID != 4 || list.Requests[1].ID != 1 {
		t.Errorf("pruned only: %+v", list.Requests)
	}
}

func TestRingBounds(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		d := ui.New(ui.Options{MaxRequests: 3})
		for range 5 {
			d.Record(pageRecord())
		}
		var o ui.Overview
		decode(t, d, "/ui/api/overview", &o)
		if o.Ring.Requests != 3 || o.Total.Requests != 5 {
			t.Errorf("ring holds %d (want 3), overview counts %d (want 5)", o.Ring.Requests, o.Total.Requests)
		}
		if resp := get(t, d, "/ui/api/requests/2", "127.0.0.1:1", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("evicted request: %d, want 404", resp.StatusCode)
		}
		if resp := get(t, d, "/ui/api/requests/3", "127.0.0.1:1", nil); resp.StatusCode != http.StatusOK {
			t.Errorf("oldest kept request: %d, want 200", resp.StatusCode)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		const maxBytes = 8 << 10
		d := ui.New(ui.Options{Capture: true, MaxBytes: maxBytes})
		for range 100 {
			d.Record(pageRecord())
		}
		var o ui.Overview
		decode(t, d, "/ui/api/overview", &o)
		if o.Ring.Bytes > maxBytes || o.Ring.Requests == 0 || o.Ring.Requests == 100 {
			t.Errorf("ring holds %d requests in %d bytes, bound %d", o.Ring.Requests, o.Ring.Bytes, maxBytes)
		}
	})
	t.Run("a request larger than the bound keeps its numbers", func(t *testing.T) {
		d := ui.New(ui.Options{Capture: true, MaxBytes: 600})
		d.Record(pageRecord())
		var det ui.RequestDetail
		decode(t, d, "/ui/api/requests/1", &det)
		if det.Captured || !det.TextDropped || det.Pages[0].Goal != "" || det.TokensBefore != 30 {
			t.Errorf("oversized request: %+v", det)
		}
	})
}

// The re-look rate is re-looks per page sent pruned, overall, per action
// model and per page format: the online signal that pruning hides what the
// agent needs.
func TestOverviewRelookRate(t *testing.T) {
	d := ui.New(ui.Options{})
	pruned := func(model, format string) ui.Record {
		return ui.Record{Model: model, Format: format, Status: focusgate.StatusPruned,
			Observations: []ui.Observation{{Format: format, Status: focusgate.StatusPruned}}}
	}
	relook := func(model, format string) ui.Record {
		return ui.Record{Model: model, Format: format, Status: focusgate.StatusSkipped, Reason: focusgate.ReasonRelook, Relook: true,
			Observations: []ui.Observation{{Format: format, Status: focusgate.StatusPruned}, {Format: format, Status: focusgate.StatusSkipped, Reason: focusgate.ReasonRelook}}}
	}
	for _, r := range []ui.Record{
		pruned("gpt-4.1", "playwright"), pruned("gpt-4.1", "playwright"), pruned("gpt-4.1", "playwright"), relook("gpt-4.1", "playwright"),
		pruned("o3", "browsergym"), relook("o3", "browsergym"),
		{Model: "o3", Status: focusgate.StatusSkipped, Reason: focusgate.ReasonNoObservation},
	} {
		d.Record(r)
	}
	var o ui.Overview
	decode(t, d, "/ui/api/overview", &o)
	rate := func(r *float64) float64 {
		if r == nil {
			return -1
		}
		return *r
	}
	if o.Total.Relooks != 2 || o.Total.PrunedPages != 4 || rate(o.Total.RelookRate) != 0.5 {
		t.Errorf("total: %d re-looks, %d pruned pages, rate %v; want 2, 4, 0.5", o.Total.Relooks, o.Total.PrunedPages, rate(o.Total.RelookRate))
	}
	want := map[string]float64{"gpt-4.1": 1.0 / 3, "o3": 1, "playwright": 1.0 / 3, "browsergym": 1}
	for _, r := range append(o.Models, o.Formats...) {
		if w, ok := want[r.Name]; ok && rate(r.RelookRate) != w {
			t.Errorf("%s: re-look rate %v, want %v", r.Name, rate(r.RelookRate), w)
		}
		delete(want, r.Name)
	}
	if len(want) != 0 {
		t.Errorf("no rows for %v", want)
	}
}

// An address gets five wrong admin keys per quarter of an hour; then the
// sign-in form answers 429 with Retry-After, even to the right key, until the
// window ends. Other addresses are not held back.
func TestSignInAttemptsAreLimited(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	d := ui.New(ui.Options{AdminKey: adminKey, Now: func() time.Time { return now }})
	post := func(remote, key string) *http.Response {
		req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = remote
		w := httptest.NewRecorder()
		d.ServeHTTP(w, req)
		return w.Result()
	}
	for i := range 5 {
		if resp := post("192.0.2.7:5000", fmt.Sprintf("guess-%d", i)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i, resp.StatusCode)
		}
	}
	resp := post("192.0.2.7:5001", adminKey)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after five wrong keys: %d (Retry-After %q), want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := post("198.51.100.1:4000", adminKey); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("another address: %d, want 303", resp.StatusCode)
	}
	now = now.Add(15 * time.Minute)
	if resp := post("192.0.2.7:5000", adminKey); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after the window: %d, want 303", resp.StatusCode)
	}
}

// The overview counts the requests rescued from an overflowing context
// window, by how each rescue ended.
func TestOverviewCountsContextRescues(t *testing.T) {
	d := ui.New(ui.Options{})
	for _, r := range []focusgate.Rescue{focusgate.RescueRescued, focusgate.RescueRescued, focusgate.RescueStillTooLong, focusgate.RescueNothingToPrune, ""} {
		d.Record(ui.Record{Model: "gpt-4.1", Status: focusgate.StatusPruned, Rescue: r})
	}
	var o ui.Overview
	decode(t, d, "/ui/api/overview", &o)
	if got := [3]int64{o.Total.Rescued, o.Total.StillTooLong, o.Total.NothingToPrune}; got != [3]int64{2, 1, 1} {
		t.Errorf("rescued, still too long, nothing to prune: %v, want [2 1 1]", got)
	}
}

// Each request says where it went: its API and its provider, as the
// pipeline reported them.
func TestARequestNamesItsProvider(t *testing.T) {
	d := ui.New(ui.Options{})
	d.Observe("", focusgate.Outcome{API: focusgate.APIMessages, Provider: "bedrock", Status: focusgate.StatusPruned, Model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"})
	var list struct{ Requests []ui.RequestSummary }
	decode(t, d, "/ui/api/requests", &list)
	if len(list.Requests) != 1 || list.Requests[0].Route != "messages" || list.Requests[0].Provider != "bedrock" {
		t.Errorf("requests %+v, want one Messages request to Bedrock", list.Requests)
	}
}

// Each page of a request keeps its own line numbers, in the dashboard's own
// memory: a tool loop's request has dozens of pages, and the gateway reuses
// what it recorded them from.
func TestEachPageKeepsItsLineNumbers(t *testing.T) {
	d := ui.New(ui.Options{})
	rec := pageRecord()
	first := rec.Observations[0]
	rec.Observations = []ui.Observation{first, first, first}
	rec.Observations[1].Ranges, rec.Observations[1].Kept, rec.Observations[1].Flagged = nil, nil, nil
	rec.Observations[2].Ranges = []focusgate.Range{{From: 4, To: 9}, {From: 12, To: 12}}
	rec.Observations[2].Kept = []focusgate.Range{{From: 4, To: 8}}
	rec.Observations[2].Flagged = []int{9, 10}
	want := mustJSON([][]any{{[]ui.LineRange{{From: 1, To: 2}}, []ui.LineRange{{From: 1, To: 2}}, []int{3}},
		{[]ui.LineRange{}, []ui.LineRange{}, []int{}},
		{[]ui.LineRange{{From: 4, To: 9}, {From: 12, To: 12}}, []ui.LineRange{{From: 4, To: 8}}, []int{9, 10}}})
	d.Record(rec)
	for _, o := range rec.Observations {
		for i := range o.Ranges {
			o.Ranges[i] = focusgate.Range{}
		}
		for i := range o.Flagged {
			o.Flagged[i] = 0
		}
	}
	var det ui.RequestDetail
	decode(t, d, "/ui/api/requests/1", &det)
	var got [][]any
	for _, p := range det.Pages {
		got = append(got, []any{p.Ranges, p.Kept, p.Flagged})
	}
	if mustJSON(got) != want {
		t.Errorf("pages' ranges, kept lines and flagged lines:\n got %s\nwant %s", mustJSON(got), want)
	}
}
