package cloudauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

func TestKeyPlaces(t *testing.T) {
	cases := []struct {
		place focusgate.Credential
		check func(r *http.Request) string
		want  string
	}{
		{focusgate.Credential{Kind: focusgate.CredentialBearer, Name: "Authorization"},
			func(r *http.Request) string { return r.Header.Get("Authorization") }, "Bearer k-1"},
		{focusgate.Credential{Kind: focusgate.CredentialHeader, Name: "Api-Key"},
			func(r *http.Request) string { return r.Header.Get("Api-Key") }, "k-1"},
		{focusgate.Credential{Kind: focusgate.CredentialQuery, Name: "key"},
			func(r *http.Request) string { return r.URL.RawQuery }, "alt=sse&key=k-1"},
	}
	for _, c := range cases {
		t.Run(c.place.Name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://upstream/v1/x?key=client&alt=sse", nil)
			r.Header.Set("Authorization", "Bearer client")
			r.Header.Set("Api-Key", "client")
			k := Key(c.place, "k-1")
			if !k.Ready(context.Background()) {
				t.Fatal("a signer with a key is not ready")
			}
			if err := k.Sign(context.Background(), r, nil); err != nil {
				t.Fatal(err)
			}
			if got := c.check(r); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestKeyClearsTheProvidersOtherPlaces(t *testing.T) {
	// Azure: the gateway's key goes in api-key; a client's Entra ID token
	// in Authorization must not travel beside it.
	k := Key(focusgate.Credential{Kind: focusgate.CredentialHeader, Name: "Api-Key"}, "gw")
	k.clear = []focusgate.Credential{{Kind: focusgate.CredentialBearer, Name: "Authorization"}}
	r := httptest.NewRequest(http.MethodPost, "http://upstream/openai/v1/responses", nil)
	r.Header.Set("Authorization", "Bearer client-token")
	if err := k.Sign(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get("Api-Key"); got != "gw" {
		t.Errorf("api-key %q, want the gateway's", got)
	}
	if got := r.Header.Values("Authorization"); len(got) != 0 {
		t.Errorf("the client's token still travels: %q", got)
	}
}

func TestEmptyKey(t *testing.T) {
	k := Key(focusgate.Credential{Kind: focusgate.CredentialHeader, Name: "Api-Key"}, "")
	if k.Ready(context.Background()) {
		t.Error("a signer without a key is ready")
	}
	r := httptest.NewRequest(http.MethodPost, "http://upstream/", nil)
	r.Header.Set("Api-Key", "client")
	if err := k.Sign(context.Background(), r, nil); !errors.Is(err, focusgate.ErrNoCredentials) {
		t.Errorf("Sign without a key: %v, want ErrNoCredentials", err)
	}
	if got := r.Header.Get("Api-Key"); got != "client" {
		t.Errorf("a failed Sign changed the request: api-key %q", got)
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	k := Key(focusgate.Credential{Kind: focusgate.CredentialHeader, Name: "Api-Key"}, "s3cret")
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, k); strings.Contains(s, "s3cret") {
			t.Errorf("%s prints the key: %s", verb, s)
		}
	}
}
