package httpserve

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkit/mcpkit/pkg/httporigin"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/sessionstore"
)

const (
	// MCPPath is the path of the MCP endpoint.
	MCPPath = "/mcp"
	// HealthPath is the path of the health check, never behind auth.
	HealthPath = "/healthz"
	// MetricsPath serves Options.Metrics.
	MetricsPath = "/metrics"

	// DefaultBodyTimeout is the default of Options.BodyTimeout.
	DefaultBodyTimeout = 30 * time.Second

	// statelessVersion is the first protocol version of the stateless era.
	// Protocol versions are dates, so they compare as strings.
	statelessVersion = "2026-07-28"

	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"

	// coreOwner names mcpkit itself as the owner of /mcp and /healthz in
	// route conflicts.
	coreOwner = "mcpkit"
)

// Route is an HTTP route a plugin serves on the MCP listener, beside /mcp.
type Route struct {
	// Pattern is a Go 1.22 [http.ServeMux] pattern: "[METHOD ][HOST]/PATH",
	// e.g. "GET /api/{name}", "/ws", "/oauth/".
	Pattern string
	// Handler serves the route. It authenticates requests itself: the
	// bearer-token check of /mcp does not apply to plugin routes.
	Handler http.Handler
	// Owner names the plugin that serves the route, for error messages.
	Owner string
}

// Options configures a [Handler].
type Options struct {
	// Server is the assembled server, shared by every session of both eras.
	Server *mcp.Server
	// SessionIdle closes a legacy session after this long without a request
	// on this instance, and is how long a shared session record lives after
	// its last request on any instance. Zero disables both (callers pass the
	// http_session_idle limit).
	SessionIdle time.Duration
	// MaxSessions caps the legacy sessions open on this instance (resumed
	// ones included); a session beyond it is refused with HTTP 503 and a
	// JSON-RPC error naming http_sessions. Zero or less means no cap.
	MaxSessions int
	// MaxBodyBytes caps a request body (the frame_bytes limit); a larger body
	// gets HTTP 413. Zero means the SDK default (4 MiB); negative, no cap.
	MaxBodyBytes int64
	// MaxInflightBytes caps the bytes of /mcp request bodies being read or
	// handled at once (the inflight_request_bytes limit). A body that would
	// exceed it is refused with HTTP 503 and a JSON-RPC error naming the
	// limit. Zero or less means no cap.
	MaxInflightBytes int64
	// BodyTimeout bounds the time a client may take to send a request body,
	// on /mcp and on plugin routes; a body not received in time gets HTTP
	// 408 and the connection is closed. Zero means [DefaultBodyTimeout];
	// negative, no bound.
	BodyTimeout time.Duration
	// AllowedOrigins are extra browser origins ("scheme://host:port", exact
	// but for case and a trailing "/") allowed besides same-origin
	// requests, on /mcp and every plugin route alike; "*" allows any origin,
	// without credentials (package httporigin). They also get CORS headers.
	// Requests without an Origin header always pass this check.
	AllowedOrigins []string
	// NoMCP leaves /mcp unserved (404): the server serves only its plugin
	// routes and /healthz (an action app whose MCP server is disabled).
	NoMCP bool
	// BearerTokens, if non-empty, are static tokens /mcp accepts as
	// "Authorization: Bearer <token>" (see [StaticTokens]). /healthz and
	// plugin routes stay open.
	BearerTokens []string
	// Verifier, if set, also authenticates /mcp requests (an OAuth
	// resource server, for instance). With BearerTokens, a token either
	// accepts is accepted.
	Verifier auth.TokenVerifier
	// ResourceMetadataURL, if set, is named in the WWW-Authenticate header
	// of a refused /mcp request (RFC 9728 protected resource metadata): an
	// absolute URL, named as is; or a path, named on the origin each
	// loopback request reached, and not at all beyond loopback (where the
	// Host header is the client's to choose).
	ResourceMetadataURL string
	// SessionStore, if set, shares legacy sessions with other instances
	// using the same store: any of them serves a session another opened.
	SessionStore sessionstore.Store
	// SessionOpened, if set, is called with each legacy session this
	// handler connects that outlives its request (a new one, or one resumed
	// from the SessionStore), and the principal it belongs to, before the
	// session serves anything: the host registers it there, so that a
	// resumed session that only carries the client's GET stream gets the
	// host's notifications. An error refuses the session (503).
	SessionOpened func(ss *mcp.ServerSession, principal string) error
	// Routes are plugin routes served on the same listener.
	Routes []Route
	// Metrics, when set, is served at /metrics (Prometheus scrapes it),
	// behind the same bearer tokens or verifier as /mcp when there are
	// any, and the same Host check.
	Metrics http.Handler
	// Refused, when set, is called once for each /mcp or /metrics request
	// refused by a limit or for its credentials (a metric counts them):
	// reason "limit" with the limit (frame_bytes, inflight_request_bytes,
	// http_sessions), "timeout" with body_timeout, or "auth" with "" (a
	// bearer token refused, 401 or 403; another principal's session, 403).
	Refused func(reason, limit string)
	// RequestInfo, when set, gives the server's middleware what the SDK
	// does not (for the host's telemetry: the JSON-RPC id of a request
	// sent alone, the client's address, the HTTP version) in headers of
	// the request it reads as mcp.RequestExtra.Header (see
	// wire.HeaderRequestID). Without it, as with it, a client's own copy
	// of those headers is removed.
	RequestInfo bool
	// Logger receives the handler's logs; nil discards them.
	Logger *slog.Logger
}

