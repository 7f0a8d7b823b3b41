package prune

import (
	"context"
	"net/http"

	"github.com/focusgate/focusgate"
)

// staticKey is a key of the gateway's for a retriever, as cloudauth.Key
// signs with one.
type staticKey struct {
	place focusgate.Credential
	key   string
}

func (k staticKey) Ready(context.Context) bool { return k.key != "" }

func (k staticKey) Sign(_ context.Context, r *http.Request, _ []byte) error {
	k.place.Set(r, k.key)
	return nil
}

var authorization = focusgate.Credential{Kind: focusgate.CredentialBearer, Name: "Authorization"}

// bearer is a gateway key sent as a bearer token.
func bearer(key string) focusgate.Signer { return staticKey{authorization, key} }

// clientBearer is a client's own bearer token.
func clientBearer(key string) focusgate.ClientCredential {
	return focusgate.ClientCredential{Place: authorization, Value: key}
}

func newRetriever(api focusgate.API, cfg RetrieverConfig) Retriever {
	cfg.Speaks = api
	r, err := NewRetriever(cfg)
	if err != nil {
		panic(err)
	}
	return r
}

func chatRetriever(cfg RetrieverConfig) Retriever { return newRetriever(focusgate.APIChat, cfg) }

func messagesRetriever(cfg RetrieverConfig) Retriever {
	return newRetriever(focusgate.APIMessages, cfg)
}

func geminiRetriever(cfg RetrieverConfig) Retriever { return newRetriever(focusgate.APIGemini, cfg) }
