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

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

const (
	// DefaultMaxFrameBytes is the frame cap used when Options.MaxFrameBytes is 0.
	DefaultMaxFrameBytes = 64 << 20

	// DefaultMaxPendingRequests is the cap on unanswered requests used when
	// Options.MaxPendingRequests is 0.
	DefaultMaxPendingRequests = 256

	// DefaultMaxInflightBytes is the cap on the bytes of unanswered requests
	// used when Options.MaxInflightBytes is 0.
	DefaultMaxInflightBytes = 256 << 20

	// maxIDBytes is the longest id recovered from an oversized line.
	maxIDBytes = 4 << 10

	// readBufferBytes is the size of the bufio.Reader over r. Lines that fit
	// in it are decoded in place, without a copy.
	readBufferBytes = 64 << 10

	// keepAccBytes is the most a line-assembly buffer (acc) holds; it is
	// kept between lines. The rest of a longer line goes to parts.
	keepAccBytes = 1 << 20

	// keepWriteBytes is the largest write buffer kept between messages.
	keepWriteBytes = 1 << 20

	// keepLineBytes is the longest line decoded in a reused buffer
	// (lineBufs) when a taker may claim it.
	keepLineBytes = 64 << 10

	// maxIdleReaders is how many reader goroutines that ran taken work are
	// kept to read again (see Transport.ConnectTaking): a new goroutine
	// would grow its stack, by copying, to the depth of a call again, which
	// costs about as much as a small call.
	maxIdleReaders = 4
)

// Options configures a Transport. A zero or negative limit means its default.
type Options struct {
	// MaxFrameBytes caps one incoming line (without its newline); default
	// 64 MiB.
	MaxFrameBytes int64
	// MaxPendingRequests caps the requests read whose response is not yet
	// written; reading pauses at the cap. Default 256.
	MaxPendingRequests int
	// MaxInflightBytes caps the bytes of the requests read whose response is
	// not yet written; reading pauses when the next request would exceed it,
	// except that a request is always admitted when none is pending, so that
	// one frame of MaxFrameBytes always works. Default 256 MiB.
	MaxInflightBytes int64
	// Refused, when set, is called once for each message refused by a
	// limit (a metric counts them): reason "limit" and limit "frame_bytes"
	// for a line over MaxFrameBytes. The other two limits pause reading
	// rather than refuse.
	Refused func(reason, limit string)
	// Logger receives diagnostics; nil means discard. NEVER write logs to
	// the writer w.
	Logger *slog.Logger
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
	return t.ConnectTaking(ctx, nil)
}

// ConnectTaking is Connect, except that the connection offers every
// message it reads to take, on its reader goroutine and in the order read,
// before Read would return it (a call once admitted by the backpressure
// limits). When take returns a function, Read never returns that message:
// the connection hands reading on to a new reader goroutine and runs the
// function on the one that read the message, so that the work starts at
// once, without waking another goroutine. The function's response, written
// with Write, releases the call's pending slot as any other. A nil take is
// Connect.
//
// take is told whether the message's params are checked: when they are
// not (a plain request, decoded without a pass over its params), take
// claims the message only once it has read all of its params as JSON,
// validating every byte, and declines it otherwise; the connection then
// validates them, and answers a line that is not JSON as it always does.
//
// The function reports whether the message is done with: true when
// nothing refers to its params any more, so that their memory, a buffer
// the connection decoded the line in, is reused for a later line rather
// than left to the garbage collector (a request's method and id never
// alias it).
func (t *Transport) ConnectTaking(ctx context.Context, take func(msg jsonrpc.Message, checked bool) func() bool) (mcp.Connection, error) {
	if !t.connected.CompareAndSwap(false, true) {
		return nil, errConnected
	}
	c := newConn(t.r, t.w, t.opts)
	c.take = take
	go c.readLoop()
	return c, nil
}

