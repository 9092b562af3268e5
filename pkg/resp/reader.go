package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"unsafe"
)

// Defaults for the zero fields of [ReaderOptions].
const (
	DefaultMaxBulkLen      = 512 << 20 // Redis's own proto-max-bulk-len default
	DefaultMaxAggregateLen = 1 << 20   // a decoded Value is ~90 bytes: up to ~90 MiB per aggregate
	DefaultMaxDepth        = 64
)

const (
	// maxLineLen bounds one header or simple line ("+...", "-...", "(...").
	maxLineLen = 1 << 20
	// bufSize is the read buffer's usual size; it grows to hold one larger
	// bulk payload and shrinks back after the value.
	bufSize = 64 << 10
	// slabSize is the size of the slabs short strings are copied into, and
	// slabMaxString the longest string copied into one.
	slabSize      = 4 << 10
	slabMaxString = 256
)

// ReaderOptions bounds what a [Reader] accepts. A frame beyond a bound is
// refused with a [*LimitError]; it is never truncated.
type ReaderOptions struct {
	// MaxBulkLen bounds the length of one bulk string, bulk error or
	// verbatim string (0: DefaultMaxBulkLen).
	MaxBulkLen int64
	// MaxAggregateLen bounds the element count of one array, set or push,
	// and the entry count of one map or attribute (0: DefaultMaxAggregateLen).
	MaxAggregateLen int64
	// MaxDepth bounds the nesting of aggregates (0: DefaultMaxDepth); a
	// top-level array is at depth 1.
	MaxDepth int
}

