// Package httpserve is the streamable-HTTP mount of the mcpkit host: one
// /mcp endpoint that serves both MCP protocol eras over a single *mcp.Server,
// plus GET /healthz, and the listener that runs it.
//
// Legacy clients (initialize, protocol 2025-11-25 and earlier) get stateful
// sessions addressed by Mcp-Session-Id, with server notifications and
// logging, an idle timeout and a cap on their number. Clients of 2026-07-28
// (server/discover, per-request _meta) are served statelessly. In front of
// both sit DNS-rebinding and Origin checks and, when configured, a static
// bearer-token check.
//
// This package must not know any plugin, build the server or read
// configuration: the caller passes the assembled server and the limits. It
// must never log a bearer token or an Authorization header, and must not
// serve a non-loopback address without authentication (see
// [CheckListenAddr]).
package httpserve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// MCPPath is the path of the MCP endpoint.
	MCPPath = "/mcp"
	// HealthPath is the path of the health check, never behind auth.
	HealthPath = "/healthz"

	// statelessVersion is the first protocol version of the stateless era.
	// Protocol versions are dates, so they compare as strings.
	statelessVersion = "2026-07-28"

	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"

	// bearerScope is the scope every static token carries; the SDK's bearer
	// middleware names it in WWW-Authenticate.
	bearerScope = "mcp"

	shutdownTimeout = 5 * time.Second

	// codeLimit is the JSON-RPC error code of a refused new session.
	codeLimit = -32000
)

// Options configures a [Handler].
type Options struct {
	// Server is the assembled server, shared by every session of both eras.
	Server *mcp.Server
	// SessionIdle closes a legacy session after this long without a request.
	// Zero disables the timeout (callers pass the http_session_idle limit).
	SessionIdle time.Duration
	// MaxSessions caps concurrent legacy sessions; an initialize beyond it is
	// answered with HTTP 503 and a JSON-RPC error naming http_sessions.
	// Zero or less means no cap.
	MaxSessions int
	// MaxBodyBytes caps a request body (the frame_bytes limit); a larger body
	// gets HTTP 413. Zero means the SDK default (4 MiB); negative, no cap.
	MaxBodyBytes int64
	// AllowedOrigins are extra browser origins ("scheme://host:port", exact)
	// allowed besides same-origin requests; they also get CORS headers.
	// Requests without an Origin header always pass this check.
	AllowedOrigins []string
	// BearerTokens, if non-empty, makes /mcp require
	// "Authorization: Bearer <one of them>". /healthz stays open.
	BearerTokens []string
	// Logger receives the handler's logs; nil discards them.
	Logger *slog.Logger
}

// Handler serves /mcp and GET /healthz; any other path is 404. It is safe for
// concurrent use. Call [Handler.Close] at shutdown to end every open session.
type Handler struct {
	opts      Options
	logger    *slog.Logger
	maxBody   int64
	allowed   map[string]bool
	stateful  *mcp.StreamableHTTPHandler
	stateless *mcp.StreamableHTTPHandler
	mcp       http.Handler // the /mcp chain: host, origin, auth, router

	mu       sync.Mutex
	sessions map[string]*mcp.ServerSession // legacy sessions this handler opened
	pending  int                           // initializes in flight, holding a slot
	inflight sync.WaitGroup                // one per pending initialize
	closed   bool
}

