package respengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// DefaultSession is the session name of a caller's default session, as
// the sidecar reports it and accepts it.
const DefaultSession = "default"

// Session modes.
const (
	ModeRESP = "resp" // framed commands and replies
	ModeRaw  = "raw"  // bytes
)

// Names of the limits [Sessions] reports.
const (
	LimitMaxSessions   = "max_sessions"
	LimitSessionIdle   = "session_idle"
	LimitBatchCommands = "batch_commands"
	LimitCommandBytes  = "command_bytes"
	LimitBatchBytes    = "batch_bytes"
)

// ConnectTimeout bounds one dial (TCP, TLS, HELLO, SELECT).
const ConnectTimeout = 5 * time.Second

// SessionInfo describes one session.
type SessionInfo struct {
	Session  string `json:"session"`
	Target   string `json:"target"`
	Protocol int    `json:"protocol"`
	Database int    `json:"database"`
	Mode     string `json:"mode"`
	Manual   bool   `json:"manual"`
	Busy     bool   `json:"busy"`
	IdleMS   int64  `json:"idle_ms"`
}

// Session is one RESP connection with its owner. Calls on it pass its gate
// one at a time (an execute holds it throughout; a send or receive only
// passes it); the fields under the registry's mutex say whether it is
// busy, when it was last used, and whether it was closed.
type Session struct {
	id        string // DefaultSession or a handle
	principal string
	owner     string // the MCP client session it belongs to; "" for principal-wide
	target    *Target
	protocol  int
	database  int
	mode      string
	opened    time.Time
	gate      chan struct{} // one token: see above

	// Under the gate: memory for a pipeline's replies, reused from call to
	// call (TakeReplies, KeepReplies).
	replies []resp.Value

	// Under registry.mu.
	conn     *resp.Conn
	manual   bool // one-way: once send/receive were used, execute is refused
	multi    bool // a MULTI answered OK and no EXEC or DISCARD since (observe)
	busy     int  // calls in progress or waiting for the gate
	lastUsed time.Time
	closed   bool
}

// SessionOptions configure [Sessions].
type SessionOptions struct {
	// DefaultTarget is the target of every default session.
	DefaultTarget *Target
	// MaxSessions bounds the sessions open at once, default sessions and
	// explicit handles (LimitMaxSessions).
	MaxSessions int
	// Idle is how long a session may stay unused before the reaper closes
	// it (LimitSessionIdle).
	Idle time.Duration
	// Batch bounds what a send writes (Send) and what a pipeline may run
	// (CheckPipeline).
	Batch BatchLimits
}

// Sessions is the session registry: every RESP session of the sidecar,
// each one dedicated connection of one [Scope]. A scope has a default
// session, created on first use and dialled by its first call, and the
// explicit sessions it opened under unguessable handles. Sessions run in
// parallel; calls on one session run one at a time, except that in manual
// mode a send and a receive overlap. A session the registry closed without
// being asked (a failure, a call ended after dispatch, idle expiry) is
// reported to its next call ([ErrSessionReset]) rather than silently
// replaced. Start runs the idle reaper; Close stops it and closes every
// connection.
type Sessions struct {
	defaultTarget *Target
	max           int
	idle          time.Duration
	batch         BatchLimits
	stop          context.CancelFunc
	reaper        sync.WaitGroup

	mu       sync.Mutex
	handles  map[string]*Session // explicit handles by id
	defaults map[string]*Session // default sessions by scopeKey
	pending  int                 // sessions being dialled, counted against max
	closed   bool
	// resets holds what the sidecar closed without being asked: a default
	// session's by scopeKey, a handle's by id (see ErrSessionReset).
	resets map[string]*reset
}

// NewSessions returns an empty registry; it dials nothing.
func NewSessions(opts SessionOptions) *Sessions {
	return &Sessions{defaultTarget: opts.DefaultTarget, max: opts.MaxSessions, idle: opts.Idle, batch: opts.Batch,
		handles: map[string]*Session{}, defaults: map[string]*Session{}, resets: map[string]*reset{}}
}

// ID is the session's name: DefaultSession or its handle.
func (s *Session) ID() string { return s.id }

// Mode is ModeRESP or ModeRaw.
func (s *Session) Mode() string { return s.mode }

// Target is the session's target.
func (s *Session) Target() *Target { return s.target }

// TakeReplies returns the memory the session keeps for a pipeline's
// replies (nil when none) and keeps none until KeepReplies. The caller
// holds the gate.
func (s *Session) TakeReplies() []resp.Value {
	r := s.replies
	s.replies = nil
	return r
}

