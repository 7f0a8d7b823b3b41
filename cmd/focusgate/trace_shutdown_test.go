package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The last export of traces belongs to the grace period: with a collector
// that accepts the export and never answers, a second SIGTERM, which ends
// the grace period, ends the export too, instead of a fixed ten seconds
// more.
func TestHangingCollectorDoesNotHoldShutdown(t *testing.T) {
	if os.Getenv("FOCUSGATE_TEST_OWN_PROCESS") == "" {
		// OpenTelemetry's package-level tracers follow the first
		// provider a process installs, so that a second gateway with
		// tracing in this process would record nothing: this test runs
		// in a process of its own, leaving TestTracesOverOTLP this one.
		cmd := exec.Command(os.Args[0], "-test.run=^TestHangingCollectorDoesNotHoldShutdown$", "-test.v")
		cmd.Env = append(os.Environ(), "FOCUSGATE_TEST_OWN_PROCESS=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("in its own process: %v\n%s", err, out)
		}
		return
	}
	received, release := make(chan struct{}, 1), make(chan struct{})
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case received <- struct{}{}:
		default:
		}
		<-release
	}))
	t.Cleanup(collector.Close)
	t.Cleanup(func() { close(release) })
	up := fakeOpenAI(t, nil)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":      up.URL + "/v1",
		"FOCUSGATE_SHUTDOWN_TIMEOUT":  "10m",
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
	})
	resp, err := http.Get(gw.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	gw.stop()
	gw.logs.WaitFor(t, "shutting down")
	gw.hurry()
	if err := gw.wait(t, time.Minute); err != nil {
		t.Errorf("run returned %v", err)
	}
	logs := gw.logs.String()
	var line string
	for l := range strings.Lines(logs) {
		if strings.Contains(l, "could not send the last traces") {
			line = l
		}
	}
	if !strings.Contains(line, "within the grace period") || !strings.Contains(line, "context canceled") {
		t.Errorf("want the last export given up when the grace period ended; log:\n%s", logs)
	}
}