// NewHandler returns the handler for opts. It panics if opts.Server is nil,
// a programming error.
func NewHandler(opts Options) *Handler {
	if opts.Server == nil {
		panic("httpserve: Options.Server is nil")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		opts:     opts,
		logger:   logger,
		maxBody:  opts.MaxBodyBytes,
		allowed:  make(map[string]bool, len(opts.AllowedOrigins)),
		sessions: make(map[string]*mcp.ServerSession),
	}
	if h.maxBody == 0 {
		h.maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	for _, o := range opts.AllowedOrigins {
		h.allowed[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	getServer := func(*http.Request) *mcp.Server { return opts.Server }
	sdkLogger := logger.With("component", "mcp-http")
	h.stateful = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		SessionTimeout:      opts.SessionIdle,
		MaxRequestBodyBytes: h.maxBody,
		Logger:              sdkLogger,
	})
	h.stateless = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          h.maxBody,
		PropagateRequestCancellation: true,
		Logger:                       sdkLogger,
	})

	var next http.Handler = http.HandlerFunc(h.route)
	if len(opts.BearerTokens) > 0 {
		next = auth.RequireBearerToken(staticVerifier(opts.BearerTokens), &auth.RequireBearerTokenOptions{
			Scopes:                 []string{bearerScope},
			AllowMissingExpiration: true,
		})(next)
	}
	h.mcp = h.checkOrigin(next)
	h.mcp = h.checkHost(h.mcp)
	return h
}

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case MCPPath:
		h.mcp.ServeHTTP(w, r)
	case HealthPath:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, `{"status":"ok"}`+"\n")
	default:
		http.NotFound(w, r)
	}
}

// Close closes every open legacy session and refuses new ones. Hanging GET
// streams of those sessions return. It waits for initializes in flight (so
// their sessions are closed too); stateless requests in flight finish
// normally. Close is idempotent.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	// No reserve succeeds once closed is set, so the count only falls.
	h.inflight.Wait()

	h.mu.Lock()
	open := make([]*mcp.ServerSession, 0, len(h.sessions))
	for _, ss := range h.sessions {
		open = append(open, ss)
	}
	clear(h.sessions)
	h.mu.Unlock()
	for _, ss := range open {
		ss.Close()
	}
}

// route sends a request to the handler of its era: a session header means a
// legacy session; an MCP-Protocol-Version of 2026-07-28 or later means the
// stateless era (the SDK client sets it on server/discover and on every
// later request); anything else is legacy (initialize, GET, DELETE).
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Header.Get(headerSessionID) != "":
		h.stateful.ServeHTTP(w, r)
	case r.Header.Get(headerProtocolVersion) >= statelessVersion:
		h.stateless.ServeHTTP(w, r)
	case r.Method == http.MethodPost:
		h.serveNewSession(w, r)
	default:
		h.stateful.ServeHTTP(w, r)
	}
}

// serveNewSession handles a legacy POST without a session: if it carries an
// initialize, it takes a slot under MaxSessions for the session the SDK opens.
func (h *Handler) serveNewSession(w http.ResponseWriter, r *http.Request) {
	body, err := h.readBody(w, r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes (frame_bytes limit)", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	}
	id, isInit := findInitialize(body)
	if !isInit {
		// The SDK answers it in a throwaway session it closes itself.
		h.stateful.ServeHTTP(w, r)
		return
	}

	if err := h.reserve(); err != nil {
		h.logger.Warn("refusing new HTTP session", "error", err)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		var data json.RawMessage
		if errors.Is(err, errSessionLimit) {
			data, _ = json.Marshal(map[string]any{"limit": "http_sessions", "max": h.opts.MaxSessions})
		}
		msg, encErr := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
			Code: codeLimit, Message: err.Error(), Data: data,
		}})
		if encErr == nil {
			w.Write(msg)
		}
		return
	}
	defer func() { h.register(w.Header().Get(headerSessionID)) }()
	h.stateful.ServeHTTP(w, r)
}

// readBody reads the whole body under the size cap and puts it back for the
// SDK handler.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	rd := io.Reader(r.Body)
	if h.maxBody > 0 {
		rd = http.MaxBytesReader(w, r.Body, h.maxBody)
	}
	body, err := io.ReadAll(rd)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// findInitialize reports whether body (a JSON-RPC message or batch) holds an