// KeepReplies gives the session memory for its next pipeline's replies,
// which no reply may still use. The caller holds the gate.
func (s *Session) KeepReplies(r []resp.Value) { s.replies = r }

func scopeKey(s Scope) string { return s.Principal + "\x00" + s.Owner }

// sessionNotFound is the error for a handle the caller cannot use; it says
// the same whether the handle never existed or belongs to someone else.
func sessionNotFound(id string) error {
	return errorf(ErrSessionNotFound, "session %q is not open for this caller (unknown, closed, expired, or another client's): open one with the session tool's open action, or use the default session", id)
}

// find returns the session a call names ("" or DefaultSession: the
// caller's default session, created unconnected on first use). A session
// the sidecar closed fails with ErrSessionReset (see takeResetLocked).
func (r *Sessions) find(sc Scope, id string) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
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
		t := r.defaultTarget
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

func (r *Sessions) newSession(id string, sc Scope, t *Target, protocol, database int, mode string) *Session {
	now := time.Now()
	return &Session{id: id, principal: sc.Principal, owner: sc.Owner, target: t, protocol: protocol, database: database,
		mode: mode, opened: now, lastUsed: now, gate: make(chan struct{}, 1)}
}

// reserveLocked counts one more session against max_sessions.
func (r *Sessions) reserveLocked() error {
	if n := len(r.handles) + len(r.defaults) + r.pending; n >= r.max {
		return &LimitError{Limit: LimitMaxSessions, Max: int64(r.max), Actual: int64(n + 1),
			Detail: "every RESP session is in use; close one (session tool, action close) or wait for idle ones to expire"}
	}
	r.pending++
	return nil
}

// OpenOptions choose what Open negotiates.
type OpenOptions struct {
	Protocol int    // 2 or 3; 0: the target's
	Database *int   // nil: the target's
	Mode     string // ModeRESP (also ""), or ModeRaw
}

// check validates o and returns what it chooses on t.
func (o OpenOptions) check(t *Target) (protocol, database int, mode string, err error) {
	protocol, database, mode = t.Protocol, t.Database, o.Mode
	if o.Protocol != 0 {
		if o.Protocol != 2 && o.Protocol != 3 {
			return 0, 0, "", &ArgError{Arg: "protocol", Reason: fmt.Sprintf("%d is not 2 or 3", o.Protocol)}
		}
		protocol = o.Protocol
	}
	if o.Database != nil {
		if *o.Database < 0 {
			return 0, 0, "", &ArgError{Arg: "database", Reason: fmt.Sprintf("%d is negative", *o.Database)}
		}
		database = *o.Database
	}
	switch mode {
	case "":
		mode = ModeRESP
	case ModeRESP, ModeRaw:
	default:
		return 0, 0, "", &ArgError{Arg: "mode", Reason: fmt.Sprintf("%q is not resp or raw", mode)}
	}
	return protocol, database, mode, nil
}

// Open dials a new explicit session of sc to t, as o chooses, and
// registers it under a fresh, unguessable handle.
func (r *Sessions) Open(ctx context.Context, sc Scope, t *Target, o OpenOptions) (*Session, error) {
	protocol, database, mode, err := o.check(t)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if err := r.reserveLocked(); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	r.mu.Unlock()
	s := r.newSession(newHandle("rs_"), sc, t, protocol, database, mode)
	conn, err := dial(ctx, s)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending--
	if err == nil && r.closed {
		err = ErrClosed
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

// dial connects to the session's target.
func dial(ctx context.Context, s *Session) (*resp.Conn, error) {
	return dialTarget(ctx, s.target, s.protocol, s.database)
}

// Dial connects to t with its own protocol and database, for a read-only
// query of the caller's (an [ErrUnavailable] error when it cannot).
func Dial(ctx context.Context, t *Target) (*resp.Conn, error) {
	return dialTarget(ctx, t, t.Protocol, t.Database)
}

// dialTarget connects to t. Errors name the target, never a credential.
func dialTarget(ctx context.Context, t *Target, protocol, database int) (*resp.Conn, error) {
	opts := resp.DialOptions{Addr: t.Addr, Protocol: protocol, Username: t.Username, Password: t.Password(),
		Database: database, ConnectTimeout: ConnectTimeout}
	if t.TLS != nil {
		opts.TLS = t.TLS.Clone()
	}
	conn, err := resp.Dial(ctx, opts)
	if err != nil {
		return nil, errorf(ErrUnavailable, "target %q (%s): cannot connect: %w; nothing was sent", t.Name, t.Addr, err)
	}
	return conn, nil
}

// acquire waits for the session's gate: calls on one session run one at a
// time. Waiting is before anything is sent, so a ctx that ends here leaves
// the session as it was. The caller must call release.
func (r *Sessions) acquire(ctx context.Context, s *Session) error {
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
		r.Release(s)
		return sessionNotFound(s.id)
	}
	return nil
}

// Use finds the session a call of sc names by id ("" or DefaultSession:
// the default session) and waits for its gate: calls on one session run
// one at a time; a ctx that ends while waiting leaves the session as it
// was. When the session was closed meanwhile, it looks again: find
// reports a reset (nothing had been sent on this call's behalf), or a
// handle its caller closed, or uses a fresh default session when its
// caller closed the old one. The caller must call Release.
func (r *Sessions) Use(ctx context.Context, sc Scope, id string) (*Session, error) {
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

func (r *Sessions) isClosed(s *Session) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.closed
}

// IsManual reports whether s switched to manual mode.
func (r *Sessions) IsManual(s *Session) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.manual
}

