// Package cloudauth holds the gateway's own credentials for its upstreams,
// as focusgate.Signers: a static key in the provider's credential place
// (Key), an AWS Signature Version 4 over the final body with credentials
// from the AWS SDK's default chain (SigV4), and an OAuth access token from
// Google's application default credentials (Google). For builds the one a
// provider's declaration calls for.
//
// A signer is applied to a request once its headers and body are final, so
// that what is signed is what is sent, and it replaces whatever the client
// put in the provider's credential places: the client's own credential
// never travels beside the gateway's.
//
// The cloud signers look for their credentials on first use rather than at
// start-up, so that a gateway that never serves Bedrock or Vertex AI never
// probes a metadata server. That first look is bounded (Options.Timeout) and
// shared by every caller that arrives while it runs; a negative answer is
// kept (Options.RetryAfter) and then looked for again in the background, so
// that a gateway without cloud credentials makes at most one request wait.
// No key, secret or token is ever logged.
package cloudauth

import (
	"log/slog"
	"net/http"
	"os"
	"time"
)

const (
	// DefaultTimeout bounds the first look for cloud credentials: on a
	// laptop the AWS chain ends by asking the EC2 metadata service, which
	// is not there, and a request must not wait long for that answer.
	DefaultTimeout = 5 * time.Second
	// DefaultRetryAfter is how long a gateway that found no cloud
	// credentials keeps that answer before looking again.
	DefaultRetryAfter = time.Minute

	// fetchTimeout bounds every call to a credential or token endpoint
	// after the first look (refreshes, role assumptions, token renewals).
	fetchTimeout = 10 * time.Second
	// maxResponse caps what is read of a credential or token endpoint's
	// answer; real ones are a few kilobytes.
	maxResponse = 1 << 20
	// maxCredentialsFile caps what is read of a credentials file.
	maxCredentialsFile = 1 << 20
)

// Options are what the cloud signers take from the gateway's wiring.
type Options struct {
	// Getenv, when set, is the gateway's environment (tests run the
	// gateway in-process with an injected one): the variables the signers
	// read from it win over the process's (see NewSigV4 and NewGoogle).
	// Nil: the SDKs read the process's environment as they always do.
	Getenv func(string) string
	// HTTPClient fetches Google's access tokens. Nil: a client with a
	// 10-second timeout; a client without a timeout is given that one.
	// Whatever the client, what is read of an answer is capped.
	HTTPClient *http.Client
	// Logger says, once, whether credentials were found and where from,
	// never what they are. Nil: slog.Default().
	Logger *slog.Logger
	// Timeout bounds the first look for credentials. Zero: DefaultTimeout.
	Timeout time.Duration
	// RetryAfter is how long a negative answer is kept. Zero:
	// DefaultRetryAfter.
	RetryAfter time.Duration
}

func (o Options) getenv() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return os.Getenv
}

func (o Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o Options) retryAfter() time.Duration {
	if o.RetryAfter > 0 {
		return o.RetryAfter
	}
	return DefaultRetryAfter
}
