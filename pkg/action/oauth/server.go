package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/httporigin"
)

// Defaults of [Options] (Keryx's, seed 002).
const (
	DefaultCodeTTL        = 5 * time.Minute     // MCP_OAUTH_CODE_TTL 300
	DefaultClientTTL      = 30 * 24 * time.Hour // MCP_OAUTH_CLIENT_TTL 2592000
	DefaultRefreshTTL     = 30 * 24 * time.Hour // MCP_OAUTH_REFRESH_TTL 2592000
	DefaultAccessTTL      = time.Hour
	DefaultRegisterLimit  = 5 // registrations per IP per window
	DefaultRegisterWindow = time.Hour
	DefaultResourcePath   = "/mcp"
	// Scope is the one scope the server grants.
	Scope = "mcp"
)

// Limits of what a client sends.
const (
	maxBodyBytes    = 64 << 10
	maxRedirectURIs = 10
	maxURILen       = 2048
	maxNameLen      = 200
)

// Paths of the endpoints, from the server's origin.
const (
	PathASMetadata = "/.well-known/oauth-authorization-server"
	PathPRMetadata = "/.well-known/oauth-protected-resource"
	PathRegister   = "/oauth/register"
	PathAuthorize  = "/oauth/authorize"
	PathToken      = "/oauth/token"
	PathRevoke     = "/oauth/revoke"
	pathAssets     = "/oauth/assets/"
)

// Options configure a [Server]. Zero fields take the defaults.
type Options struct {
	// App runs the login and signup actions the authorize page submits.
	// The page offers a form for each of the two the app marks
	// (action.MCP.LoginAction, SignupAction); an app with neither cannot
	// authorize anyone.
	App *action.App
	// Store keeps clients, codes and tokens; nil: a [MemoryStore].
	Store Store
	// Rates counts registrations per client IP; nil: in process.
	Rates action.RateStore
	// Issuer is the server's origin ("https://mcp.example.com"), which is
	// also the issuer and the base of every endpoint's URL. "" takes it
	// from each request (its scheme and Host header): right on loopback,
	// where the core checks the Host header, and behind a proxy that sets
	// Host; set it when serving beyond loopback.
	Issuer string
	// ResourcePath is the protected resource's path under the origin; ""
	// is "/mcp". A token is valid for that resource only (RFC 8707).
	ResourcePath string
	// ResourceName is the resource's human-readable name in its metadata.
	ResourceName string
	CodeTTL      time.Duration // an authorization code's life; 0: DefaultCodeTTL
	ClientTTL    time.Duration // a registration's life; 0: DefaultClientTTL
	AccessTTL    time.Duration // an access token's life; 0: DefaultAccessTTL
	RefreshTTL   time.Duration // a refresh token family's life; 0: DefaultRefreshTTL
	// RegisterLimit registrations per client IP per RegisterWindow (a
	// sliding window); 0: DefaultRegisterLimit per DefaultRegisterWindow.
	RegisterLimit  int
	RegisterWindow time.Duration
	// TrustForwardedFor takes the client IP from X-Forwarded-For's last
	// entry (set it only behind a proxy that writes it).
	TrustForwardedFor bool
	// AllowedOrigins are the browser origins the metadata, register, token
	// and revoke endpoints answer CORS requests of (the listener's one
	// policy, package httporigin); "*" is any origin,
	// then without credentials.
	AllowedOrigins []string
	// TemplateDir, if set, holds templates that replace the embedded
	// defaults file by file ([TemplateNames]).
	TemplateDir string
	// Logger gets internal errors; nil: slog.Default.
	Logger *slog.Logger
	// VerifyCache is how long Verify trusts a token it found valid before
	// reading the store again; 0: DefaultVerifyCache; negative: always
	// read. A token revoked through this Server is refused at once. With
	// a store that carries revocations ([Revocations]) and
	// [Server.WatchRevocations] running on every instance, so is one
	// revoked through another instance: the revocation is answered once
	// every instance has dropped it (at the latest after VerifyCache).
	// With a shared store that does not, another instance refuses it
	// within VerifyCache.
	VerifyCache time.Duration
}

