package action

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action/internal/ttlmap"
	segjson "github.com/segmentio/encoding/json"
)

// Session defaults (see [Sessions]).
const (
	DefaultSessionCookie   = "mcpkit_session"
	DefaultSessionTTL      = 24 * time.Hour // Keryx's SESSION_TTL
	DefaultMaxSessionBytes = 64 << 10
)

// SessionStore keeps web sessions' data (a JSON object) by session id.
// Implementations are safe for concurrent use; a session past its expiry
// is absent to every method. A shared one (Redis) lets every instance of
// an app serve every session.
type SessionStore interface {
	// Load returns session id's data and whether the session is live; a
	// live session's expiry moves to ttl from now.
	Load(ctx context.Context, id string, ttl time.Duration) (data []byte, ok bool, err error)
	// Save creates or replaces session id with data, expiring ttl from now.
	Save(ctx context.Context, id string, data []byte, ttl time.Duration) error
	// Delete removes session id; a missing one is not an error.
	Delete(ctx context.Context, id string) error
}

// Sessions configures the web sessions of the HTTP and WebSocket
// transports ([HTTPOptions.Sessions], [WebSocketOptions.Sessions]; give
// both the same value so that a WebSocket opened with a session's cookie
// shares the session). A session is identified by a random 128-bit id in
// a cookie (HttpOnly, SameSite=Lax, Path=/, Secure on a TLS request) and
// its data lives in Store; it is created when an action first sets a
// value, and every request that uses it extends it by TTL (the cookie's
// Max-Age too).
type Sessions struct {
	Store      SessionStore
	CookieName string        // "" is DefaultSessionCookie
	TTL        time.Duration // 0 is DefaultSessionTTL
	MaxBytes   int           // the largest session (its data as JSON); 0 is DefaultMaxSessionBytes
}

// withDefaults returns s with its zero fields defaulted; nil stays nil.
func (s *Sessions) withDefaults() *Sessions {
	if s == nil {
		return nil
	}
	c := *s
	if c.Store == nil {
		panic("action: Sessions without a Store")
	}
	if c.CookieName == "" {
		c.CookieName = DefaultSessionCookie
	}
	if c.TTL <= 0 {
		c.TTL = DefaultSessionTTL
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxSessionBytes
	}
	return &c
}

// Session is the web session of the connection an action runs for
// ([Conn.Session]): string keys with JSON values, kept in a
// [SessionStore]. Set, Delete and Destroy write through to the store at
// once; concurrent requests of one session each see the store as it was
// when they started, and the last write wins. A Session is safe for
// concurrent use.
type Session struct {
	cfg *Sessions

	mu     sync.Mutex
	id     string
	data   map[string]json.RawMessage
	stored bool // the store holds the session
}

// ID is the session's id (the cookie's value). It changes when the
// session is destroyed.
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Get decodes key's value into dst (a pointer, as for json.Unmarshal)
// and reports whether the session has key.
func (s *Session) Get(key string, dst any) (bool, error) {
	s.mu.Lock()
	raw, ok := s.data[key]
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return true, fmt.Errorf("session value %q: %w", key, err)
	}
	return true, nil
}

// Set stores value (encoded as JSON) under key and saves the session,
// creating it when it is new. A session over its MaxBytes is refused
// with a too_large error and left as it was.
func (s *Session) Set(ctx context.Context, key string, value any) error {
	if key == "" {
		return &Error{Kind: KindInvalidParam, Message: "empty session key"}
	}
	raw, err := segjson.Marshal(value)
	if err != nil {
		return fmt.Errorf("session value %q: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data := make(map[string]json.RawMessage, len(s.data)+1)
	for k, v := range s.data {
		data[k] = v
	}
	data[key] = raw
	return s.saveLocked(ctx, data)
}

// Delete removes key and saves the session (when it is stored).
func (s *Session) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.data[key]; !ok {
		return nil
	}
	data := make(map[string]json.RawMessage, len(s.data))
	for k, v := range s.data {
		if k != key {
			data[k] = v
		}
	}
	return s.saveLocked(ctx, data)
}

func (s *Session) saveLocked(ctx context.Context, data map[string]json.RawMessage) error {
	b, err := segjson.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode session: %w", err)
	}
	if len(b) > s.cfg.MaxBytes {
		return Errorf(KindTooLarge, "the session would be %d bytes, over its limit of %d", len(b), s.cfg.MaxBytes)
	}
	if err := s.cfg.Store.Save(ctx, s.id, b, s.cfg.TTL); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	s.data, s.stored = data, true
	return nil
}

// Destroy deletes the session from the store and empties it; the
// Session then has a new id, under which a later Set starts a new
// session (so signing in after Destroy cannot reuse an id an attacker
// planted). The transport clears or replaces the client's cookie.
func (s *Session) Destroy(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cfg.Store.Delete(ctx, s.id); err != nil {
		return fmt.Errorf("destroy session: %w", err)
	}
	s.id, s.data, s.stored = NewID(), nil, false
	return nil
}