// Manual finds sc's explicit session id for a send or a receive and
// passes its gate, the manual-transition gate: once through, the session
// is manual for good, and the gate is given back at once, so that a send
// and a receive on one session overlap (the connection orders each side:
// a receive waiting for a message does not hold up a send). The caller
// must call Done.
func (r *Sessions) Manual(ctx context.Context, sc Scope, id string) (*Session, *resp.Conn, error) {
	if id == "" || id == DefaultSession {
		return nil, nil, &ArgError{Arg: "session", Reason: "send and receive need an explicit session (action open): the default session only runs execute"}
	}
	s, err := r.Use(ctx, sc, id)
	if err != nil {
		return nil, nil, err
	}
	r.setManual(s)
	conn, err := r.Conn(ctx, s)
	<-s.gate
	if err != nil {
		r.Done(s)
		return nil, nil, err
	}
	return s, conn, nil
}

// CheckPipeline checks cmds, a batch for a pipeline on a session, against
// the registry's batch limits before anything is sent (see
// [BatchLimits.CheckPipeline]): a caller runs it before it takes the
// session, so that a refused batch costs no connection.
func (r *Sessions) CheckPipeline(cmds [][][]byte) error { return r.batch.CheckPipeline(cmds) }

// Send writes on sc's explicit session id without reading (see Manual):
// cmds framed, or data as it is (a raw session only), checked first
// against the registry's batch limits ([BatchLimits.CheckSend]), before the
// session is looked up. It returns the bytes written, which say nothing of
// what the server accepted or did. A write that fails before its first
// byte keeps the session; one that fails after closes it (a partial
// command cannot be taken back: [ErrConnectionLost], wrapping the cause),
// and its next call is told ([ErrSessionReset]).
func (r *Sessions) Send(ctx context.Context, sc Scope, id string, cmds [][][]byte, data []byte) (int64, error) {
	if err := r.batch.CheckSend(cmds, data); err != nil {
		return 0, err
	}
	s, conn, err := r.Manual(ctx, sc, id)
	if err != nil {
		return 0, err
	}
	defer r.Done(s)
	var n int64
	switch {
	case data != nil && s.mode != ModeRaw:
		return 0, errorf(ErrRefused, "session %q is a resp session: send commands; data_base64 is for raw sessions; nothing was sent", s.id)
	case data != nil:
		var w int
		w, err = conn.WriteRaw(ctx, data)
		n = int64(w)
	case s.mode == ModeRaw:
		var framed []byte
		for _, c := range cmds {
			framed = resp.AppendCommand(framed, c)
		}
		var w int
		w, err = conn.WriteRaw(ctx, framed)
		n = int64(w)
	default:
		n, err = conn.Send(ctx, cmds)
	}
	if err != nil {
		return n, r.sendFailed(s, conn, n, err)
	}
	return n, nil
}

// DefaultRawReadBytes is a raw receive's default ReceiveOptions.MaxBytes.
const DefaultRawReadBytes = 64 << 10

// ReceiveOptions bound a receive.
type ReceiveOptions struct {
	// Wait is how long to wait for the first frame or byte; 0 returns at once.
	Wait time.Duration
	// MaxFrames (a resp session; 0 is 1) is at most FrameLimit, the
	// batch_commands limit.
	MaxFrames  int
	FrameLimit int64
	// MaxBytes (a raw session; 0 is DefaultRawReadBytes) is at most
	// ReplyLimit, the reply_bytes limit, which also bounds the decoded
	// frames of a resp session's receive.
	MaxBytes   int64
	ReplyLimit int64
}

