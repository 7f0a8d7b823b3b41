package cloudauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/focusgate/focusgate"
)

var _ focusgate.Signer = (*SigV4)(nil)

// ErrNoRegion says that a request cannot be signed for want of an AWS
// region: neither the AWS configuration nor the upstream's host names one.
var ErrNoRegion = errors.New("cloudauth: no AWS region: set AWS_REGION where the gateway runs, or send to a regional endpoint")

// refreshEarly is how long before they expire temporary AWS credentials
// are renewed, so that a request signed now still finds them valid when it
// arrives, and a renewal that fails leaves time to try again.
const refreshEarly = 5 * time.Minute

// SigV4 signs requests with AWS Signature Version 4, with credentials from
// the AWS SDK for Go v2's default chain: the environment, the shared config
// and credentials files and their profiles (SSO, assumed roles, credential
// processes), web identity (EKS IRSA), EKS Pod Identity and ECS container
// credentials, and EC2 instance roles. The SDK's credentials cache renews
// temporary credentials before they expire.
//
// The region is the upstream's when its host is a regional AWS endpoint
// (bedrock-runtime.eu-west-1.amazonaws.com): AWS refuses a signature scoped
// to any other region, and FOCUSGATE_BEDROCK_URL may name another region
// than AWS_REGION. Any other host (a proxy, a private name) is signed for
// the configuration's region (AWS_REGION, AWS_DEFAULT_REGION, the
// profile's).
type SigV4 struct {
	service string
	log     *slog.Logger
	signer  *v4.Signer
	now     func() time.Time
	// load reads the AWS configuration; tests replace it.
	load  func(ctx context.Context) (aws.Config, error)
	creds *lazy[awsCreds]
	// clear are the provider's credential places, emptied before signing.
	clear []focusgate.Credential
}

// awsCreds is what the first look found: the cached provider, which renews
// the credentials, and the configuration's region.
type awsCreds struct {
	provider aws.CredentialsProvider
	region   string
	source   string
}

// NewSigV4 returns a signer for service ("bedrock", a provider's
// CloudScope). It looks for credentials on first use.
//
// When opts.Getenv is set, what it yields of AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), AWS_REGION or
// AWS_DEFAULT_REGION, AWS_PROFILE or AWS_DEFAULT_PROFILE, AWS_CONFIG_FILE,
// AWS_SHARED_CREDENTIALS_FILE and AWS_EC2_METADATA_DISABLED is given to the
// SDK as options, which win over the process's environment; what it does
// not yield, the SDK reads from the process's environment as usual. Keys
// win over a profile, as they do in the SDK's own reading of the
// environment.
func NewSigV4(service string, opts Options) *SigV4 {
	s := &SigV4{
		service: service,
		log:     opts.logger(),
		signer:  v4.NewSigner(),
		now:     time.Now,
	}
	env := envOptions(opts.Getenv)
	s.load = func(ctx context.Context) (aws.Config, error) {
		return config.LoadDefaultConfig(ctx, append(baseOptions(), env...)...)
	}
	s.creds = newLazy(s.resolve, s.report, opts)
	return s
}

// baseOptions bound every call the credential chain makes: a timeout on
// each (the SDK's own client, which the EC2 metadata client still tunes to
// fail fast), a cap on what is read of each answer, and an early renewal.
func baseOptions() []func(*config.LoadOptions) error {
	return []func(*config.LoadOptions) error{
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(fetchTimeout)),
		config.WithAPIOptions([]func(*middleware.Stack) error{capResponses}),
		config.WithCredentialsCacheOptions(func(o *aws.CredentialsCacheOptions) {
			o.ExpiryWindow = refreshEarly
		}),
	}
}