// initialize request, and that request's id. A malformed body is not an
// initialize; the SDK rejects it.
func findInitialize(body []byte) (jsonrpc.ID, bool) {
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var msgs []msg
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if json.Unmarshal(trimmed, &msgs) != nil {
			return jsonrpc.ID{}, false
		}
	} else {
		var m msg
		if json.Unmarshal(trimmed, &m) != nil {
			return jsonrpc.ID{}, false
		}
		msgs = []msg{m}
	}
	for _, m := range msgs {
		if m.Method != "initialize" {
			continue
		}
		var raw any
		if len(m.ID) > 0 && json.Unmarshal(m.ID, &raw) == nil {
			if id, err := jsonrpc.MakeID(raw); err == nil {
				return id, true
			}
		}
		return jsonrpc.ID{}, true
	}
	return jsonrpc.ID{}, false
}

// errSessionLimit is the refusal of a session beyond Options.MaxSessions.
var errSessionLimit = errors.New("limit http_sessions reached")

// reserve takes a slot for a session about to be opened, or says why not.
func (h *Handler) reserve() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("server is shutting down")
	}
	if h.opts.MaxSessions > 0 && len(h.sessions)+h.pending >= h.opts.MaxSessions {
		h.pruneLocked()
		if len(h.sessions)+h.pending >= h.opts.MaxSessions {
			return fmt.Errorf("%w: %d concurrent HTTP sessions are open; close one (DELETE) or raise limits.http_sessions", errSessionLimit, h.opts.MaxSessions)
		}
	}
	h.pending++
	h.inflight.Add(1)
	return nil
}

// register releases the slot taken by reserve and, if the SDK opened a
// session (it names it in the response header), tracks it.
func (h *Handler) register(sessionID string) {
	defer h.inflight.Done()
	var ss *mcp.ServerSession
	if sessionID != "" {
		for s := range h.opts.Server.Sessions() {
			if s.ID() == sessionID {
				ss = s
				break
			}
		}
	}
	h.mu.Lock()
	h.pending--
	closed := h.closed
	if ss != nil && !closed {
		h.sessions[sessionID] = ss
	}
	h.mu.Unlock()
	if ss != nil && closed {
		ss.Close()
	}
}

// pruneLocked forgets sessions that have ended (idle timeout, DELETE, client
// gone): the server no longer lists them.
func (h *Handler) pruneLocked() {
	live := make(map[*mcp.ServerSession]bool)
	for s := range h.opts.Server.Sessions() {
		live[s] = true
	}
	for id, ss := range h.sessions {
		if !live[ss] {
			delete(h.sessions, id)
		}
	}
}

// OpenSessions returns the number of legacy sessions currently open.
func (h *Handler) OpenSessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pruneLocked()
	return len(h.sessions)
}

// checkHost rejects DNS rebinding: a request that reached a loopback address
// must name a loopback host. (The SDK handlers check this too; doing it first
// keeps a rebinding request from reaching the body read or the session cap.)
func (h *Handler) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
			if isLoopbackHostPort(la.String()) && !isLoopbackHostPort(r.Host) {
				h.logger.Debug("rejected request: non-loopback Host on loopback listener", "host", r.Host)
				http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkOrigin rejects a browser request from a foreign origin. A request
// without Origin, a same-origin one (Origin's host:port is the Host) and one
// from AllowedOrigins pass; the last also gets CORS headers, and its
// preflight is answered here (before auth, as preflights carry no token).
func (h *Handler) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		if h.allowed[strings.ToLower(origin)] {
			hd := w.Header()
			hd.Set("Access-Control-Allow-Origin", origin)
			hd.Add("Vary", "Origin")
			hd.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				hd.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
				if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
					hd.Set("Access-Control-Allow-Headers", req)
				}
				hd.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if sameOrigin(origin, r) {
			next.ServeHTTP(w, r)
			return
		}
		h.logger.Debug("rejected request: origin not allowed", "origin", origin, "host", r.Host)
		http.Error(w, fmt.Sprintf("Forbidden: origin %q is not allowed", origin), http.StatusForbidden)
	})
}

// sameOrigin reports whether origin names the host and port the request was
// sent to. The scheme is not compared: behind a TLS-terminating proxy the
// request arrives as plain HTTP.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	reqScheme := "http"
	if r.TLS != nil {
		reqScheme = "https"
	}
	return strings.EqualFold(withPort(u.Host, u.Scheme), withPort(r.Host, reqScheme))
}

