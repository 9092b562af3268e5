package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// DefaultMaxFrameBytes is the frame cap used when Options.MaxFrameBytes is 0.
	DefaultMaxFrameBytes = 64 << 20

	// headBytes is how much of an oversized line is kept to recover its id.
	headBytes = 4 << 10

	// readBufferBytes is the size of the bufio.Reader over r. Lines that fit
	// in it are decoded in place, without a copy.
	readBufferBytes = 64 << 10

	// keepAccBytes is the largest line-assembly buffer kept between lines;
	// a larger one (left by a large frame) is released.
	keepAccBytes = 1 << 20
)

// Options configures a Transport.
type Options struct {
	MaxFrameBytes int64        // cap on one incoming line (without its newline); 0 means 64 MiB
	Logger        *slog.Logger // nil means discard; NEVER write logs to the writer w
}

// Transport is an [mcp.Transport] over a reader and a writer carrying
// newline-delimited JSON-RPC messages. Connect may be called once.
type Transport struct {
	r         io.Reader
	w         io.Writer
	opts      Options
	connected atomic.Bool
}

var _ mcp.Transport = (*Transport)(nil)

// NewTransport returns a Transport that reads messages from r and writes
// them to w. If r implements io.Closer it is closed when the connection is
// closed; w is never closed.
func NewTransport(r io.Reader, w io.Writer, opts Options) *Transport {
	return &Transport{r: r, w: w, opts: opts}
}

// errConnected is returned by a second call to Connect.
var errConnected = errors.New("stdio: Transport.Connect called more than once")

// Connect implements [mcp.Transport]. It starts the connection's reader
// goroutine, which exits when r reaches EOF or fails, or when the connection
// is closed and r is unblocked.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	if !t.connected.CompareAndSwap(false, true) {
		return nil, errConnected
	}
	c := newConn(t.r, t.w, t.opts)
	go c.readLoop()
	return c, nil
}

// conn is the mcp.Connection returned by Transport.Connect.
type conn struct {
	r      io.Reader
	w      io.Writer
	logger *slog.Logger

	// Owned by the reader goroutine.
	br      *bufio.Reader
	max     int64
	acc     []byte          // assembles a line longer than the bufio buffer
	head    [headBytes]byte // start of an oversized line
	maxAcc  int             // largest cap(acc) seen, for tests
	readErr error           // set before readDone is closed

	writeMu sync.Mutex // serializes writes to w

	incoming  chan jsonrpc.Message
	readDone  chan struct{} // closed when the reader goroutine exits
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	closeErr  error
}

var _ mcp.Connection = (*conn)(nil)

func newConn(r io.Reader, w io.Writer, opts Options) *conn {
	limit := opts.MaxFrameBytes
	if limit <= 0 {
		limit = DefaultMaxFrameBytes
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &conn{
		r:        r,
		w:        w,
		logger:   logger,
		br:       bufio.NewReaderSize(r, readBufferBytes),
		max:      limit,
		incoming: make(chan jsonrpc.Message),
		readDone: make(chan struct{}),
		closed:   make(chan struct{}),
	}
}

// SessionID implements mcp.Connection: stdio has no session id.
func (c *conn) SessionID() string { return "" }

// Read implements mcp.Connection. It returns io.EOF once r is exhausted or
// the connection is closed.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.readDone:
		select {
		case <-c.closed: // r failed because Close closed it
			return nil, io.EOF
		default:
		}
		return nil, c.readErr
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements mcp.Connection. It is safe for concurrent use: each
// message is written as one line with a single Write call on w.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("stdio: encoding message: %w", err)
	}
	// EncodeMessage trims the encoder's newline, so this append normally
	// reuses the slice's spare capacity.
	data = append(data, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	if _, err := c.w.Write(data); err != nil {
		return fmt.Errorf("stdio: writing message: %w", err)
	}
	return nil
}

// Close implements mcp.Connection. It is idempotent and safe for concurrent
// use. It unblocks a pending Read at once and closes r if r is an io.Closer,
// which lets the reader goroutine exit.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if rc, ok := c.r.(io.Closer); ok {
			c.closeErr = rc.Close()
		}
	})
	return c.closeErr
}

// readLoop is the reader goroutine: it reads lines, answers bad ones and
// hands decoded messages to Read, until r fails or the connection closes.
func (c *conn) readLoop() {
	var err error
	defer func() {
		if errors.Is(err, io.EOF) {
			c.readErr = io.EOF
		} else {
			c.readErr = fmt.Errorf("stdio: reading: %w", err)
		}
		close(c.readDone)
	}()
	for {
		var (
			line    []byte
			size    int64
			tooLong bool
		)
		line, size, tooLong, err = c.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			return // a partial line cut by a failed read is dropped
		}
		if tooLong {
			c.rejectOversized(line, size)
		} else if len(line) > 0 {
			msg, ok := c.decode(line)
			if ok {
				select {
				case c.incoming <- msg:
				case <-c.closed:
					err = io.EOF
					return
				}
			}
		}
		if err != nil {
			return
		}
		select {
		case <-c.closed:
			err = io.EOF
			return
		default:
		}
	}
}