// Handler serves /mcp, GET /healthz and the plugin routes; any other path is
// 404. It is safe for concurrent use. Call [Handler.Close] at shutdown to
// end every open session.
type Handler struct {
	opts        Options
	logger      *slog.Logger
	maxBody     int64
	bodyTimeout time.Duration
	origins     httporigin.Policy
	inflight    budget
	versions    []string // the protocol versions the MCP-Protocol-Version header may name
	stateless   *mcp.StreamableHTTPHandler
	mux         *http.ServeMux

	mu        sync.Mutex
	sessions  map[string]*session   // addressable legacy sessions, counted by MaxSessions
	ephemeral map[*session]struct{} // sessions that end with the request that opened them
	closed    bool
	watchers  sync.WaitGroup // one per session, until it ends
}

// refused reports a refusal to Options.Refused.
func (h *Handler) refused(reason, limit string) {
	if h.opts.Refused != nil {
		h.opts.Refused(reason, limit)
	}
}

// Errors of [NewHandler].
var (
	// ErrInvalidOptions is returned for options that cannot work (no
	// server, a route without a pattern, handler or owner, a pattern
	// ServeMux refuses).
	ErrInvalidOptions = errors.New("invalid HTTP handler options")
	// ErrRouteConflict is returned for a plugin route that collides with
	// another route or would take requests for /mcp or /healthz.
	ErrRouteConflict = errors.New("conflicting HTTP routes")
)

// NewHandler returns the handler for opts, or an error wrapping
// [ErrInvalidOptions] or [ErrRouteConflict].
func NewHandler(opts Options) (*Handler, error) {
	if opts.Server == nil {
		return nil, fmt.Errorf("%w: Options.Server is nil", ErrInvalidOptions)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		opts:        opts,
		logger:      logger,
		maxBody:     opts.MaxBodyBytes,
		bodyTimeout: opts.BodyTimeout,
		origins:     httporigin.New(opts.AllowedOrigins),
		inflight:    budget{max: opts.MaxInflightBytes},
		versions:    mcp.SupportedProtocolVersions(),
		sessions:    make(map[string]*session),
		ephemeral:   make(map[*session]struct{}),
	}
	if h.maxBody == 0 {
		h.maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	if h.bodyTimeout == 0 {
		h.bodyTimeout = DefaultBodyTimeout
	}
	h.stateless = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return opts.Server }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          h.maxBody,
		PropagateRequestCancellation: true,
		Logger:                       logger.With("component", "mcp-http"),
	})

	var endpoint http.Handler = http.HandlerFunc(h.serveMCP)
	if h.Authenticated() {
		endpoint = h.authenticate(endpoint)
	}
	mux, err := h.routes(h.limitBody(h.checkHost(h.checkOrigin(endpoint, true))), opts.Routes)
	if err != nil {
		return nil, err
	}
	h.mux = mux
	return h, nil
}

// Authenticated reports whether /mcp requires authentication (static bearer
// tokens or a verifier), which [ListenAndServe] requires beyond loopback.
func (h *Handler) Authenticated() bool {
	return len(h.opts.BearerTokens) > 0 || h.opts.Verifier != nil
}

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// Close closes every open legacy session of this instance (their records
// stay in the SessionStore, for other instances) and refuses new ones.
// Hanging GET streams of those sessions return. It returns once every
// session has ended; stateless requests in flight finish normally. Close is
// idempotent.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	open := make([]*session, 0, len(h.sessions)+len(h.ephemeral))
	for _, s := range h.sessions {
		open = append(open, s)
	}
	for s := range h.ephemeral {
		open = append(open, s)
	}
	h.mu.Unlock()
	// Each close waits for the session's handlers to return: close them
	// all at once.
	var closing sync.WaitGroup
	for _, s := range open {
		closing.Go(s.close)
	}
	closing.Wait()
	h.watchers.Wait()
}