// SessionPrincipal is the session key of the principal a web client
// signed in as ([Session.SignIn]).
const SessionPrincipal = "principal"

// SignIn makes the session's client principal: the session is destroyed
// (a new id, so that an id planted before sign-in is useless) and then
// names principal, which the HTTP transport gives as [Conn.Principal] to
// every request of the session (and counts under the authenticated rate
// limit).
func (s *Session) SignIn(ctx context.Context, principal string) error {
	if principal == "" {
		return &Error{Kind: KindInvalidParam, Message: "empty principal"}
	}
	if err := s.Destroy(ctx); err != nil {
		return err
	}
	return s.Set(ctx, SessionPrincipal, principal)
}

// Principal is the principal the session's client signed in as
// ([Session.SignIn]), or "".
func (s *Session) Principal() string {
	var p string
	if ok, err := s.Get(SessionPrincipal, &p); !ok || err != nil {
		return ""
	}
	return p
}

// isSessionID reports whether v is an id [NewID] makes: 32 lowercase hex
// digits. Anything else in a cookie is ignored.
func isSessionID(v string) bool {
	if len(v) != 32 {
		return false
	}
	for i := range len(v) {
		if c := v[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// cookieID returns the session id r's cookie names, or "".
func (cfg *Sessions) cookieID(r *http.Request) string {
	ck, err := r.Cookie(cfg.CookieName)
	if err != nil || !isSessionID(ck.Value) {
		return ""
	}
	return ck.Value
}

// load returns session id from the store, or, when the store does not
// have it, a new empty session: under id when keepID (an id this server
// gave out), else under a new one.
func (cfg *Sessions) load(ctx context.Context, id string, keepID bool) (*Session, error) {
	s := &Session{cfg: cfg, id: id}
	if id != "" {
		b, ok, err := cfg.Store.Load(ctx, id, cfg.TTL)
		if err != nil {
			return nil, &Error{Kind: KindInternal, Message: "internal error", Err: fmt.Errorf("load session: %w", err)}
		}
		if ok {
			if err := json.Unmarshal(b, &s.data); err != nil {
				return nil, &Error{Kind: KindInternal, Message: "internal error", Err: fmt.Errorf("decode session: %w", err)}
			}
			s.stored = true
			return s, nil
		}
	}
	if id == "" || !keepID {
		s.id = NewID()
	}
	return s, nil
}

// setCookie sets the cookie of a session that the store holds (extending
// it), or clears the request's cookie when it named a session that is
// gone or destroyed. It writes nothing for a session never stored that
// the request had no cookie for.
func (cfg *Sessions) setCookie(w http.ResponseWriter, r *http.Request, s *Session, hadCookie bool) {
	s.mu.Lock()
	id, stored := s.id, s.stored
	s.mu.Unlock()
	switch {
	case stored:
		cfg.writeCookie(w, r, id)
	case hadCookie:
		cfg.writeCookie(w, r, "")
	}
}

// writeCookie sets the session cookie to id for TTL, or clears it when id
// is "".
func (cfg *Sessions) writeCookie(w http.ResponseWriter, r *http.Request, id string) {
	ck := &http.Cookie{Name: cfg.CookieName, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: r.TLS != nil, MaxAge: int(cfg.TTL / time.Second)}
	if id == "" {
		ck.MaxAge = -1
	}
	http.SetCookie(w, ck)
}

// LocalSessionStore is an in-process [SessionStore]. It drops expired
// sessions when they are looked up and, at most once a minute, all of
// them when one is saved; it starts no goroutine.
type LocalSessionStore struct {
	sessions *ttlmap.Map
}

var _ SessionStore = (*LocalSessionStore)(nil)

// NewLocalSessionStore returns an empty LocalSessionStore.
func NewLocalSessionStore() *LocalSessionStore {
	return &LocalSessionStore{sessions: ttlmap.New()}
}

// Load implements [SessionStore]; the data is a copy.
func (l *LocalSessionStore) Load(_ context.Context, id string, ttl time.Duration) ([]byte, bool, error) {
	data, ok := l.sessions.Get(id, ttl)
	return data, ok, nil
}

// Save implements [SessionStore]; it keeps a copy of data.
func (l *LocalSessionStore) Save(_ context.Context, id string, data []byte, ttl time.Duration) error {
	l.sessions.Put(id, data, ttl)
	return nil
}

// Delete implements [SessionStore].
func (l *LocalSessionStore) Delete(_ context.Context, id string) error {
	l.sessions.Delete(id)
	return nil
}

// Len returns how many sessions the store holds, expired ones not yet
// dropped included.
func (l *LocalSessionStore) Len() int { return l.sessions.Len() }
