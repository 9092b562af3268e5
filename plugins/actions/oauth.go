package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpkit/mcpkit/internal/plugintel"
	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/action/oauth"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// Environment variables of Keryx for the OAuth server, read when the
// configuration's oauth section leaves the same thing unset.
const (
	EnvOAuthCodeTTL        = "MCP_OAUTH_CODE_TTL"                  // seconds; default 300
	EnvOAuthClientTTL      = "MCP_OAUTH_CLIENT_TTL"                // seconds; default 2592000
	EnvOAuthRefreshTTL     = "MCP_OAUTH_REFRESH_TTL"               // seconds; default 2592000
	EnvOAuthRegisterLimit  = "RATE_LIMIT_OAUTH_REGISTER_LIMIT"     // registrations per IP per window; default 5
	EnvOAuthRegisterWindow = "RATE_LIMIT_OAUTH_REGISTER_WINDOW_MS" // the window in ms; default 3600000
)

// OAuthPrincipalPrefix starts the principal of a caller authenticated by
// the plugin's OAuth server: "user:" and the user id the app's login or
// signup action returned (the example app's identity of a signed-in
// user).
const OAuthPrincipalPrefix = "user:"

// OAuthConfig makes the plugin an OAuth 2.1 authorization server for
// /mcp (package pkg/action/oauth): /mcp then wants a bearer token it
// issued (or a static one of the core's), and its users sign in or up
// with the app's login and signup actions. Unset fields take the
// environment's value (the Env constants), else the defaults.
type OAuthConfig struct {
	// Issuer is the server's public origin ("https://mcp.example.com");
	// default: each request's scheme and Host (right on loopback). /mcp's
	// 401 names the protected-resource metadata under it; without it, on
	// the origin a loopback request reached, and beyond loopback not at
	// all (clients then find it at the well-known path): set it when
	// serving beyond loopback.
	Issuer            string `json:"issuer,omitempty"`
	CodeTTLSeconds    int    `json:"code_ttl_seconds,omitempty"`
	ClientTTLSeconds  int    `json:"client_ttl_seconds,omitempty"`
	RefreshTTLSeconds int    `json:"refresh_ttl_seconds,omitempty"`
	// AccessTTLSeconds is an access token's life; default 3600.
	AccessTTLSeconds int `json:"access_ttl_seconds,omitempty"`
	RegisterLimit    int `json:"register_limit,omitempty"`
	RegisterWindowMS int `json:"register_window_ms,omitempty"`
	// AllowedOrigins is refused: the OAuth endpoints follow the listener's
	// one origin policy, http.allowed_origins (which
	// $MCP_ALLOWED_ORIGINS fills under `mcpkit actions start`), as /mcp,
	// /api and /ws do. It is kept to say so rather than "unknown field".
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// VerifyCacheMS is how long an instance trusts a token it verified
	// before reading the shared state again. A revocation is answered
	// once every instance sharing the Redis has dropped the token (or
	// after this long, when one does not answer), so none accepts it
	// afterwards. 0: 1000; negative: every request reads the state.
	VerifyCacheMS int `json:"verify_cache_ms,omitempty"`
	// TemplatesDir holds page templates replacing the embedded defaults
	// (`mcpkit actions templates DIR` writes them).
	TemplatesDir string `json:"templates_dir,omitempty"`

	// off is `"oauth": false`: the server is off by the configuration's
	// explicit choice (the opt-out of `mcpkit actions start`'s default).
	off bool
}

// UnmarshalJSON takes false (the server off), true (on, as {}) or the
// object, decoded strictly.
func (o *OAuthConfig) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "false":
		*o = OAuthConfig{off: true}
		return nil
	case "true":
		*o = OAuthConfig{}
		return nil
	}
	var c oauthObject
	if err := mcpcore.DecodeConfig(b, &c); err != nil {
		var ce *mcpcore.ConfigError
		if errors.As(err, &ce) {
			return &mcpcore.ConfigError{Field: "oauth", Reason: ce.Reason + " (want false, true or an object)"}
		}
		return err
	}
	*o = OAuthConfig(c)
	return nil
}

// MarshalJSON writes false for the server off, else the object.
func (o OAuthConfig) MarshalJSON() ([]byte, error) {
	if o.off {
		return []byte("false"), nil
	}
	return json.Marshal(oauthObject(o))
}

// oauthObject is OAuthConfig without its JSON methods.
type oauthObject OAuthConfig

// oauthOn reports whether the configuration serves the OAuth server: an
// "oauth" object (or true), not absent nor false.
func (c Config) oauthOn() bool { return c.OAuth != nil && !c.OAuth.off }

