package respadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpkit/mcpkit/internal/bearer"
	"github.com/mcpkit/mcpkit/pkg/resp"
)

// Defaults of [Options] fields left zero.
const (
	DefaultCommandTimeout = 10 * time.Second
	DefaultIdleConns      = 8
)

// Options configures a [Server].
type Options struct {
	// Target is how the gateway reaches its one RESP server (address,
	// credentials, TLS, database). Every connection is dialled with it.
	Target resp.DialOptions
	// Tokens are the bearer tokens and their roles. Without any, every
	// request acts as admin and the gateway must listen on loopback only.
	Tokens []Token
	// AuditFile is the append-only JSON-lines file every POST is recorded
	// in (created 0600 if absent). Empty: POST routes answer 503.
	AuditFile string
	// Reveal is the least role that may see key values (RoleNone: nobody).
	Reveal Role
	// ReplicationExport enables GET /api/replication/snapshot (admin).
	ReplicationExport bool
	// CommandTimeout bounds the target commands of one request
	// (0: DefaultCommandTimeout). A snapshot is bounded by SnapshotTimeout.
	CommandTimeout time.Duration
	// SnapshotTimeout bounds one snapshot download (0: 5 minutes).
	SnapshotTimeout time.Duration
	// IdleConns is how many idle target connections are kept for reuse
	// (0: DefaultIdleConns).
	IdleConns int
	// Live bounds the /api/live WebSocket connections.
	Live LiveOptions
	// Logger receives the gateway's diagnostics (nil: discarded). It never
	// receives a token, a password or a key's value.
	Logger *slog.Logger
}

// Server is the management gateway: an http.Handler serving the routes of
// [Server.OpenAPI] for one target. It is safe for concurrent use; Close
// ends its live connections and closes its target connections.
type Server struct {
	opts     Options
	logger   *slog.Logger
	verifier []roleVerifier // strongest role first
	mux      *http.ServeMux
	pool     *pool
	audit    *auditLog
	life     context.Context
	stop     context.CancelFunc
	live     liveSet
	closing  sync.Once
	routes   []*route
	openapi  []byte
	descs    sync.Map // the metrics' descriptors (metrics.go)
}

// roleVerifier accepts the tokens of one role.
type roleVerifier struct {
	role   Role
	tokens *bearer.Set
}

// New checks opts and returns a Server. It opens the audit file (so a bad
// path fails here) but connects to nothing: the first request dials.
func New(opts Options) (*Server, error) {
	if opts.CommandTimeout <= 0 {
		opts.CommandTimeout = DefaultCommandTimeout
	}
	if opts.SnapshotTimeout <= 0 {
		opts.SnapshotTimeout = 5 * time.Minute
	}
	if opts.IdleConns <= 0 {
		opts.IdleConns = DefaultIdleConns
	}
	if err := opts.Live.fill(); err != nil {
		return nil, err
	}
	if opts.Target.Addr == "" {
		return nil, errors.New("respadmin: no target address")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, logger: logger, pool: newPool(opts.Target, opts.IdleConns)}
	byRole := map[Role][]string{}
	for _, t := range opts.Tokens {
		byRole[t.Role] = append(byRole[t.Role], t.Secret)
	}
	for _, r := range []Role{RoleAdmin, RoleOperator, RoleViewer} {
		if len(byRole[r]) > 0 {
			s.verifier = append(s.verifier, roleVerifier{role: r, tokens: bearer.NewSet(byRole[r])})
		}
	}
	if opts.AuditFile != "" {
		a, err := openAudit(opts.AuditFile)
		if err != nil {
			return nil, err
		}
		s.audit = a
	}
	s.life, s.stop = context.WithCancel(context.Background())
	s.routes = s.routeTable()
	s.mux = http.NewServeMux()
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	s.mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &Error{Status: http.StatusNotFound, Kind: "not_found", Message: fmt.Sprintf("no route %s %s (see GET /api/openapi.json)", r.Method, r.URL.Path)})
	}))
	s.openapi = s.buildOpenAPI()
	return s, nil
}

// Authenticated reports whether bearer tokens are configured, which
// httpserve.ListenAndServe requires for a listen address beyond loopback.
func (s *Server) Authenticated() bool { return len(s.verifier) > 0 }

// Close ends every live connection (waiting for their goroutines), closes
// the idle target connections and the audit file. Requests in progress
// fail. It is idempotent.
func (s *Server) Close() {
	s.closing.Do(func() {
		s.stop()
		s.live.wait()
		s.pool.close()
		if s.audit != nil {
			s.audit.close()
		}
	})
}