// envOptions turns the injected environment's AWS variables into options
// of LoadDefaultConfig. A nil getenv gives none.
func envOptions(getenv func(string) string) []func(*config.LoadOptions) error {
	if getenv == nil {
		return nil
	}
	var o []func(*config.LoadOptions) error
	if id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		o = append(o, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN"))))
	}
	if region := firstSet(getenv, "AWS_REGION", "AWS_DEFAULT_REGION"); region != "" {
		o = append(o, config.WithRegion(region))
	}
	if profile := firstSet(getenv, "AWS_PROFILE", "AWS_DEFAULT_PROFILE"); profile != "" {
		o = append(o, config.WithSharedConfigProfile(profile))
	}
	if f := getenv("AWS_CONFIG_FILE"); f != "" {
		o = append(o, config.WithSharedConfigFiles([]string{f}))
	}
	if f := getenv("AWS_SHARED_CREDENTIALS_FILE"); f != "" {
		o = append(o, config.WithSharedCredentialsFiles([]string{f}))
	}
	if strings.EqualFold(getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		o = append(o, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	return o
}

func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// capResponses caps what the SDK's credential clients (STS, SSO, the EC2
// and container metadata endpoints) read of an answer. It sits innermost
// in the deserialize step, so that it wraps the body before any
// deserializer reads it.
func capResponses(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("FocusgateCapResponse",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp.Body != nil {
				resp.Body = capBody(resp.Body, maxResponse)
			}
			return out, md, err
		}), middleware.After)
}

// resolve is the first look: the configuration, then credentials from it.
func (s *SigV4) resolve(ctx context.Context) (awsCreds, error) {
	cfg, err := s.load(ctx)
	if err != nil {
		return awsCreds{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Credentials == nil {
		return awsCreds{}, errors.New("the AWS configuration provides no credentials")
	}
	c, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return awsCreds{}, fmt.Errorf("retrieving AWS credentials: %w", err)
	}
	if !c.HasKeys() {
		return awsCreds{}, errors.New("the AWS credentials found have no keys")
	}
	return awsCreds{provider: cfg.Credentials, region: cfg.Region, source: c.Source}, nil
}

func (s *SigV4) report(c awsCreds, err error) {
	if err != nil {
		s.log.Info("cloudauth: no AWS credentials; requests carry the client's own", "service", s.service, "reason", err.Error())
		return
	}
	s.log.Info("cloudauth: AWS credentials found", "service", s.service, "source", c.source, "region", c.region)
}

// Ready says whether AWS credentials were found, looking for them on first
// use.
func (s *SigV4) Ready(ctx context.Context) bool {
	_, err := s.creds.get(ctx)
	return err == nil
}

// Sign removes the client's signature (Authorization and every X-Amz-*
// signing header or query parameter) and signs r over the SHA-256 of body
// and the headers that reach AWS as they are now (see signable).
func (s *SigV4) Sign(ctx context.Context, r *http.Request, body []byte) error {
	c, err := s.creds.get(ctx)
	if err != nil {
		return fmt.Errorf("cloudauth: sigv4: %w", err)
	}
	if r.ContentLength > 0 && r.ContentLength != int64(len(body)) {
		return fmt.Errorf("cloudauth: sigv4: the request sends %d bytes, the body to sign has %d", r.ContentLength, len(body))
	}
	region := hostRegion(requestHost(r))
	if region == "" {
		region = c.region
	}
	if region == "" {
		return ErrNoRegion
	}
	rctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	cred, err := c.provider.Retrieve(rctx)
	cancel()
	if err != nil {
		return fmt.Errorf("cloudauth: sigv4: renewing AWS credentials: %w: %w", focusgate.ErrNoCredentials, err)
	}

	for _, p := range s.clear {
		p.Remove(r)
	}
	removeAWSSigning(r)
	sr := signingRequest(r)
	sum := sha256.Sum256(body)
	if err := s.signer.SignHTTP(ctx, cred, sr, hex.EncodeToString(sum[:]), s.service, region, s.now()); err != nil {
		return fmt.Errorf("cloudauth: sigv4: %w", err)
	}
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := sr.Header.Values(h); len(v) > 0 {
			r.Header[h] = v
		}
	}
	// The signer signs the query in its canonical form, and the host
	// without a default port: send them so, so that AWS reads what was
	// signed.
	r.URL.RawQuery = sr.URL.RawQuery
	if sr.Host != "" {
		r.Host = sr.Host
	}
	return nil
}

// signingRequest is a copy of r carrying only the headers to sign.
func signingRequest(r *http.Request) *http.Request {
	u := *r.URL
	sr := &http.Request{
		Method:        r.Method,
		URL:           &u,
		Host:          r.Host,
		Header:        make(http.Header),
		ContentLength: r.ContentLength,
	}
	hop := connectionTokens(r.Header)
	for name, vs := range r.Header {
		c := textproto.CanonicalMIMEHeaderKey(name)
		if signable(c) && !hop[c] {
			sr.Header[c] = append(sr.Header[c], vs...)
		}
	}
	return sr
}

