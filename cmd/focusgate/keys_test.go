package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	clientkeys "github.com/focusgate/focusgate/internal/keys"
	"github.com/focusgate/focusgate/internal/redistest"
)

const (
	upstreamKey  = "sk-proj-upstream0123456789abcdefghij"
	retrieverKey = "sk-proj-retriever0123456789abcdefgh"
	aliceKey     = "fg-alice-0123456789abcdef"
	bobKey       = "fg-bob-0123456789abcdef0"
)

func writeKeysFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// An upstream key, no client keys and an address other hosts can reach:
// the gateway refuses to start and says how to fix it.
func TestRunRefusesAnOpenRelay(t *testing.T) {
	env := map[string]string{"FOCUSGATE_UPSTREAM_API_KEY": upstreamKey, "FOCUSGATE_ADDR": ":0"}
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"focusgate"}, func(k string) string { return env[k] }, nil, io.Discard, &stderr)
	if err == nil {
		t.Fatal("the gateway started as an open relay")
	}
	for _, want := range []string{"FOCUSGATE_UPSTREAM_API_KEY", "FOCUSGATE_CLIENT_KEYS_FILE", "FOCUSGATE_ADDR", "FOCUSGATE_ALLOW_UNAUTHENTICATED=true", "127.0.0.1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not mention %s:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error()+stderr.String(), upstreamKey) {
		t.Error("the refusal prints the upstream key")
	}
}

// The keys file is reloaded on SIGHUP: a removed key is rejected at once.
func TestRunReloadsKeysOnSIGHUP(t *testing.T) {
	up := fakeOpenAI(t, nil)
	path := filepath.Join(t.TempDir(), "keys")
	writeKeysFile(t, path, "alice:"+aliceKey+"\n"+clientkeys.Hash("bob", bobKey)+"\n")
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":     up.URL + "/v1",
		"FOCUSGATE_UPSTREAM_API_KEY": upstreamKey,
		"FOCUSGATE_CLIENT_KEYS_FILE": path,
	})
	if code := get(t, gw.URL+"/v1/models", bobKey); code != http.StatusOK {
		t.Fatalf("bob: %d", code)
	}
	writeKeysFile(t, path, "alice:"+aliceKey+"\n")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	gw.logs.WaitFor(t, "keys file reloaded")
	if code := get(t, gw.URL+"/v1/models", bobKey); code != http.StatusUnauthorized {
		t.Errorf("bob after SIGHUP: %d, want 401", code)
	}
	if code := get(t, gw.URL+"/v1/models", aliceKey); code != http.StatusOK {
		t.Errorf("alice after SIGHUP: %d, want 200", code)
	}
}

// No key reaches the logs (at debug level), /metrics or Redis, even when the
// retriever rejects its key and quotes it back, in full and masked; the
// retriever is called with its own key, never the client's gateway key.
func TestRunKeepsKeysOutOfLogsMetricsAndRedis(t *testing.T) {
	srv := redistest.Start(t)
	var calls atomic.Int32
	var mu sync.Mutex
	var retrieverAuth []string
	retriever := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		retrieverAuth = append(retrieverAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+retrieverKey+` (sk-proj-re**********************fgh); also seen: `+aliceKey+`","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"<answer>[(1,3)]</answer>"}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	}))
	t.Cleanup(retriever.Close)
	upstreamAuth := make(chan string, 8)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		upstreamAuth <- r.Header.Get("Authorization")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(upstream.Close)

	path := filepath.Join(t.TempDir(), "keys")
	writeKeysFile(t, path, "alice:"+aliceKey+"\n"+clientkeys.Hash("bob", bobKey)+"\n")
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":      upstream.URL + "/v1",
		"FOCUSGATE_UPSTREAM_API_KEY":  upstreamKey,
		"FOCUSGATE_RETRIEVER_URL":     retriever.URL + "/v1",
		"FOCUSGATE_RETRIEVER_API_KEY": retrieverKey,
		"FOCUSGATE_CLIENT_KEYS_FILE":  path,
		"FOCUSGATE_REDIS_URL":         srv.URL(),
		"FOCUSGATE_LOG_LEVEL":         "debug",
	})
	body, err := os.ReadFile("../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json")
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct{ key, status string }{
		{aliceKey, "failed-open; reason=retriever-http-4xx"},
		{bobKey, "pruned"},
	} {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tt.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Focusgate-Status"); got != tt.status {
			t.Fatalf("request %d: status %q, want %q", i+1, got, tt.status)
		}
		if got := <-upstreamAuth; got != "Bearer "+upstreamKey {
			t.Errorf("request %d: upstream Authorization %q, want the upstream key", i+1, got)
		}
	}
	// Keys in places they do not belong: an unknown key, a key in the path.
	get(t, gw.URL+"/v1/models", "fg-mallory-0123456789abcdef")
	if code := get(t, gw.URL+"/v1/files/"+aliceKey, aliceKey); code != http.StatusBadRequest {
		t.Errorf("a key in the path: status %d, want 400: such a request goes nowhere", code)
	}
	gw.logs.WaitUntil(t, "four access-log lines", func(logs string) bool { return strings.Count(logs, "msg=request") >= 4 })

	mu.Lock()
	for i, a := range retrieverAuth {
		if a != "Bearer "+retrieverKey {
			t.Errorf("retriever call %d: Authorization %q, want the retriever key", i+1, a)
		}
	}
	mu.Unlock()

	secrets := []string{upstreamKey, retrieverKey, aliceKey, bobKey, "sk-proj-re***"}
	logs := gw.logs.String()
	if !strings.Contains(logs, "[REDACTED]") || !strings.Contains(logs, "Incorrect API key provided") {
		t.Errorf("the retriever's rejection is not logged, redacted:\n%s", logs)
	}
	resp, err := http.Get(gw.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `key="bob"`) {
		t.Errorf("/metrics has no series for bob")
	}

	rdb := redis.NewClient(mustParseRedisURL(t, srv.URL()))
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	var stored strings.Builder
	iter := rdb.Scan(ctx, 0, "*", 0).Iterator()
	n := 0
	for iter.Next(ctx) {
		k := iter.Val()
		n++
		v, _ := rdb.Dump(ctx, k).Result()
		stored.WriteString(k + "\x00" + v + "\n")
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("nothing was cached in Redis")
	}

	for _, secret := range secrets {
		for where, text := range map[string]string{"the logs": logs, "/metrics": string(metrics), "Redis": stored.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contain a key (%.12s…)", where, secret)
			}
		}
	}
}

func mustParseRedisURL(t *testing.T, url string) *redis.Options {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