// Received is what a receive read: raw bytes (Raw) or frames.
type Received struct {
	Session  *Session
	Raw      bool
	Data     []byte // Raw
	EOF      bool   // Raw: the server closed the connection
	Frames   resp.ReceiveResult
	TimedOut bool
}

// Receive reads what arrived on sc's explicit session id (see Manual),
// within o. When ctx ends, it returns what it read with the error (for a
// resp session the parser state and queued frames are kept: a later
// receive continues). Any other failure closes the session (its next call
// is told, [ErrSessionReset]) and is returned with what was read; on a raw
// session it is an [ErrConnectionLost] error. Received.Session is nil when
// nothing was read (the session was not found, an argument refused).
func (r *Sessions) Receive(ctx context.Context, sc Scope, id string, o ReceiveOptions) (Received, error) {
	s, conn, err := r.Manual(ctx, sc, id)
	if err != nil {
		return Received{}, err
	}
	defer r.Done(s)
	if s.mode == ModeRaw {
		max := o.MaxBytes
		if max == 0 {
			max = DefaultRawReadBytes
		}
		if max < 0 || max > o.ReplyLimit {
			return Received{}, &ArgError{Arg: "max_bytes", Reason: fmt.Sprintf("%d is outside [1, %d] (limit %s)", max, o.ReplyLimit, LimitReplyBytes)}
		}
		data, timedOut, eof, err := conn.ReadRaw(ctx, int(max), o.Wait)
		if err != nil && !Ended(ctx, err) {
			r.Broken(s, ResetFailed)
			return Received{}, errorf(ErrConnectionLost, "receive on session %q: %v; the session is closed", s.id, err)
		}
		return Received{Session: s, Raw: true, Data: data, EOF: eof, TimedOut: timedOut}, err
	}
	frames := o.MaxFrames
	if frames == 0 {
		frames = 1
	}
	if frames < 0 || int64(frames) > o.FrameLimit {
		return Received{}, &ArgError{Arg: "max_frames", Reason: fmt.Sprintf("%d is outside [1, %d] (limit %s)", frames, o.FrameLimit, LimitBatchCommands)}
	}
	res, err := conn.Receive(ctx, resp.ReceiveOptions{MaxFrames: frames, Wait: o.Wait, MaxBytes: o.ReplyLimit})
	if err != nil && !Ended(ctx, err) {
		r.Broken(s, ResetFailed)
	}
	return Received{Session: s, Frames: res, TimedOut: res.TimedOut}, err
}

// Ended reports whether err is the end of ctx (timeout or cancellation).
// A connection deadline taken from ctx may fire a moment before ctx
// itself: then Ended waits for ctx, so that the caller reports the call as
// timed out rather than as failed.
func Ended(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		<-ctx.Done()
	}
	return ctx.Err() != nil
}

// sendFailed reports a send that failed. Before the first byte the
// connection is kept; after it, it is closed (a partial command cannot be
// taken back) and the session with it.
func (r *Sessions) sendFailed(s *Session, conn *resp.Conn, written int64, err error) error {
	if written == 0 && !conn.Closed() {
		return fmt.Errorf("send on session %q: nothing was written, the session is kept: %w", s.id, err)
	}
	r.Broken(s, ResetSendFailed)
	return errorf(ErrConnectionLost, "send on session %q failed after %d bytes were written: what reached the server has unknown outcomes; session %q is closed: %w", s.id, written, s.id, err)
}

// setManual switches s to manual mode, for good.
func (r *Sessions) setManual(s *Session) {
	r.mu.Lock()
	s.manual = true
	r.mu.Unlock()
}

// Observe keeps s's protocol and database as its own commands change them
// (a HELLO with a version, a SELECT answered OK), so that list tells the
// truth, and whether a MULTI is open, so that a reset names what it lost.
// Inside MULTI they are only queued: a SELECT then answers QUEUED and is
// not taken.
func (r *Sessions) Observe(s *Session, cmds [][][]byte, replies []resp.Value) {
	for i := range min(len(cmds), len(replies)) {
		r.ObserveOne(s, cmds[i], &replies[i])
	}
}

