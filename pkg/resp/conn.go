package resp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkit/mcpkit/internal/rawio"
)

// DefaultConnectTimeout bounds a [Dial] whose options set no ConnectTimeout.
const DefaultConnectTimeout = 10 * time.Second

// DialOptions says where and how [Dial] connects.
type DialOptions struct {
	// Addr is "host:port".
	Addr string
	// Protocol is 3 (the default when 0): HELLO 3 negotiates RESP3, with
	// AUTH when credentials are set; or 2: RESP2, with AUTH when credentials
	// are set and no HELLO, so it also works with servers that predate HELLO.
	// A server that refuses HELLO 3 fails the dial with a [*ServerError]:
	// there is no silent fallback to RESP2, which would lose types the
	// caller asked for. Ask for protocol 2 instead.
	Protocol int
	// Username and Password authenticate when either is set (Username
	// empty: the default user; Password empty: a nopass user).
	Username, Password string
	// Database, when not 0, is selected with SELECT.
	Database int
	// TLS, when set, wraps the connection in TLS with this configuration
	// (root CAs, client certificates). When its ServerName is empty, the
	// host of Addr is verified.
	TLS *tls.Config
	// ConnectTimeout bounds the whole dial: TCP, TLS, HELLO/AUTH and SELECT
	// (0: DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Limits bounds every frame read on the connection.
	Limits ReaderOptions
}

// ServerError is an error reply to a command the connection sends on its
// own: HELLO, AUTH or SELECT during [Dial]. Reply never contains the
// password (a server that echoes arguments has it replaced by "***").
type ServerError struct {
	Command string // "HELLO", "AUTH" or "SELECT"
	Addr    string
	Reply   string // the server's error text
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("resp: %s refused by %s: %s", e.Command, e.Addr, e.Reply)
}

// ErrClosed is returned (wrapped) by every operation on a [Conn] that was
// closed, by [Conn.Close] or after a failure that left the connection in an
// unknown state.
var ErrClosed = errors.New("resp: connection closed")

// ErrRawMode is returned (wrapped) by the frame operations (Do, Pipeline,
// Send, Receive) of a [Conn] on which raw access was used.
var ErrRawMode = errors.New("resp: connection is in raw mode")

// Conn is one connection to a RESP server. Its read side (Receive, ReadRaw)
// and write side (Send, WriteRaw) may be used at the same time by two
// goroutines; Do and Pipeline take both. Each side serves one caller at a
// time; a caller waiting for a side gives up when its context ends, and
// the connection is kept.
//
// A failure once bytes may have been exchanged (a write error, a read
// error other than a receive timeout, a limit exceeded, a context that ended
// during Pipeline or Send) closes the connection: what was sent but not
// answered has an unknown outcome. Nothing is ever retried or replayed.
type Conn struct {
	nc     net.Conn
	addr   string
	proto  int
	rd     *Reader
	rsem   chan struct{} // the read side, held by one caller
	wsem   chan struct{} // the write side, held by one caller
	wbuf   []byte        // guarded by wsem
	raw    atomic.Bool
	closed atomic.Bool
	once   sync.Once
}

// Dial connects to opts.Addr, negotiates the protocol (HELLO or AUTH),
// selects the database, and returns the connection. The dial is bounded by
// ctx and by opts.ConnectTimeout. A network failure is returned wrapped
// with the address; an error reply to HELLO, AUTH or SELECT is a
// [*ServerError]. The returned error never contains the password.
func Dial(ctx context.Context, opts DialOptions) (*Conn, error) {
	proto := opts.Protocol
	if proto == 0 {
		proto = 3
	}
	if proto != 2 && proto != 3 {
		return nil, fmt.Errorf("resp: protocol %d: want 2 or 3", opts.Protocol)
	}
	timeout := opts.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("resp: connect to %s: %w", opts.Addr, err)
	}
	nc = rawio.Conn(nc) // see internal/rawio: no monitor wake-up per round trip
	if opts.TLS != nil {
		cfg := opts.TLS.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(opts.Addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("resp: TLS handshake with %s: %w", opts.Addr, err)
		}
		nc = tc
	}
	c := &Conn{
		nc:    nc,
		addr:  opts.Addr,
		proto: proto,
		rd:    NewReader(nc, opts.Limits),
		rsem:  make(chan struct{}, 1),
		wsem:  make(chan struct{}, 1),
	}
	if err := c.handshake(ctx, opts); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// handshake sends HELLO or AUTH, and SELECT, in one round trip.
