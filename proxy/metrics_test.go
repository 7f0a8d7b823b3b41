package proxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/focusgate/focusgate/proxy"
)

// scrape reads the gateway's /metrics as Prometheus would, once the requests
// it is handling have ended.
func scrape(t *testing.T, gw *gateway) map[string]*dto.MetricFamily {
	t.Helper()
	gw.settle()
	resp, err := http.Get(gw.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not the Prometheus text format: %v", err)
	}
	return families
}

// value returns the value of the series of name whose labels include want,
// or 0 when there is none.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := families[name]
	if !ok {
		return 0
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

func TestMetricsCountWhatHappened(t *testing.T) {
	var calls atomic.Int32
	rt := newRetriever(t, func(lines []string) (int, string) {
		if calls.Add(1) > 1 {
			return http.StatusInternalServerError, ""
		}
		return keep("[a237] combobox", "[a203] textbox")(lines)
	})
	gw := pruningGateway(t, rt)

	laptop := readFile(t, laptopRequest)
	shopping := readFile(t, "../testdata/requests/genericagent_webarena_shopping_step0.json")
	var before, after int
	var savedHeader float64
	for i, tt := range []struct {
		body   []byte
		status string
	}{
		{laptop, "pruned"}, // the retriever is asked
		{laptop, "pruned"}, // the selection is cached
		{shopping, "failed-open; reason=retriever-http-5xx"}, // the retriever fails
	} {
		resp := post(t, gw.URL+"/v1/chat/completions", tt.body, nil)
		if got := resp.Header.Get(proxy.HeaderStatus); got != tt.status {
			t.Fatalf("request %d: status %q, want %q", i+1, got, tt.status)
		}
		b, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensBefore))
		a, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensAfter))
		before, after = before+b, after+a
		usd, err := strconv.ParseFloat(resp.Header.Get(proxy.HeaderSavedUSD), 64)
		if err != nil {
			t.Fatalf("request %d: %s = %q", i+1, proxy.HeaderSavedUSD, resp.Header.Get(proxy.HeaderSavedUSD))
		}
		savedHeader += usd
	}
	if r, err := http.Get(gw.URL + "/v1/models"); err == nil {
		r.Body.Close()
	}
	// A request is counted when its handler returns, which may be after the
	// client has read the answer; its access-log line comes right after.
	gw.logs.WaitUntil(t, "four access-log lines", func(logs string) bool { return strings.Count(logs, "msg=request") >= 4 })

	m := scrape(t, gw)
	counts := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"focusgate_requests_total", map[string]string{"route": "chat", "code": "200"}, 3},
		{"focusgate_requests_total", map[string]string{"route": "passthrough", "code": "200"}, 1},
		{"focusgate_prune_outcomes_total", map[string]string{"status": "pruned", "reason": ""}, 2},
		{"focusgate_prune_outcomes_total", map[string]string{"status": "failed-open", "reason": "retriever-http-5xx"}, 1},
		{"focusgate_cache_lookups_total", map[string]string{"outcome": "miss"}, 2},
		{"focusgate_cache_lookups_total", map[string]string{"outcome": "hit"}, 1},
		{"focusgate_retriever_calls_total", map[string]string{"result": "ok"}, 1},
		{"focusgate_retriever_calls_total", map[string]string{"result": "retriever-http-5xx"}, 1},
		{"focusgate_retriever_duration_seconds", nil, 2},
		{"focusgate_retriever_tokens_total", map[string]string{"kind": "prompt"}, 3000},
		{"focusgate_retriever_tokens_total", map[string]string{"kind": "completion"}, 80},
		{"focusgate_reduction_ratio", nil, 2},
		{"focusgate_observation_tokens_before_total", nil, float64(before)},
		{"focusgate_observation_tokens_after_total", nil, float64(after)},
		{"focusgate_request_duration_seconds", map[string]string{"route": "chat"}, 3},
	}
	for _, c := range counts {
		if got := value(m, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	saved := value(m, "focusgate_action_input_saved_usd_total", nil)
	spent := value(m, "focusgate_retriever_cost_usd_total", nil)
	net := value(m, "focusgate_saved_usd", nil)
	// gpt-4.1 reads at $2 per million input tokens; gpt-4.1-mini costs $0.40
	// in and $1.60 out, for the one call that returned.
	if want := float64(before-after) * 2 / 1e6; math.Abs(saved-want) > 1e-9 {
		t.Errorf("saved %v USD, want %v", saved, want)
	}
	if want := (3000*0.4 + 80*1.6) / 1e6; math.Abs(spent-want) > 1e-9 {
		t.Errorf("retriever cost %v USD, want %v", spent, want)
	}
	if math.Abs(net-(saved-spent)) > 1e-9 || math.Abs(net-savedHeader) > 1e-5 {
		t.Errorf("net savings %v, want %v (and the headers' sum %v)", net, saved-spent, savedHeader)
	}
}

// A re-look is answered skipped; reason=re-look and counted by format and
// action model, next to the pruned pages it is a share of.
func TestRelooksAreCounted(t *testing.T) {
	rt := newRetriever(t, keep("RootWebArea"))
	gw := pruningGateway(t, rt)
	page := string(readFile(t, "../testdata/axtrees/bgym-pr301_workarena_standard_laptop_form.txt"))
	loop := func(pages int) []byte {
		msgs := `{"role":"user","content":"Order a standard laptop"}`
		for i := range pages {
			msgs += fmt.Sprintf(`,{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"snapshot","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c%d","content":%s}`, i, i, jsonString(page))
		}
		return []byte(`{"model":"gpt-4.1","messages":[` + msgs + `]}`)
	}
	for pages, want := range []string{1: "pruned", 2: "skipped; reason=re-look"} {
		if pages == 0 {
			continue
		}
		resp := post(t, gw.URL+"/v1/chat/completions", loop(pages), nil)
		if got := resp.Header.Get(proxy.HeaderStatus); got != want {
			t.Fatalf("%d snapshots of the same page: %s = %q, want %q", pages, proxy.HeaderStatus, got, want)
		}
	}
	m := scrape(t, gw)
	labels := map[string]string{"format": "browsergym", "model": "gpt-4.1", "key": "anonymous"}
	if got := value(m, "focusgate_relooks_total", labels); got != 1 {
		t.Errorf("focusgate_relooks_total = %v, want 1", got)
	}
	if got := value(m, "focusgate_pruned_pages_total", labels); got != 1 {
		t.Errorf("focusgate_pruned_pages_total = %v, want 1", got)
	}
	if got := value(m, "focusgate_prune_outcomes_total", map[string]string{"status": "skipped", "reason": "re-look"}); got != 1 {
		t.Errorf("focusgate_prune_outcomes_total{reason=re-look} = %v, want 1", got)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The code label takes a fixed set of values, whatever statuses an upstream
// invents.
func TestCodeLabelIsBounded(t *testing.T) {
	var status atomic.Int32
	gw := newGateway(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) })
	for _, s := range []int{200, 429, 529, 218, 299, 418, 450, 599} {
		status.Store(int32(s))
		resp, err := http.Get(gw.URL + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	m := scrape(t, gw)
	for code, want := range map[string]float64{"200": 1, "429": 1, "529": 1, "2xx": 2, "4xx": 2, "5xx": 1} {
		if got := value(m, "focusgate_requests_total", map[string]string{"route": "passthrough", "code": code}); got != want {
			t.Errorf("code=%s: %v, want %v", code, got, want)
		}
	}
	for _, code := range []string{"218", "299", "418", "450", "599"} {
		if got := value(m, "focusgate_requests_total", map[string]string{"code": code}); got != 0 {
			t.Errorf("code=%s has a series of its own", code)
		}
	}
}

// A WebSocket the upstream accepts (Codex's Responses API over a socket)
// is answered 101 on the hijacked connection, and the access log and the
// metrics say 101, not the status the router would give a request that
// answered nothing.
func TestAnUpgradeIsRecordedAs101(t *testing.T) {
	gw := newGateway(t, func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		rw.Flush()
	})
	conn := rawRequest(t, gw.URL, "GET /v1/responses HTTP/1.1\r\nHost: gateway\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n", "")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	conn.Close()
	gw.logs.WaitFor(t, "path=/v1/responses status=101")
	m := scrape(t, gw)
	if got := value(m, "focusgate_requests_total", map[string]string{"route": "passthrough", "code": "101"}); got != 1 {
		t.Errorf("focusgate_requests_total{route=passthrough,code=101} = %v, want 1", got)
	}
}
