package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// scriptedRetriever answers every chat completion with content, or fails
// with status when it is not 200.
func scriptedRetriever(t *testing.T, status int, content string) (url string, prompts func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
			return
		}
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"`+content+`"}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func TestPruneCommand(t *testing.T) {
	const file = "../../testdata/axtrees/bgym-pr301_workarena_standard_laptop_form.txt"
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	url, prompts := scriptedRetriever(t, http.StatusOK, "<answer>[(1,2), (150,152)]</answer>")
	env := map[string]string{"FOCUSGATE_RETRIEVER_URL": url, "OPENAI_API_KEY": "sk-user"}
	getenv := func(k string) string { return env[k] }

	for _, tt := range []struct {
		name  string
		args  []string
		stdin io.Reader
	}{
		{"file", []string{"focusgate", "prune", "--goal", "Order 10 laptops", "--mode", "ancestors", file}, nil},
		{"stdin", []string{"focusgate", "prune", "--goal", "Order 10 laptops", "--mode", "ancestors"}, bytes.NewReader(page)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), tt.args, getenv, tt.stdin, &stdout, &stderr); err != nil {
				t.Fatalf("prune: %v\n%s", err, stderr.String())
			}
			if stdout.Len() >= len(page)/2 || !strings.HasPrefix(stdout.String(), "RootWebArea 'Standard Laptop") {
				t.Errorf("stdout is not the pruned page (%d of %d bytes):\n%.300s", stdout.Len(), len(page), stdout.String())
			}
			if !strings.Contains(stderr.String(), "pruned, 199 lines (browsergym)") || !strings.Contains(stderr.String(), "fewer") {
				t.Errorf("stderr lacks the statistics: %q", stderr.String())
			}
		})
	}
	if got := prompts()[0]; !strings.Contains(got, "Order 10 laptops") || !strings.Contains(got, "   1 RootWebArea") {
		t.Errorf("the retriever did not get the goal and the numbered tree: %.300s", got)
	}
}

func TestPruneCommandFailures(t *testing.T) {
	const file = "../../testdata/axtrees/bgym-pr301_workarena_standard_laptop_form.txt"
	page, _ := os.ReadFile(file)

	t.Run("retriever down prints the page unchanged and fails", func(t *testing.T) {
		url, _ := scriptedRetriever(t, http.StatusInternalServerError, "")
		env := map[string]string{"FOCUSGATE_RETRIEVER_URL": url}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"focusgate", "prune", file}, func(k string) string { return env[k] }, nil, &stdout, &stderr)
		if !errors.Is(err, errFailedOpen) || !strings.Contains(err.Error(), "retriever-http-5xx") {
			t.Errorf("error %v, want a failed-open error naming the reason", err)
		}
		if !bytes.Equal(stdout.Bytes(), page) {
			t.Error("the page was not printed unchanged")
		}
	})
	t.Run("no tree in the input", func(t *testing.T) {
		err := run(context.Background(), []string{"focusgate", "prune"}, func(string) string { return "" },
			strings.NewReader("# Notes\n- one\n- two\n"), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "no page observation") {
			t.Errorf("error %v, want no page observation found", err)
		}
	})
}