// conn is the mcp.Connection returned by Transport.Connect.
type conn struct {
	r       io.Reader
	w       io.Writer
	logger  *slog.Logger
	refused func(reason, limit string) // Options.Refused, or nil

	// Owned by the reader goroutine.
	br        *bufio.Reader
	max       int64
	acc       []byte                // assembles a line longer than the bufio buffer, up to keepAccBytes
	parts     [][]byte              // the rest of a line longer than keepAccBytes, copied chunk by chunk
	partsN    int                   // bytes in parts
	inPlace   bool                  // the last line read is in br's buffer (decoding copies what it keeps)
	idScan    jsonscan.MemberFinder // finds the id of an oversized line as it is skipped
	maxAcc    int                   // largest cap(acc) seen, for tests
	readErr   error                 // set before readDone is closed
	readAfter error                 // the read error that came with a line take claimed

	writeMu sync.Mutex // serializes writes to w
	wbuf    []byte     // encodes the next message; under writeMu

	ids *wire.Table // id translation and cancellations

	take      func(jsonrpc.Message, bool) func() bool // see Transport.ConnectTaking; nil: none
	lineBuf   *[]byte                                 // the buffer (lineBufs) the last line was decoded in, if any
	unchecked bool                                    // the last message's params are not checked (decodeCall)
	idleMu    sync.Mutex
	idle      []chan bool // idle reader goroutines (see readLoop): true: read next; false: exit
	readEnded bool        // reading ended: no more idle readers

	// Requests read whose response is not yet written (see admit).
	pendMu       sync.Mutex
	pending      map[jsonrpc.ID]int64 // unanswered request id -> its size in bytes
	pendingN     int                  // requests admitted whose response is not yet written
	pendingBytes int64                // their bytes
	maxPending   int
	maxInflight  int64
	released     chan struct{} // signalled (buffer 1) when a pending request is released

	incoming  chan jsonrpc.Message
	readDone  chan struct{} // closed when the reader goroutine exits
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	closeErr  error
}

var _ mcp.Connection = (*conn)(nil)

func newConn(r io.Reader, w io.Writer, opts Options) *conn {
	limit := orDefault(opts.MaxFrameBytes, DefaultMaxFrameBytes)
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &conn{
		r:           r,
		w:           w,
		logger:      logger,
		refused:     opts.Refused,
		br:          bufio.NewReaderSize(r, readBufferBytes),
		max:         limit,
		ids:         wire.NewTable(),
		pending:     make(map[jsonrpc.ID]int64),
		maxPending:  orDefault(opts.MaxPendingRequests, DefaultMaxPendingRequests),
		maxInflight: orDefault(opts.MaxInflightBytes, DefaultMaxInflightBytes),
		released:    make(chan struct{}, 1),
		incoming:    make(chan jsonrpc.Message),
		readDone:    make(chan struct{}),
		closed:      make(chan struct{}),
	}
}

func orDefault[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
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
// message is written as one line with a single Write call on w. A response
// carries its request's id exactly as the peer sent it; the response to a
// request the peer cancelled is not written (and Write reports success).
// Writing a response, or dropping it, releases its request's pending slot.
// msg is not kept once Write returns.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		// The id is free as soon as the response is on its way (the client
		// may reuse it once it reads the response); the slot, once written.
		defer c.release(c.answer(resp.ID))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	// Encoding under the lock lets one buffer serve every message: a
	// response is mostly a copy of its encoded result.
	data, err := appendMessage(c.wbuf[:0], msg)
	if err != nil {
		return fmt.Errorf("stdio: encoding message: %w", err)
	}
	data, drop := c.ids.Outbound(data)
	if drop {
		c.logger.Debug("stdio: dropped the response to a cancelled request")
		return nil
	}
	data = append(data, '\n')
	if cap(data) <= keepWriteBytes {
		c.wbuf = data[:0]
	}
	if _, err := c.w.Write(data); err != nil {
		return fmt.Errorf("stdio: writing message: %w", err)
	}
	return nil
}

