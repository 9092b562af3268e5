package mcpcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// Run serves one client session on t, a stream transport (stdio, an
// in-memory pipe; not streamable HTTP, which has transports of its own),
// until the client goes away or ctx ends, as the SDK's [mcp.Server.Run]
// does. It answers itself the tools/call requests of a legacy-era session
// (initialized at a protocol before 2026-07-28) for the direct tools
// (marked with internal/fastpath.Direct, mcpkit's bundled RESP plugin's);
// every other message goes to the SDK.
//
// A direct call has every semantics of the SDK's: the same session
// ([mcp.CallToolRequest.Session]: progress, logging and requests to the
// client work), the same params, the receiving middleware of
// [Options.Middleware] and the host's session tracking around it, the
// same concurrency limit, timeout, result shape, paging and errors (a
// JSON-RPC error the tool returns is answered as the SDK answers it; a
// call whose params the SDK would refuse, or that names no direct tool,
// goes to the SDK), cancellation by notifications/cancelled and when
// the client goes away, and the SDK's refusal, without an answer, of a
// request whose id is in use. What it saves is the SDK's request path:
// two more decodings of the params (each with a fresh 32 KiB buffer), a
// queue hand-off, and a second validation of the encoded result, which
// for a small call cost as much as the call itself. Over a transport that
// can offer messages before queueing them ([github.com/mcpkit/mcpkit/pkg/mcpcore/stdio.Transport.ConnectTaking])
// a direct call also skips the SDK's read loop: it runs on the goroutine
// that read it. Middleware added to [Server.MCP] directly does not see
// direct calls.
//
// The memory of a direct call's response is reused once t's connection
// has written it: a connection's Write must not keep the message after it
// returns (the SDK's stream transports and package stdio's encode it
// before they return).
//
// When t's connection reaches EOF (over stdio: the client closed stdin,
// which is how an MCP client ends a stdio session), the requests already
// read are still answered, the SDK's and the direct calls alike: the
// session ends once each has been answered, or once the longest a call may
// run (the longest tool timeout, plus a second) has passed. A client that went away
// without closing stdin is noticed when a response cannot be written, and
// ends the session at once.
//
// Run returns once the session has ended and every direct call has
// returned (each is cancelled when the session ends with calls in flight).
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	dt := &directTransport{srv: s, inner: t, ctx: ctx, connected: make(chan struct{})}
	ss, err := s.mcp.Connect(ctx, dt, nil)
	if err == nil {
		dt.session.Store(ss)
	}
	close(dt.connected)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-ended
		err = ctx.Err()
	case err = <-ended:
	}
	if c := dt.conn.Load(); c != nil {
		c.stop(err)
	}
	return err
}

// directTransport wraps a transport so that its connection answers direct
// calls (see Server.Run).
type directTransport struct {
	srv     *Server
	inner   mcp.Transport
	ctx     context.Context // direct calls run under it, as the SDK's do under Connect's
	session atomic.Pointer[mcp.ServerSession]
	conn    atomic.Pointer[directConn]
	// connected is closed once Connect has returned and session is set
	// (or Connect failed). The SDK reads before it returns, so the first
	// calls may be read before the session is known.
	connected chan struct{}
}

// takingTransport is a transport whose connection offers each message it
// reads to a function on its reader goroutine, which may claim it and have
// its work run there (package stdio's: [github.com/mcpkit/mcpkit/pkg/mcpcore/stdio.Transport.ConnectTaking]).
type takingTransport interface {
	ConnectTaking(ctx context.Context, take func(msg jsonrpc.Message, checked bool) func() bool) (mcp.Connection, error)
}

func (t *directTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := &directConn{t: t, calls: map[jsonrpc.ID]context.CancelCauseFunc{}, sdkCalls: map[jsonrpc.ID]struct{}{},
		settled: make(chan struct{}, 1)}
	var err error
	if tt, ok := t.inner.(takingTransport); ok {
		// A direct call starts on the goroutine that read it, rather than
		// through Read's caller (the SDK's read loop) and one more.
		c.taking = true
		c.inner, err = tt.ConnectTaking(ctx, c.take)
	} else {
		c.inner, err = t.inner.Connect(ctx)
	}
	if err != nil {
		return nil, err
	}
	t.conn.Store(c)
	return c, nil
}

