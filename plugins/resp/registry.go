package resp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultSession is the session name of a caller's default session, as
// execute reports it and accepts it.
const DefaultSession = "default"

// Session modes.
const (
	ModeRESP = "resp"
	ModeRaw  = "raw"
)

// Error kinds of this plugin, besides the core's.
const (
	// KindSessionNotFound: an unknown, closed or expired session handle, or
	// one that belongs to another caller or client session.
	KindSessionNotFound = "session_not_found"
	// KindConnection: the target could not be reached (or failed a
	// read-only registry query); nothing was written.
	KindConnection = "unavailable"
	// KindConnectionLost: the connection failed after commands were written
	// to it: what reached the server has unknown outcomes (the partial
	// result says how many), the connection is closed, nothing is retried.
	KindConnectionLost = "connection_lost"
	// KindRefused: a command that execute does not run (unusual reply
	// shape), or an operation the session's mode does not allow.
	KindRefused = "refused"
	// KindSessionReset: the session's connection was closed by the sidecar
	// (a call cancelled or timed out after dispatch, a failed connection,
	// idle expiry), and with it its state (database, protocol, MULTI,
	// WATCH, CLIENT settings, subscriptions); nothing was sent. The default
	// session reports it to its next call only, and the call after that
	// runs on a new connection; a handle reports it until it is forgotten
	// (session_idle later), and is never reconnected.
	KindSessionReset = "session_reset"
)

// session is one RESP connection with its owner. Calls on it pass its gate
// one at a time (an execute holds it throughout; a send or receive only
// passes it); the fields under the registry's mutex say whether it is
// busy, when it was last used, and whether it was closed.
type session struct {
	id        string // DefaultSession or a handle
	principal string
	owner     string // the MCP client session it belongs to; "" for principal-wide
	target    *target
	protocol  int
	database  int
	mode      string
	opened    time.Time
	gate      chan struct{} // one token: see above

	// Under the gate: memory for execute's replies, reused from call to
	// call (nil while a call uses it, and after one whose replies the host
	// may still read).
	replies []resp.Value

	// Under registry.mu.
	conn     *resp.Conn
	manual   bool // one-way: once send/receive were used, execute is refused
	multi    bool // a MULTI answered OK and no EXEC or DISCARD since (observe)
	busy     int  // calls in progress or waiting for the gate
	lastUsed time.Time
	closed   bool
}

// registry holds every session of the plugin.
type registry struct {
	host   *mcpcore.Host
	cfg    *settings
	max    int
	idle   time.Duration
	reaper sync.WaitGroup

	mu       sync.Mutex
	handles  map[string]*session // explicit handles by id
	defaults map[string]*session // default sessions by scopeKey
	pending  int                 // sessions being dialled, counted against max
	closed   bool
	// resets holds what the sidecar closed without being asked: a default
	// session's by scopeKey, a handle's by id (see KindSessionReset).
	resets map[string]*reset
}

func newRegistry(h *mcpcore.Host, cfg *settings) *registry {
	return &registry{host: h, cfg: cfg, max: int(h.Limit(LimitMaxSessions)), idle: time.Duration(h.Limit(LimitSessionIdle)),
		handles: map[string]*session{}, defaults: map[string]*session{}, resets: map[string]*reset{}}
}

// scope is who a session belongs to: the caller's principal and its MCP
// client session.
type scope = respengine.Scope

func scopeKey(s scope) string { return s.Principal + "\x00" + s.Owner }

// statelessEra is the first MCP protocol version whose clients send every
// request on its own (no session that outlives it over HTTP).
const statelessEra = "2026-07-28"

// scopeOf returns the scope of a request: its principal and its client
// session, except for a client of the 2026-07-28 era, whose session does
// not outlive a request over HTTP: its scope is its principal alone.
func (r *registry) scopeOf(req *mcp.CallToolRequest) scope {
	sc := scope{Principal: mcpcore.Principal(req)}
	if s := r.host.SessionOf(req); s != nil {
		if ip := s.ServerSession().InitializeParams(); ip != nil && ip.ProtocolVersion < statelessEra {
			sc.Owner = s.ID()
		}
	}
	return sc
}