// ServeHTTP serves the gateway's routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// caller is who sent a request: the token's identity and role.
type caller struct {
	id   string // "token:<16 hex>" or "anonymous"
	role Role
}

// Error is a refused or failed request, sent as
// {"error": {"kind", "message"}} with Status.
type Error struct {
	Status  int
	Kind    string // bad_request, unauthorized, forbidden, not_found, confirmation_required, disabled, too_large, target_error, unavailable, internal
	Message string
}

// Error returns "kind: message".
func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// The error kinds, with their statuses.
func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Kind: "bad_request", Message: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *Error {
	return &Error{Status: http.StatusForbidden, Kind: "forbidden", Message: fmt.Sprintf(format, args...)}
}

// targetError is a server error reply to a command the gateway sent.
func targetError(cmd string, v resp.Value) *Error {
	return &Error{Status: http.StatusBadGateway, Kind: "target_error", Message: fmt.Sprintf("%s: %s", cmd, v.ErrorText())}
}

// unavailable is a failure to reach or talk to the target.
func unavailable(err error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Kind: "unavailable", Message: err.Error()}
}

func writeError(w http.ResponseWriter, e *Error) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpkit-resp-admin"`)
	}
	writeJSON(w, e.Status, map[string]any{"error": map[string]string{"kind": e.Kind, "message": e.Message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"kind":"internal","message":"the reply does not encode as JSON"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// asError makes err an *Error: itself when it is one, else unavailable
// (a failure talking to the target).
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return unavailable(err)
}

// wrap puts the checks every route shares in front of rt: Host and Origin
// (against DNS rebinding and cross-site requests), the bearer token, the
// route's role; and the audit record: of every POST (servePost), of every
// refused request, and of the reads a route marks (auditMark).
func (s *Server) wrap(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ra *readAudit
		if s.audit != nil {
			ra = &readAudit{rec: auditEntry{Who: whoUnauthenticated, Role: RoleNone.String(), Method: r.Method, Path: rt.path}}
		}
		refuse := func(e *Error) {
			s.auditEnd(ra, e)
			writeError(w, e)
		}
		if e := checkSite(r); e != nil {
			refuse(e)
			return
		}
		c, e := s.authenticate(r)
		if e != nil {
			refuse(e)
			return
		}
		if rt.method == http.MethodPost {
			s.servePost(w, r, rt, c)
			return
		}
		if ra != nil {
			ra.rec.Who, ra.rec.Role = c.id, c.role.String()
			r = r.WithContext(context.WithValue(r.Context(), readAuditKey{}, ra))
			if rt.audit != "" {
				auditMark(r, rt.audit, "")
			}
		}
		if c.role < rt.role {
			refuse(forbidden("%s %s needs role %s; the token has %s", rt.method, rt.path, rt.role, c.role))
			return
		}
		if err := rt.get(s, w, r, c); err != nil {
			refuse(asError(err))
		}
	})
}

// authenticate returns the caller of r: admin "anonymous" without tokens,
// else the role of the bearer token (401 without a valid one).
func (s *Server) authenticate(r *http.Request) (caller, *Error) {
	if len(s.verifier) == 0 {
		return caller{id: "anonymous", role: RoleAdmin}, nil
	}
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return caller{}, &Error{Status: http.StatusUnauthorized, Kind: "unauthorized", Message: "a bearer token is required (Authorization: Bearer <token>)"}
	}
	for _, v := range s.verifier {
		if id, ok := v.tokens.Match(token); ok {
			return caller{id: id, role: v.role}, nil
		}
	}
	return caller{}, &Error{Status: http.StatusUnauthorized, Kind: "unauthorized", Message: "the bearer token is not valid"}
}

// checkSite refuses a request that reached a loopback listener under a
// name that is not loopback (DNS rebinding), and a browser request from
// another origin.
func checkSite(r *http.Request) *Error {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
		if isLoopback(la.String()) && !isLoopback(r.Host) {
			return forbidden("invalid Host header %q for a loopback listener", r.Host)
		}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return forbidden("origin %q is not allowed", o)
		}
	}
	return nil
}

// isLoopback reports whether "host[:port]" names a loopback host.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ctx returns the context of one request's target commands.
func (s *Server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.opts.CommandTimeout)
}
