package httpserve

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/sessionstore"
)

// session is one legacy session this instance serves: an SDK server session
// over a StreamableServerTransport this package created. It keeps what the
// SDK's stateful handler keeps (the principal that opened it, an idle timer
// paused while POSTs run) and, for the SessionStore, a copy of the SDK's
// session state, which the SDK does not expose.
type session struct {
	h         *Handler
	id        string
	principal string // the token's UserID; "" without authentication
	ss        *mcp.ServerSession
	transport *mcp.StreamableServerTransport
	ids       *wire.Table
	// shared is set for a session whose record is in the SessionStore. Its
	// log level is the record's, whichever instance the client set it
	// through, so the SDK session's own level is pinned at the lowest (it
	// lets every log message through; see pinLevel) and the session's
	// replies are filtered by the record's level instead (see admits).
	shared bool

	mu    sync.Mutex
	state mcp.ServerSessionState // as saved in the store
	refs  int                    // POSTs in flight, which pause the idle timer
	timer *time.Timer            // nil without idle timeout, and once stopped
}

var (
	// errSessionLimit is the refusal of a session beyond Options.MaxSessions.
	errSessionLimit = errors.New("limit http_sessions reached")
	// errClosing is the refusal of a session after Handler.Close.
	errClosing = errors.New("server is shutting down")
)

// principal returns the UserID of the request's token ("" without one).
func principal(r *http.Request) string {
	if info := auth.TokenInfoFromContext(r.Context()); info != nil {
		return info.UserID
	}
	return ""
}

// open connects a new session over a fresh transport. An addressable
// session takes a slot under MaxSessions and is found by its id at once
// (the client learns the id from the response to the request that opens
// it); an ephemeral one serves the request that opened it and is closed
// after it, uncounted. A resumed session starts from state. owner is the
// principal the session belongs to, ids its id table; ctx carries values
// (the token) into the session, as in the SDK (which detaches the session
// from its cancellation).
func (h *Handler) open(ctx context.Context, id, owner string, addressable bool, state *mcp.ServerSessionState, ids *wire.Table) (*session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosing
	}
	if addressable {
		if s := h.sessions[id]; s != nil {
			return s, nil // resumed meanwhile by another request
		}
		if h.opts.MaxSessions > 0 && len(h.sessions) >= h.opts.MaxSessions {
			return nil, fmt.Errorf("%w: %d concurrent HTTP sessions are open; close one (DELETE) or raise limits.http_sessions", errSessionLimit, h.opts.MaxSessions)
		}
	}
	s := &session{h: h, id: id, principal: owner, ids: ids, shared: addressable && h.opts.SessionStore != nil}
	if state != nil {
		s.state = *state
	}
	sdkState := state
	if s.shared {
		pinned := s.state
		pinned.LogLevel = pinnedLevel
		sdkState = &pinned
	}
	s.transport = &mcp.StreamableServerTransport{SessionID: id}
	ss, err := h.opts.Server.Connect(ctx, s.transport, &mcp.ServerSessionOptions{State: sdkState})
	if err != nil {
		return nil, fmt.Errorf("connect session: %w", err)
	}
	s.ss = ss
	if opened := h.opts.SessionOpened; opened != nil && addressable {
		if err := opened(ss, owner); err != nil {
			ss.Close()
			return nil, fmt.Errorf("%w: %w", errClosing, err)
		}
	}
	if idle := h.opts.SessionIdle; idle > 0 && addressable {
		s.timer = time.AfterFunc(idle, func() {
			h.logger.Debug("HTTP session idle: closing it", "session", id)
			s.close()
		})
	}
	if addressable {
		h.sessions[id] = s
	} else {
		h.ephemeral[s] = struct{}{}
	}
	h.watchers.Add(1)
	go func() {
		defer h.watchers.Done()
		ss.Wait()
		s.stopTimer()
		h.forget(s)
	}()
	return s, nil
}

// forget removes s from the tables.
func (h *Handler) forget(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	delete(h.ephemeral, s)
}

// close ends the session on this instance: no request finds it any more,
// and its SDK session closes (which ends its streams and lets
// ServerSession.Wait return). Its store record, if any, stays. Close is
// idempotent.
func (s *session) close() {
	s.stopTimer()
	s.h.forget(s)
	s.ss.Close()
}

// startPOST pauses the idle timer while a POST runs.
func (s *session) startPOST() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer == nil {
		return
	}
	if s.refs == 0 {
		s.timer.Stop()
	}
	s.refs++
}