// resolve fills o's unset fields from the environment and checks them.
func (o *OAuthConfig) resolve(getenv func(string) string) error {
	for _, f := range []struct {
		v     *int
		field string
		env   string
	}{
		{&o.CodeTTLSeconds, "oauth.code_ttl_seconds", EnvOAuthCodeTTL},
		{&o.ClientTTLSeconds, "oauth.client_ttl_seconds", EnvOAuthClientTTL},
		{&o.RefreshTTLSeconds, "oauth.refresh_ttl_seconds", EnvOAuthRefreshTTL},
		{&o.AccessTTLSeconds, "oauth.access_ttl_seconds", ""},
		{&o.RegisterLimit, "oauth.register_limit", EnvOAuthRegisterLimit},
		{&o.RegisterWindowMS, "oauth.register_window_ms", EnvOAuthRegisterWindow},
	} {
		field := f.field
		if *f.v == 0 && f.env != "" && getenv(f.env) != "" {
			s := getenv(f.env)
			n, err := strconv.Atoi(s)
			if err != nil {
				return &mcpcore.ConfigError{Field: f.env, Reason: fmt.Sprintf("%q is not an integer", s)}
			}
			*f.v, field = n, f.env
		}
		if *f.v < 0 {
			return &mcpcore.ConfigError{Field: field, Reason: fmt.Sprintf("%d is negative", *f.v)}
		}
	}
	if len(o.AllowedOrigins) > 0 {
		return &mcpcore.ConfigError{Field: "oauth.allowed_origins", Reason: "set http.allowed_origins instead" +
			" (MCP_ALLOWED_ORIGINS under mcpkit actions start): one origin policy serves /mcp, /api, /ws, /oauth and /.well-known"}
	}
	return nil
}

// attachOAuth serves the OAuth server's endpoints and makes its tokens
// authenticate /mcp, the token's user becoming the caller's principal.
func (p *Plugin) attachOAuth() error {
	o := p.cfg.OAuth
	secs := func(n int) time.Duration { return time.Duration(n) * time.Second }
	srv, err := oauth.New(oauth.Options{App: p.app, Store: p.state.oauth, Rates: p.state.rates, Issuer: o.Issuer,
		ResourcePath: MCPRoute, ResourceName: p.app.Name(), CodeTTL: secs(o.CodeTTLSeconds), ClientTTL: secs(o.ClientTTLSeconds),
		RefreshTTL: secs(o.RefreshTTLSeconds), AccessTTL: secs(o.AccessTTLSeconds), RegisterLimit: o.RegisterLimit,
		RegisterWindow: time.Duration(o.RegisterWindowMS) * time.Millisecond, TrustForwardedFor: p.cfg.RateLimit.TrustForwardedFor,
		AllowedOrigins: p.host.AllowedOrigins(), TemplateDir: o.TemplatesDir, Logger: p.host.Logger(),
		VerifyCache: time.Duration(o.VerifyCacheMS) * time.Millisecond})
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	p.oauth = srv
	for _, pattern := range oauth.RoutePatterns {
		p.host.HandleHTTP(pattern, srv.Handler())
	}
	// The revocation watch (Redis) runs until the server stops or the
	// plugin closes; the plugin's Close waits for it before closing the
	// app and the shared state.
	ctx, cancel := context.WithCancel(p.host.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.WatchRevocations(ctx); err != nil {
			p.host.Logger().Error("oauth revocation watch stopped", "err", err)
		}
	}()
	p.closer = &watchCloser{stop: cancel, done: done, next: p.closer}
	// Without an issuer, a path: the core names it on the origin each
	// loopback request reached, and names none beyond loopback.
	metadata := oauth.PathPRMetadata + MCPRoute
	if o.Issuer != "" {
		metadata = strings.TrimSuffix(o.Issuer, "/") + metadata
	}
	p.host.SetTokenVerifier(tokenVerifier(srv), metadata)
	return nil
}

// tokenVerifier adapts the OAuth server's Verify to the SDK's bearer
// check of /mcp: a token is checked against the resource the request
// reached, and its user becomes the principal.
func tokenVerifier(srv *oauth.Server) auth.TokenVerifier {
	return func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		g, err := srv.Verify(plugintel.RemoteParent(ctx, r.Header), token, srv.Resource(r))
		if errors.Is(err, oauth.ErrInvalidToken) {
			return nil, fmt.Errorf("%w (%v)", auth.ErrInvalidToken, err)
		}
		if err != nil {
			return nil, err
		}
		return &auth.TokenInfo{Scopes: g.Scopes, Expiration: g.Expires, UserID: OAuthPrincipalPrefix + g.User}, nil
	}
}

// identifyBearer identifies a request to /api by its bearer token, one
// the OAuth server issued (for /mcp: the same user, the same grant), as
// /mcp's verifier does: its user is the principal. A request without one
// is not identified by it (its web session may be); one with a token
// that is unknown, expired or revoked is refused as unauthorized, so that
// a client learns to refresh it rather than being served as anonymous.
func (p *Plugin) identifyBearer(r *http.Request) (string, error) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", nil
	}
	g, err := p.oauth.Verify(plugintel.RemoteParent(r.Context(), r.Header), strings.TrimSpace(token), p.oauth.Resource(r))
	if errors.Is(err, oauth.ErrInvalidToken) {
		return "", &action.Error{Kind: action.KindUnauthorized, Message: "the bearer token is unknown, expired or revoked", Err: err}
	}
	if err != nil {
		return "", fmt.Errorf("verify a bearer token: %w", err)
	}
	return OAuthPrincipalPrefix + g.User, nil
}

// watchCloser stops the OAuth revocation watch and waits for it, then
// closes next (the app's closer, if any).
type watchCloser struct {
	stop func()
	done <-chan struct{}
	next io.Closer
}

func (c *watchCloser) Close() error {
	c.stop()
	<-c.done
	if c.next == nil {
		return nil
	}
	return c.next.Close()
}