// directConn is the connection the SDK reads: it passes on every message
// but the direct calls, which it runs itself.
type directConn struct {
	t      *directTransport
	inner  mcp.Connection
	taking bool // inner offers messages to take itself (takingTransport)

	mu       sync.Mutex
	calls    map[jsonrpc.ID]context.CancelCauseFunc // direct calls in flight
	sdkCalls map[jsonrpc.ID]struct{}                // calls passed to the SDK, not yet answered
	stopped  bool                                   // no more direct calls (Run is returning)
	broken   error                                  // reading or writing failed, or Close was called: no more responses
	wg       sync.WaitGroup                         // direct calls' goroutines
	// settled is signalled (buffer 1) when a call is answered or the
	// connection breaks: drain waits on it at EOF.
	settled chan struct{}
}

func (c *directConn) SessionID() string { return c.inner.SessionID() }

func (c *directConn) Close() error {
	c.fail(mcp.ErrConnectionClosed)
	return c.inner.Close()
}

// Write passes msg on, noting that the SDK answered a call.
func (c *directConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if res, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.sdkCalls, res.ID)
		c.mu.Unlock()
		defer c.settle() // once written: drain's EOF must not overtake it
	}
	return c.inner.Write(ctx, msg)
}

// Read returns the next message for the SDK, running the direct calls
// read before it (unless inner took them already). At EOF it first waits
// for the calls already read to be answered (drain): the SDK, told of
// EOF, would cancel its calls and write no more responses. When reading
// fails, the direct calls in flight are cancelled with the error as cause,
// as the SDK cancels its own.
func (c *directConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.inner.Read(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				c.drain(ctx)
			}
			c.fail(err)
			return nil, err
		}
		if c.taking {
			return msg, nil
		}
		run := c.take(msg, true)
		if run == nil {
			return msg, nil
		}
		go run()
	}
}

// take returns the work of msg when it is a direct call (or nothing to do,
// when its id is a direct call's in flight), and nil when msg is the SDK's;
// a notifications/cancelled cancels the direct call it names on the way.
// The work reports whether msg is done with (see serve). A request whose
// params are not checked (see the stdio transport's ConnectTaking) is
// taken only once directParams has validated all of them.
func (c *directConn) take(msg jsonrpc.Message, checked bool) func() bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return nil
	}
	if !req.IsCall() {
		if req.Method == "notifications/cancelled" {
			c.cancel(req.Params)
		}
		return nil
	}
	return c.accept(req, checked)
}

// doNothing is the work of a request refused without an answer.
func doNothing() bool { return true }

// accept returns the work of req as a direct call, or doNothing when its
// id is a direct call's in flight (as the SDK drops a request whose id is
// in use); it returns nil when req is the SDK's to answer.
func (c *directConn) accept(req *jsonrpc.Request, checked bool) func() bool {
	params, args, modern, handler := c.direct(req, checked) // parsed before locking: answers being written wait for the lock
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.calls[req.ID]; dup {
		c.t.srv.logger.Warn("refused a request whose id is in use, without an answer (as the MCP SDK does)", "method", req.Method)
		return doNothing
	}
	if _, dup := c.sdkCalls[req.ID]; dup || handler == nil || c.stopped || c.broken != nil {
		c.sdkCalls[req.ID] = struct{}{}
		c.t.srv.obs.tagRequest(req)
		return nil
	}
	ctx, cancel := context.WithCancelCause(c.t.ctx)
	ctx = c.t.srv.obs.withRequestID(ctx, req.ID)
	c.calls[req.ID] = cancel
	c.wg.Add(1)
	return func() bool { return c.serve(ctx, req.ID, params, args, modern) }
}