// admit waits until the call req, of size bytes, fits in the pending
// limits, and records it as pending (recorded). It reports false if the
// connection closed first. A call whose id is already pending is not
// recorded: the SDK refuses it without an answer.
func (c *conn) admit(req *jsonrpc.Request, size int64) (ok, recorded bool) {
	c.pendMu.Lock()
	for {
		if _, dup := c.pending[req.ID]; dup {
			c.pendMu.Unlock()
			return true, false
		}
		n, bytes := c.pendingN, c.pendingBytes
		if n == 0 || (n < c.maxPending && bytes+size <= c.maxInflight) {
			c.pending[req.ID] = size
			c.pendingN++
			c.pendingBytes += size
			c.pendMu.Unlock()
			return true, true
		}
		c.pendMu.Unlock()
		c.logger.Debug("stdio: reading paused until responses are written",
			"pending", n, "pending_bytes", bytes, "next_bytes", size)
		select {
		case <-c.released:
		case <-c.closed:
			return false, false
		}
		c.pendMu.Lock()
	}
}

// answer forgets the unanswered request id and returns its size, or -1 if
// it was not admitted.
func (c *conn) answer(id jsonrpc.ID) int64 {
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	size, ok := c.pending[id]
	if !ok {
		return -1
	}
	delete(c.pending, id)
	return size
}

// release frees the slot of an answered request of size bytes (none if
// size < 0) and wakes a paused reader.
func (c *conn) release(size int64) {
	if size < 0 {
		return
	}
	c.pendMu.Lock()
	c.pendingN--
	c.pendingBytes -= size
	c.pendMu.Unlock()
	select {
	case c.released <- struct{}{}:
	default:
	}
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

// readLoop is a reader goroutine: it reads lines, answers bad ones and
// hands decoded messages to Read, until r fails or the connection closes.
// When take claims a message, reading goes on in another reader goroutine
// (an idle one, or a new one) and this one runs take's work, then waits,
// idle, to read again, or exits.
func (c *conn) readLoop() {
	wake := make(chan bool, 1) // this goroutine's, while idle
	for {
		run, buf, err := c.readMessages()
		if run == nil {
			c.endReading(err)
			return
		}
		c.idleMu.Lock()
		if n := len(c.idle); n > 0 {
			next := c.idle[n-1] // the last to finish: its stack and caches are warm
			c.idle = c.idle[:n-1]
			c.idleMu.Unlock()
			next <- true
		} else {
			c.idleMu.Unlock()
			go c.readLoop()
		}
		if run() && buf != nil {
			*buf = (*buf)[:0]
			lineBufs.Put(buf)
		}
		c.idleMu.Lock()
		if c.readEnded || len(c.idle) >= maxIdleReaders {
			c.idleMu.Unlock()
			return
		}
		c.idle = append(c.idle, wake)
		c.idleMu.Unlock()
		if !<-wake {
			return
		}
	}
}

// endReading records why reading ended, closes readDone and lets the idle
// reader goroutines exit.
func (c *conn) endReading(err error) {
	if errors.Is(err, io.EOF) {
		c.readErr = io.EOF
	} else {
		c.readErr = fmt.Errorf("stdio: reading: %w", err)
	}
	close(c.readDone)
	c.idleMu.Lock()
	defer c.idleMu.Unlock()
	c.readEnded = true
	for _, wake := range c.idle {
		wake <- false
	}
	c.idle = nil
}

// readMessages reads lines, answers bad ones and hands decoded messages to
// Read, until r fails or the connection closes (err), or take claims a
// message (run, its work; buf, the buffer its line was decoded in, if it
// was decoded in one of lineBufs).
func (c *conn) readMessages() (run func() bool, buf *[]byte, err error) {
	if c.readAfter != nil {
		return nil, nil, c.readAfter
	}
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
			c.rejectOversized(size)
		} else if len(line) > 0 {
			msg, ok := c.decode(line)
			buf, unchecked := c.lineBuf, c.unchecked
			c.lineBuf, c.unchecked = nil, false // the message's from now on: reused only if taken and done with
			var recorded bool
			if ok, recorded = c.admitCall(msg, ok, size); !ok && msg != nil {
				return nil, nil, io.EOF
			}
			if ok && c.take != nil {
				if run := c.take(msg, !unchecked); run != nil {
					c.readAfter = err // the last line, without a newline: the next reader ends with err
					return run, buf, nil
				}
				if req, _ := msg.(*jsonrpc.Request); unchecked && !segjson.Valid(req.Params) {
					// Not the plain request it looked like: its admission
					// undone, the line goes the way of any other.
					if recorded {
						c.release(c.answer(req.ID))
					}
					msg, ok = c.decodeLine(line)
					if ok, _ = c.admitCall(msg, ok, size); !ok && msg != nil {
						return nil, nil, io.EOF
					}
				}
			}
			if ok {
				select {
				case c.incoming <- msg:
				case <-c.closed:
					return nil, nil, io.EOF
				}
			}
		}
		if err != nil {
			return nil, nil, err
		}
		select {
		case <-c.closed:
			return nil, nil, io.EOF
		default:
		}
	}
}