func (o ReaderOptions) withDefaults() ReaderOptions {
	if o.MaxBulkLen <= 0 {
		o.MaxBulkLen = DefaultMaxBulkLen
	}
	if o.MaxAggregateLen <= 0 {
		o.MaxAggregateLen = DefaultMaxAggregateLen
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	return o
}

// ProtocolError is input that is not RESP. The [Reader] that returned it
// returns it again on every later call.
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string { return "resp: protocol error: " + e.Msg }

// LimitError is a frame refused because it exceeds a limit. Limit is one of
// "bulk_length", "aggregate_length", "depth", "line_length" (a header or
// simple line over 1 MiB) or "reply_bytes" (a byte budget of the caller's,
// such as [PipelineOptions.MaxReplyBytes]). The [Reader] that returned it
// returns it again on every later call, since the rest of the frame was not
// read.
type LimitError struct {
	Limit string
	Max   int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("resp: limit %s (%d) exceeded", e.Limit, e.Max)
}

// errNotBuffered: the buffered bytes do not complete the value (non-blocking
// reads only).
var errNotBuffered = errors.New("resp: value not yet buffered")

// Reader decodes RESP2 and RESP3 frames from a byte stream.
//
// A read that fails with a timeout (a [net.Error] whose Timeout is true,
// e.g. after a read deadline) keeps everything read so far: calling
// ReadValue again continues the same frame. Any other error (end of input,
// a [*ProtocolError], a [*LimitError]) is final and returned again by every
// later call. A Reader is not safe for concurrent use.
type Reader struct {
	rd      io.Reader
	opts    ReaderOptions
	buf     []byte
	r, w    int     // buf[r:w] is read but not yet decoded
	scanned int     // bytes of buf[r:w] known to hold no '\n'
	stack   []frame // aggregates being decoded, outermost first
	n       int64   // wire bytes of the current top-level value decoded so far
	cost    int64   // its decoded size so far: n plus valueCost per value
	err     error
	slab    []byte // memory for short decoded strings (see clone)
	// lend: a top-level string of at least LentBytes is not copied out of
	// buf but lent (Pipeline's OnReply), and buf is kept between frames
	// rather than shrunk, so that one buffer serves reply after reply.
	lend bool
}

// LentBytes is the size from which [PipelineOptions.OnReply] is lent a
// top-level string rather than given a copy.
const LentBytes = 64 << 10

// valueCost is what one decoded value costs in memory beyond its payload
// (the Value itself, about 100 bytes): a budget that bounded wire bytes
// alone would let a reply of many tiny elements (":1\r\n" is 4 bytes)
// take 25 times its budget in memory.
const valueCost = int64(unsafe.Sizeof(Value{}))

// frame is an aggregate being decoded.
type frame struct {
	v        Value
	want     int64 // elements still to decode
	wrapping bool  // an attribute whose entries are done, waiting for its reply
}

// NewReader returns a Reader that decodes frames from r within opts.
func NewReader(r io.Reader, opts ReaderOptions) *Reader {
	return &Reader{rd: r, opts: opts.withDefaults(), buf: make([]byte, bufSize)}
}

// ReadValue decodes the next frame. An attribute is returned together with
// the reply it annotates, as one Value of Kind KindAttribute. wireBytes is
// the frame's size on the wire. At the end of input between frames it
// returns io.EOF, inside a frame io.ErrUnexpectedEOF.
func (r *Reader) ReadValue() (v Value, wireBytes int64, err error) {
	wireBytes, _, err = r.read(0, true, &v)
	return v, wireBytes, err
}

// read decodes the next frame into *dst (left zero on an error) and returns
// its wire size and its decoded size (see valueCost). Decoding in place
// rather than returning the Value spares a copy of it per element. limit > 0 bounds the decoded size
// ("reply_bytes"), so that a budget bounds memory.
// Without block it does not read from the source, and it is all or nothing:
// when the buffered bytes do not complete the frame (errNotBuffered) or the
// frame exceeds limit (a *LimitError), the frame is left unread for a later
// call. It must then be called between frames.
func (r *Reader) read(limit int64, block bool, dst *Value) (int64, int64, error) {
	*dst = Value{}
	if r.err != nil {
		return 0, 0, r.err
	}
	start := r.r
	for {
		ok, need, err := r.next(limit, dst)
		if !block && (need > 0 || isLimit(err)) {
			r.r, r.n, r.cost, r.scanned = start, 0, 0, 0
			clear(r.stack)
			r.stack = r.stack[:0]
			if err == nil {
				err = errNotBuffered
			}
			*dst = Value{}
			return 0, 0, err
		}
		if err != nil {
			r.err = err
			*dst = Value{}
			return 0, 0, err
		}
		if need > 0 {
			if err := r.fill(need); err != nil {
				*dst = Value{}
				if isTimeout(err) {
					return 0, 0, err
				}
				if errors.Is(err, io.EOF) && (len(r.stack) > 0 || r.w > r.r) {
					err = io.ErrUnexpectedEOF
				}
				r.err = err
				return 0, 0, err
			}
			continue
		}
		if !ok {
			continue
		}
		if r.deliver(dst) {
			n, cost := r.n, r.cost
			r.n, r.cost = 0, 0
			if !r.lend {
				r.shrink()
			}
			return n, cost, nil
		}
	}
}

// isLimit reports whether err is a [*LimitError]. (Apart from read, so
// that the target of errors.As is allocated only when there is an error.)
func isLimit(err error) bool {
	var le *LimitError
	return err != nil && errors.As(err, &le)
}

// betweenFrames reports whether no frame is partly decoded.
func (r *Reader) betweenFrames() bool { return len(r.stack) == 0 && r.n == 0 && r.err == nil }

// takeBuffered removes and returns up to max buffered bytes (raw access to
// read-ahead); only between frames.
func (r *Reader) takeBuffered(max int) []byte {
	n := min(max, r.w-r.r)
	out := bytes.Clone(r.buf[r.r : r.r+n])
	r.r += n
	r.scanned = 0
	return out
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fill reads until at least need bytes are buffered from r.r.
func (r *Reader) fill(need int) error {
	if need > len(r.buf)-r.r {
		if need > len(r.buf) {
			nb := make([]byte, max(need, 2*len(r.buf)))
			r.w = copy(nb, r.buf[r.r:r.w])
			r.buf = nb
		} else {
			r.w = copy(r.buf, r.buf[r.r:r.w])
		}
		r.r = 0
	}
	for r.w-r.r < need {
		n, err := r.rd.Read(r.buf[r.w:])
		r.w += n
		if err != nil {
			if r.w-r.r >= need {
				return nil // the error comes back on the next read
			}
			return err
		}
		if n == 0 {
			return io.ErrNoProgress
		}
	}
	return nil
}

// shrink gives back a buffer grown for a large bulk once it is mostly empty.
func (r *Reader) shrink() {
	if len(r.buf) > 4*bufSize && r.w-r.r <= bufSize {
		nb := make([]byte, bufSize)
		r.w = copy(nb, r.buf[r.r:r.w])
		r.r = 0
		r.buf = nb
	}
}

// next decodes one element from the buffer into *v, which is zero. ok: *v
// is a complete element; need > 0: at least need bytes must be buffered
// from r.r first; neither: an aggregate header was consumed (and *v is
// zero again).
func (r *Reader) next(limit int64, v *Value) (ok bool, need int, err error) {
	b := r.buf[r.r:r.w]
	i := bytes.IndexByte(b[r.scanned:], '\n')
	if i < 0 {
		r.scanned = len(b)
		if len(b) >= maxLineLen {
			return false, 0, &LimitError{Limit: "line_length", Max: maxLineLen}
		}
		n, err := r.need(limit, len(b)+1)
		return false, n, err
	}
	i += r.scanned
	if i < 2 || b[i-1] != '\r' {
		return false, 0, &ProtocolError{Msg: fmt.Sprintf("line %q does not end in CRLF", clip(b[:i+1]))}
	}
	t, line, size := Kind(b[0]), b[1:i-1], i+1
	if bytes.IndexByte(line, '\r') >= 0 {
		return false, 0, &ProtocolError{Msg: fmt.Sprintf("CR inside line %q", clip(b[:i+1]))}
	}
	v.Kind = t
	switch t {
	case KindSimpleString, KindSimpleError:
		v.Str = r.clone(line)
	case KindInteger:
		var ok bool
		if v.Int, ok = parseInt(line); !ok {
			return false, 0, &ProtocolError{Msg: fmt.Sprintf("integer %q", clip(line))}
		}
	case KindDouble:
		if _, err := strconv.ParseFloat(string(line), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return false, 0, &ProtocolError{Msg: fmt.Sprintf("double %q", clip(line))}
		}
		v.Str = r.clone(line)
	case KindBigNumber:
		if !isBigNumber(line) {
			return false, 0, &ProtocolError{Msg: fmt.Sprintf("big number %q", clip(line))}
		}
		v.Str = r.clone(line)
	case KindNull:
		if len(line) != 0 {
			return false, 0, &ProtocolError{Msg: fmt.Sprintf("null with payload %q", clip(line))}
		}
	case KindBoolean:
		switch string(line) {
		case "t":
			v.Bool = true
		case "f":
		default:
			return false, 0, &ProtocolError{Msg: fmt.Sprintf("boolean %q", clip(line))}
		}
	case KindBulkString, KindBulkError, KindVerbatim:
		n, err := r.length(t, line, r.opts.MaxBulkLen, "bulk_length")
		if err != nil {
			return false, 0, err
		}
		if n < 0 {
			v.Nil = true
			break
		}
		size += int(n) + 2
		if len(b) < size {
			n, err := r.need(limit, size)
			return false, n, err
		}
		if b[size-2] != '\r' || b[size-1] != '\n' {
			return false, 0, &ProtocolError{Msg: fmt.Sprintf("%s of length %d not followed by CRLF", t, n)}
		}
		payload := b[i+1 : size-2]
		if t == KindVerbatim {
			if len(payload) < 4 || payload[3] != ':' || !printable(payload[:3]) {
				return false, 0, &ProtocolError{Msg: fmt.Sprintf("verbatim string %q without a format prefix", clip(payload))}
			}
			v.Format, payload = string(payload[:3]), payload[4:]
		}
		if r.lend && len(r.stack) == 0 && len(payload) >= LentBytes {
			v.Str = payload[:len(payload):len(payload)]
			break
		}
		v.Str = r.clone(payload)
	case KindArray, KindSet, KindPush, KindMap, KindAttribute:
		n, err := r.length(t, line, r.opts.MaxAggregateLen, "aggregate_length")
		if err != nil {
			return false, 0, err
		}
		if n < 0 {
			v.Nil = true
			break
		}
		if len(r.stack) >= r.opts.MaxDepth {
			return false, 0, &LimitError{Limit: "depth", Max: int64(r.opts.MaxDepth)}
		}
		if err := r.consume(limit, size); err != nil {
			return false, 0, err
		}
		want := n
		if t == KindMap || t == KindAttribute {
			want *= 2
		}
		if want == 0 && t != KindAttribute {
			return true, 0, nil
		}
		if want > 0 {
			v.Elems = make([]Value, 0, min(want, 64))
		}
		r.stack = append(r.stack, frame{v: *v, want: want, wrapping: want == 0})
		*v = Value{}
		return false, 0, nil
	default:
		return false, 0, &ProtocolError{Msg: fmt.Sprintf("unknown type byte %q", byte(t))}
	}
	return true, 0, r.consume(limit, size)
}

// need returns n as the bytes to buffer, or a LimitError when they would
// exceed limit.
func (r *Reader) need(limit int64, n int) (int, error) {
	if limit > 0 && r.cost+int64(n) > limit {
		return 0, &LimitError{Limit: "reply_bytes", Max: limit}
	}
	return n, nil
}

// consume marks size buffered bytes, one value, as decoded.
func (r *Reader) consume(limit int64, size int) error {
	cost := int64(size) + valueCost
	if limit > 0 && r.cost+cost > limit {
		return &LimitError{Limit: "reply_bytes", Max: limit}
	}
	r.r += size
	r.n += int64(size)
	r.cost += cost
	r.scanned = 0
	return nil
}

// length parses a length header: -1 (a RESP2 null, for '$' and '*' only) or
// 0..max.
func (r *Reader) length(t Kind, line []byte, max int64, limit string) (int64, error) {
	n, ok := parseInt(line)
	switch {
	case !ok || n < -1 || (n == -1 && t != KindBulkString && t != KindArray):
		return 0, &ProtocolError{Msg: fmt.Sprintf("%s length %q", t, clip(line))}
	case n > max:
		return 0, &LimitError{Limit: limit, Max: max}
	}
	return n, nil
}

// deliver adds the complete element *v to the aggregate being decoded; done
// reports that it completed the top-level value, which is then in *v;
// otherwise *v is zero again, for the next element.
func (r *Reader) deliver(v *Value) (done bool) {
	for len(r.stack) > 0 {
		f := &r.stack[len(r.stack)-1]
		if f.wrapping {
			w := *v
			f.v.Wrapped = &w
		} else {
			f.v.Elems = append(f.v.Elems, *v)
			f.want--
			if f.want > 0 {
				*v = Value{} // for the next element
				return false
			}
			if f.v.Kind == KindAttribute {
				f.wrapping = true
				*v = Value{}
				return false
			}
		}
		*v = f.v
		r.stack[len(r.stack)-1] = frame{}
		r.stack = r.stack[:len(r.stack)-1]
	}
	return true
}

// parseInt parses a signed decimal int64: an optional + or -, then 1 to 19
// digits (strconv.ParseInt without the string conversion; servers send no
// longer zero padding).
func parseInt(s []byte) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	if len(s) == 0 || len(s) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	case neg && u <= -math.MinInt64:
		return -int64(u), true
	}
	return 0, false
}

func isBigNumber(s []byte) bool {
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func printable(s []byte) bool {
	for _, c := range s {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// clone copies a decoded string out of the read buffer (nil when empty).
// Short strings are copied into a shared slab rather than allocated one by
// one (a pipeline's replies are mostly "+OK" and small bulks); each copy's
// capacity ends at its length, so appending to one never writes over the
// next. A slab lives as long as any value copied into it.
func (r *Reader) clone(s []byte) []byte {
	if len(s) == 0 {
		return nil
	}
	if len(s) > slabMaxString {
		return bytes.Clone(s)
	}
	if cap(r.slab)-len(r.slab) < len(s) {
		r.slab = make([]byte, 0, slabSize)
	}
	at := len(r.slab)
	r.slab = append(r.slab, s...)
	return r.slab[at:len(r.slab):len(r.slab)]
}

// clip shortens s for an error message.
func clip(s []byte) []byte {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}
