package httpserve

import (
	"bytes"
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
)

// replyWriter is the http.ResponseWriter the SDK writes one request's
// replies through. Each JSON-RPC message it writes (the data of an SSE
// event, or a whole application/json body) passes through the connection's
// id table ([wire.Table.Outbound]), which restores ids the SDK would have
// altered and drops the responses to requests the client cancelled; before
// that, a watched response may be seen (and replaced) by the watcher.
//
// It relies on how the SDK writes (mcp/event.go writeEvent, and its JSON
// error paths): one whole event or body per Write call, the message on one
// line, the buffer not used again after Write returns (so Outbound may
// rewrite it in place).
type replyWriter struct {
	http.ResponseWriter
	ids *wire.Table
	// watch holds, by id as the SDK sees it, the functions that see a
	// response before the client does; one returning non-nil replaces the
	// response with that message. Writes to one request's stream are
	// serialized by the SDK, so watch needs no lock.
	watch map[jsonrpc.ID]func(*jsonrpc.Response) []byte
	// status is the HTTP status written, 0 before WriteHeader.
	status int
	// shared, when set, is the shared session whose log messages are
	// checked against its record's level (see session.admits), with ctx,
	// the request's context.
	shared *session
	ctx    context.Context
}

// newReplyWriter returns the writer of a request's replies on session s
// (nil before it is opened, or ids alone: see setSession).
func newReplyWriter(w http.ResponseWriter, r *http.Request, ids *wire.Table) *replyWriter {
	return &replyWriter{ResponseWriter: w, ids: ids, ctx: r.Context()}
}

// setSession has rw filter the log messages of s when s is shared.
func (rw *replyWriter) setSession(s *session) {
	if s.shared {
		rw.shared = s
	}
}

// WriteHeader implements [http.ResponseWriter], recording the status.
func (rw *replyWriter) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

// refused reports whether the request was answered with an HTTP error,
// before the SDK handled its messages.
func (rw *replyWriter) refused() bool { return rw.status >= http.StatusBadRequest }

// Unwrap lets [http.ResponseController] reach the connection (the SDK
// flushes each event through it).
func (rw *replyWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// watchResponse has fn see the response to request id.
func (rw *replyWriter) watchResponse(id jsonrpc.ID, fn func(*jsonrpc.Response) []byte) {
	if rw.watch == nil {
		rw.watch = make(map[jsonrpc.ID]func(*jsonrpc.Response) []byte)
	}
	rw.watch[id] = fn
}

// Write implements [http.ResponseWriter]. It reports len(p) when it writes
// a rewritten message, or drops one.
func (rw *replyWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return rw.ResponseWriter.Write(p)
	}
	at, end := 0, len(p)
	switch rw.Header().Get("Content-Type") {
	case "text/event-stream":
		var ok bool
		if at, end, ok = eventData(p); !ok {
			return rw.ResponseWriter.Write(p) // a comment, or an event without data
		}
	case "application/json":
	default:
		return rw.ResponseWriter.Write(p) // plain-text errors carry no message
	}
	msg := p[at:end]
	out, drop := rw.outbound(msg)
	switch {
	case drop:
		return len(p), nil
	case len(out) == len(msg) && &out[0] == &msg[0]:
		return rw.ResponseWriter.Write(p) // unchanged, or rewritten in place
	}
	buf := make([]byte, 0, len(p)-len(msg)+len(out))
	buf = append(append(append(buf, p[:at]...), out...), p[end:]...)
	if _, err := rw.ResponseWriter.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// outbound returns the message to write in place of msg, or drop.
func (rw *replyWriter) outbound(msg []byte) (out []byte, drop bool) {
	if rw.shared != nil {
		if level, byDefault, ok := logLevelOf(msg); ok && !rw.shared.admits(rw.ctx, level, byDefault) {
			return nil, true
		}
	}
	if len(rw.watch) > 0 {
		if m, err := jsonrpc.DecodeMessage(msg); err == nil {
			if resp, ok := m.(*jsonrpc.Response); ok {
				if fn := rw.watch[resp.ID]; fn != nil {
					delete(rw.watch, resp.ID)
					if repl := fn(resp); repl != nil {
						msg = repl
					}
				}
			}
		}
	}
	return rw.ids.Outbound(msg)
}

// eventData finds the data of the one SSE event in p, as the SDK writes it:
// "data: " starting a line, the message, and the blank line ending the
// event.
func eventData(p []byte) (at, end int, ok bool) {
	const field = "data: "
	if bytes.HasPrefix(p, []byte(field)) {
		at = len(field)
	} else if i := bytes.Index(p, []byte("\n"+field)); i >= 0 {
		at = i + 1 + len(field)
	} else {
		return 0, 0, false
	}
	end = len(p) - len("\n\n")
	if end <= at || !bytes.HasSuffix(p, []byte("\n\n")) || bytes.IndexByte(p[at:end], '\n') >= 0 {
		return 0, 0, false
	}
	return at, end, true
}
