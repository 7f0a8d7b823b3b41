package cloudauth

import (
	"context"
	"fmt"
	"net/http"

	"github.com/focusgate/focusgate"
)

var _ focusgate.Signer = (*KeySigner)(nil)

// KeySigner sends a static key the gateway was given (Bedrock's API key,
// Azure's api-key, ...) in one credential place, in the client's stead.
type KeySigner struct {
	place focusgate.Credential
	key   string
	// clear are the provider's other credential places, emptied so that a
	// client's own credential (an Entra ID token beside Azure's api-key)
	// does not travel upstream beside the gateway's key.
	clear []focusgate.Credential
	// scrub removes what else of the client's credential the request may
	// carry (an AWS client's signing headers beside Bedrock's API key).
	scrub func(*http.Request)
}

// Key returns a signer that puts key in place. It is ready when key is not
// empty.
func Key(place focusgate.Credential, key string) *KeySigner {
	return &KeySigner{place: place, key: key}
}

// Ready says whether the gateway holds a key; it looks for nothing.
func (k *KeySigner) Ready(context.Context) bool { return k.key != "" }

// Sign puts the key in its place on r, replacing what the client sent
// there and in the provider's other credential places.
func (k *KeySigner) Sign(_ context.Context, r *http.Request, _ []byte) error {
	if k.key == "" {
		return fmt.Errorf("cloudauth: key in %s: %w", k.place.Name, focusgate.ErrNoCredentials)
	}
	for _, c := range k.clear {
		c.Remove(r)
	}
	if k.scrub != nil {
		k.scrub(r)
	}
	k.place.Set(r, k.key)
	return nil
}

// String names the key's place, never the key, so that a signer printed by
// mistake reveals nothing.
func (k *KeySigner) String() string { return "key in " + k.place.Name }

// GoString is String, for %#v.
func (k *KeySigner) GoString() string { return k.String() }
