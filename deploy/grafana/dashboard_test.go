// Package grafana holds the test of focusgate's Grafana dashboard
// (focusgate.json): every PromQL expression in it parses, and every metric
// and label it names is one the gateway exports.
package grafana

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/holdout"
	"github.com/focusgate/focusgate/proxy"
)

// scriptedPipeline reports, for every request, an outcome that touches every
// metric of the gateway: a pruned page fetched from the retriever, older
// pages, a rescue, prices; or, for a body that says so, a re-look.
type scriptedPipeline struct{}

func (scriptedPipeline) Rewrite(_ context.Context, req focusgate.Request) ([]byte, focusgate.Outcome) {
	page := focusgate.Page{Format: "browsergym", Status: focusgate.StatusPruned, TokensBefore: 1000, TokensAfter: 400,
		Cache: focusgate.CacheMiss, Retriever: 300 * time.Millisecond, Usage: focusgate.RetrieverUsage{PromptTokens: 900, CompletionTokens: 20}, Flagged: 1}
	out := focusgate.Outcome{API: req.API, Status: focusgate.StatusPruned, Model: "gpt-4.1", TokensBefore: 1000, TokensAfter: 400,
		Cache: focusgate.CacheMiss, Retriever: 300 * time.Millisecond, Flagged: 1, Pages: []focusgate.Page{page},
		Older: focusgate.Older{Reapplied: 1, Pruned: 1, Left: 1}, Rescue: focusgate.RescueRescued,
		Priced: true, SavedUSD: 0.01, RetrieverUSD: 0.001}
	if bytes.Contains(req.Body, []byte("relook")) {
		out.Status, out.Reason, out.Relook = focusgate.StatusSkipped, focusgate.ReasonRelook, true
	}
	return req.Body, out
}

