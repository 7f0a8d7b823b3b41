package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthURL(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"", "http://127.0.0.1:8080/healthz"},
		{":8080", "http://127.0.0.1:8080/healthz"},
		{"0.0.0.0:9000", "http://127.0.0.1:9000/healthz"},
		{"[::]:9000", "http://127.0.0.1:9000/healthz"},
		{"127.0.0.1:9001", "http://127.0.0.1:9001/healthz"},
		{"[::1]:9002", "http://[::1]:9002/healthz"},
		{"localhost:9003", "http://localhost:9003/healthz"},
	} {
		if got := healthURL(c.addr); got != c.want {
			t.Errorf("healthURL(%q) = %q, want %q", c.addr, got, c.want)
		}
	}
}

// health exits 0 only for a gateway that answers 200: a draining or broken
// one, and an address where nothing listens, make it fail with the reason.
func TestHealthCommand(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"status":"ok"}`)
	}))
	t.Cleanup(ok.Close)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	t.Cleanup(broken.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	for _, c := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"answering, by URL", []string{"--url", ok.URL + "/healthz"}, nil, ""},
		{"answering, by FOCUSGATE_ADDR", nil, map[string]string{"FOCUSGATE_ADDR": strings.TrimPrefix(ok.URL, "http://")}, ""},
		{"unhealthy", []string{"--url", broken.URL + "/healthz"}, nil, "503"},
		{"nothing listening", []string{"--url", "http://" + closed + "/healthz"}, nil, "refused"},
		{"a stray argument", []string{"now"}, nil, "no arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			err := run(context.Background(), append([]string{"focusgate", "health"}, c.args...), func(k string) string { return c.env[k] }, nil, &out, &errs)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("health failed: %v", err)
			case c.wantErr == "" && !strings.HasPrefix(out.String(), "ok: "):
				t.Errorf("health printed %q, want ok", out.String())
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("health returned %v, want an error about %q", err, c.wantErr)
			case c.wantErr != "" && exitCode(err) != 1:
				t.Errorf("exit status %d, want 1", exitCode(err))
			}
		})
	}
}
