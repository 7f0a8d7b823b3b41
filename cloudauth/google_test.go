package cloudauth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/focusgate/focusgate"
)

const (
	testScope = "https://www.googleapis.com/auth/cloud-platform"
	testEmail = "gateway@project.iam.gserviceaccount.com"
)

var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// tokenServer is a Google OAuth token endpoint for one service account:
// it grants a token for a JWT-bearer assertion whose RS256 signature the
// account's public key verifies, and refuses anything else.
type tokenServer struct {
	url    string
	public *rsa.PublicKey
	issued atomic.Int32
	// expiresIn is the lifetime of each token issued, in seconds; the last
	// repeats.
	expiresIn []int
}

func newTokenServer(t *testing.T, public *rsa.PublicKey, expiresIn ...int) *tokenServer {
	if len(expiresIn) == 0 {
		expiresIn = []int{3600}
	}
	ts := &tokenServer{public: public, expiresIn: expiresIn}
	srv := httptest.NewServer(ts)
	t.Cleanup(srv.Close)
	ts.url = srv.URL + "/token"
	return ts
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	if r.Method != http.MethodPost || r.URL.Path != "/token" || r.ParseForm() != nil {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	if err := s.verify(r.PostForm.Get("assertion")); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": err.Error()})
		return
	}
	n := int(s.issued.Add(1))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"access_token": fmt.Sprintf("ya29.test-%d", n),
		"token_type":   "Bearer",
		"expires_in":   s.expiresIn[min(n, len(s.expiresIn))-1],
	})
}

// verify checks a JWT-bearer assertion: its RS256 signature, its issuer,
// audience and scope.
func (s *tokenServer) verify(assertion string) error {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return errors.New("not a JWT")
	}
	var header struct{ Alg, Typ string }
	var claims struct {
		Iss, Aud, Scope string
		Exp, Iat        int64
	}
	for i, v := range []any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, v); err != nil {
			return err
		}
	}
	if header.Alg != "RS256" {
		return fmt.Errorf("alg %q", header.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(s.public, crypto.SHA256, digest[:], sig); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	if claims.Iss != testEmail || claims.Aud != s.url || claims.Scope != testScope || claims.Exp <= claims.Iat {
		return fmt.Errorf("claims %+v", claims)
	}
	return nil
}

// serviceAccountFile writes a service account key whose token_uri is the
// test's endpoint.
func serviceAccountFile(t *testing.T, key *rsa.PrivateKey, tokenURI string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "project",
		"private_key_id": "key-1",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   testEmail,
		"client_id":      "1234",
		"token_uri":      tokenURI,
	})
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// countingTransport counts the calls made through a client.
type countingTransport struct{ calls atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func newTestGoogle(t *testing.T, ts *tokenServer) (*Google, *countingTransport) {
	path := serviceAccountFile(t, testKey(), ts.url)
	ct := &countingTransport{}
	g := NewGoogle(testScope, Options{
		Getenv:     env{credentialsEnv: path}.getenv,
		HTTPClient: &http.Client{Transport: ct},
		Logger:     slog.New(slog.DiscardHandler),
	})
	return g, ct
}

func vertexRequest() *http.Request {
	r := httptest.NewRequest(http.MethodPost,
		"http://upstream/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude:rawPredict?key=client-key&alt=sse", nil)
	r.Header.Set("Authorization", "Bearer client-token")
	r.Header.Set("X-Goog-Api-Key", "client-key")
	return r
}

func TestGoogleServiceAccountToken(t *testing.T) {
	ts := newTokenServer(t, &testKey().PublicKey)
	g, ct := newTestGoogle(t, ts)
	ctx := context.Background()
	if !g.Ready(ctx) {
		_, err := g.tokens.get(ctx)
		t.Fatalf("not ready: %v", err)
	}
	for range 3 {
		r := vertexRequest()
		if err := g.Sign(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer ya29.test-1" {
			t.Errorf("authorization %q, want the issued token only", got)
		}
		if r.Header.Get("X-Goog-Api-Key") != "" || r.URL.RawQuery != "alt=sse" {
			t.Errorf("the client's API key travels: %q, query %q", r.Header.Get("X-Goog-Api-Key"), r.URL.RawQuery)
		}
	}
	if n := ts.issued.Load(); n != 1 {
		t.Errorf("%d tokens issued, want 1 reused", n)
	}
	if ct.calls.Load() == 0 {
		t.Error("the token was not fetched with the given client")
	}
}

func TestGoogleRenewsATokenNearExpiry(t *testing.T) {
	// The first token expires in a second, within the renewal margin: the
	// next Sign fetches a new one, which is then reused.
	ts := newTokenServer(t, &testKey().PublicKey, 1, 3600)
	g, _ := newTestGoogle(t, ts)
	ctx := context.Background()
	if !g.Ready(ctx) {
		t.Fatal("not ready")
	}
	for range 2 {
		r := vertexRequest()
		if err := g.Sign(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer ya29.test-2" {
			t.Errorf("authorization %q, want the renewed token", got)
		}
	}
	if n := ts.issued.Load(); n != 2 {
		t.Errorf("%d tokens issued, want 2", n)
	}
}

func TestGoogleMissingCredentialsFile(t *testing.T) {
	g := NewGoogle(testScope, Options{
		Getenv: env{credentialsEnv: filepath.Join(t.TempDir(), "absent.json")}.getenv,
		Logger: slog.New(slog.DiscardHandler),
	})
	ctx := context.Background()
	if g.Ready(ctx) {
		t.Fatal("ready without a credentials file")
	}
	r := vertexRequest()
	err := g.Sign(ctx, r, nil)
	if !errors.Is(err, focusgate.ErrNoCredentials) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Sign: %v, want ErrNoCredentials and the missing file", err)
	}
	if r.Header.Get("Authorization") != "Bearer client-token" {
		t.Error("a Sign that failed changed the request")
	}
}

func TestGoogleRefusedCredentials(t *testing.T) {
	// The endpoint knows another key: the assertion is refused, and
	// credentials that give no token are no credentials.
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTokenServer(t, &other.PublicKey)
	g, _ := newTestGoogle(t, ts)
	if g.Ready(context.Background()) {
		t.Fatal("ready with a refused key")
	}
	_, err = g.tokens.get(context.Background())
	if !errors.Is(err, focusgate.ErrNoCredentials) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("refused: %v", err)
	}
}

func TestGoogleUnsupportedCredentialsType(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, []byte(`{"type":"gdch_service_account"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := NewGoogle(testScope, Options{Getenv: env{credentialsEnv: path}.getenv, Logger: slog.New(slog.DiscardHandler)})
	if g.Ready(context.Background()) {
		t.Fatal("ready with an unsupported credentials file")
	}
}

func TestTokenClient(t *testing.T) {
	if c := tokenClient(nil); c.Timeout != fetchTimeout {
		t.Errorf("default client timeout %v", c.Timeout)
	}
	given := &http.Client{}
	if c := tokenClient(given); c.Timeout != fetchTimeout || given.Timeout != 0 {
		t.Errorf("a client without a timeout: %v (given changed to %v)", c.Timeout, given.Timeout)
	}
	if c := tokenClient(&http.Client{Timeout: 3}); c.Timeout != 3 {
		t.Errorf("a client's own timeout was replaced: %v", c.Timeout)
	}
	if _, ok := tokenClient(nil).Transport.(cappedTransport); !ok {
		t.Error("answers are not capped")
	}
}
