package cloudauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/focusgate/focusgate"
)

var _ focusgate.Signer = (*Google)(nil)

// credentialsEnv names the credentials file of Google's application default
// credentials.
const credentialsEnv = "GOOGLE_APPLICATION_CREDENTIALS"

// Google sends an OAuth 2.0 access token from Google's application default
// credentials: the file GOOGLE_APPLICATION_CREDENTIALS names (a service
// account key, a gcloud user's credentials, a workload identity federation
// configuration, an impersonated service account), else gcloud's own file,
// else the metadata server of the Google Cloud machine the gateway runs on.
// Tokens are kept and renewed shortly before they expire.
type Google struct {
	scope  string
	getenv func(string) string
	client *http.Client
	log    *slog.Logger
	tokens *lazy[googleSource]
	// clear are the provider's credential places, emptied before the
	// token is put in.
	clear []focusgate.Credential
}

// googleSource is what the first look found.
type googleSource struct {
	tokens oauth2.TokenSource
	from   string // where the credentials were found, for the log
}

// NewGoogle returns a signer whose tokens carry scope (a provider's
// CloudScope). It looks for credentials on first use.
//
// GOOGLE_APPLICATION_CREDENTIALS is read through opts.Getenv, so that an
// injected environment names the file; without it, the default search
// (gcloud's file, the metadata server) is the Google library's own, which
// reads the process's environment. Tokens are fetched with
// opts.HTTPClient, under a timeout and a cap on what is read.
func NewGoogle(scope string, opts Options) *Google {
	g := &Google{
		scope:  scope,
		getenv: opts.getenv(),
		client: tokenClient(opts.HTTPClient),
		log:    opts.logger(),
	}
	g.tokens = newLazy(g.resolve, g.report, opts)
	return g
}

// resolve is the first look: the credentials, then a first token, so that
// credentials that cannot give a token (a revoked refresh token, a machine
// without a service account) count as none.
func (g *Google) resolve(ctx context.Context) (googleSource, error) {
	// The token sources keep this context for every later renewal: it
	// carries the gateway's client and no deadline.
	tctx := context.WithValue(context.Background(), oauth2.HTTPClient, g.client)
	var (
		creds *google.Credentials
		from  string
		err   error
	)
	if path := g.getenv(credentialsEnv); path != "" {
		creds, from, err = credentialsFile(tctx, path, g.scope)
	} else {
		from = "application default credentials"
		creds, err = google.FindDefaultCredentials(tctx, g.scope)
		if err == nil && creds.JSON == nil {
			from = "the metadata server"
		}
	}
	if err != nil {
		return googleSource{}, err
	}
	src := googleSource{tokens: oauth2.ReuseTokenSource(nil, creds.TokenSource), from: from}
	if _, err := token(ctx, src.tokens); err != nil {
		return googleSource{}, fmt.Errorf("fetching an access token from %s: %w", from, err)
	}
	return src, nil
}

// credentialsFile reads the credentials file the environment names. Only
// the kinds of credentials application default credentials are made of
// are taken, each read by its own type's parser.
func credentialsFile(ctx context.Context, path, scope string) (*google.Credentials, string, error) {
	data, err := readFile(path, maxCredentialsFile)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", credentialsEnv, err)
	}
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", credentialsEnv, path, err)
	}
	switch t := google.CredentialsType(f.Type); t {
	case google.ServiceAccount, google.AuthorizedUser, google.ExternalAccount,
		google.ExternalAccountAuthorizedUser, google.ImpersonatedServiceAccount:
		creds, err := google.CredentialsFromJSONWithType(ctx, data, t, scope)
		if err != nil {
			return nil, "", fmt.Errorf("%s %s: %w", credentialsEnv, path, err)
		}
		return creds, f.Type + " in " + path, nil
	}
	return nil, "", fmt.Errorf("%s %s: credentials of type %q are not supported", credentialsEnv, path, f.Type)
}

// token returns a token from ts, or the context's error when it ends
// first. oauth2's token sources take no context; the client's timeout ends
// a fetch that outlives the caller.
func token(ctx context.Context, ts oauth2.TokenSource) (*oauth2.Token, error) {
	type answer struct {
		tok *oauth2.Token
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		tok, err := ts.Token()
		answers <- answer{tok, err}
	}()
	select {
	case a := <-answers:
		if a.err == nil && (a.tok == nil || a.tok.AccessToken == "") {
			a.err = errors.New("the token endpoint gave no access token")
		}
		return a.tok, a.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (g *Google) report(src googleSource, err error) {
	if err != nil {
		g.log.Info("cloudauth: no Google credentials; requests carry the client's own", "scope", g.scope, "reason", err.Error())
		return
	}
	g.log.Info("cloudauth: Google credentials found", "scope", g.scope, "source", src.from)
}

// Ready says whether Google credentials were found and gave a token,
// looking for them on first use.
func (g *Google) Ready(ctx context.Context) bool {
	_, err := g.tokens.get(ctx)
	return err == nil
}

// Sign sets "Authorization: Bearer <token>" on r, renewing the token when
// it is about to expire. A client's own credential in the provider's places
// and a Google API key (x-goog-api-key, the key parameter) are removed, so
// that they do not travel beside the gateway's token.
func (g *Google) Sign(ctx context.Context, r *http.Request, _ []byte) error {
	src, err := g.tokens.get(ctx)
	if err != nil {
		return fmt.Errorf("cloudauth: google: %w", err)
	}
	tok, err := token(ctx, src.tokens)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("cloudauth: google: renewing the access token: %w", err)
		}
		return fmt.Errorf("cloudauth: google: renewing the access token: %w: %w", focusgate.ErrNoCredentials, err)
	}
	for _, c := range g.clear {
		c.Remove(r)
	}
	for _, c := range googleKeyPlaces {
		c.Remove(r)
	}
	r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return nil
}

// googleKeyPlaces are where Google's clients put an API key.
var googleKeyPlaces = []focusgate.Credential{
	{Kind: focusgate.CredentialHeader, Name: "X-Goog-Api-Key"},
	{Kind: focusgate.CredentialQuery, Name: "key"},
}