// Server is the authorization server. Serve [Server.Handler] on the
// [RoutePatterns]; verify bearer tokens with [Server.Verify]. A Server is
// safe for concurrent use.
type Server struct {
	opts   Options
	pages  *pages
	login  *action.Action // nil: none
	signup *action.Action // nil: none
	mux    *http.ServeMux
	cache  grantCache
}

// RoutePatterns are the net/http patterns [Server.Handler] serves.
var RoutePatterns = []string{PathASMetadata, PathPRMetadata, PathPRMetadata + "/", "/oauth/"}

// ErrInvalidToken is the error of [Server.Verify] for a token that is
// unknown, expired, revoked or issued for another resource.
var ErrInvalidToken = errors.New("oauth: invalid token")

// New checks opts, loads the page templates (TemplateDir's over the
// defaults) and returns a Server.
func New(opts Options) (*Server, error) {
	if opts.App == nil {
		return nil, errors.New("oauth: Options.App is nil")
	}
	if opts.Store == nil {
		opts.Store = NewMemoryStore()
	}
	if opts.Rates == nil {
		opts.Rates = action.NewMemoryRateStore()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ResourcePath == "" {
		opts.ResourcePath = DefaultResourcePath
	}
	if !strings.HasPrefix(opts.ResourcePath, "/") {
		return nil, fmt.Errorf("oauth: resource path %q does not start with /", opts.ResourcePath)
	}
	if opts.Issuer != "" {
		if err := checkIssuer(opts.Issuer); err != nil {
			return nil, err
		}
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&opts.CodeTTL, DefaultCodeTTL}, {&opts.ClientTTL, DefaultClientTTL}, {&opts.AccessTTL, DefaultAccessTTL},
		{&opts.RefreshTTL, DefaultRefreshTTL}, {&opts.RegisterWindow, DefaultRegisterWindow}} {
		if *d.v < 0 {
			return nil, fmt.Errorf("oauth: negative duration %v", *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if opts.RegisterLimit < 0 {
		return nil, fmt.Errorf("oauth: negative registration limit %d", opts.RegisterLimit)
	}
	if opts.RegisterLimit == 0 {
		opts.RegisterLimit = DefaultRegisterLimit
	}
	if opts.VerifyCache == 0 {
		opts.VerifyCache = DefaultVerifyCache
	}
	s := &Server{opts: opts, cache: grantCache{ttl: opts.VerifyCache}}
	if _, shared := opts.Store.(Revocations); shared {
		s.cache.off = true // until WatchRevocations listens
	}
	for _, act := range opts.App.Actions() {
		if act.MCP.LoginAction {
			s.login = act
		}
		if act.MCP.SignupAction {
			s.signup = act
		}
	}
	var err error
	if s.pages, err = loadPages(opts.TemplateDir); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathASMetadata, s.cors(s.serveASMetadata))
	mux.HandleFunc("GET "+PathPRMetadata, s.cors(s.servePRMetadata))
	mux.HandleFunc("GET "+PathPRMetadata+opts.ResourcePath, s.cors(s.servePRMetadata))
	mux.HandleFunc("POST "+PathRegister, s.cors(s.serveRegister))
	mux.HandleFunc("GET "+PathAuthorize, s.serveAuthorize)
	mux.HandleFunc("POST "+PathAuthorize, s.serveAuthorize)
	mux.HandleFunc("POST "+PathToken, s.cors(s.serveToken))
	mux.HandleFunc("POST "+PathRevoke, s.cors(s.serveRevoke))
	mux.HandleFunc("GET "+pathAssets+"{name}", s.serveAsset)
	for _, p := range []string{PathASMetadata, PathPRMetadata, PathPRMetadata + opts.ResourcePath, PathRegister, PathToken, PathRevoke} {
		mux.HandleFunc("OPTIONS "+p, s.cors(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	}
	s.mux = mux
	return s, nil
}

// checkIssuer accepts an http(s) origin without path, query or fragment.
func checkIssuer(iss string) error {
	u, err := parseURL(iss)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("oauth: issuer %q is not an http(s) origin", iss)
	}
	return nil
}

// Handler serves the endpoints (under [RoutePatterns]).
func (s *Server) Handler() http.Handler { return s.mux }

// Issuer is the issuer for r: Options.Issuer, else r's scheme and Host.
func (s *Server) Issuer(r *http.Request) string {
	if s.opts.Issuer != "" {
		return strings.TrimSuffix(s.opts.Issuer, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// Resource is the protected resource's URL for r: the issuer and
// Options.ResourcePath.
func (s *Server) Resource(r *http.Request) string { return s.Issuer(r) + s.opts.ResourcePath }

// Grant is what a valid access token grants.
type Grant struct {
	User     string    // the user id the login or signup action returned
	ClientID string    // the client the token was issued to
	Scopes   []string  // the granted scopes
	Expires  time.Time // when the token expires
}

// Verify returns the grant of access token for resource (the resource
// server's own URL, [Server.Resource]), or an error wrapping
// [ErrInvalidToken] when the token is unknown, expired, revoked or bound
// to another resource. Any other error means the store failed. A valid
// token is remembered for Options.VerifyCache.
func (s *Server) Verify(ctx context.Context, token, resource string) (_ Grant, err error) {
	ctx, span := tel.startCheck(ctx)
	key := keyAccess(token)
	g, gen, ok := s.cache.get(key)
	defer func(cached bool) { tel.endCheck(ctx, span, cached, err) }(ok)
	if !ok {
		read := time.Now()
		var err error
		if ok, err = s.load(ctx, key, &g); err != nil {
			return Grant{}, err
		}
		if ok {
			s.cache.put(key, g, gen, read)
		}
	}
	if !ok || !time.Now().Before(time.UnixMilli(g.Expires)) {
		return Grant{}, fmt.Errorf("%w: unknown or expired", ErrInvalidToken)
	}
	if subtle.ConstantTimeCompare([]byte(g.Resource), []byte(resource)) != 1 {
		return Grant{}, fmt.Errorf("%w: issued for another resource", ErrInvalidToken)
	}
	return Grant{User: g.User, ClientID: g.Client, Scopes: strings.Fields(g.Scope), Expires: time.UnixMilli(g.Expires)}, nil
}

// client is a registered client (RFC 7591 metadata).
type client struct {
	ID                      string   `json:"client_id"`
	IssuedAt                int64    `json:"client_id_issued_at"`
	Name                    string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
}

// grant is the record of a code (with its redirect URI and challenge) or
// a token.
type grant struct {
	Client      string `json:"client"`
	User        string `json:"user"`
	Resource    string `json:"resource"`
	Scope       string `json:"scope"`
	Family      string `json:"family,omitempty"` // tokens: the refresh family
	Expires     int64  `json:"exp"`              // Unix ms
	RedirectURI string `json:"redirect_uri,omitempty"`
	Challenge   string `json:"challenge,omitempty"`
}

// family is a chain of rotated refresh tokens and the access tokens
// issued with them, revoked as one when a spent refresh token comes back.
type family struct {
	Client  string   `json:"client"`
	Access  []string `json:"access"`  // keys of the access tokens issued
	Refresh string   `json:"refresh"` // key of the live refresh token
}

// Store keys. Codes and tokens are keyed by their SHA-256.
func keyClient(id string) string   { return "client:" + id }
func keyCode(code string) string   { return "code:" + digest(code) }
func keyAccess(tok string) string  { return "access:" + digest(tok) }
func keyRefresh(tok string) string { return "refresh:" + digest(tok) }
func keySpent(tok string) string   { return "spent:" + digest(tok) }
func keyUsed(code string) string   { return "used:" + digest(code) }
func keyFamily(id string) string   { return "family:" + id }
func digest(secret string) string {
	s := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(s[:])
}
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
func s256(verifier string) string {
	s := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(s[:])
}
func millis(t time.Time) int64         { return t.UnixMilli() }
func expired(ms int64) bool            { return !time.Now().Before(time.UnixMilli(ms)) }
func remaining(ms int64) time.Duration { return time.Until(time.UnixMilli(ms)) }

// newSecret returns 256 random bits, base64url: a code, token or id.
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *Server) load(ctx context.Context, key string, v any) (bool, error) {
	b, ok, err := s.opts.Store.Get(ctx, key)
	if err != nil || !ok {
		return false, wrapStore(err)
	}
	return true, decodeRecord(key, b, v)
}

func (s *Server) take(ctx context.Context, key string, v any) (bool, error) {
	b, ok, err := s.opts.Store.Take(ctx, key)
	if err != nil || !ok {
		return false, wrapStore(err)
	}
	return true, decodeRecord(key, b, v)
}

func (s *Server) put(ctx context.Context, key string, v any, ttl time.Duration) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("oauth: encode record: %w", err)
	}
	return wrapStore(s.opts.Store.Put(ctx, key, b, ttl))
}

func decodeRecord(key string, b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		kind, _, _ := strings.Cut(key, ":")
		return fmt.Errorf("oauth: decode %s record: %w", kind, err)
	}
	return nil
}

func wrapStore(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("oauth store: %w", err)
}

// cors answers CORS for the JSON endpoints by the listener's one origin
// policy (package httporigin): a listed Origin is echoed with
// credentials, any other under "*" gets "*" without them. (The core has
// refused an origin the policy does not admit.)
func (s *Server) cors(next http.HandlerFunc) http.HandlerFunc {
	policy := httporigin.New(s.opts.AllowedOrigins)
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if policy.SetCORS(h, r.Header.Get("Origin"), true) && r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, MCP-Protocol-Version")
			h.Set("Access-Control-Max-Age", "600")
		}
		next(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// oauthError is an error response of the JSON endpoints (RFC 6749 5.2,
// RFC 7591 3.2.2).
type oauthError struct {
	status      int
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Description }

func badRequest(code, format string, args ...any) *oauthError {
	return &oauthError{status: http.StatusBadRequest, Code: code, Description: fmt.Sprintf(format, args...)}
}

// fail writes err: an *oauthError as it is, anything else (the store
// failed) as server_error with the cause logged.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var oe *oauthError
	if !errors.As(err, &oe) {
		s.opts.Logger.Error("oauth endpoint failed", "path", r.URL.Path, "error", err)
		oe = &oauthError{status: http.StatusInternalServerError, Code: "server_error", Description: "internal error"}
	}
	if oe.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="oauth"`)
	}
	writeJSON(w, oe.status, oe)
}

func (s *Server) serveASMetadata(w http.ResponseWriter, r *http.Request) {
	iss := s.Issuer(r)
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + PathAuthorize,
		"token_endpoint":                                 iss + PathToken,
		"registration_endpoint":                          iss + PathRegister,
		"revocation_endpoint":                            iss + PathRevoke,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"scopes_supported":                               []string{Scope},
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          false,
	})
}

func (s *Server) servePRMetadata(w http.ResponseWriter, r *http.Request) {
	m := map[string]any{
		"resource":                 s.Resource(r),
		"authorization_servers":    []string{s.Issuer(r)},
		"scopes_supported":         []string{Scope},
		"bearer_methods_supported": []string{"header"},
	}
	if s.opts.ResourceName != "" {
		m["resource_name"] = s.opts.ResourceName
	}
	writeJSON(w, http.StatusOK, m)
}

// registration is the client metadata a registration may send; other
// members are ignored (RFC 7591 2).
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
	Scope                   string   `json:"scope"`
}

func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	if err := s.allowRegistration(r, w.Header()); err != nil {
		s.fail(w, r, err)
		return
	}
	var reg registration
	if err := decodeJSONBody(w, r, &reg); err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := newClient(reg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.put(r.Context(), keyClient(c.ID), c, s.opts.ClientTTL); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		client
		SecretExpiresAt int64  `json:"client_secret_expires_at"`
		Scope           string `json:"scope"`
	}{c, 0, Scope})
}

// newClient checks a registration and makes its client. Unsupported
// token endpoint auth methods are replaced by "none" (RFC 7591 3.2.1
// lets the server replace values): every client is public.
func newClient(reg registration) (client, error) {
	if len(reg.RedirectURIs) == 0 {
		return client{}, badRequest("invalid_redirect_uri", "redirect_uris is required")
	}
	if len(reg.RedirectURIs) > maxRedirectURIs {
		return client{}, badRequest("invalid_redirect_uri", "at most %d redirect_uris", maxRedirectURIs)
	}
	for i, u := range reg.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return client{}, badRequest("invalid_redirect_uri", "redirect_uris[%d]: %v", i, err)
		}
	}
	if len(reg.ClientName) > maxNameLen {
		return client{}, badRequest("invalid_client_metadata", "client_name is over %d bytes", maxNameLen)
	}
	grants := reg.GrantTypes
	if len(grants) == 0 {
		grants = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range grants {
		if g != "authorization_code" && g != "refresh_token" {
			return client{}, badRequest("invalid_client_metadata", "grant type %q is not supported (authorization_code, refresh_token)", g)
		}
	}
	responses := reg.ResponseTypes
	if len(responses) == 0 {
		responses = []string{"code"}
	}
	for _, rt := range responses {
		if rt != "code" {
			return client{}, badRequest("invalid_client_metadata", "response type %q is not supported (code)", rt)
		}
	}
	app := reg.ApplicationType
	switch app {
	case "":
		app = "web"
	case "web", "native":
	default:
		return client{}, badRequest("invalid_client_metadata", "application_type %q: want web or native", app)
	}
	if reg.Scope != "" && reg.Scope != Scope {
		return client{}, badRequest("invalid_client_metadata", "scope %q: the only scope is %q", reg.Scope, Scope)
	}
	return client{ID: newSecret(), IssuedAt: time.Now().Unix(), Name: reg.ClientName, RedirectURIs: reg.RedirectURIs,
		GrantTypes: grants, ResponseTypes: responses, TokenEndpointAuthMethod: "none", ApplicationType: app}, nil
}

// allowRegistration counts a registration of r's client IP in a sliding
// window and refuses one over the limit with 429 and Retry-After.
func (s *Server) allowRegistration(r *http.Request, h http.Header) error {
	ip, err := action.ClientIP(r, s.opts.TrustForwardedFor)
	if err != nil {
		return badRequest("invalid_request", "%v", err)
	}
	win := s.opts.RegisterWindow
	now := time.Now().UnixNano()
	index := now / int64(win)
	cur, prev, err := s.opts.Rates.Hit(r.Context(), "oauth_register:"+ip, index, win)
	if err != nil {
		return fmt.Errorf("count registrations: %w", err)
	}
	elapsed := float64(now-index*int64(win)) / float64(win)
	if float64(cur)+float64(prev)*(1-elapsed) <= float64(s.opts.RegisterLimit) {
		return nil
	}
	retry := time.Duration((index+1)*int64(win) - now)
	h.Set("Retry-After", fmt.Sprint(int64((retry+time.Second-1)/time.Second)))
	return &oauthError{status: http.StatusTooManyRequests, Code: "rate_limited",
		Description: fmt.Sprintf("over %d registrations per %v from this address", s.opts.RegisterLimit, win)}
}

// decodeJSONBody decodes r's JSON body (at most maxBodyBytes) into v.
func decodeJSONBody(w http.ResponseWriter, r *http.Request, v any) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return badRequest("invalid_client_metadata", "the body must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return &oauthError{status: http.StatusRequestEntityTooLarge, Code: "invalid_request", Description: fmt.Sprintf("the body is over %d bytes or unreadable", maxBodyBytes)}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("invalid_client_metadata", "the body is not a JSON object of client metadata: %v", err)
	}
	return nil
}

// params reads a token or revocation request's parameters: a form body,
// or a JSON object of strings. Query parameters are not read.
func params(w http.ResponseWriter, r *http.Request) (map[string]string, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	out := map[string]string{}
	switch mt {
	case "application/json":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, badRequest("invalid_request", "the body is over %d bytes or unreadable", maxBodyBytes)
		}
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, badRequest("invalid_request", "the body is not a JSON object of strings: %v", err)
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, badRequest("invalid_request", "bad form body: %v", err)
		}
		for k, v := range r.PostForm {
			if len(v) > 1 {
				return nil, badRequest("invalid_request", "parameter %s is repeated", k)
			}
			out[k] = v[0]
		}
	default:
		return nil, badRequest("invalid_request", "the body must be application/x-www-form-urlencoded or application/json")
	}
	// A public client may name itself in HTTP Basic with an empty secret.
	if id, secret, ok := r.BasicAuth(); ok {
		if secret != "" {
			return nil, &oauthError{status: http.StatusUnauthorized, Code: "invalid_client", Description: "clients are public: no client secret"}
		}
		if out["client_id"] != "" && out["client_id"] != id {
			return nil, badRequest("invalid_request", "two different client ids")
		}
		out["client_id"] = id
	}
	return out, nil
}

// tokenResponse is a successful token response (RFC 6749 5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	p, err := params(w, r)
	if err == nil {
		var resp tokenResponse
		switch p["grant_type"] {
		case "authorization_code":
			resp, err = s.exchangeCode(r.Context(), p)
		case "refresh_token":
			resp, err = s.refresh(r.Context(), p)
		case "":
			err = badRequest("invalid_request", "grant_type is required")
		default:
			err = badRequest("unsupported_grant_type", "grant type %q is not supported (authorization_code, refresh_token)", p["grant_type"])
		}
		if err == nil {
			w.Header().Set("Pragma", "no-cache")
			writeJSON(w, http.StatusOK, resp)
			return
		}
	}
	s.fail(w, r, err)
}

// knownClient returns the registered client p names.
func (s *Server) knownClient(ctx context.Context, p map[string]string) (client, error) {
	id := p["client_id"]
	if id == "" {
		return client{}, &oauthError{status: http.StatusUnauthorized, Code: "invalid_client", Description: "client_id is required"}
	}
	var c client
	ok, err := s.load(ctx, keyClient(id), &c)
	if err != nil {
		return client{}, err
	}
	if !ok {
		return client{}, &oauthError{status: http.StatusUnauthorized, Code: "invalid_client", Description: "unknown or expired client"}
	}
	return c, nil
}

var errBadGrant = badRequest("invalid_grant", "the code is unknown, expired, already used or not this client's")

func (s *Server) exchangeCode(ctx context.Context, p map[string]string) (tokenResponse, error) {
	c, err := s.knownClient(ctx, p)
	if err != nil {
		return tokenResponse{}, err
	}
	for _, k := range []string{"code", "redirect_uri", "code_verifier"} {
		if p[k] == "" {
			return tokenResponse{}, badRequest("invalid_request", "%s is required", k)
		}
	}
	if !validVerifier(p["code_verifier"]) {
		return tokenResponse{}, badRequest("invalid_request", "code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~]")
	}
	var g grant
	ok, err := s.take(ctx, keyCode(p["code"]), &g) // single use: gone whatever follows
	if err != nil {
		return tokenResponse{}, err
	}
	if !ok {
		return tokenResponse{}, s.codeReplayed(ctx, p["code"])
	}
	switch {
	case expired(g.Expires) || !equal(g.Client, c.ID):
		return tokenResponse{}, errBadGrant
	case !equal(g.RedirectURI, p["redirect_uri"]):
		return tokenResponse{}, badRequest("invalid_grant", "redirect_uri is not the one of the authorization request")
	case !equal(g.Challenge, s256(p["code_verifier"])):
		return tokenResponse{}, badRequest("invalid_grant", "code_verifier does not match the code_challenge")
	case p["resource"] != "" && !equal(p["resource"], g.Resource):
		return tokenResponse{}, badRequest("invalid_target", "resource is not the one of the authorization request")
	}
	// The code's use is remembered (with the family its tokens join) for
	// as long as those tokens may live, before they are issued: a replay
	// at any time, even during this exchange, revokes them.
	fam := newSecret()
	if err := s.put(ctx, keyUsed(p["code"]), fam, s.opts.RefreshTTL); err != nil {
		return tokenResponse{}, err
	}
	resp, err := s.issue(ctx, g, fam, family{Client: c.ID}, s.opts.RefreshTTL)
	if err != nil {
		return tokenResponse{}, err
	}
	var still string
	if live, err := s.load(ctx, keyUsed(p["code"]), &still); err != nil || !live {
		// A replay took the record while the tokens were being issued.
		return tokenResponse{}, errors.Join(err, s.revokeFamily(ctx, fam), errBadGrant)
	}
	return resp, nil
}

// codeReplayed answers an exchange of a code that is not (or no longer)
// there. When it was exchanged before, its tokens' family is revoked
// (OAuth 2.1 4.1.3: a code used twice may have been stolen, and either
// holder may be the thief).
func (s *Server) codeReplayed(ctx context.Context, code string) error {
	var famID string
	used, err := s.take(ctx, keyUsed(code), &famID)
	if err != nil {
		return err
	}
	if !used {
		return errBadGrant
	}
	if err := s.revokeFamily(ctx, famID); err != nil {
		return err
	}
	return badRequest("invalid_grant", "the code was already used: the tokens issued for it are revoked")
}

// issue makes an access and a refresh token of g's user, client,
// resource and scope in family famID (whose record f gets them), the
// refresh token and the family living ttl.
func (s *Server) issue(ctx context.Context, g grant, famID string, f family, ttl time.Duration) (tokenResponse, error) {
	access, refresh := newSecret(), newSecret()
	now := time.Now()
	tok := grant{Client: g.Client, User: g.User, Resource: g.Resource, Scope: g.Scope, Family: famID, Expires: millis(now.Add(s.opts.AccessTTL))}
	if err := s.put(ctx, keyAccess(access), tok, s.opts.AccessTTL); err != nil {
		return tokenResponse{}, err
	}
	tok.Expires = millis(now.Add(ttl))
	if err := s.put(ctx, keyRefresh(refresh), tok, ttl); err != nil {
		return tokenResponse{}, err
	}
	f.Access = append(f.Access, keyAccess(access))
	f.Refresh = keyRefresh(refresh)
	if err := s.put(ctx, keyFamily(famID), f, ttl); err != nil {
		return tokenResponse{}, err
	}
	return tokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int64(s.opts.AccessTTL / time.Second),
		RefreshToken: refresh, Scope: g.Scope}, nil
}

func (s *Server) refresh(ctx context.Context, p map[string]string) (tokenResponse, error) {
	c, err := s.knownClient(ctx, p)
	if err != nil {
		return tokenResponse{}, err
	}
	tok := p["refresh_token"]
	if tok == "" {
		return tokenResponse{}, badRequest("invalid_request", "refresh_token is required")
	}
	var g grant
	ok, err := s.take(ctx, keyRefresh(tok), &g)
	if err != nil {
		return tokenResponse{}, err
	}
	if !ok {
		var famID string
		spent, err := s.load(ctx, keySpent(tok), &famID)
		if err != nil {
			return tokenResponse{}, err
		}
		if spent { // a rotated token came back: whoever holds the family's tokens may be an attacker
			if err := s.revokeFamily(ctx, famID); err != nil {
				return tokenResponse{}, err
			}
			return tokenResponse{}, badRequest("invalid_grant", "the refresh token was already used: its whole family is revoked")
		}
		return tokenResponse{}, badRequest("invalid_grant", "the refresh token is unknown, expired or revoked")
	}
	if !equal(g.Client, c.ID) {
		// Not this client's: put it back untouched.
		if err := s.put(ctx, keyRefresh(tok), g, remaining(g.Expires)); err != nil {
			return tokenResponse{}, err
		}
		return tokenResponse{}, badRequest("invalid_grant", "the refresh token was issued to another client")
	}
	if p["resource"] != "" && !equal(p["resource"], g.Resource) {
		return tokenResponse{}, badRequest("invalid_target", "resource is not the one the refresh token was issued for")
	}
	var f family
	live, err := s.load(ctx, keyFamily(g.Family), &f)
	if err != nil {
		return tokenResponse{}, err
	}
	ttl := remaining(g.Expires)
	if !live || ttl <= 0 {
		return tokenResponse{}, badRequest("invalid_grant", "the refresh token is expired or revoked")
	}
	if err := s.put(ctx, keySpent(tok), g.Family, ttl); err != nil {
		return tokenResponse{}, err
	}
	resp, err := s.issue(ctx, g, g.Family, f, ttl)
	if err != nil {
		return tokenResponse{}, err
	}
	// A reuse that revoked the family while this rotation ran must not
	// leave the new tokens alive.
	if still, err := s.load(ctx, keyFamily(g.Family), &f); err != nil || !still || f.Refresh != keyRefresh(resp.RefreshToken) {
		return tokenResponse{}, errors.Join(err, s.revokeFamily(ctx, g.Family), badRequest("invalid_grant", "the refresh token's family was revoked"))
	}
	return resp, nil
}

// revokeFamily deletes a family's access tokens, its live refresh token
// and the family.
func (s *Server) revokeFamily(ctx context.Context, famID string) error {
	var f family
	ok, err := s.take(ctx, keyFamily(famID), &f)
	if err != nil || !ok {
		return err
	}
	if err := s.opts.Store.Delete(ctx, append(f.Access, f.Refresh)...); err != nil {
		return wrapStore(err)
	}
	return s.revoked(ctx, f.Access...)
}

// revoked drops the access tokens keys, whose records are deleted, from
// the verification cache of this instance and, with a store that carries
// revocations ([Revocations]), of every instance: it returns once they
// have all dropped them (or VerifyCache has passed, after which none can
// still trust them), so that none accepts them after the revocation is
// answered.
func (s *Server) revoked(ctx context.Context, keys ...string) error {
	s.cache.forget(keys...)
	rv, ok := s.opts.Store.(Revocations)
	if !ok || s.opts.VerifyCache <= 0 || len(keys) == 0 {
		return nil
	}
	return wrapStore(rv.AnnounceRevoked(ctx, keys, s.opts.VerifyCache))
}

// WatchRevocations keeps this instance's verification cache coherent
// with the other instances sharing a store that carries revocations
// ([Revocations]): until ctx ends it drops the tokens any of them
// revokes, and while it is not listening (before it starts, and while its
// connection is down) Verify caches nothing. It returns when ctx ends;
// the caller owns the goroutine it runs on. With another store, or
// without a cache, it returns at once: there is nothing to watch.
func (s *Server) WatchRevocations(ctx context.Context) error {
	rv, ok := s.opts.Store.(Revocations)
	if !ok || s.opts.VerifyCache <= 0 {
		return nil
	}
	defer s.cache.setOff(true)
	err := rv.WatchRevoked(ctx, func(keys []string) { s.cache.forget(keys...) }, func(live bool) { s.cache.setOff(!live) })
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("oauth: watch revocations: %w", err)
}

// serveRevoke is RFC 7009: it always answers 200 for a well-formed
// request, whether or not the token was known. A refresh token revokes
// its family; an access token itself only. A token of another client
// than the named one is left alone.
func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	p, err := params(w, r)
	if err == nil {
		err = s.revoke(r.Context(), p)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

func (s *Server) revoke(ctx context.Context, p map[string]string) error {
	tok := p["token"]
	if tok == "" {
		return badRequest("invalid_request", "token is required")
	}
	owned := func(g grant) bool { return p["client_id"] == "" || equal(g.Client, p["client_id"]) }
	var g grant
	ok, err := s.load(ctx, keyRefresh(tok), &g)
	if err != nil {
		return err
	}
	if ok {
		if owned(g) {
			return errors.Join(s.revokeFamily(ctx, g.Family), wrapStore(s.opts.Store.Delete(ctx, keyRefresh(tok))))
		}
		return nil
	}
	ok, err = s.load(ctx, keyAccess(tok), &g)
	if err != nil || !ok || !owned(g) {
		return err
	}
	if err := s.opts.Store.Delete(ctx, keyAccess(tok)); err != nil {
		return wrapStore(err)
	}
	return s.revoked(ctx, keyAccess(tok))
}

// validVerifier reports whether v is an RFC 7636 code verifier.
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := range len(v) {
		c := v[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}
