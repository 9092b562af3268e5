package respengine

import (
	"fmt"
	"strings"
	"time"
)

// Why the sidecar closed a session, for [Sessions.Broken] (see
// [ErrSessionReset]).
const (
	ResetEnded      = "a call on it was cancelled or timed out after its commands were sent"
	ResetFailed     = "a call on it failed after its commands were sent (a lost connection or a limit reached)"
	ResetSendFailed = "a send on it failed after writing had started"
)

// whyIdle is why the reaper closed a session.
func whyIdle(idle time.Duration) string {
	return fmt.Sprintf("it was unused for longer than %s (limit %s)", idle, LimitSessionIdle)
}

// reset records a session the sidecar closed without being asked, so that
// the next call on it is told rather than run, silently, on a connection
// without the state the caller set up (another database, no transaction).
type reset struct {
	principal, owner string
	id               string // DefaultSession or the handle
	why              string // what closed it
	lost             string // the state lost with the connection
	at               time.Time
}

// markLocked records that s is being closed for why. The caller holds r.mu.
func (r *Sessions) markLocked(s *Session, why string) {
	if s.closed || s.conn == nil { // a session that never connected holds no state
		return
	}
	key := s.id
	if s.id == DefaultSession {
		key = scopeKey(Scope{Principal: s.principal, Owner: s.owner})
	}
	r.resets[key] = &reset{principal: s.principal, owner: s.owner, id: s.id, why: why, lost: s.lostLocked(), at: time.Now()}
}

// lostLocked names the state a closed connection of s takes with it: what
// the sidecar saw the caller set, then what it cannot see.
func (s *Session) lostLocked() string {
	var parts []string
	if s.database != s.target.Database {
		parts = append(parts, fmt.Sprintf("database %d (a new connection starts on database %d)", s.database, s.target.Database))
	} else {
		parts = append(parts, fmt.Sprintf("the selected database (%d)", s.database))
	}
	if s.protocol != s.target.Protocol {
		parts = append(parts, fmt.Sprintf("protocol RESP%d (a new connection negotiates RESP%d)", s.protocol, s.target.Protocol))
	}
	if s.multi {
		parts = append(parts, "an open MULTI transaction (its queued commands were discarded)")
	}
	if s.manual {
		parts = append(parts, "its subscriptions, blocked commands and unread replies")
	}
	return strings.Join(parts, ", ") + ", and any WATCH, CLIENT settings (SETNAME, TRACKING, NO-EVICT, ...) and other connection state"
}

// takeResetLocked returns the error for a call on the closed session key
// names and, for a default session, forgets the mark: the call after runs
// on a new connection. A handle's mark stays until it expires (sweepResets).
func (r *Sessions) takeResetLocked(sc Scope, key string) error {
	m := r.resets[key]
	if m == nil || m.principal != sc.Principal || m.owner != sc.Owner {
		return nil
	}
	if m.id == DefaultSession {
		delete(r.resets, key)
		return errorf(ErrSessionReset, "the default session was reset: %s, so its connection was closed and with it %s. "+
			"Nothing was sent by this call; call again to run on a new connection, after restoring the state your commands need (e.g. SELECT)",
			m.why, m.lost)
	}
	return errorf(ErrSessionReset, "session %q was reset: %s, so its connection was closed and with it %s. "+
		"Nothing was sent; a session is never reconnected: open a new one with the session tool's open action", m.id, m.why, m.lost)
}

// sweepResets forgets the marks of handles closed longer than session_idle
// ago: their handles then answer session_not_found. A default session's
// mark stays until a call is told, or its client session ends.
func (r *Sessions) sweepResets(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, m := range r.resets {
		if m.id != DefaultSession && now.Sub(m.at) >= r.idle {
			delete(r.resets, key)
		}
	}
}

// forgetResetsLocked drops the marks match selects. The caller holds r.mu.
func (r *Sessions) forgetResetsLocked(match func(*reset) bool) {
	for key, m := range r.resets {
		if match(m) {
			delete(r.resets, key)
		}
	}
}