// endPOST restarts the idle timer when the last POST in flight ends.
func (s *session) endPOST() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer == nil {
		return
	}
	s.refs--
	if s.refs == 0 {
		s.timer.Reset(s.h.opts.SessionIdle)
	}
}

// stopTimer stops the idle timer for good.
func (s *session) stopTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// save changes the session's state with change and writes its record to the
// SessionStore. It is called before the client learns of the change, so
// that the next request finds it on any instance.
func (s *session) save(ctx context.Context, change func(*mcp.ServerSessionState)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(&s.state)
	state, err := json.Marshal(&s.state)
	if err != nil {
		return fmt.Errorf("encode session state: %w", err)
	}
	rec := sessionstore.Record{ID: s.id, Principal: s.principal, State: state, Expires: s.h.expiry()}
	if err := s.h.opts.SessionStore.Save(ctx, rec); err != nil {
		return fmt.Errorf("save session %s: %w", s.id, err)
	}
	return nil
}

// expiry is when a session record used now lapses (zero: never).
func (h *Handler) expiry() time.Time {
	if h.opts.SessionIdle <= 0 {
		return time.Time{}
	}
	return time.Now().Add(h.opts.SessionIdle)
}

// lookup finds the session a request names, answering the request itself
// (and reporting false) when it must not go on: 404 for an unknown session,
// 403 for another principal's, 503 when the store fails or a resumed session
// would exceed MaxSessions.
//
// With a SessionStore, the store decides: every request loads the session's
// record, which extends its expiry. A session without a record has ended
// (deleted through another instance, or expired): a copy this instance
// still holds is closed and the request gets 404. A session with a record
// but no copy here is resumed from the record's state when resume is set;
// without resume (DELETE), lookup then reports true with a nil session.
// A copy keeps the state it was resumed with but for the log level, which
// it reads from the record for every log message (see [session.admits]).
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request, id string, resume bool) (*session, bool) {
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	var owner string
	switch store := h.opts.SessionStore; {
	case store != nil:
		rec, found, err := store.Load(r.Context(), id, h.expiry())
		if err != nil {
			h.logger.Error("session store: load failed", "session", id, "error", err)
			http.Error(w, "session store unavailable", http.StatusServiceUnavailable)
			return nil, false
		}
		if !found {
			if s != nil {
				s.close()
			}
			http.Error(w, "session not found", http.StatusNotFound)
			return nil, false
		}
		owner = rec.Principal
		if s == nil && resume && mayUse(owner, r) {
			if s, err = h.resume(r, rec); err != nil {
				h.refuseSession(w, jsonrpc.ID{}, err)
				return nil, false
			}
		}
	case s == nil:
		http.Error(w, "session not found", http.StatusNotFound)
		return nil, false
	default:
		owner = s.principal
	}
	if !mayUse(owner, r) {
		h.refused("auth", "")
		http.Error(w, "session user mismatch", http.StatusForbidden)
		return nil, false
	}
	return s, true
}

// mayUse reports whether a request may use a session opened by owner: the
// same principal, or anyone when the session was opened without one.
func mayUse(owner string, r *http.Request) bool {
	return owner == "" || owner == principal(r)
}

// resume opens this instance's copy of a session another instance opened.
func (h *Handler) resume(r *http.Request, rec sessionstore.Record) (*session, error) {
	var state mcp.ServerSessionState
	if err := json.Unmarshal(rec.State, &state); err != nil {
		return nil, fmt.Errorf("decode state of session %s: %w", rec.ID, err)
	}
	s, err := h.open(r.Context(), rec.ID, rec.Principal, true, &state, wire.NewTable())
	if err == nil {
		h.logger.Debug("resumed HTTP session from the store", "session", rec.ID)
	}
	return s, err
}

// refuseSession answers a request for which no session could be opened.
func (h *Handler) refuseSession(w http.ResponseWriter, id jsonrpc.ID, err error) {
	h.logger.Warn("refusing HTTP session", "error", err)
	switch {
	case errors.Is(err, errSessionLimit):
		h.refused("limit", "http_sessions")
		refuseLimit(w, id, err, "http_sessions", int64(h.opts.MaxSessions))
	case errors.Is(err, errClosing):
		refuseLimit(w, id, err, "", 0)
	default:
		http.Error(w, "failed connection", http.StatusInternalServerError)
	}
}

// newSessionID returns a fresh session id, as the SDK's default does.
func newSessionID() string {
	return rand.Text()
}
