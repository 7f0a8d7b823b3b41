package cloudauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/focusgate/focusgate"
)

// env is an injected environment.
type env map[string]string

func (e env) getenv(name string) string { return e[name] }

// hermeticAWS returns an environment whose AWS configuration is two empty
// files in a temporary folder, with the EC2 metadata service off, so that
// nothing of the machine's own AWS set-up is read and nothing is probed.
func hermeticAWS(t *testing.T, extra env) env {
	t.Helper()
	dir := t.TempDir()
	e := env{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	}
	for _, f := range []string{e["AWS_CONFIG_FILE"], e["AWS_SHARED_CREDENTIALS_FILE"]} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

var testCreds = aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret/test", SessionToken: "session-token"}

func credsEnv(t *testing.T, region string) env {
	return hermeticAWS(t, env{
		"AWS_ACCESS_KEY_ID":     testCreds.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY": testCreds.SecretAccessKey,
		"AWS_SESSION_TOKEN":     testCreds.SessionToken,
		"AWS_REGION":            region,
	})
}

// awsServer verifies SigV4 signatures as AWS does: it recomputes the
// signature with the SDK's signer from the request it received, over the
// headers named in SignedHeaders only, and refuses a mismatch with 403.
type awsServer struct {
	creds   aws.Credentials
	region  string
	service string
	seen    chan *http.Request // each verified request
}

func newAWSServer(t *testing.T, creds aws.Credentials, region string) (*httptest.Server, *awsServer) {
	v := &awsServer{creds: creds, region: region, service: "bedrock", seen: make(chan *http.Request, 16)}
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	return srv, v
}

func (v *awsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err == nil {
		err = v.verify(r, body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	v.seen <- r
	io.WriteString(w, "ok")
}

func (v *awsServer) verify(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("not a SigV4 authorization: %q", auth)
	}
	fields := map[string]string{}
	for f := range strings.SplitSeq(rest, ", ") {
		k, val, _ := strings.Cut(f, "=")
		fields[k] = val
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return fmt.Errorf("credential scope %q", fields["Credential"])
	}
	if scope[0] != v.creds.AccessKeyID || scope[2] != v.region || scope[3] != v.service {
		return fmt.Errorf("scope %v, want %s/%s/%s", scope, v.creds.AccessKeyID, v.region, v.service)
	}
	t, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("x-amz-date: %w", err)
	}
	u, err := url.Parse("http://" + r.Host + r.RequestURI)
	if err != nil {
		return err
	}
	req := &http.Request{Method: r.Method, URL: u, Host: r.Host, Header: http.Header{}}
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		switch h {
		case "host":
		case "content-length":
			req.ContentLength = r.ContentLength
		default:
			req.Header[textproto.CanonicalMIMEHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), v.creds, req, hex.EncodeToString(sum[:]), scope[3], scope[2], t); err != nil {
		return err
	}
	if got := req.Header.Get("Authorization"); got != auth {
		return fmt.Errorf("signature mismatch:\n got %s\nwant %s", auth, got)
	}
	return nil
}

func signedHeaders(r *http.Request) []string {
	_, after, _ := strings.Cut(r.Header.Get("Authorization"), "SignedHeaders=")
	list, _, _ := strings.Cut(after, ",")
	return strings.Split(list, ";")
}

const invokeBody = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`

// bedrockRequest is a request as a client signed it for the gateway.
func bedrockRequest(t *testing.T, base, body string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, base+"/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	r.Header.Set("X-Amzn-Bedrock-Trace", "ENABLED")
	r.Header.Set("Anthropic-Version", "2023-06-01")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=CLIENT/20200101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=00")
	r.Header.Set("X-Amz-Date", "20200101T000000Z")
	r.Header.Set("X-Amz-Security-Token", "client-token")
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	return r
}

func send(t *testing.T, c *http.Client, r *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

func TestSigV4SignsWhatAWSVerifies(t *testing.T) {
	srv, v := newAWSServer(t, testCreds, "us-east-1")
	s := NewSigV4("bedrock", Options{Getenv: credsEnv(t, "us-east-1").getenv, Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	if !s.Ready(ctx) {
		t.Fatal("credentials from the injected environment were not found")
	}

	r := bedrockRequest(t, srv.URL, invokeBody)
	r.Header.Set("Connection", "X-Amzn-Hop")
	r.Header.Set("X-Amzn-Hop", "dropped on the way")
	if err := s.Sign(ctx, r, []byte(invokeBody)); err != nil {
		t.Fatal(err)
	}
	if code, msg := send(t, srv.Client(), r); code != http.StatusOK {
		t.Fatalf("%d %s", code, msg)
	}
	got := <-v.seen
	if tok := got.Header.Values("X-Amz-Security-Token"); !slices.Equal(tok, []string{testCreds.SessionToken}) {
		t.Errorf("security token %q, want the gateway's only", tok)
	}
	if got.Header.Get("X-Amz-Content-Sha256") != "" {
		t.Error("the client's x-amz-content-sha256 travels")
	}
	signed := signedHeaders(got)
	for _, h := range []string{"host", "content-type", "content-length", "accept", "x-amz-date", "x-amz-security-token", "x-amzn-bedrock-trace"} {
		if !slices.Contains(signed, h) {
			t.Errorf("%s is not signed: %v", h, signed)
		}
	}
	// The transport added these after signing; they are sent, never signed.
	if got.Header.Get("Accept-Encoding") == "" || got.Header.Get("User-Agent") == "" {
		t.Error("the test no longer sees the transport's own headers")
	}
	for _, h := range []string{"accept-encoding", "user-agent", "anthropic-version", "connection", "x-amzn-hop"} {
		if slices.Contains(signed, h) {
			t.Errorf("%s is signed: %v", h, signed)
		}
	}
}

func TestSigV4RefusesAChangedBody(t *testing.T) {
	srv, _ := newAWSServer(t, testCreds, "us-east-1")
	s := NewSigV4("bedrock", Options{Getenv: credsEnv(t, "us-east-1").getenv, Logger: slog.New(slog.DiscardHandler)})
	r := bedrockRequest(t, srv.URL, invokeBody)
	if err := s.Sign(context.Background(), r, []byte(invokeBody)); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(invokeBody, `"hi"`, `"ho"`, 1)
	r.Body = io.NopCloser(strings.NewReader(changed))
	if code, _ := send(t, srv.Client(), r); code != http.StatusForbidden {
		t.Fatalf("a changed body got %d, want 403", code)
	}
}

func TestSigV4RegionFromTheEndpointsHost(t *testing.T) {
	// FOCUSGATE_BEDROCK_URL names eu-west-1 while AWS_REGION says
	// us-east-1: AWS accepts only a signature scoped to the endpoint's
	// region.
	srv, v := newAWSServer(t, testCreds, "eu-west-1")
	s := NewSigV4("bedrock", Options{Getenv: credsEnv(t, "us-east-1").getenv, Logger: slog.New(slog.DiscardHandler)})
	r := bedrockRequest(t, srv.URL, invokeBody)
	r.Host = "bedrock-runtime.eu-west-1.amazonaws.com"
	if err := s.Sign(context.Background(), r, []byte(invokeBody)); err != nil {
		t.Fatal(err)
	}
	if code, msg := send(t, srv.Client(), r); code != http.StatusOK {
		t.Fatalf("%d %s", code, msg)
	}
	<-v.seen
}

func TestSigV4ProfileFromTheInjectedEnvironment(t *testing.T) {
	team := aws.Credentials{AccessKeyID: "AKIDTEAM", SecretAccessKey: "team-secret"}
	e := hermeticAWS(t, env{"AWS_PROFILE": "team"})
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(e["AWS_SHARED_CREDENTIALS_FILE"], "[team]\naws_access_key_id = AKIDTEAM\naws_secret_access_key = team-secret\n")
	write(e["AWS_CONFIG_FILE"], "[profile team]\nregion = eu-central-1\n")

	srv, v := newAWSServer(t, team, "eu-central-1")
	s := NewSigV4("bedrock", Options{Getenv: e.getenv, Logger: slog.New(slog.DiscardHandler)})
	r := bedrockRequest(t, srv.URL, invokeBody)
	if err := s.Sign(context.Background(), r, []byte(invokeBody)); err != nil {
		t.Fatal(err)
	}
	if code, msg := send(t, srv.Client(), r); code != http.StatusOK {
		t.Fatalf("%d %s", code, msg)
	}
	if got := <-v.seen; got.Header.Get("X-Amz-Security-Token") != "" {
		t.Error("the client's security token travels beside long-term keys")
	}
}

// clearAWSEnv blanks the process's AWS variables for one test, so that
// only the injected environment can supply credentials.
func clearAWSEnv(t *testing.T) {
	for _, name := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
	} {
		t.Setenv(name, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func TestSigV4WithoutCredentials(t *testing.T) {
	clearAWSEnv(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	s := NewSigV4("bedrock", Options{Getenv: hermeticAWS(t, nil).getenv, Logger: logger})
	ctx := context.Background()
	if s.Ready(ctx) {
		t.Fatal("ready without credentials")
	}
	r := bedrockRequest(t, "http://upstream", invokeBody)
	err := s.Sign(ctx, r, []byte(invokeBody))
	if !errors.Is(err, focusgate.ErrNoCredentials) {
		t.Fatalf("Sign without credentials: %v, want ErrNoCredentials", err)
	}
	if r.Header.Get("X-Amz-Security-Token") != "client-token" {
		t.Error("a Sign that failed changed the request")
	}
	mu.Lock()
	defer mu.Unlock()
	t.Log(logs.String())
	if n := strings.Count(logs.String(), "no AWS credentials"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestSigV4WithoutRegion(t *testing.T) {
	clearAWSEnv(t)
	e := credsEnv(t, "")
	s := NewSigV4("bedrock", Options{Getenv: e.getenv, Logger: slog.New(slog.DiscardHandler)})
	r := bedrockRequest(t, "http://proxy.internal", invokeBody)
	if err := s.Sign(context.Background(), r, []byte(invokeBody)); !errors.Is(err, ErrNoRegion) {
		t.Fatalf("Sign for no region: %v, want ErrNoRegion", err)
	}
}

func TestSigV4LooksOnceAndKeepsANegativeAnswer(t *testing.T) {
	var looks atomic.Int32
	s := NewSigV4("bedrock", Options{Logger: slog.New(slog.DiscardHandler)})
	s.load = func(context.Context) (aws.Config, error) {
		looks.Add(1)
		return aws.Config{}, errors.New("no configuration")
	}
	clk := newClock()
	s.creds.now = clk.Now
	ctx := context.Background()
	for range 10 {
		if s.Ready(ctx) {
			t.Fatal("ready without credentials")
		}
	}
	if n := looks.Load(); n != 1 {
		t.Fatalf("%d looks, want 1", n)
	}
	clk.Advance(DefaultRetryAfter)
	s.Ready(ctx)
	wait(s.creds)
	if n := looks.Load(); n != 2 {
		t.Fatalf("%d looks after the retry period, want 2", n)
	}
}

func TestSigV4ConcurrentReadyLooksOnce(t *testing.T) {
	const callers = 8
	var looks atomic.Int32
	release := make(chan struct{})
	s := NewSigV4("bedrock", Options{Getenv: credsEnv(t, "us-east-1").getenv, Logger: slog.New(slog.DiscardHandler)})
	load := s.load
	s.load = func(ctx context.Context) (aws.Config, error) {
		looks.Add(1)
		<-release
		return load(ctx)
	}
	waiting := make(chan struct{}, callers)
	s.creds.onWait = func() { waiting <- struct{}{} }
	ready := make(chan bool, callers)
	for range callers {
		go func() { ready <- s.Ready(context.Background()) }()
	}
	for range callers {
		<-waiting
	}
	close(release)
	for range callers {
		if !<-ready {
			t.Error("a caller was told no")
		}
	}
	if n := looks.Load(); n != 1 {
		t.Errorf("%d looks for %d concurrent callers, want 1", n, callers)
	}
}

func TestSigV4RemovesAPresignedURLsSignature(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "http://h/model/m/invoke?X-Amz-Algorithm=AWS4-HMAC-SHA256&keep=1&X-Amz-Signature=ab&x-amz-credential=c", nil)
	removeAWSSigning(r)
	if r.URL.RawQuery != "keep=1" {
		t.Errorf("query %q, want keep=1", r.URL.RawQuery)
	}
}

func TestHostRegion(t *testing.T) {
	for host, want := range map[string]string{
		"bedrock-runtime.us-east-1.amazonaws.com":                     "us-east-1",
		"bedrock-runtime.us-east-1.amazonaws.com:443":                 "us-east-1",
		"bedrock-runtime-fips.us-gov-west-1.amazonaws.com":            "us-gov-west-1",
		"bedrock-runtime.cn-north-1.amazonaws.com.cn":                 "cn-north-1",
		"vpce-0a1b-c2d3.bedrock-runtime.eu-west-3.vpce.amazonaws.com": "eu-west-3",
		"bedrock-runtime.ap-southeast-2.api.aws":                      "ap-southeast-2",
		"BEDROCK-RUNTIME.EU-CENTRAL-1.AMAZONAWS.COM.":                 "eu-central-1",
		"bedrock-runtime.us-east-1.amazonaws.com.evil.example":        "",
		"bedrock-runtime.example.com":                                 "",
		"127.0.0.1:8080":                                              "",
		"s3.us-east-1.amazonaws.com":                                  "",
		"bedrock-runtime.local.amazonaws.com":                         "",
		"gateway.internal":                                            "",
	} {
		if got := hostRegion(host); got != want {
			t.Errorf("hostRegion(%q) = %q, want %q", host, got, want)
		}
	}
}

// TestSigV4ContainerCredentials reads credentials from a container
// credentials endpoint (ECS, EKS Pod Identity), on loopback, and refuses an
// answer larger than any real one.
func TestSigV4ContainerCredentials(t *testing.T) {
	for _, c := range []struct {
		name    string
		padding int
		ready   bool
	}{{"small", 0, true}, {"over the cap", maxResponse, false}} {
		t.Run(c.name, func(t *testing.T) {
			clearAWSEnv(t)
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if r.Header.Get("Authorization") != "pod-identity-token" {
					http.Error(w, "no token", http.StatusUnauthorized)
					return
				}
				fmt.Fprintf(w, `{"AccessKeyId":"AKIDPOD","SecretAccessKey":"pod-secret","Token":"pod-session","Expiration":%q,"Padding":%q}`,
					time.Now().Add(time.Hour).UTC().Format(time.RFC3339), strings.Repeat("x", c.padding))
			}))
			defer srv.Close()
			t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/v1/credentials")
			t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "pod-identity-token")

			s := NewSigV4("bedrock", Options{Getenv: hermeticAWS(t, env{"AWS_REGION": "us-west-2"}).getenv, Logger: slog.New(slog.DiscardHandler)})
			if got := s.Ready(context.Background()); got != c.ready {
				_, err := s.creds.get(context.Background())
				t.Fatalf("ready %v, want %v (%v)", got, c.ready, err)
			}
			if calls.Load() == 0 {
				t.Fatal("the endpoint was never asked")
			}
			if !c.ready {
				_, err := s.creds.get(context.Background())
				if !errors.Is(err, ErrTooLarge) {
					t.Errorf("over the cap: %v, want ErrTooLarge", err)
				}
				return
			}
			a, v := newAWSServer(t, aws.Credentials{AccessKeyID: "AKIDPOD", SecretAccessKey: "pod-secret", SessionToken: "pod-session"}, "us-west-2")
			r := bedrockRequest(t, a.URL, invokeBody)
			if err := s.Sign(context.Background(), r, []byte(invokeBody)); err != nil {
				t.Fatal(err)
			}
			if code, msg := send(t, a.Client(), r); code != http.StatusOK {
				t.Fatalf("%d %s", code, msg)
			}
			<-v.seen
		})
	}
}
