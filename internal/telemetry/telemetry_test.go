package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
)

func TestSetupRefusesEndpointsThatAreNotHTTP(t *testing.T) {
	for _, tt := range []struct {
		name, variable, value string
	}{
		{"not a URL", "OTEL_EXPORTER_OTLP_ENDPOINT", "not a url"},
		{"ftp", "OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://collector:4318"},
		{"host:port without a scheme", "OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
		{"no host", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://"},
		{"bad percent-encoding", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/%zz"},
		{"traces endpoint", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "grpc://collector:4317"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{tt.variable: tt.value}
			on, _, err := Setup(func(k string) string { return env[k] }, nil, nil)
			if err == nil || on || !strings.HasPrefix(err.Error(), tt.variable+": ") {
				t.Errorf("Setup: on %v, error %v; want an error naming %s", on, err, tt.variable)
			}
		})
	}
}

// syncBuffer is a log destination safe for the exporter's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(s.b.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("a log line that is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// OpenTelemetry's errors go to the gateway's logger, in its format, while
// tracing is set up, and no longer once it is shut down.
func TestOpenTelemetryErrorsGoToTheLog(t *testing.T) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(collector.Close)
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}
	on, shutdown, err := Setup(func(k string) string { return env[k] }, log, nil)
	if err != nil || !on {
		t.Fatalf("Setup: %v, %v", on, err)
	}
	otel.Handle(errors.New("traces export: connection refused"))
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	otel.Handle(errors.New("after shutdown"))
	lines := logs.lines(t)
	if len(lines) != 1 || lines[0]["level"] != "WARN" || lines[0]["err"] != "traces export: connection refused" {
		t.Errorf("log lines %v, want the one error as a warning", lines)
	}
}

// A collector that is down fails every export: the first error is logged,
// then one line per interval, which counts the errors left out.
func TestOpenTelemetryErrorsAreRateLimited(t *testing.T) {
	var logs syncBuffer
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	l := newErrorLog(slog.New(slog.NewJSONHandler(&logs, nil)), 30*time.Second, func() time.Time { return now })
	for range 224 {
		l.Handle(errors.New("export failed"))
	}
	now = now.Add(29 * time.Second)
	l.Handle(errors.New("export failed"))
	now = now.Add(time.Second)
	l.Handle(errors.New("export failed again"))
	lines := logs.lines(t)
	if len(lines) != 2 {
		t.Fatalf("%d lines for 226 errors over 30 s, want 2", len(lines))
	}
	if lines[0]["not_logged_since_last"] != 0.0 || lines[1]["not_logged_since_last"] != 224.0 || lines[1]["err"] != "export failed again" {
		t.Errorf("lines %v: want the first error, then the next one after the interval counting the 224 left out", lines)
	}
}