// direct returns the params and handler of req when it is a direct call:
// tools/call of a direct tool, on a legacy-era session or a 2026-07-28
// call the SDK would take as it is (see modernDirect; modern reports it),
// with params the SDK would decode the same way and no multi-round-trip
// fields; and the arguments decoded as the params were read, if they
// were (see directParams).
func (c *directConn) direct(req *jsonrpc.Request, checked bool) (_ *mcp.CallToolParamsRaw, _ any, modern bool, _ mcp.ToolHandler) {
	if req.Method != "tools/call" || len(req.Params) == 0 || req.Params[0] != '{' {
		return nil, nil, false, nil
	}
	ss := c.t.session.Load()
	if ss == nil {
		<-c.t.connected // a call read while Connect was returning: direct once the session is known
		if ss = c.t.session.Load(); ss == nil {
			return nil, nil, false, nil
		}
	}
	init := ss.InitializeParams()
	if init == nil {
		return nil, nil, false, nil
	}
	var prefixOf func(string) decodePrefix
	if c.t.srv.reuseResults { // nothing but the host sees the request: decoded arguments cannot go stale
		prefixOf = c.t.srv.directPrefix
	}
	p, args, ok := directParams(req.Params, prefixOf, checked)
	if !ok || p.InputResponses != nil || p.RequestState != "" {
		return nil, nil, false, nil
	}
	h := c.t.srv.directTool(p.Name).handler
	if h == nil {
		return nil, nil, false, nil
	}
	_, modern = p.Meta[mcp.MetaKeyProtocolVersion]
	if (modern || init.ProtocolVersion >= modernProtocol) && !(modern && init.ProtocolVersion >= modernProtocol && c.t.srv.modernDirect(ss, p.Meta)) {
		return nil, nil, false, nil // the SDK's: a call it answers otherwise
	}
	return p, args, modern, h
}

// directParams reads tools/call params, valid JSON (the transport decoded
// the message), as the SDK's decoder reads them into
// [mcp.CallToolParamsRaw] (its flags: keys matched exactly after
// unescaping, other members ignored), without a second validating pass
// over the arguments, which alias params. It reports false for params it
// leaves to the SDK: not an object, a member twice, a member of the wrong
// type.
//
// With prefixOf, when the arguments come after the name and the tool's
// argument type is a [fastpath.ArgumentsPrefixDecoder] (prefixOf returns its
// decodePrefix), the arguments are decoded as they are read, which finds
// where they end, and returned as args; otherwise args is nil.
//
// Unless checked, params may be anything (the transport did not validate
// them): directParams then takes them only if it has validated every byte
// as it read them (its keys plain strings, each member's value read by a
// validating decoder: the name's, the prefix decoder, or segmentio's).
func directParams(params json.RawMessage, prefixOf func(name string) decodePrefix, checked bool) (p *mcp.CallToolParamsRaw, args any, ok bool) {
	p = new(mcp.CallToolParamsRaw)
	var seen [5]bool // name, arguments, _meta, inputResponses, requestState
	var prefix decodePrefix
	m := jsonscan.NewMembers(params)
	for m.NextKey() {
		if !checked {
			if _, end := jsonscan.PlainString(m.Key, 0); end != len(m.Key) {
				return nil, nil, false
			}
		}
		valid := checked // the value is known to be valid JSON
		if prefix != nil && !seen[1] && jsonscan.KeyIs(m.Key, "arguments") {
			if end, a, ok := prefix(params[m.ValueAt:]); ok {
				m.ValueEnds(m.ValueAt + end)
				args, valid = a, true
			} else if !m.SkipValue() {
				break
			}
		} else if !m.SkipValue() {
			break
		}
		var field int
		var into any
		switch {
		case jsonscan.KeyIs(m.Key, "name"):
			field, into = 0, &p.Name
			if plain, end := jsonscan.PlainString(m.Value, 0); end == len(m.Value) {
				p.Name, into = string(plain), nil
			}
		case jsonscan.KeyIs(m.Key, "arguments"):
			field, p.Arguments = 1, json.RawMessage(m.Value)
			if !valid && !segjson.Valid(m.Value) {
				return nil, nil, false
			}
		case jsonscan.KeyIs(m.Key, "_meta"):
			field, into = 2, &p.Meta
		case jsonscan.KeyIs(m.Key, "inputResponses"):
			field, into = 3, &p.InputResponses
		case jsonscan.KeyIs(m.Key, "requestState"):
			field, into = 4, &p.RequestState
		default:
			if !valid && !segjson.Valid(m.Value) {
				return nil, nil, false
			}
			continue
		}
		if seen[field] {
			return nil, nil, false
		}
		seen[field] = true
		if into != nil {
			// Copied, not aliased: the params' memory may be reused once
			// the call is done, and the name or _meta may outlive it.
			if _, err := segjson.Parse(m.Value, into, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
				return nil, nil, false
			}
		}
		if field == 0 && prefixOf != nil {
			prefix = prefixOf(p.Name)
		}
	}
	if end := m.End(); end < 0 || jsonscan.SkipWS(params, end) != len(params) {
		return nil, nil, false
	}
	return p, args, true
}