// readLine reads the next line. For a line within the cap it returns the
// line without its newline or trailing "\r", valid until the next call. For
// an oversized line it returns tooLong, the line's retained head and the
// number of bytes read (which stops counting past the cap). A final line
// without a newline is returned together with the read error.
func (c *conn) readLine() (line []byte, size int64, tooLong bool, err error) {
	var (
		n       int64 // bytes of this line so far
		nhead   int   // bytes in c.head, when discarding
		discard bool  // the line exceeds the cap; keep only its head
		lastCR  bool  // the last byte read is '\r'
	)
	c.acc = c.acc[:0]
	if cap(c.acc) > keepAccBytes {
		c.acc = nil
	}
	for {
		s, rerr := c.br.ReadSlice('\n')
		complete := rerr == nil
		if complete {
			s = s[:len(s)-1]
		}
		if len(s) > 0 {
			lastCR = s[len(s)-1] == '\r'
		}
		n += int64(len(s))
		switch {
		case discard:
			nhead += copy(c.head[nhead:], s)
		case n > c.max+1: // over the cap even if the last byte is a '\r'
			discard = true
			nhead = copy(c.head[:], c.acc)
			nhead += copy(c.head[nhead:], s)
			c.acc = c.acc[:0]
		case complete && len(c.acc) == 0:
			line = s // in place: no copy
		default:
			c.acc = append(c.acc, s...)
			c.maxAcc = max(c.maxAcc, cap(c.acc))
			line = c.acc
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if lastCR {
			n--
			if !discard {
				line = line[:len(line)-1]
			}
		}
		if discard || n > c.max {
			if !discard {
				nhead = copy(c.head[:], line)
			}
			return c.head[:nhead], n, true, rerr
		}
		return line, n, false, rerr
	}
}

// decode turns a line into a message, or answers it with an error response
// and reports false.
func (c *conn) decode(line []byte) (jsonrpc.Message, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err == nil && onlySpaceAfterObject(line) {
		return msg, true
	}
	// The slow path classifies the failure; json.Valid is not paid for on
	// the success path.
	switch {
	case !json.Valid(line):
		c.logger.Warn("stdio: rejected malformed JSON line", "bytes", len(line))
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
	case line[0] == '[':
		c.logger.Warn("stdio: rejected JSON-RPC batch", "bytes", len(line))
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported")
	default:
		if err == nil { // cannot happen: valid JSON with a decodable object has no trailing data
			err = errors.New("unexpected data after the message")
		}
		c.logger.Warn("stdio: rejected invalid JSON-RPC message", "bytes", len(line), "error", err)
		c.writeError(recoverID(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	return nil, false
}

// onlySpaceAfterObject reports whether line, whose start DecodeMessage
// accepted, is one JSON object with nothing but whitespace after it (the
// decoder itself ignores trailing data). It matches brackets outside strings
// (see wire.SkipValue), which is much cheaper than a full validation.
func onlySpaceAfterObject(line []byte) bool {
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	end := wire.SkipValue(line, 0)
	return end > 0 && wire.SkipWS(line, end) == len(line)
}

// rejectOversized answers a line longer than the cap.
func (c *conn) rejectOversized(head []byte, size int64) {
	id := recoverID(head)
	c.logger.Warn("stdio: rejected oversized frame",
		"limit", "frame_bytes", "max_bytes", c.max, "read_bytes", size, "id", string(orNull(id)))
	c.writeError(id, jsonrpc.CodeInvalidRequest, fmt.Sprintf(
		"frame of more than %d bytes exceeds the frame_bytes limit (%d)", c.max, c.max))
}

// writeError writes a JSON-RPC error response. id is the JSON encoding of
// the request id, or nil for null. It is not written once the connection is
// closed.
func (c *conn) writeError(id []byte, code int, message string) {
	msg, _ := json.Marshal(message) // a string always marshals
	buf := make([]byte, 0, 64+len(id)+len(msg))
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, orNull(id)...)
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, int64(code), 10)
	buf = append(buf, `,"message":`...)
	buf = append(buf, msg...)
	buf = append(buf, "}}\n"...)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return
	default:
	}
	if _, err := c.w.Write(buf); err != nil {
		c.logger.Warn("stdio: writing error response", "error", err)
	}
}

func orNull(id []byte) []byte {
	if id == nil {
		return []byte("null")
	}
	return id
}
