package httpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpkit/mcpkit/internal/bearer"
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
	set := bearer.NewSet(tokens)
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		id, ok := set.Match(token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: []string{staticScope}, UserID: id}, nil
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
// abandonBody), and always carries a WWW-Authenticate header, naming the
// protected-resource metadata of [Handler.resourceMetadata] when there is
// one and the required scope when static tokens are the only verifier.
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
	// The SDK writes WWW-Authenticate from fixed options; the metadata URL
	// may depend on the request, so refusalWriter writes the header.
	check := auth.RequireBearerToken(anyVerifier(vs...), &auth.RequireBearerTokenOptions{
		Scopes:                 scopes,
		AllowMissingExpiration: true, // static tokens do not expire; a verifier sets expiries it has
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w.(*refusalWriter).ResponseWriter, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check.ServeHTTP(&refusalWriter{ResponseWriter: w, r: r, h: h, scopes: scopes}, r)
	})
}

// resourceMetadata is the protected-resource metadata URL (RFC 9728) that
// a refusal of r names, from Options.ResourceMetadataURL: an absolute URL
// as it is; a path ("/.well-known/oauth-protected-resource/mcp") on the
// origin r reached (its scheme and Host), but only when r reached a
// loopback address and names a loopback host, as checkHost has made sure.
// Beyond loopback the Host header is whatever the client sent, and a
// shared cache could hand the answer to others, so a path names nothing
// there ("" is returned): the client then looks for the metadata at the
// well-known path of the URL it used (RFC 9728 section 3), and a server
// beyond loopback that wants it named configures an absolute URL.
func (h *Handler) resourceMetadata(r *http.Request) string {
	u := h.opts.ResourceMetadataURL
	if !strings.HasPrefix(u, "/") {
		return u
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || la == nil || !isLoopbackHostPort(la.String()) || !isLoopbackHostPort(r.Host) {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return (&url.URL{Scheme: scheme, Host: r.Host, Path: u}).String()
}

// refusalWriter is the ResponseWriter the bearer-token middleware writes a
// refusal through (a request it passes goes on with the original).
type refusalWriter struct {
	http.ResponseWriter
	r      *http.Request
	h      *Handler
	scopes []string // the scopes the check requires, named in the challenge
}

// WriteHeader abandons the body of the refused request and, on a 401 or
// 403, writes the challenge: "Bearer" with the resource_metadata and scope
// parameters that apply (RFC 6750 wants a challenge on every 401).
func (rw *refusalWriter) WriteHeader(code int) {
	abandonBody(rw.ResponseWriter, rw.r)
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		rw.h.refused("auth", "")
		var params []string
		if u := rw.h.resourceMetadata(rw.r); u != "" {
			params = append(params, fmt.Sprintf("resource_metadata=%q", u))
		}
		if len(rw.scopes) > 0 {
			params = append(params, fmt.Sprintf("scope=%q", strings.Join(rw.scopes, " ")))
		}
		challenge := "Bearer"
		if len(params) > 0 {
			challenge += " " + strings.Join(params, ", ")
		}
		rw.Header().Set("WWW-Authenticate", challenge)
	}
	rw.ResponseWriter.WriteHeader(code)
}
