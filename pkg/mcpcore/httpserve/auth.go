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
// request context. A refusal is sent at once, without reading the body (see
// abandonBody), and always carries a WWW-Authenticate header (naming
// ResourceMetadataURL when set).
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
	check := auth.RequireBearerToken(anyVerifier(vs...), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL:    h.opts.ResourceMetadataURL,
		Scopes:                 scopes,
		AllowMissingExpiration: true, // static tokens do not expire; a verifier sets expiries it has
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w.(*refusalWriter).ResponseWriter, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check.ServeHTTP(&refusalWriter{ResponseWriter: w, r: r}, r)
	})
}

// refusalWriter is the ResponseWriter the bearer-token middleware writes a
// refusal through (a request it passes goes on with the original).
type refusalWriter struct {
	http.ResponseWriter
	r *http.Request
}

// WriteHeader abandons the body of the refused request and, since the
// middleware writes WWW-Authenticate only when it has parameters to put in
// it, adds a bare one to a 401 without (RFC 6750 wants one on every 401).
func (rw *refusalWriter) WriteHeader(code int) {
	abandonBody(rw.ResponseWriter, rw.r)
	if code == http.StatusUnauthorized && rw.Header().Get("WWW-Authenticate") == "" {
		rw.Header().Set("WWW-Authenticate", "Bearer")
	}
	rw.ResponseWriter.WriteHeader(code)
}