// withPort adds the scheme's default port to a host that has none.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// staticVerifier checks a presented token against the configured ones in
// constant time (over SHA-256 digests, so lengths do not leak). The user ID
// is the token's position, which binds a session to the token that opened it.
func staticVerifier(tokens []string) auth.TokenVerifier {
	sums := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		sums[i] = sha256.Sum256([]byte(t))
	}
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		got := sha256.Sum256([]byte(token))
		match := -1
		for i := range sums {
			if subtle.ConstantTimeCompare(got[:], sums[i][:]) == 1 && match < 0 {
				match = i
			}
		}
		if match < 0 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: []string{bearerScope}, UserID: "bearer-token-" + strconv.Itoa(match)}, nil
	}
}

// ErrUnauthenticatedListen is returned by [CheckListenAddr] for a
// non-loopback address without authentication.
var ErrUnauthenticatedListen = errors.New("non-loopback listen address needs authentication")

// CheckListenAddr refuses a listen address whose host is not loopback
// (127.0.0.0/8, ::1, "localhost") unless authentication is configured. An
// empty host, 0.0.0.0 and :: listen on every interface and count as
// non-loopback.
func CheckListenAddr(addr string, authConfigured bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid listen address %q: %w", addr, err)
	}
	if isLoopbackHost(host) || authConfigured {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q: %w: the MCP endpoint gives unrestricted access to the plugins' backends; "+
		"configure bearer tokens (config `http.bearer_tokens_file` or `http.bearer_tokens_env`) or listen on 127.0.0.1",
		addr, ErrUnauthenticatedListen)
}

// isLoopbackHostPort reports whether a "host[:port]" names a loopback host.
func isLoopbackHostPort(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return isLoopbackHost(strings.Trim(host, "[]"))
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if i := strings.IndexByte(host, '%'); i >= 0 { // zone
		host = host[:i]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServeOptions configures [ListenAndServe].
type ServeOptions struct {
	// Logger receives server errors; nil discards them.
	Logger *slog.Logger
	// Ready, if set, is called with the bound address (so ":0" works).
	Ready func(net.Addr)
	// TLS, if set, serves HTTPS with it (it must hold a certificate).
	TLS *tls.Config
}

// ListenAndServe listens on addr and serves h until ctx is done. It then
// shuts down gracefully, waiting at most 5 s for requests in flight before
// closing the remaining connections. If h has a Close method (a [*Handler]
// does), it is called at shutdown so hanging session streams end; a caller
// that wraps the Handler in its own mux must call [Handler.Close] itself. It
// returns nil after a shutdown caused by ctx, or the listen or serve error.
func ListenAndServe(ctx context.Context, addr string, h http.Handler, opts ServeOptions) error {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// No ReadTimeout or WriteTimeout: bodies may be large and SSE
		// responses long-lived; the session idle timeout bounds those.
	}
	if opts.Ready != nil {
		opts.Ready(ln.Addr())
	}

	serve := func() error { return srv.Serve(ln) }
	if opts.TLS != nil {
		srv.TLSConfig = opts.TLS.Clone()
		if srv.TLSConfig.MinVersion == 0 {
			srv.TLSConfig.MinVersion = tls.VersionTLS12
		}
		serve = func() error { return srv.ServeTLS(ln, "", "") } // certificates come from TLSConfig
	}
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// Closing the sessions ends their hanging GET streams, which Shutdown
	// would otherwise wait for. A session's Close waits for its tool calls,
	// so it runs beside Shutdown under the same bound.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		if c, ok := h.(interface{ Close() }); ok {
			c.Close()
		}
	}()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("HTTP shutdown timed out; closing connections", "error", err)
		srv.Close()
	}
	select {
	case <-closed:
	case <-sctx.Done():
		logger.Warn("closing MCP sessions timed out")
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}