// modernProtocol is the first protocol version of the 2026-07-28 era,
// whose calls the SDK answers (result types, server identity).
const modernProtocol = "2026-07-28"

// serve runs one direct call and writes its response. It reports whether
// the call is done with its params: on a server without
// Options.Middleware, when the handler returned a result the host served
// inline (it returned: it was not abandoned; and it keeps nothing of its
// arguments, as fastpath.Direct requires; nothing retained aliases
// them).
func (c *directConn) serve(ctx context.Context, id jsonrpc.ID, params *mcp.CallToolParamsRaw, args any, modern bool) (done bool) {
	defer c.wg.Done()
	var slot *resultSlot
	if c.t.srv.reuseResults {
		ctx, slot = withResultSlot(ctx)
		slot.args = args // directParams decoded them only here
		defer func() {
			done = slot.servedInline()
			slot.release() // once the response is written: nothing reads the result after
		}()
	}
	req := &mcp.CallToolRequest{Session: c.t.session.Load(), Params: params}
	res, err := c.t.srv.directCall(ctx, "tools/call", req)
	resp := &jsonrpc.Response{ID: id, Error: err}
	switch {
	case err != nil:
	case res == nil:
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tool %s returned no result and no error", params.Name)}
	default:
		buf := directBuffers.Get().(*[]byte)
		defer func() {
			if cap(resp.Result) <= keepDirectBytes {
				*buf = resp.Result[:0]
				directBuffers.Put(buf)
			}
		}()
		if modern {
			c.t.srv.annotateModern(res)
		}
		if resp.Result, err = encodeDirect((*buf)[:0], res, slot, modern); err != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tool %s returned a result that does not encode: %v", params.Name, err)}
		}
	}
	c.mu.Lock()
	cancel := c.calls[id]
	delete(c.calls, id) // before writing: the client may reuse the id once it has the response
	broken := c.broken
	c.mu.Unlock()
	cancel(nil)
	defer c.settle()
	if broken != nil {
		// As the SDK: once reading or writing failed, or the connection
		// was closed, no response is written.
		c.t.srv.logger.Debug("a direct call's response was not written", "tool", params.Name, "err", broken)
		return false
	}
	if err := c.inner.Write(context.WithoutCancel(ctx), resp); err != nil {
		c.t.srv.logger.Debug("writing a direct call's response", "tool", params.Name, "err", err)
		c.fail(err)
	}
	return false // unless the slot says otherwise (deferred)
}

// fail records that the connection cannot carry responses any more and
// cancels the direct calls in flight with err as cause, as the SDK does
// with its own when reading or writing fails.
func (c *directConn) fail(err error) {
	c.mu.Lock()
	if c.broken == nil {
		c.broken = err
	}
	c.mu.Unlock()
	c.settle()
	c.cancelAll(err)
}

// settle wakes drain to look again.
func (c *directConn) settle() {
	select {
	case c.settled <- struct{}{}:
	default:
	}
}

// drainMargin is how long, beyond the longest call's timeout, drain waits
// for that call's response to be written.
const drainMargin = time.Second

// drainTimeout is the longest [Server.Run] waits at EOF for the requests
// already read to be answered: the longest timeout of any tool (the
// tool_timeout limit, or a tool's own [ToolOptions.Timeout]) and a second
// for its response to be written.
func (s *Server) drainTimeout() time.Duration {
	return max(s.limits.ToolTimeout.D(), time.Duration(s.longestCall.Load())) + drainMargin
}