// admitCall admits msg, decoded when ok, if it is a call (see admit): ok
// false with msg not nil means the connection closed first.
func (c *conn) admitCall(msg jsonrpc.Message, ok bool, size int64) (admitted, recorded bool) {
	req, isReq := msg.(*jsonrpc.Request)
	if !ok || !isReq || !req.IsCall() {
		return ok, false
	}
	return c.admit(req, size)
}

// lineBufs holds the buffers lines are decoded in when a taker may claim
// them (see decode), each at most keepLineBytes plus what append rounds up.
var lineBufs = sync.Pool{New: func() any { return new([]byte) }}

// readLine reads the next line. For a line within the cap it returns the
// line without its newline or trailing "\r", valid until the next call. For
// an oversized line it returns tooLong and the number of bytes read, having
// kept nothing of the line but what c.idScan keeps to recover its id: the
// bytes past the cap are scanned as they are read and dropped. A final line
// without a newline is returned together with the read error.
func (c *conn) readLine() (line []byte, size int64, tooLong bool, err error) {
	var (
		n       int64 // bytes of this line so far
		discard bool  // the line exceeds the cap: only scanned for its id
		lastCR  bool  // the last byte read is '\r'
	)
	c.acc = c.acc[:0]
	c.parts, c.partsN, c.inPlace = nil, 0, false
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
			c.idScan.Write(s)
		case n > c.max+1: // over the cap even if the last byte is a '\r'
			discard = true
			c.idScan = newIDScan()
			c.idScan.Write(c.acc)
			for _, p := range c.parts {
				c.idScan.Write(p)
			}
			c.idScan.Write(s)
			c.acc, c.parts, c.partsN = c.acc[:0], nil, 0
		case complete && len(c.acc) == 0:
			line, c.inPlace = s, true // no copy
		case c.partsN == 0 && len(c.acc)+len(s) <= keepAccBytes:
			c.acc = append(c.acc, s...)
			c.maxAcc = max(c.maxAcc, cap(c.acc))
			line = c.acc
		default:
			// A line beyond keepAccBytes is kept in chunks and assembled once
			// at its end, at its exact size: growing one buffer would
			// allocate about five times the line.
			c.parts = append(c.parts, bytes.Clone(s))
			c.partsN += len(s)
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if c.partsN > 0 {
			line = c.assemble()
		}
		if lastCR {
			n--
			if !discard {
				line = line[:len(line)-1]
			}
		}
		if discard || n > c.max {
			if !discard {
				c.idScan = newIDScan()
				c.idScan.Write(line)
			}
			return nil, n, true, rerr
		}
		return line, n, false, rerr
	}
}

// assemble returns acc followed by parts in a new slice, and clears parts.
func (c *conn) assemble() []byte {
	line := make([]byte, 0, len(c.acc)+c.partsN)
	line = append(line, c.acc...)
	for _, p := range c.parts {
		line = append(line, p...)
	}
	c.parts, c.partsN = nil, 0
	return line
}