// signable says whether a header is signed. AWS requires only the host and
// the x-amz-* headers to be; what else is signed must reach AWS exactly as
// it is at signing, or the signature fails. So only the request's meaning
// is signed: its content type and encoding, what it accepts back, and the
// X-Amz-* and X-Amzn-* headers (Bedrock's guardrail and trace options).
// Hop-by-hop headers, Accept-Encoding and User-Agent (which Go's transport
// adds), X-Forwarded-* and Via (which proxies add) and X-Amzn-Trace-Id
// (which AWS's load balancers add) are not. The content length is signed
// from the request's ContentLength, which the transport sends.
func signable(canonical string) bool {
	switch canonical {
	case "Content-Type", "Content-Encoding", "Content-Md5", "Accept":
		return true
	case "X-Amzn-Trace-Id":
		return false
	}
	return strings.HasPrefix(canonical, "X-Amz-") || strings.HasPrefix(canonical, "X-Amzn-")
}

// connectionTokens are the headers r's Connection header names, which are
// hop-by-hop and never signed.
func connectionTokens(h http.Header) map[string]bool {
	var m map[string]bool
	for _, v := range h.Values("Connection") {
		for tok := range strings.SplitSeq(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				if m == nil {
					m = make(map[string]bool)
				}
				m[textproto.CanonicalMIMEHeaderKey(tok)] = true
			}
		}
	}
	return m
}

// awsSigning are the headers and query parameters of a SigV4 (or SigV4a)
// signature, which a client that signed for the gateway may have sent.
var awsSigning = map[string]bool{
	"Authorization":        true,
	"X-Amz-Date":           true,
	"X-Amz-Security-Token": true,
	"X-Amz-Content-Sha256": true,
	"X-Amz-Algorithm":      true,
	"X-Amz-Credential":     true,
	"X-Amz-Signedheaders":  true,
	"X-Amz-Signature":      true,
	"X-Amz-Expires":        true,
	"X-Amz-Region-Set":     true,
}

// removeAWSSigning removes a client's SigV4 signature from r: its headers,
// and the query parameters of a presigned URL.
func removeAWSSigning(r *http.Request) {
	for name := range r.Header {
		if awsSigning[textproto.CanonicalMIMEHeaderKey(name)] {
			delete(r.Header, name)
		}
	}
	if r.URL == nil || !strings.Contains(strings.ToLower(r.URL.RawQuery), "x-amz-") {
		return
	}
	var kept []string
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		name, _, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err == nil && awsSigning[textproto.CanonicalMIMEHeaderKey(n)] {
			continue
		}
		kept = append(kept, pair)
	}
	r.URL.RawQuery = strings.Join(kept, "&")
}

func requestHost(r *http.Request) string {
	if r.Host != "" {
		return r.Host
	}
	if r.URL != nil {
		return r.URL.Host
	}
	return ""
}

// hostRegion is the region a regional AWS endpoint's host names
// (bedrock-runtime.us-east-1.amazonaws.com, its FIPS, China, dual-stack
// and VPC endpoint forms), or "" for any other host.
func hostRegion(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(host), "."), ".")
	for i := 0; i+2 < len(labels); i++ {
		if !strings.HasPrefix(labels[i], "bedrock") || !isAWSRegion(labels[i+1]) {
			continue
		}
		switch strings.Join(labels[i+2:], ".") {
		case "amazonaws.com", "amazonaws.com.cn", "vpce.amazonaws.com", "api.aws":
			return labels[i+1]
		}
	}
	return ""
}

// isAWSRegion says whether s has the shape of an AWS region's name:
// letters, dash-separated words, a number (us-east-1, us-gov-west-1).
func isAWSRegion(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 3 {
		return false
	}
	for i, p := range parts {
		if p == "" {
			return false
		}
		for _, c := range p {
			digit := c >= '0' && c <= '9'
			letter := c >= 'a' && c <= 'z'
			if (i == len(parts)-1 && !digit) || (i < len(parts)-1 && !letter) {
				return false
			}
		}
	}
	return true
}