// noteCallTimeout records a tool's call timeout for drainTimeout.
func (s *Server) noteCallTimeout(d time.Duration) {
	for {
		old := s.longestCall.Load()
		if int64(d) <= old || s.longestCall.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// drain waits, at EOF, until every call read has been answered (the
// direct calls and those passed to the SDK), the connection breaks (a
// response could not be written, or it was closed), ctx ends, or
// drainTimeout passes; the calls still unanswered then are cancelled by
// the caller, as the SDK's are.
func (c *directConn) drain(ctx context.Context) {
	bound := c.t.srv.drainTimeout()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for {
		c.mu.Lock()
		pending := len(c.calls) + len(c.sdkCalls)
		done := pending == 0 || c.broken != nil
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-c.settled:
		case <-ctx.Done():
			return
		case <-timer.C:
			c.t.srv.logger.Warn("input ended with calls unanswered after waiting for them; they are cancelled",
				"calls", pending, "waited", bound)
			return
		}
	}
}

// cancel cancels the direct call that notifications/cancelled params name.
func (c *directConn) cancel(params json.RawMessage) {
	var p mcp.CancelledParams // decoded as the SDK decodes it
	if _, err := segjson.Parse(params, &p, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	cancel := c.calls[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel(context.Canceled)
	}
}

// cancelAll cancels every direct call in flight with cause.
func (c *directConn) cancelAll(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.calls {
		cancel(cause)
	}
}

// stop accepts no more direct calls, cancels those in flight and waits
// for them.
func (c *directConn) stop(cause error) {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	if cause == nil {
		cause = context.Canceled
	}
	c.cancelAll(cause)
	c.wg.Wait()
}

// directEntry is a direct tool: its handler, and its argument type's
// decodePrefix if it has one.
type directEntry struct {
	handler mcp.ToolHandler
	prefix  decodePrefix
}

// directTool returns a direct tool, or the zero entry.
func (s *Server) directTool(name string) directEntry {
	s.regMu.RLock()
	defer s.regMu.RUnlock()
	return s.direct[name]
}

// directPrefix returns the decodePrefix of a direct tool, or nil.
func (s *Server) directPrefix(name string) decodePrefix { return s.directTool(name).prefix }

// directChain builds the handler of direct calls: the receiving middleware
// of Options.Middleware (the first outermost) and the host's session
// tracking around the tool's handler, as the SDK composes them (less the
// host's result encoding, which encodeDirect does). The tool's result is
// completed as the SDK's callTool completes it.
func (s *Server) directChain(middleware []mcp.Middleware) mcp.MethodHandler {
	var h mcp.MethodHandler = func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		r := req.(*mcp.CallToolRequest)
		tool := s.directTool(r.Params.Name).handler
		if tool == nil { // removed since it was read
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", r.Params.Name)}
		}
		res, err := tool(ctx, r)
		if err != nil || res == nil {
			return res, err
		}
		if res.InputRequests != nil || res.RequestState != "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("server bug: tool %q is declared direct but returned input requests", r.Params.Name)}
		}
		if res.Content == nil {
			res2 := *res
			res2.Content = []mcp.Content{} // as the SDK: "content":[] rather than null
			res = &res2
		}
		return res, nil
	}
	h = s.trackSessions(h)
	for _, m := range slices.Backward(middleware) {
		h = m(h)
	}
	if s.obs != nil {
		h = s.observe(h) // outermost, as on the SDK's path
	}
	return h
}

// directBuffers holds the memory of direct calls' encoded results and of
// their handlers' results (fastpath.ResultBuffer), reused once the response is
// written (a transport's Write does not keep the message: it encodes it
// before returning); keepDirectBytes is the largest kept.
var directBuffers = sync.Pool{New: func() any { return new([]byte) }}

const keepDirectBytes = 1 << 20

// encodeDirect appends a direct call's result to dst, encoded as the SDK
// would (with the result type of a 2026-07-28 call when modern): a result the host built in one pass (encodedResult), anything
// else with encoding/json without HTML escaping. The result is compact: a
// structured content that holds line breaks is compacted, so that a
// response is always one line.
func encodeDirect(dst []byte, res mcp.Result, slot *resultSlot, modern bool) (json.RawMessage, error) {
	data, err := encodeDirectResult(dst, res, slot)
	if err != nil || !modern {
		return data, err
	}
	return completeResult(data), nil
}

// encodeDirectResult is encodeDirect of a result without the 2026-07-28
// result type.
func encodeDirectResult(dst []byte, res mcp.Result, slot *resultSlot) (json.RawMessage, error) {
	if r, ok := res.(*mcp.CallToolResult); ok && plainToolResult(r) {
		data, err := (&encodedResult{CallToolResult: r, direct: true, slot: slot}).appendJSON(dst)
		if err != nil || bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
			return data, err
		}
		var buf bytes.Buffer
		err = json.Compact(&buf, data)
		return buf.Bytes(), err
	}
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