// sessionNotFound is the error for a handle the caller cannot use; it says
// the same whether the handle never existed or belongs to someone else.
func sessionNotFound(id string) error {
	return mcpcore.Errorf(KindSessionNotFound, "session %q is not open for this caller (unknown, closed, expired, or another client's): open one with the session tool's open action, or use the default session", id)
}

// find returns the session a call names ("" or DefaultSession: the
// caller's default session, created unconnected on first use). A session
// the sidecar closed fails with KindSessionReset (see takeResetLocked).
func (r *registry) find(sc scope, id string) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, mcpcore.Errorf(mcpcore.KindUnavailable, "%w", mcpcore.ErrClosed)
	}
	if id == "" || id == DefaultSession {
		key := scopeKey(sc)
		if s := r.defaults[key]; s != nil {
			return s, nil
		}
		if err := r.takeResetLocked(sc, key); err != nil {
			return nil, err
		}
		if err := r.reserveLocked(); err != nil {
			return nil, err
		}
		r.pending--
		t := r.cfg.targets[r.cfg.defaultTarget]
		s := r.newSession(DefaultSession, sc, t, t.Protocol, t.Database, ModeRESP)
		r.defaults[key] = s
		return s, nil
	}
	s := r.handles[id]
	if s == nil {
		if err := r.takeResetLocked(sc, id); err != nil {
			return nil, err
		}
	}
	if s == nil || s.principal != sc.Principal || s.owner != sc.Owner {
		return nil, sessionNotFound(id)
	}
	return s, nil
}

func (r *registry) newSession(id string, sc scope, t *target, protocol, database int, mode string) *session {
	now := time.Now()
	return &session{id: id, principal: sc.Principal, owner: sc.Owner, target: t, protocol: protocol, database: database,
		mode: mode, opened: now, lastUsed: now, gate: make(chan struct{}, 1)}
}

// reserveLocked counts one more session against max_sessions.
func (r *registry) reserveLocked() error {
	if n := len(r.handles) + len(r.defaults) + r.pending; n >= r.max {
		return &mcpcore.LimitError{Limit: LimitMaxSessions, Max: int64(r.max), Actual: int64(n + 1),
			Detail: "every RESP session is in use; close one (session tool, action close) or wait for idle ones to expire"}
	}
	r.pending++
	return nil
}

// open dials a new explicit session and registers it under a fresh,
// unguessable handle.
func (r *registry) open(ctx context.Context, sc scope, t *target, protocol, database int, mode string) (*session, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, mcpcore.Errorf(mcpcore.KindUnavailable, "%w", mcpcore.ErrClosed)
	}
	if err := r.reserveLocked(); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	r.mu.Unlock()
	s := r.newSession(newHandle(), sc, t, protocol, database, mode)
	conn, err := dial(ctx, s)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending--
	if err == nil && r.closed {
		err = mcpcore.Errorf(mcpcore.KindUnavailable, "%w", mcpcore.ErrClosed)
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, err
	}
	s.conn = conn
	r.handles[s.id] = s
	return s, nil
}

// newHandle returns 128 random bits: a handle cannot be guessed.
func newHandle() string {
	var b [16]byte
	rand.Read(b[:])
	return "rs_" + hex.EncodeToString(b[:])
}

// dial connects to the session's target. Errors name the target, never a
// credential.
func dial(ctx context.Context, s *session) (*resp.Conn, error) {
	t := s.target
	opts := resp.DialOptions{Addr: t.Addr, Protocol: s.protocol, Username: t.Username, Password: t.Password(),
		Database: s.database, ConnectTimeout: connectTimeout}
	if t.TLS != nil {
		opts.TLS = t.TLS.Clone()
	}
	conn, err := resp.Dial(ctx, opts)
	if err != nil {
		return nil, mcpcore.Errorf(KindConnection, "target %q (%s): cannot connect: %w; nothing was sent", t.Name, t.Addr, err)
	}
	return conn, nil
}