// decode turns a line into a message, or answers it with an error response
// and reports false.
func (c *conn) decode(line []byte) (jsonrpc.Message, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false
	}
	// Most lines are decoded in one validating pass (decodeCommon); the
	// others are scanned for the wire table first. A line in the read
	// buffer that a taker may claim is decoded in a buffer of its own,
	// which its params alias and which is reused once the taken call is
	// done with them (readLoop): copying it there is the copy decoding the
	// read buffer makes anyway, into memory that stays warm.
	// A plain request is decoded without a pass over its params, which the
	// taker reads (decodeCall).
	if c.inPlace && c.take != nil && len(line) <= keepLineBytes {
		buf := lineBufs.Get().(*[]byte)
		*buf = append((*buf)[:0], line...)
		if req, ok := decodeCall(*buf, c.ids); ok {
			c.lineBuf, c.unchecked = buf, true
			return req, true
		}
		if msg, ok := decodeCommon(*buf, true, c.ids); ok {
			c.lineBuf = buf
			return msg, true
		}
		lineBufs.Put(buf)
	}
	return c.decodeLine(line)
}

// decodeLine is decode without the reused buffers: the line decoded where
// it is, copied if it must be.
func (c *conn) decodeLine(line []byte) (jsonrpc.Message, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false
	}
	if msg, ok := decodeCommon(line, !c.inPlace, c.ids); ok {
		if !c.inPlace {
			c.acc = nil // the message may hold part of it
		}
		return msg, true
	}
	var err error
	// One pass of the scanner finds the object's end, its depth and the
	// members Inbound needs; the decoder then validates the object.
	if s := wire.Scan(line); onlySpaceAfter(line, &s) {
		// Inbound swaps an id the SDK would coerce for a token, and only when
		// the SDK accepts the result: a failure concerns the line as read.
		in, rewritten := c.ids.InboundScanned(s)
		var (
			msg jsonrpc.Message
			ok  bool
		)
		if rewritten { // rare: the scan describes the line, not in
			msg, ok = decodeMessage(in, !c.inPlace)
		} else {
			msg, ok = decodeScanned(in, s.Depth(), !c.inPlace)
		}
		if ok {
			if !c.inPlace {
				c.acc = nil // the message may hold part of it
			}
			return msg, true
		}
		if msg, err = jsonrpc.DecodeMessage(in); err == nil {
			return msg, true
		}
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
		if err == nil { // valid JSON, but not one object
			_, err = jsonrpc.DecodeMessage(line)
		}
		if err == nil { // cannot happen: a decodable object is not followed by data in valid JSON
			err = errors.New("unexpected data after the message")
		}
		c.logger.Warn("stdio: rejected invalid JSON-RPC message", "bytes", len(line), "error", err)
		c.writeError(recoverID(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	return nil, false
}

// onlySpaceAfter reports whether line, scanned as s, looks like one JSON
// object with nothing but whitespace after it (the SDK's decoder itself
// ignores trailing data). The scanner matches brackets outside strings and
// walks the top-level members (see jsonscan.Members), which is much cheaper
// than a full validation; the decoder validates the object. On valid JSON
// it finds the end a decoder finds, and a line that is not valid JSON is
// refused either way, so the lines it lets through are the ones that can
// be one message.
func onlySpaceAfter(line []byte, s *wire.Scanned) bool {
	end := s.End()
	return end > 0 && jsonscan.SkipWS(line, end) == len(line)
}

// rejectOversized answers a line longer than the cap, with its id when
// the scan found one.
func (c *conn) rejectOversized(size int64) {
	id := normalizeID(c.idScan.Value())
	c.logger.Warn("stdio: rejected oversized frame",
		"limit", "frame_bytes", "max_bytes", c.max, "read_bytes", size, "id", string(orNull(id)))
	if c.refused != nil {
		c.refused("limit", "frame_bytes")
	}
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
