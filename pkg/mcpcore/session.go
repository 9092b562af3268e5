package mcpcore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Session is one client session as the host tracks it: from the first
// message the server receives on an SDK [*mcp.ServerSession] until that
// session ends (stdio EOF, HTTP DELETE, idle expiry, a vanished client, or
// [Server.Close]). Plugins key per-session resources by it and free them in
// an end hook ([Host.OnSessionEnd]).
//
// In the 2026-07-28 era, HTTP is stateless: every request is its own
// ephemeral session that ends with the request. A plugin sees such a
// session start and end around each request, so state that must outlive a
// request is keyed by [Session.Principal] (or handed to the client as a
// handle), not by the session.
type Session struct {
	id        string
	principal string
	ss        *mcp.ServerSession
	seq       uint64
	start     time.Time // for mcp.server.session.duration
}

// ID identifies the session among the live ones: the Mcp-Session-Id of a
// legacy HTTP session, else an id the host assigns ("s-<n>"). It is not a
// credential.
func (s *Session) ID() string { return s.id }

// Principal is the authenticated caller that opened the session (see
// [Principal]); "" when unauthenticated, as on stdio.
func (s *Session) Principal() string { return s.principal }

// ServerSession is the SDK session, through which a plugin sends the
// client notifications: Log, ResourceUpdated, NotifyProgress. Sending on a
// session that has ended fails harmlessly with an error. To notify a
// session other than the one a request came on, pass a context that is not
// that request's ([Host.Context] will do): the SDK takes a request's own log
// level from its context.
func (s *Session) ServerSession() *mcp.ServerSession { return s.ss }

// Principal returns the stable identity of the authenticated caller of req
// (the verified token's user id), or "" when the request was not
// authenticated (stdio, HTTP without tokens). Plugins scope their own
// handles with it exactly as the host scopes retained results: a handle
// made by one principal is unknown to every other.
func Principal(req mcp.Request) string {
	if req == nil {
		return ""
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return ex.TokenInfo.UserID
	}
	return ""
}

// OnSessionEnd registers fn to run once for every tracked session when it
// ends, on a goroutine the host owns, before the plugin's Close. A panic in
// fn is recovered and logged. For Attach only.
func (h *Host) OnSessionEnd(fn func(*Session)) {
	if fn == nil {
		h.fail(errors.New("OnSessionEnd: nil hook"))
		return
	}
	h.sessionEnd = append(h.sessionEnd, fn)
}

// Sessions lists the live sessions in the order they started, for example
// to send each of a principal's sessions a notification.
func (h *Host) Sessions() []*Session { return h.srv.sessions.list() }

// SessionOf returns the session a request arrived on, or nil for a request
// the host did not receive (a client-side request).
func (h *Host) SessionOf(req mcp.Request) *Session {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok {
		return nil
	}
	return h.srv.sessions.get(ss)
}

// sessionTable tracks the live sessions of one server: one goroutine per
// session waits for its end and runs the plugins' end hooks.
type sessionTable struct {
	mu       sync.RWMutex
	live     map[*mcp.ServerSession]*Session
	seq      uint64
	closing  bool
	watchers sync.WaitGroup
}

func (t *sessionTable) init() { t.live = map[*mcp.ServerSession]*Session{} }

// trackSessions is the receiving middleware that registers a session on
// its first message.
func (s *Server) trackSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && s.sessions.get(ss) == nil {
			if !s.sessions.add(s, ss, Principal(req)) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ErrClosed.Error()}
			}
		}
		return next(ctx, method, req)
	}
}

func (t *sessionTable) get(ss *mcp.ServerSession) *Session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.live[ss]
}

// TrackSession registers ss, opened by principal, as a live session now,
// before it receives a message (the host registers every other session at
// its first message). A transport calls it for a session that may serve
// the server's notifications without ever receiving a request: a legacy
// HTTP session resumed from the shared store to carry the client's
// standalone GET stream. It fails with [ErrClosed] once the server is
// closing; registering a session twice is harmless.
func (s *Server) TrackSession(ss *mcp.ServerSession, principal string) error {
	if !s.sessions.add(s, ss, principal) {
		return ErrClosed
	}
	return nil
}

// add registers ss, unless it is registered already, and starts its
// watcher. It returns false once the server is closing.
func (t *sessionTable) add(s *Server, ss *mcp.ServerSession, principal string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return false
	}
	if t.live[ss] != nil {
		return true
	}
	t.seq++
	sess := &Session{id: ss.ID(), principal: principal, ss: ss, seq: t.seq, start: time.Now()}
	if sess.id == "" {
		sess.id = "s-" + strconv.FormatUint(t.seq, 10)
	}
	t.live[ss] = sess
	t.watchers.Go(func() {
		_ = ss.Wait() // how it ended does not matter here: it ended
		t.mu.Lock()
		delete(t.live, ss)
		t.mu.Unlock()
		s.obs.recordSession(sess)
		for _, h := range s.hosts {
			for _, fn := range h.sessionEnd {
				s.runEndHook(h, fn, sess)
			}
		}
	})
	return true
}

func (s *Server) runEndHook(h *Host, fn func(*Session), sess *Session) {
	defer func() {
		if r := recover(); r != nil {
			s.recovered(context.Background(), h.logger, "session end hook", r)
		}
	}()
	fn(sess)
}

func (t *sessionTable) list() []*Session {
	t.mu.RLock()
	out := make([]*Session, 0, len(t.live))
	for _, sess := range t.live {
		out = append(out, sess)
	}
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Session) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func (t *sessionTable) count() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.live)
}

// closeAll refuses new sessions, closes the live ones and waits until every
// watcher has run the end hooks.
func (t *sessionTable) closeAll() {
	t.mu.Lock()
	t.closing = true
	open := make([]*mcp.ServerSession, 0, len(t.live))
	for ss := range t.live {
		open = append(open, ss)
	}
	t.mu.Unlock()
	for _, ss := range open {
		_ = ss.Close() // the watcher sees it end
	}
	t.watchers.Wait()
}
