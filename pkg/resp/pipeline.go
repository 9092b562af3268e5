package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// writeChunk is how many encoded bytes Pipeline and Send gather before a
// write; a larger command is written whole.
const writeChunk = 64 << 10

// PipelineOptions bounds one [Conn.Pipeline].
type PipelineOptions struct {
	// MaxReplyBytes, when > 0, bounds the decoded size of all the replies
	// and pushes the pipeline reads: their wire bytes plus about 100 bytes
	// per value (array elements included), so that it bounds memory too;
	// the frame that would exceed it fails the pipeline with a
	// [*LimitError] ("reply_bytes").
	MaxReplyBytes int64
	// Replies, when its capacity holds a reply per command, is the memory
	// the result's Replies use (from length 0): a caller that runs pipeline
	// after pipeline passes back the Replies of a result it is done with.
	Replies []Value
	// OnReply, when set, receives each reply as it is decoded, in order,
	// with its decoded size, instead of Replies (which stays empty;
	// PipelineResult.Received counts them), so that a caller that encodes
	// and drops each reply holds one at a time rather than all of them. A
	// top-level string of at least [LentBytes] is lent: its Str is the
	// connection's read buffer, valid only until OnReply returns (copy it
	// to keep it). An error from OnReply fails the pipeline as a failed
	// read does (the connection is closed).
	OnReply func(v *Value, cost int64) error
}

// PipelineResult is what a pipeline received.
type PipelineResult struct {
	// Replies holds one reply per command, in order (on error: those
	// received before it).
	Replies []Value
	// Pushes holds the RESP3 push frames that arrived among the replies, in
	// order. (In RESP2 a message is an array and cannot be told apart from a
	// reply: do not pipeline subscriptions.)
	Pushes []Value
	// ReplyBytes is the wire size of Replies and Pushes.
	ReplyBytes int64
	// Received counts the replies received: len(Replies), or those given
	// to OnReply.
	Received int
}

// Pipeline sends cmds and reads their replies concurrently (a writer
// goroutine it owns and waits for, and the calling goroutine reading), so
// that no batch can deadlock on full socket buffers; a batch of at most
// 64 KiB is written by the caller before it reads. Each command is a list
// of arguments, the command name first.
//
// Before anything is sent, an ended ctx, a closed connection, raw mode or
// a frame partly received by Receive fail with the connection kept. Once
// sending has started, any failure (ctx ended, network error,
// [*LimitError], [*ProtocolError]) closes the connection and returns the
// replies received so far with the error; the commands without a reply
// have unknown outcomes. Server error replies are
// replies, not failures: see [Value.IsError].
func (c *Conn) Pipeline(ctx context.Context, cmds [][][]byte, opts PipelineOptions) (PipelineResult, error) {
	var res PipelineResult
	release, err := c.acquire(ctx, true, c.rsem, c.wsem)
	if err != nil {
		return res, err
	}
	defer release()
	if len(cmds) == 0 {
		return res, nil
	}
	if !c.rd.betweenFrames() {
		return res, fmt.Errorf("resp: pipeline to %s: a received frame is partly decoded (finish it with Receive)", c.addr)
	}
	stop := c.watch(ctx, time.Time{}, true, true)
	defer stop()
	werr := make(chan error, 1)
	write := func() {
		_, err := c.writeCommands(cmds)
		if err != nil {
			c.Close() // the reader would otherwise wait for replies never asked for
		}
		werr <- err
	}
	if fitsOneWrite(cmds) {
		write() // too small to block on a server that reads; saves a goroutine hand-off per round trip
	} else {
		go write()
	}
	switch {
	case cap(opts.Replies) >= len(cmds):
		res.Replies = opts.Replies[:0]
	case opts.OnReply != nil:
		res.Replies = make([]Value, 0, 1) // one slot, reply after reply
	default:
		res.Replies = make([]Value, 0, len(cmds))
	}
	if opts.OnReply != nil {
		c.rd.lend = true
		defer func() {
			c.rd.lend = false
			c.rd.shrink()
		}()
	}
	var spent int64 // decoded size read so far
	for res.Received < len(cmds) {
		var limit int64
		if opts.MaxReplyBytes > 0 {
			if limit = opts.MaxReplyBytes - spent; limit <= 0 {
				err = &LimitError{Limit: "reply_bytes", Max: opts.MaxReplyBytes}
				break
			}
		}
		// Decoded in place, in the slot it will keep when it is a reply.
		res.Replies = append(res.Replies, Value{})
		v := &res.Replies[len(res.Replies)-1]
		n, cost, rerr := c.rd.read(limit, true, v)
		if rerr != nil {
			res.Replies = res.Replies[:len(res.Replies)-1]
			var le *LimitError
			if errors.As(rerr, &le) && le.Limit == "reply_bytes" {
				rerr = &LimitError{Limit: "reply_bytes", Max: opts.MaxReplyBytes}
			}
			err = rerr
			break
		}
		res.ReplyBytes += n
		spent += cost
		if v.Kind == KindPush {
			res.Pushes = append(res.Pushes, *v)
			*v = Value{}
			res.Replies = res.Replies[:len(res.Replies)-1]
			continue
		}
		res.Received++
		if opts.OnReply != nil {
			err = opts.OnReply(v, cost)
			*v = Value{}
			res.Replies = res.Replies[:len(res.Replies)-1]
			if err != nil {
				break
			}
		}
	}
	if err != nil {
		c.Close() // unblocks the writer
	}
	if wErr := <-werr; wErr != nil && (err == nil || errors.Is(err, net.ErrClosed)) {
		err = wErr // the write failed first; the read only saw the close
	}
	if err != nil {
		return res, c.fail(ctx, fmt.Sprintf("pipeline (%d of %d replies) to", res.Received, len(cmds)), err)
	}
	return res, nil
}

