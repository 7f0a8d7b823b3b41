package cloudauth

import (
	"github.com/focusgate/focusgate"
)

// For returns the signer of the gateway's own credential for provider p:
//
//   - with key set (p's Key setting), a Key in p.Credentials[0] (a Bedrock
//     API key as a bearer token, Azure's in api-key, ...), which also
//     empties p's other credential places;
//   - else, for a cloud provider, SigV4 for p.CloudScope (Bedrock) or a
//     Google token for it (Vertex AI), which find their credentials on
//     first use;
//   - else nil: the gateway holds no credential for p, and the client's
//     own travels.
//
// The signer's logs name p.
func For(p *focusgate.Provider, key string, opts Options) focusgate.Signer {
	opts.Logger = opts.logger().With("provider", p.Name)
	if key != "" {
		if len(p.Credentials) == 0 {
			return nil
		}
		k := Key(p.Credentials[0], key)
		k.clear = p.Credentials[1:]
		if p.Cloud == focusgate.CloudSigV4 {
			// A Bedrock client that signed for the gateway sends its
			// session token beside the signature: neither goes upstream
			// with the gateway's key.
			k.scrub = removeAWSSigning
		}
		return k
	}
	switch p.Cloud {
	case focusgate.CloudSigV4:
		s := NewSigV4(p.CloudScope, opts)
		s.clear = p.Credentials
		return s
	case focusgate.CloudGoogle:
		g := NewGoogle(p.CloudScope, opts)
		g.clear = p.Credentials
		return g
	}
	return nil
}
