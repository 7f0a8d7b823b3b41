package redistest

import (
	"net/url"
	"testing"
)

func TestServerStopsAndRestartsOnTheSamePort(t *testing.T) {
	s := Start(t)
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	addr := u.Host
	if err := ping(addr); err != nil {
		t.Fatalf("started server does not answer: %v", err)
	}
	s.Stop()
	if err := ping(addr); err == nil {
		t.Fatal("stopped server still answers")
	}
	s.Restart()
	if err := ping(addr); err != nil {
		t.Fatalf("restarted server does not answer on %s: %v", addr, err)
	}
}

func TestSharedPrefersREDIS_URL(t *testing.T) {
	const want = "redis://example.invalid:6379/0"
	t.Setenv("REDIS_URL", want)
	if got := Shared(t); got != want {
		t.Errorf("Shared = %q, want %q", got, want)
	}
}