func (c *Conn) handshake(ctx context.Context, opts DialOptions) error {
	var cmds [][][]byte
	var names []string
	add := func(args ...string) {
		cmd := make([][]byte, len(args))
		for i, a := range args {
			cmd[i] = []byte(a)
		}
		cmds = append(cmds, cmd)
		names = append(names, args[0])
	}
	user := opts.Username
	if user == "" {
		user = "default"
	}
	auth := opts.Password != "" || opts.Username != ""
	switch {
	case c.proto == 3 && auth:
		add("HELLO", "3", "AUTH", user, opts.Password)
	case c.proto == 3:
		add("HELLO", "3")
	case auth:
		add("AUTH", user, opts.Password)
	}
	if opts.Database != 0 {
		add("SELECT", strconv.Itoa(opts.Database))
	}
	if len(cmds) == 0 {
		return nil
	}
	res, err := c.Pipeline(ctx, cmds, PipelineOptions{})
	if err != nil {
		return fmt.Errorf("resp: %s to %s: %w", strings.Join(names, ", "), c.addr, err)
	}
	for i, v := range res.Replies {
		if v.IsError() {
			reply := v.ErrorText()
			if opts.Password != "" {
				reply = strings.ReplaceAll(reply, opts.Password, "***")
			}
			return &ServerError{Command: names[i], Addr: c.addr, Reply: reply}
		}
	}
	return nil
}

// Protocol returns the negotiated protocol: 2 or 3.
func (c *Conn) Protocol() int { return c.proto }

// Addr returns the address the connection was dialled with.
func (c *Conn) Addr() string { return c.addr }

// Close closes the connection. It is idempotent; operations in progress
// fail, and later ones return [ErrClosed].
func (c *Conn) Close() error {
	var err error
	c.once.Do(func() {
		c.closed.Store(true)
		err = c.nc.Close()
	})
	return err
}

// Closed reports whether the connection was closed, by Close or after a
// failure.
func (c *Conn) Closed() bool { return c.closed.Load() }

// acquire takes the given sides in order (read, then write), or gives up
// when ctx ends; it then checks that the connection is usable.
func (c *Conn) acquire(ctx context.Context, frames bool, sides ...chan struct{}) (release func(), err error) {
	taken := 0
	release = func() {
		for _, s := range sides[:taken] {
			<-s
		}
	}
	for _, s := range sides {
		select {
		case s <- struct{}{}:
			taken++
		case <-ctx.Done():
			release()
			return nil, fmt.Errorf("resp: waiting for %s: %w", c.addr, ctx.Err())
		}
	}
	switch {
	case ctx.Err() != nil: // both were ready and select chose the side
		err = fmt.Errorf("resp: waiting for %s: %w", c.addr, ctx.Err())
	case c.closed.Load():
		err = fmt.Errorf("resp: %s: %w", c.addr, ErrClosed)
	case frames && c.raw.Load():
		err = fmt.Errorf("resp: %s: %w", c.addr, ErrRawMode)
	}
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// aLongTimeAgo is a deadline in the past: it interrupts a blocked read or
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

// watch applies deadline (zero: none) to the chosen sides, and interrupts
// them when ctx is cancelled. stop must be called before the sides are
// released.
func (c *Conn) watch(ctx context.Context, deadline time.Time, read, write bool) (stop func()) {
	set := func(t time.Time) {
		if read {
			c.nc.SetReadDeadline(t)
		}
		if write {
			c.nc.SetWriteDeadline(t)
		}
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	set(deadline)
	fired := make(chan struct{})
	stopFunc := context.AfterFunc(ctx, func() {
		set(aLongTimeAgo)
		close(fired)
	})
	return func() {
		if !stopFunc() {
			<-fired
		}
	}
}

// fail closes the connection after a failure and wraps err for op,
// preferring the context's error when ctx ended.
func (c *Conn) fail(ctx context.Context, op string, err error) error {
	if errors.Is(err, net.ErrClosed) && c.closed.Load() {
		err = ErrClosed // Close was called while the operation ran
	}
	c.Close()
	return fmt.Errorf("resp: %s %s: %w (connection closed)", op, c.addr, ctxErr(ctx, err))
}

// ctxErr returns ctx's error when ctx ended, including when a network
// deadline taken from ctx fired just before ctx noticed; else err.
func ctxErr(ctx context.Context, err error) error {
	if e := ctxEnded(ctx, err); e != nil {
		return e
	}
	return err
}

// ctxEnded returns ctx's error when ctx ended (see ctxErr), else nil.
func ctxEnded(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if d, ok := ctx.Deadline(); ok && isTimeout(err) && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