// exported gathers the metrics of a gateway wired as `focusgate serve` wires
// it (the gateway's own, Redis's and the holdout's), after requests that give
// every labelled series a value, and returns each family by name.
func exported(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[]}`)
	}))
	t.Cleanup(upstream.Close)
	reg := prometheus.NewRegistry()
	srv := proxy.New(proxy.Options{
		Upstreams: map[string]proxy.Upstream{"openai": {URL: upstream.URL + "/v1"}}, Registry: reg, Pipeline: scriptedPipeline{},
		RedisStats:         func() focusgate.RedisStats { return focusgate.RedisStats{Up: true} },
		RetrieversInFlight: func() int64 { return 0 },
	})
	gw := httptest.NewServer(srv)
	t.Cleanup(gw.Close)
	metrics := holdout.NewMetrics(reg)
	for _, arm := range []focusgate.Arm{focusgate.ArmPruned, focusgate.ArmHoldout} {
		metrics.End(holdout.Conversation{Arm: arm, Model: "gpt-4.1", Steps: 8, InputTokens: 40000, RepeatSteps: 1, Errors: 1, USD: 0.2, Priced: true})
	}
	holdout.RegisterOpen(reg, holdout.New(holdout.Options{Share: 0.05}))

	for _, body := range []string{`{"model":"gpt-4.1"}`, `{"model":"gpt-4.1","relook":true}`} {
		resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the gateway answered %s", resp.Status)
		}
	}
	// The requests are counted once their handlers have ended (Close waits
	// for them) and their bookkeeping is done.
	gw.Close()
	srv.Flush()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out
}

// seriesNames maps each series name PromQL can select to its family: a
// histogram is selected as its _bucket, _sum and _count series.
func seriesNames(families map[string]*dto.MetricFamily) map[string]*dto.MetricFamily {
	out := map[string]*dto.MetricFamily{}
	for name, f := range families {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[name+s] = f
			}
		case dto.MetricType_SUMMARY:
			out[name], out[name+"_sum"], out[name+"_count"] = f, f, f
		default:
			out[name] = f
		}
	}
	return out
}

// labelNames are the labels a series of f carries, and those Prometheus adds
// when it scrapes (job, instance); a histogram's buckets carry le.
func labelNames(f *dto.MetricFamily, series string) map[string]bool {
	names := map[string]bool{"job": true, "instance": true}
	if strings.HasSuffix(series, "_bucket") {
		names["le"] = true
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			names[l.GetName()] = true
		}
	}
	return names
}

// grafanaVariables are the dashboard's variables and Grafana's own, with a
// value each as Grafana would put in their place before sending the query.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "5m",
	"$__range", "1h",
	"$__interval", "1m",
	"$job", ".*",
)

// query is one PromQL expression of the dashboard and where it is.
type query struct{ where, expr string }

// queries returns every PromQL expression of the dashboard: the targets of
// its panels (rows' panels included) and of its query variables.
func queries(t *testing.T, dash map[string]any) []query {
	t.Helper()
	var out []query
	var panels func([]any)
	panels = func(list []any) {
		for _, p := range list {
			p := p.(map[string]any)
			title, _ := p["title"].(string)
			for _, tg := range asList(p["targets"]) {
				tg := tg.(map[string]any)
				expr, _ := tg["expr"].(string)
				if expr == "" {
					t.Errorf("panel %q: target %v has no expression", title, tg["refId"])
					continue
				}
				out = append(out, query{where: "panel " + strconv.Quote(title) + " " + tg["refId"].(string), expr: expr})
			}
			panels(asList(p["panels"]))
		}
	}
	panels(asList(dash["panels"]))
	templating, _ := dash["templating"].(map[string]any)
	labelValues := regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`)
	for _, v := range asList(templating["list"]) {
		v := v.(map[string]any)
		if v["type"] != "query" {
			continue
		}
		q, _ := v["query"].(map[string]any)
		s, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			t.Errorf("variable %v: query %q is not label_values(metric, label)", v["name"], s)
			continue
		}
		// label_values(metric, label) asks for the series of metric.
		out = append(out, query{where: "variable " + v["name"].(string), expr: m[1] + `{` + m[2] + `!=""}`})
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func TestDashboardQueriesParseAndNameExportedMetrics(t *testing.T) {
	b, err := os.ReadFile("focusgate.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("focusgate.json: %v", err)
	}
	series := seriesNames(exported(t))
	p := parser.NewParser(parser.Options{})
	used := map[string]bool{}
	qs := queries(t, dash)
	if len(qs) < 40 {
		t.Fatalf("the dashboard has %d queries: is it the whole dashboard?", len(qs))
	}
	for _, q := range qs {
		expr := grafanaVariables.Replace(q.expr)
		if strings.Contains(expr, "$") {
			t.Errorf("%s: a variable the test does not know: %s", q.where, q.expr)
			continue
		}
		ast, err := p.ParseExpr(expr)
		if err != nil {
			t.Errorf("%s does not parse: %v\n%s", q.where, err, q.expr)
			continue
		}
		parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			f, ok := series[vs.Name]
			if !ok {
				t.Errorf("%s: %q is no metric the gateway exports", q.where, vs.Name)
				return nil
			}
			used[f.GetName()] = true
			labels := labelNames(f, vs.Name)
			for _, m := range vs.LabelMatchers {
				if m.Name != "__name__" && !labels[m.Name] {
					t.Errorf("%s: %s has no label %q", q.where, vs.Name, m.Name)
				}
			}
			return nil
		})
	}
	// The holdout's figures are what the dashboard is for: each is charted.
	for _, name := range []string{"focusgate_conversations_total", "focusgate_conversation_steps", "focusgate_conversation_input_tokens",
		"focusgate_conversation_usd", "focusgate_conversation_upstream_errors_total", "focusgate_conversation_repeat_steps_total",
		"focusgate_relooks_total", "focusgate_pruned_pages_total"} {
		if !used[name] {
			t.Errorf("the dashboard does not chart %s", name)
		}
	}
}

// Every histogram's bucket bounds are exact decimals, so that their le
// labels read as written ("0.3", not "0.30000000000000004"): each bound has
// at most six significant digits.
func TestHistogramBucketsAreExact(t *testing.T) {
	for name, f := range exported(t) {
		if f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		var bounds []float64
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		if len(bounds) == 0 {
			t.Errorf("%s has no buckets", name)
		}
		for _, v := range bounds {
			short, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
			if short != v {
				t.Errorf("%s: bucket bound %s is not an exact decimal", name, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		if !slices.IsSorted(bounds) {
			t.Errorf("%s: buckets %v out of order", name, bounds)
		}
	}
}
