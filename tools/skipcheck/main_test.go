package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const stream = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestPasses"}
{"Action":"output","Package":"example.com/a","Test":"TestPasses","Output":"=== RUN   TestPasses\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestPasses"}
{"Action":"run","Package":"example.com/a","Test":"TestNeedsRedis"}
{"Action":"output","Package":"example.com/a","Test":"TestNeedsRedis","Output":"    store.go:52: needs redis-server, which is not on PATH\n"}
{"Action":"output","Package":"example.com/a","Test":"TestNeedsRedis","Output":"--- SKIP: TestNeedsRedis (0.00s)\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestNeedsRedis"}
{"Action":"run","Package":"example.com/a","Test":"FuzzParse/seed#1"}
{"Action":"skip","Package":"example.com/a","Test":"FuzzParse/seed#1"}
{"Action":"run","Package":"example.com/a","Test":"TestBroken"}
{"Action":"output","Package":"example.com/a","Test":"TestBroken","Output":"    a_test.go:9: got 1, want 2\n"}
{"Action":"fail","Package":"example.com/a","Test":"TestBroken"}
{"Action":"output","Package":"example.com/a","Output":"FAIL\texample.com/a\t0.01s\n"}
{"Action":"fail","Package":"example.com/a"}
{"Action":"skip","Package":"example.com/notests"}
{"Action":"output","Package":"example.com/b","Output":"ok  \texample.com/b\t0.01s\n"}
{"Action":"pass","Package":"example.com/b"}
`
	allow, err := parseAllow("# intended skips\nexample.com/a\\.Fuzz\\w+/.*  # a seed outside the property's domain\n")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = check(strings.NewReader(stream), &out, allow)
	if err == nil {
		t.Fatal("no error for a skipped test and a failure")
	}
	msg := err.Error()
	if !strings.Contains(msg, "1 tests were skipped") || !strings.Contains(msg, "example.com/a.TestNeedsRedis") || !strings.Contains(msg, "needs redis-server") {
		t.Errorf("error %q: want the one unexpected skip, with its reason", msg)
	}
	if strings.Contains(msg, "Fuzz") || !strings.Contains(msg, "1 packages failed") {
		t.Errorf("error %q: want the allowed skip left out and the failed package counted", msg)
	}
	want := "    a_test.go:9: got 1, want 2\nFAIL\texample.com/a\t0.01s\nok  \texample.com/b\t0.01s\n"
	if out.String() != want {
		t.Errorf("output %q, want %q (what go test prints without -json)", out.String(), want)
	}

	out.Reset()
	if err := check(strings.NewReader(`{"Action":"output","Package":"example.com/b","Output":"ok  \texample.com/b\t0.01s\n"}`+"\n"), &out, allow); err != nil {
		t.Errorf("a clean run: %v", err)
	}
}

func TestAllowNeedsAReason(t *testing.T) {
	if _, err := parseAllow("example.com/a\\.TestX\n"); err == nil {
		t.Error("an allowed skip without a reason was accepted")
	}
	if _, err := parseAllow("example.com/a\\.(  # broken\n"); err == nil {
		t.Error("a bad pattern was accepted")
	}
}