// fitsOneWrite reports whether cmds encode to at most writeChunk bytes: a
// batch the kernel's socket buffers take at once while the server reads,
// so that writing it before reading cannot deadlock.
func fitsOneWrite(cmds [][][]byte) bool {
	var n int64
	for _, cmd := range cmds {
		if n += CommandSize(cmd); n > writeChunk {
			return false
		}
	}
	return true
}

// writeCommands encodes and writes cmds in chunks; it holds the write side.
func (c *Conn) writeCommands(cmds [][][]byte) (int64, error) {
	buf := c.wbuf[:0]
	var written int64
	for i, cmd := range cmds {
		buf = AppendCommand(buf, cmd)
		if len(buf) >= writeChunk || i == len(cmds)-1 {
			n, err := c.nc.Write(buf)
			written += int64(n)
			if err != nil {
				return written, err
			}
			buf = buf[:0]
		}
	}
	if cap(buf) <= 4*writeChunk {
		c.wbuf = buf
	}
	return written, nil
}

// Do sends one command and returns its reply (a server error is a reply
// with IsError true, not an error). RESP3 pushes that arrive before the
// reply are dropped: use Pipeline to keep them. Failures are as for
// Pipeline.
func (c *Conn) Do(ctx context.Context, args ...[]byte) (Value, error) {
	res, err := c.Pipeline(ctx, [][][]byte{args}, PipelineOptions{})
	if err != nil {
		return Value{}, err
	}
	return res.Replies[0], nil
}

// Send writes cmds without reading any reply (manual mode: read them with
// Receive). It returns the bytes written, which acknowledge delivery to the
// network, not acceptance by the server. Waiting for the write side
// respects ctx and keeps the connection; once writing has started, a
// failure or an ended ctx closes it.
func (c *Conn) Send(ctx context.Context, cmds [][][]byte) (int64, error) {
	release, err := c.acquire(ctx, true, c.wsem)
	if err != nil {
		return 0, err
	}
	defer release()
	stop := c.watch(ctx, time.Time{}, false, true)
	defer stop()
	n, err := c.writeCommands(cmds)
	if err != nil {
		return n, c.fail(ctx, "send to", err)
	}
	return n, nil
}

// ReceiveOptions bounds one [Conn.Receive].
type ReceiveOptions struct {
	// MaxFrames is the most frames returned (at least 1).
	MaxFrames int
	// Wait is how long to wait for the first frame; 0 returns only frames
	// already read from the network.
	Wait time.Duration
	// MaxBytes, when > 0, bounds the decoded size returned (wire bytes plus
	// about 100 bytes per value, as PipelineOptions.MaxReplyBytes). A frame that
	// would exceed it is left for a later Receive, unless it is the first:
	// then it fails with a [*LimitError] and the connection is closed.
	MaxBytes int64
}

// ReceiveResult is what a Receive returned.
type ReceiveResult struct {
	Frames []Value // in order; pushes included
	Bytes  int64   // wire size of Frames
	// TimedOut reports that no frame arrived within Wait.
	TimedOut bool
}