// Protect puts next behind what guards /mcp but the Origin check (a
// scraper sends none): the Host check and, when /mcp requires it, the
// bearer token. /metrics is served through it, on the listener or on a
// separate one (mcpkit serve --metrics-addr).
func (h *Handler) Protect(next http.Handler) http.Handler {
	if h.Authenticated() {
		next = h.authenticate(next)
	}
	return h.checkHost(next)
}

// OpenSessions returns the number of addressable legacy sessions open on
// this instance (those being initialized included).
func (h *Handler) OpenSessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// routes builds the mux: /mcp (unless NoMCP), /healthz and the plugin routes, each plugin
// route behind the body deadline and the Host and Origin checks. It refuses
// a route ServeMux finds in conflict with another, and one that would take
// requests for /mcp or /healthz (ServeMux would let "POST /mcp" win over
// "/mcp", for instance).
func (h *Handler) routes(endpoint http.Handler, plugin []Route) (*http.ServeMux, error) {
	core := []Route{{Pattern: HealthPath, Handler: http.HandlerFunc(serveHealth), Owner: coreOwner}}
	reserved := []string{HealthPath}
	if h.opts.Metrics != nil {
		core = append(core, Route{Pattern: MetricsPath, Handler: h.Protect(h.opts.Metrics), Owner: coreOwner})
		reserved = append(reserved, MetricsPath)
	}
	if !h.opts.NoMCP {
		core = append(core, Route{Pattern: MCPPath, Handler: endpoint, Owner: coreOwner})
		reserved = append(reserved, MCPPath)
	}
	mux := http.NewServeMux()
	owners := make(map[string]string) // pattern -> owner
	var done []Route
	for i, rt := range append(core, plugin...) {
		switch {
		case rt.Pattern == "" || rt.Handler == nil || rt.Owner == "":
			return nil, fmt.Errorf("%w: route %q of %q needs a pattern, a handler and an owner", ErrInvalidOptions, rt.Pattern, rt.Owner)
		case i >= len(core):
			rt.Handler = h.limitBody(h.checkHost(h.checkOrigin(rt.Handler, false)))
		}
		if err := handle(mux, rt); err != nil {
			for _, prev := range done {
				if conflicts(prev, rt) {
					return nil, fmt.Errorf("%w: route %q of %s conflicts with route %q of %s", ErrRouteConflict, rt.Pattern, rt.Owner, prev.Pattern, prev.Owner)
				}
			}
			return nil, fmt.Errorf("%w: route %q of %s: %v", ErrInvalidOptions, rt.Pattern, rt.Owner, err)
		}
		owners[rt.Pattern] = rt.Owner
		done = append(done, rt)
	}
	for _, rt := range plugin {
		method, host := patternParts(rt.Pattern)
		for _, path := range reserved {
			probe := &http.Request{Method: method, Host: host, URL: &url.URL{Path: path}}
			if _, got := mux.Handler(probe); got != path {
				return nil, fmt.Errorf("%w: route %q of %s would take %s requests for %s, which %s reserves",
					ErrRouteConflict, got, owners[got], method, path, coreOwner)
			}
		}
	}
	return mux, nil
}

// handle registers rt on mux, turning ServeMux's panic on a bad or
// conflicting pattern into an error.
func handle(mux *http.ServeMux, rt Route) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	mux.Handle(rt.Pattern, rt.Handler)
	return nil
}

// conflicts reports whether ServeMux refuses b beside a, though it takes
// each alone.
func conflicts(a, b Route) bool {
	if handle(http.NewServeMux(), b) != nil {
		return false
	}
	mux := http.NewServeMux()
	return handle(mux, a) == nil && handle(mux, b) != nil
}

// patternParts returns the method a pattern is limited to (GET when none:
// a pattern without a method takes every method) and its host ("localhost"
// when none: a pattern without a host takes every host).
func patternParts(pattern string) (method, host string) {
	method, host = http.MethodGet, "localhost"
	rest := pattern
	if i := strings.IndexAny(pattern, " \t"); i >= 0 {
		method, rest = pattern[:i], strings.TrimLeft(pattern[i:], " \t")
	}
	if i := strings.IndexByte(rest, '/'); i > 0 {
		host = rest[:i]
	}
	return method, host
}

// serveHealth answers GET and HEAD /healthz.
func serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, `{"status":"ok"}`+"\n")
}
