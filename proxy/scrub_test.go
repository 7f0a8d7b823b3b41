package proxy_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// keyForm is one way a client may repeat its gateway key in a header: want
// is what the upstream must receive in that header ("" for nothing).
type keyForm struct {
	name   string
	header string
	values func(key string) []string
	want   string
	// carrier is the header the request authenticates with:
	// Authorization (Bearer) unless it is the header under test.
	carrier string
}

func percentAll(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func b64(s string) string    { return base64.StdEncoding.EncodeToString([]byte(s)) }
func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func one(f func(key string) string) func(string) []string {
	return func(k string) []string { return []string{f(k)} }
}

var keyForms = []keyForm{
	{name: "x-api-key", header: "X-Api-Key", values: one(func(k string) string { return k })},
	{name: "api-key", header: "Api-Key", values: one(func(k string) string { return k })},
	{name: "user:KEY", header: "X-K", values: one(func(k string) string { return "user:" + k })},
	{name: "in a path", header: "X-Original-Url", values: one(func(k string) string { return "/p/" + k + "/" })},
	{name: "KEY.x", header: "X-K", values: one(func(k string) string { return k + ".x" })},
	{name: "(KEY)", header: "X-K", values: one(func(k string) string { return "(" + k + ")" })},
	{name: "[KEY] and <KEY>", header: "X-K", values: one(func(k string) string { return "[" + k + "] <" + k + ">" })},
	{name: "URL fragment", header: "Referer", values: one(func(k string) string { return "https://x/#" + k })},
	{name: "URL query", header: "Referer", values: one(func(k string) string { return "https://x/?api_key=" + k + "&a=1" })},
	{name: "URL user info", header: "X-Base-Url", values: one(func(k string) string { return "https://user:" + k + "@api.example.com/v1" })},
	{name: "host name", header: "X-Forwarded-Host", values: one(func(k string) string { return k + ".example.com" })},
	{name: "JSON", header: "X-K", values: one(func(k string) string { return `{"token":"` + k + `"}` })},
	{name: "Bearer in another header", header: "X-Forward-Auth", values: one(func(k string) string { return "Bearer " + k })},
	{name: "glued to other text", header: "X-K", values: one(func(k string) string { return "abc" + k + "xyz" })},
	{name: "percent-encoded", header: "X-K", values: one(percentAll)},
	{name: "percent-encoded twice", header: "X-K", values: one(func(k string) string { return strings.ReplaceAll(percentAll(k), "%", "%25") })},
	{name: "base64", header: "X-K", values: one(func(k string) string { return b64(k) })},
	{name: "base64, URL alphabet, unpadded", header: "X-K", values: one(func(k string) string { return b64url(k) })},
	{name: "base64 of text around it", header: "X-K", values: one(func(k string) string { return "t=" + b64("xy"+k+"tail") })},
	{name: "base64 of Bearer KEY", header: "X-K", values: one(func(k string) string { return b64("Bearer " + k) })},
	{name: "Basic :KEY in Proxy-Authorization", header: "Proxy-Authorization", values: one(func(k string) string { return "Basic " + b64(":"+k) })},
	{name: "Basic user:KEY", header: "X-Upstream-Authorization", values: one(func(k string) string { return "Basic " + b64("user:"+k) })},
	{name: "Authorization: Basic :KEY", header: "Authorization", carrier: "X-Api-Key", values: one(func(k string) string { return "Basic " + b64(":"+k) })},
	{name: "percent-encoded Basic credential", header: "X-K", values: one(func(k string) string { return "Basic%20" + strings.ReplaceAll(b64(":"+k), "=", "%3D") })},
	{name: "a cookie among others", header: "Cookie", values: one(func(k string) string { return "a=1; s=user:" + k }), want: "a=1"},
	{name: "one of two values", header: "X-K", values: func(k string) []string { return []string{"clean", "user:" + k} }, want: "clean"},
}

// No header value that holds a gateway key reaches the upstream, on any
// route, whatever the form: each form of keyForms is sent with alice's key
// (kept in the keys file as text) and bob's (kept as its digest), and the
// header that held it arrives dropped, or without the cookie or value that
// held it. The client's other headers arrive as sent.
func TestNoHeaderHoldingAGatewayKeyReachesTheUpstream(t *testing.T) {
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f)
	routes := []struct{ method, path, body string }{
		{http.MethodPost, "/v1/chat/completions", `{"model":"gpt-4.1","messages":[]}`},
		{http.MethodPost, "/v1/responses", `{"model":"gpt-4.1","input":"hi"}`},
		{http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":1,"messages":[]}`},
		{http.MethodPost, "/v1/messages/count_tokens", `{"model":"claude-sonnet-4-5","messages":[]}`},
		{http.MethodGet, "/v1/models", ""},
		{http.MethodPost, "/v1/files", `{}`},
	}
	for _, key := range []string{aliceKey, bobKey} {
		for _, rt := range routes {
			for _, form := range keyForms {
				t.Run(fmt.Sprintf("%s %s %s/%s", key[:6], rt.method, rt.path, form.name), func(t *testing.T) {
					req, _ := http.NewRequest(rt.method, gw.URL+rt.path, strings.NewReader(rt.body))
					if form.carrier == "X-Api-Key" {
						req.Header.Set("X-Api-Key", key)
					} else {
						req.Header.Set("Authorization", "Bearer "+key)
					}
					req.Header.Set("X-Client-Trace", "abc-123")
					for _, v := range form.values(key) {
						req.Header.Add(form.header, v)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("status %d", resp.StatusCode)
					}
					got := gw.upstream.last(t)
					for name, values := range got.Header {
						for _, v := range values {
							if strings.Contains(v, key) {
								t.Errorf("the gateway key reached the upstream in %s", name)
							}
						}
					}
					if v := strings.Join(got.Header.Values(form.header), ", "); form.header != "Authorization" && v != form.want {
						t.Errorf("%s arrived as %q, want %q", form.header, v, form.want)
					}
					if got.Header.Get("X-Client-Trace") != "abc-123" {
						t.Error("another header was lost")
					}
				})
			}
		}
	}
	if logs := gw.logs.String(); strings.Contains(logs, aliceKey) || strings.Contains(logs, bobKey) || !strings.Contains(logs, "gateway key removed") {
		t.Errorf("the log must name the headers a key was removed from, never the key:\n%s", logs)
	}
}

// A gateway key repeated in another header does not reach the pipeline as
// the client's credential either.
func TestPipelineNeverGetsAGatewayKeyFromAnotherHeader(t *testing.T) {
	rw := &scripted{out: focusgate.Outcome{Status: focusgate.StatusSkipped, Reason: focusgate.ReasonNoObservation}}
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f, func(o *gatewayOptions) {
		o.UpstreamAPIKey = ""
		o.Pipeline = rw
	})
	for _, key := range []string{aliceKey, bobKey} {
		for _, form := range []string{"user:" + key, "(" + key + ")", b64(key)} {
			post(t, gw.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4.1","messages":[]}`), map[string]string{"Authorization": "Bearer " + key, "X-Api-Key": form})
			reqs := rw.requests()
			if len(reqs) == 0 {
				t.Fatal("the request did not reach the pipeline")
			}
			if got := reqs[len(reqs)-1].Credential.Value; strings.Contains(got, key) || strings.Contains(got, form) {
				t.Errorf("the pipeline was handed the gateway key as the client's credential: %q", got)
			}
		}
	}
}
