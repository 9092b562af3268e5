package httpserve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// staticScope is the scope every static token carries. Without a verifier,
// the endpoint requires it, so that WWW-Authenticate names it; a verifier's
// tokens carry the scopes of their own authorization server, which mcpkit
// does not name or require.
const staticScope = "mcp"

// StaticTokens returns a verifier that accepts exactly the given tokens,
// comparing in constant time (over SHA-256 digests, so lengths do not leak).
// An accepted token's UserID is "token:" and the first 16 hex digits of its
// SHA-256: the same token has the same identity on every instance and
// across restarts, whatever its place in the token file, and the identity
// does not reveal the token. Tokens carry the scope "mcp" and no expiry.
func StaticTokens(tokens []string) auth.TokenVerifier {
	sums := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		sums[i] = sha256.Sum256([]byte(t))
	}
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		got := sha256.Sum256([]byte(token))
		match := 0
		for i := range sums {
			match |= subtle.ConstantTimeCompare(got[:], sums[i][:])
		}
		if match == 0 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: []string{staticScope}, UserID: "token:" + hex.EncodeToString(got[:8])}, nil
	}
}

// anyVerifier accepts a token that one of vs accepts, trying them in order.
// When none does, it returns the last error that is not
// [auth.ErrInvalidToken] (a verifier that could not decide, which the SDK
// answers with 400 or 500), or else auth.ErrInvalidToken (401).
func anyVerifier(vs ...auth.TokenVerifier) auth.TokenVerifier {
	if len(vs) == 1 {
		return vs[0]
	}
	return func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		var failure error
		for _, v := range vs {
			info, err := v(ctx, token, r)
			if err == nil {
				return info, nil
			}
			if !errors.Is(err, auth.ErrInvalidToken) {
				failure = err
			}
		}
		if failure != nil {
			return nil, failure
		}
		return nil, auth.ErrInvalidToken
	}
}

// authenticate puts the SDK's bearer-token middleware in front of next, so
// that next (and the SDK sessions) find the token's [auth.TokenInfo] in the
// request context. A refusal is sent at once, before the body is read, and
// the connection then closes (see abandonBody); it always carries a
// WWW-Authenticate header, naming ResourceMetadataURL when set.
func (h *Handler) authenticate(next http.Handler) http.Handler {
	var vs []auth.TokenVerifier
	var scopes []string
	if len(h.opts.BearerTokens) > 0 {
		vs = append(vs, StaticTokens(h.opts.BearerTokens))
	}
	if h.opts.Verifier != nil {
		vs = append(vs, h.opts.Verifier)
	} else {
		scopes = []string{staticScope}
	}
	// The middleware writes WWW-Authenticate only with parameters to put in
	// it; RFC 6750 wants one on every 401, so a bare one is set ahead and
	// removed when the request passes.
	bare := h.opts.ResourceMetadataURL == "" && len(scopes) == 0
	passed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Del("Connection")
		if bare {
			w.Header().Del("WWW-Authenticate")
		}
		next.ServeHTTP(w, r)
	})
	check := auth.RequireBearerToken(anyVerifier(vs...), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL:    h.opts.ResourceMetadataURL,
		Scopes:                 scopes,
		AllowMissingExpiration: true, // static tokens do not expire; a verifier sets expiries it has
	})(passed)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		abandonBody(w, r)
		if bare {
			w.Header().Set("WWW-Authenticate", "Bearer")
		}
		check.ServeHTTP(w, r)
	})
}