// acquire waits for the session's gate: calls on one session run one at a
// time. Waiting is before anything is sent, so a ctx that ends here leaves
// the session as it was. The caller must call release.
func (r *registry) acquire(ctx context.Context, s *session) error {
	r.mu.Lock()
	if s.closed {
		r.mu.Unlock()
		return sessionNotFound(s.id)
	}
	s.busy++
	r.mu.Unlock()
	select {
	case s.gate <- struct{}{}:
	case <-ctx.Done():
		r.mu.Lock()
		s.busy--
		s.lastUsed = time.Now()
		r.mu.Unlock()
		return fmt.Errorf("waiting for session %q, busy with another call; nothing was sent: %w", s.id, context.Cause(ctx))
	}
	r.mu.Lock()
	closed := s.closed
	r.mu.Unlock()
	if closed {
		r.release(s)
		return sessionNotFound(s.id)
	}
	return nil
}

// use finds the session a call names and waits for its gate (see
// acquire). When the session was closed meanwhile, it looks again: find
// reports a reset (nothing had been sent on this call's behalf), or a
// handle its caller closed, or uses a fresh default session when its
// caller closed the old one.
func (r *registry) use(ctx context.Context, sc scope, id string) (*session, error) {
	for {
		s, err := r.find(sc, id)
		if err != nil {
			return nil, err
		}
		err = r.acquire(ctx, s)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil || !r.isClosed(s) {
			return nil, err
		}
	}
}

func (r *registry) isClosed(s *session) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.closed
}

// isManual reports whether s switched to manual mode.
func (r *registry) isManual(s *session) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.manual
}

// setManual switches s to manual mode, for good.
func (r *registry) setManual(s *session) {
	r.mu.Lock()
	s.manual = true
	r.mu.Unlock()
}

// observe keeps s's protocol and database as its own commands change them
// (a HELLO with a version, a SELECT answered OK), so that list tells the
// truth, and whether a MULTI is open, so that a reset names what it lost.
// Inside MULTI they are only queued: a SELECT then answers QUEUED and is
// not taken.
func (r *registry) observe(s *session, cmds Commands, replies []resp.Value) {
	for i := range min(len(cmds), len(replies)) {
		r.observeOne(s, cmds[i], &replies[i])
	}
}

// observeOne is observe for one command and its reply.
func (r *registry) observeOne(s *session, cmd [][]byte, reply *resp.Value) {
	if len(cmd) == 1 {
		r.observeMulti(s, cmd[0], *reply)
	}
	if reply.IsError() || len(cmd) != 2 {
		return
	}
	n, err := strconv.Atoi(string(cmd[1]))
	if err != nil {
		return
	}
	switch name := strings.ToUpper(string(cmd[0])); {
	case name == "HELLO" && (n == 2 || n == 3) && (reply.Kind == resp.KindMap || reply.Kind == resp.KindArray):
		r.mu.Lock()
		s.protocol = n
		r.mu.Unlock()
	case name == "SELECT" && string(reply.Str) == "OK":
		r.mu.Lock()
		s.database = n
		r.mu.Unlock()
	}
}

// observeMulti follows MULTI, EXEC and DISCARD (name) and their reply.
func (r *registry) observeMulti(s *session, name []byte, reply resp.Value) {
	var open bool
	switch {
	case strings.EqualFold(string(name), "MULTI"):
		open = !reply.IsError()
	case strings.EqualFold(string(name), "EXEC"), strings.EqualFold(string(name), "DISCARD"):
	default:
		return
	}
	r.mu.Lock()
	s.multi = open
	r.mu.Unlock()
}

// info describes s.
func (r *registry) info(s *session) SessionInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return SessionInfo{Session: s.id, Target: s.target.Name, Protocol: s.protocol, Database: s.database, Mode: s.mode,
		Manual: s.manual, Busy: s.busy > 0, IdleMS: time.Since(s.lastUsed).Milliseconds()}
}

// release ends a call on s.
func (r *registry) release(s *session) {
	<-s.gate
	r.done(s)
}

// done ends a call on s that already gave its gate back (a manual one).
func (r *registry) done(s *session) {
	r.mu.Lock()
	s.busy--
	s.lastUsed = time.Now()
	r.mu.Unlock()
}