// Receive reads frames (replies to Send, pushes) in manual mode. It waits
// up to opts.Wait (and no longer than ctx) for the first frame, then adds
// the frames already received in full, up to MaxFrames and MaxBytes,
// without waiting.
//
// A timeout is not an error and keeps the decoder's state: a frame that
// was partly received is continued by the next Receive. When ctx ends, the
// frames and state are kept too, and the ctx error is returned with the
// connection open. Any other failure closes the connection.
func (c *Conn) Receive(ctx context.Context, opts ReceiveOptions) (ReceiveResult, error) {
	var res ReceiveResult
	if opts.MaxFrames < 1 {
		return res, fmt.Errorf("resp: receive from %s: MaxFrames %d, want at least 1", c.addr, opts.MaxFrames)
	}
	release, err := c.acquire(ctx, true, c.rsem)
	if err != nil {
		return res, err
	}
	defer release()
	stop := c.watch(ctx, time.Now().Add(opts.Wait), true, false)
	defer stop()
	var v Value
	n, spent, err := c.rd.read(opts.MaxBytes, true, &v)
	if err != nil {
		if isTimeout(err) {
			if ended := ctxEnded(ctx, err); ended != nil {
				return res, fmt.Errorf("resp: receive from %s: %w", c.addr, ended)
			}
			res.TimedOut = true
			return res, nil
		}
		return res, c.fail(ctx, "receive from", err)
	}
	res.Frames = append(res.Frames, v)
	res.Bytes += n
	for len(res.Frames) < opts.MaxFrames {
		var limit int64
		if opts.MaxBytes > 0 {
			if limit = opts.MaxBytes - spent; limit <= 0 {
				break
			}
		}
		n, cost, err := c.rd.read(limit, false, &v)
		if err != nil {
			var le *LimitError
			if err == errNotBuffered || errors.As(err, &le) {
				break
			}
			return res, c.fail(ctx, "receive from", err)
		}
		res.Frames = append(res.Frames, v)
		res.Bytes += n
		spent += cost
	}
	return res, nil
}

// ReadRaw returns up to max bytes as received, without decoding: first
// what the decoder had read ahead (e.g. after the handshake), then from
// the network, waiting up to wait (and no longer than ctx). timedOut
// reports that nothing arrived in time (not an error; the connection is
// kept, as it is when ctx ends); eof that the server closed the
// connection. It fails if a frame was partly decoded. After it, the frame
// operations return [ErrRawMode].
func (c *Conn) ReadRaw(ctx context.Context, max int, wait time.Duration) (data []byte, timedOut, eof bool, err error) {
	if max < 1 {
		return nil, false, false, fmt.Errorf("resp: raw read from %s: max %d, want at least 1", c.addr, max)
	}
	release, err := c.acquire(ctx, false, c.rsem)
	if err != nil {
		return nil, false, false, err
	}
	defer release()
	if !c.raw.Load() && !c.rd.betweenFrames() {
		return nil, false, false, fmt.Errorf("resp: raw read from %s: a frame is partly decoded", c.addr)
	}
	c.raw.Store(true)
	if c.rd.w > c.rd.r {
		return c.rd.takeBuffered(max), false, false, nil
	}
	stop := c.watch(ctx, time.Now().Add(wait), true, false)
	defer stop()
	buf := make([]byte, max)
	n, err := c.nc.Read(buf)
	switch {
	case n > 0:
		return buf[:n], false, false, nil
	case isTimeout(err) && ctxEnded(ctx, err) != nil:
		return nil, false, false, fmt.Errorf("resp: raw read from %s: %w", c.addr, ctxEnded(ctx, err))
	case isTimeout(err):
		return nil, true, false, nil
	case errors.Is(err, io.EOF):
		c.Close()
		return nil, false, true, nil
	}
	return nil, false, false, c.fail(ctx, "raw read from", err)
}

// WriteRaw writes data as it is. Waiting for the write side respects ctx;
// once writing has started, a failure or an ended ctx closes the
// connection. After it, the frame operations return [ErrRawMode].
func (c *Conn) WriteRaw(ctx context.Context, data []byte) (int, error) {
	release, err := c.acquire(ctx, false, c.wsem)
	if err != nil {
		return 0, err
	}
	defer release()
	c.raw.Store(true)
	stop := c.watch(ctx, time.Time{}, false, true)
	defer stop()
	n, err := c.nc.Write(data)
	if err != nil {
		return n, c.fail(ctx, "raw write to", err)
	}
	return n, nil
}