// ObserveOne is Observe for one command and its reply.
func (r *Sessions) ObserveOne(s *Session, cmd [][]byte, reply *resp.Value) {
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
func (r *Sessions) observeMulti(s *Session, name []byte, reply resp.Value) {
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

// Info describes s.
func (r *Sessions) Info(s *Session) SessionInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return SessionInfo{Session: s.id, Target: s.target.Name, Protocol: s.protocol, Database: s.database, Mode: s.mode,
		Manual: s.manual, Busy: s.busy > 0, IdleMS: time.Since(s.lastUsed).Milliseconds()}
}

// Release ends a call on s (Use).
func (r *Sessions) Release(s *Session) {
	<-s.gate
	r.Done(s)
}

// Done ends a call on s that already gave its gate back (Manual).
func (r *Sessions) Done(s *Session) {
	r.mu.Lock()
	s.busy--
	s.lastUsed = time.Now()
	r.mu.Unlock()
}

// Conn returns the session's connection, dialling the default session's on
// first use (or after a failure closed it). The caller holds the gate.
func (r *Sessions) Conn(ctx context.Context, s *Session) (*resp.Conn, error) {
	r.mu.Lock()
	c := s.conn
	r.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := dial(ctx, s)
	if err != nil {
		r.Broken(s, "") // a default session without a connection holds no slot, and no state
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

// Broken closes a session whose connection failed or whose call ended
// after dispatch (why says which: ResetEnded, ResetFailed,
// ResetSendFailed): its state is unknown, so it is never reused. Its next
// call is told ([ErrSessionReset]); a default session is then re-created
// (and re-dialled) by the call after. why "" closes it without a mark: its
// caller asked, or it never connected.
func (r *Sessions) Broken(s *Session, why string) {
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

// CloseSession closes sc's session id.
func (r *Sessions) CloseSession(sc Scope, id string) error {
	if id == "" || id == DefaultSession {
		r.mu.Lock()
		s := r.defaults[scopeKey(sc)]
		r.mu.Unlock()
		if s == nil {
			return nil
		}
		r.Broken(s, "")
		return nil
	}
	s, err := r.find(sc, id)
	if err != nil {
		return err
	}
	r.Broken(s, "")
	return nil
}

// removeLocked unregisters s and returns its connection to close (outside
// the lock), or nil.
func (r *Sessions) removeLocked(s *Session) *resp.Conn {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.id == DefaultSession {
		if r.defaults[scopeKey(Scope{Principal: s.principal, Owner: s.owner})] == s {
			delete(r.defaults, scopeKey(Scope{Principal: s.principal, Owner: s.owner}))
		}
	} else {
		delete(r.handles, s.id)
	}
	c := s.conn
	s.conn = nil
	return c
}

// closeWhere closes every session for which match is true, marking each
// reset for why unless why is "" (see Broken).
func (r *Sessions) closeWhere(why string, match func(*Session) bool) {
	var conns []*resp.Conn
	r.mu.Lock()
	for _, m := range []map[string]*Session{r.handles, r.defaults} {
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

// CloseOwner closes the sessions of the client session owner of principal
// (it ended) and forgets their resets; principal-wide sessions stay.
func (r *Sessions) CloseOwner(principal, owner string) {
	r.closeWhere("", func(s *Session) bool { return s.owner != "" && s.owner == owner && s.principal == principal })
	r.mu.Lock()
	r.forgetResetsLocked(func(m *reset) bool { return m.owner != "" && m.owner == owner && m.principal == principal })
	r.mu.Unlock()
}

// List describes sc's sessions, the default first, then by opening.
func (r *Sessions) List(sc Scope) []SessionInfo {
	out := []SessionInfo{}
	for _, s := range r.list(sc) {
		out = append(out, r.Info(s))
	}
	return out
}

// list returns sc's sessions, the default first, then by opening.
func (r *Sessions) list(sc Scope) []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Session
	if s := r.defaults[scopeKey(sc)]; s != nil {
		out = append(out, s)
	}
	var mine []*Session
	for _, s := range r.handles {
		if s.principal == sc.Principal && s.owner == sc.Owner {
			mine = append(mine, s)
		}
	}
	slices.SortFunc(mine, func(a, b *Session) int { return a.opened.Compare(b.opened) })
	return append(out, mine...)
}

// Start runs the reaper, which closes sessions idle longer than
// SessionOptions.Idle, until ctx ends or Close.
func (r *Sessions) Start(ctx context.Context) {
	ctx, r.stop = context.WithCancel(ctx)
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
				r.closeWhere(whyIdle(r.idle), func(s *Session) bool { return s.busy == 0 && now.Sub(s.lastUsed) >= r.idle })
			}
		}
	})
}

// Close stops the reaper and closes every session; later calls fail with
// [ErrClosed].
func (r *Sessions) Close() error {
	if r.stop != nil {
		r.stop()
	}
	r.reaper.Wait()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.closeWhere("", func(*Session) bool { return true })
	return nil
}