// conn returns the session's connection, dialling the default session's on
// first use (or after a failure closed it). The caller holds the gate.
func (r *registry) conn(ctx context.Context, s *session) (*resp.Conn, error) {
	r.mu.Lock()
	c := s.conn
	r.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := dial(ctx, s)
	if err != nil {
		r.broken(s, "") // a default session without a connection holds no slot, and no state
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.closed {
		c.Close()
		return nil, sessionNotFound(s.id)
	}
	s.conn = c
	return c, nil
}

// broken closes a session whose connection failed or whose call ended
// after dispatch (why says which): its state is unknown, so it is never
// reused. Its next call is told (KindSessionReset); a default session is
// then re-created (and re-dialled) by the call after. why "" closes it
// without a mark: its caller asked, or it never connected.
func (r *registry) broken(s *session, why string) {
	r.mu.Lock()
	if why != "" {
		r.markLocked(s, why)
	}
	c := r.removeLocked(s)
	r.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// closeSession closes the session named id of sc's caller.
func (r *registry) closeSession(sc scope, id string) error {
	if id == "" || id == DefaultSession {
		r.mu.Lock()
		s := r.defaults[scopeKey(sc)]
		r.mu.Unlock()
		if s == nil {
			return nil
		}
		r.broken(s, "")
		return nil
	}
	s, err := r.find(sc, id)
	if err != nil {
		return err
	}
	r.broken(s, "")
	return nil
}

// removeLocked unregisters s and returns its connection to close (outside
// the lock), or nil.
func (r *registry) removeLocked(s *session) *resp.Conn {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.id == DefaultSession {
		if r.defaults[scopeKey(scope{Principal: s.principal, Owner: s.owner})] == s {
			delete(r.defaults, scopeKey(scope{Principal: s.principal, Owner: s.owner}))
		}
	} else {
		delete(r.handles, s.id)
	}
	c := s.conn
	s.conn = nil
	return c
}

// closeWhere closes every session for which match is true, marking each
// reset for why unless why is "" (see broken).
func (r *registry) closeWhere(why string, match func(*session) bool) {
	var conns []*resp.Conn
	r.mu.Lock()
	for _, m := range []map[string]*session{r.handles, r.defaults} {
		for _, s := range m {
			if match(s) {
				if why != "" {
					r.markLocked(s, why)
				}
				if c := r.removeLocked(s); c != nil {
					conns = append(conns, c)
				}
			}
		}
	}
	r.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// endClientSession closes the sessions of an MCP client session that ended.
func (r *registry) endClientSession(cs *mcpcore.Session) {
	r.closeWhere("", func(s *session) bool { return s.owner != "" && s.owner == cs.ID() && s.principal == cs.Principal() })
	r.mu.Lock()
	r.forgetResetsLocked(func(m *reset) bool { return m.owner != "" && m.owner == cs.ID() && m.principal == cs.Principal() })
	r.mu.Unlock()
}

// list returns the caller's sessions, by handle, the default first.
func (r *registry) list(sc scope) []*session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*session
	if s := r.defaults[scopeKey(sc)]; s != nil {
		out = append(out, s)
	}
	var mine []*session
	for _, s := range r.handles {
		if s.principal == sc.Principal && s.owner == sc.Owner {
			mine = append(mine, s)
		}
	}
	slices.SortFunc(mine, func(a, b *session) int { return a.opened.Compare(b.opened) })
	return append(out, mine...)
}

// startReaper closes sessions idle longer than session_idle, until ctx
// (the server's lifetime) ends; close waits for it.
func (r *registry) startReaper(ctx context.Context) {
	every := min(max(r.idle/4, 50*time.Millisecond), 30*time.Second)
	r.reaper.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				r.sweepResets(now)
				r.closeWhere(whyIdle(r.idle), func(s *session) bool { return s.busy == 0 && now.Sub(s.lastUsed) >= r.idle })
			}
		}
	})
}

// close waits for the reaper (the server's lifetime has ended) and closes
// every session; later calls find the registry closed.
func (r *registry) close() error {
	r.reaper.Wait()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.closeWhere("", func(*session) bool { return true })
	return nil
}
