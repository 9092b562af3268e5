package mcpcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// ToolFunc handles one tool call. It returns a JSON-serializable value
// (normally a struct; a json.RawMessage is taken as already serialized,
// and is the host's once returned: the handler must not modify it) that
// the host serializes once, inline or paged; or a complete
// *mcp.CallToolResult, for content other than JSON (images, audio, embedded
// resources, several blocks) or a 2026-07-28 input-required result, which
// the host returns as it is (paged as a whole, format "mcp_result", when
// its JSON exceeds inline_result_bytes; input requests are never paged). It must honour ctx: ctx ends
// on timeout, on notifications/cancelled and when the client goes away. To
// return a structured result marked isError, return [ErrorResult]; an
// error with a kind ([KindError], [ParamError], [LimitError]) is reported
// with that kind, any other error with kind "error"; a *jsonrpc.Error is
// answered as a JSON-RPC protocol error. A panic is recovered: the call
// fails with kind "internal" and the stack goes to the log.
type ToolFunc[In any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (any, error)

// ToolOptions are a tool's own settings, given to [AddTool].
type ToolOptions struct {
	// Timeout replaces the tool_timeout limit for this tool (a long poll, a
	// snapshot download): at most [MaxToolTimeout]; zero means tool_timeout.
	Timeout time.Duration
	// direct: the tool is direct (see internal/fastpath.Direct, which
	// sets it for mcpkit's bundled plugins): Server.Run may answer its
	// legacy-era calls itself rather than through the SDK's request path.
	direct bool
}

// AddTool adds a tool named h.ToolName(t.Name). Its input schema is
// t.InputSchema, or else derived from In (json and jsonschema struct tags);
// it must describe a JSON object. The host validates every call's arguments
// against it and decodes them strictly into In (exact field names, no
// unknown field); invalid arguments fail the call with kind "bad_params"
// and the offending argument's path, before the handler runs.
//
// When t.OutputSchema is set (an object schema), the tool declares the
// union of it, of the paged-result reference and of the host's error reply
// ([ToolErrorReply]), since all three come back as structuredContent; a
// value the tool returns through [ErrorResult] must then match the tool's
// schema. The host does not validate results against it.
//
// opts holds at most one [ToolOptions]. A name already served by this or
// another plugin, an invalid name or schema, or a bad option is a startup
// error naming the plugin.
func AddTool[In any](h *Host, t *mcp.Tool, fn ToolFunc[In], opts ...ToolOptions) {
	if t == nil || fn == nil {
		h.fail(errors.New("tool: nil definition or handler"))
		return
	}
	var opt ToolOptions
	switch {
	case len(opts) > 1:
		h.fail(fmt.Errorf("tool %s: more than one ToolOptions", t.Name))
		return
	case len(opts) == 1:
		opt = opts[0]
	}
	timeout := h.srv.limits.ToolTimeout.D()
	if opt.Timeout != 0 {
		if opt.Timeout < 0 || opt.Timeout > MaxToolTimeout {
			h.fail(fmt.Errorf("tool %s: timeout %v is outside (0, %v]", t.Name, opt.Timeout, MaxToolTimeout))
			return
		}
		timeout = opt.Timeout
	}
	h.srv.noteCallTimeout(timeout)
	tool := *t
	tool.Name = h.ToolName(t.Name)
	args, err := newArgSchema(t.InputSchema, func() (*jsonschema.Schema, error) { return jsonschema.For[In](nil) })
	if err != nil {
		h.fail(fmt.Errorf("tool %s: %w", tool.Name, err))
		return
	}
	tool.InputSchema = args.schema
	if t.OutputSchema != nil {
		if tool.OutputSchema, err = outputUnion(t.OutputSchema); err != nil {
			h.fail(fmt.Errorf("tool %s: output schema: %w", tool.Name, err))
			return
		}
	}
	call := toolCall{host: h, tool: tool.Name, timeout: timeout, ownTimeout: opt.Timeout != 0}
	var prefix decodePrefix
	if opt.direct {
		prefix = prefixDecoder[In]()
	}
	h.addTool(&tool, opt.direct, prefix, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return call.run(ctx, req, func(ctx context.Context) (any, error) {
			var in In
			ok := false
			if prefix != nil {
				in, ok = decodedArgs[In](ctx)
			}
			if !ok {
				var err error
				if in, err = decodeArgs[In](args, req.Params.Arguments); err != nil {
					return nil, err
				}
			}
			return fn(ctx, req, in)
		})
	})
}

// addTool checks the tool's name, claims it and adds it through the SDK;
// a direct tool's handler is also what Server.Run calls.
func (h *Host) addTool(tool *mcp.Tool, direct bool, prefix decodePrefix, handler mcp.ToolHandler) {
	if err := checkToolName(tool.Name); err != nil {
		h.fail(fmt.Errorf("tool %q: %w", tool.Name, err))
		return
	}
	h.srv.regMu.Lock()
	defer h.srv.regMu.Unlock()
	if h.claim(h.srv.tools, &h.tools, "tool", tool.Name) {
		h.queue("tool", tool.Name, func(m *mcp.Server) {
			m.AddTool(tool, handler)
			if direct {
				h.srv.direct[tool.Name] = directEntry{handler: handler, prefix: prefix}
			} else {
				delete(h.srv.direct, tool.Name) // replaced by a tool that is not direct
			}
		})
	}
}

// checkToolName applies the MCP tool-name rule, which the SDK only logs.
func checkToolName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("a tool name has 1 to 128 characters, not %d", len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("a tool name has only [A-Za-z0-9_.-], not %q", r)
		}
	}
	return nil
}

// errorResult is the value behind [ErrorResult].
type errorResult struct{ value any }

func (e *errorResult) Error() string { return "tool reported an error result" }

// ErrorResult returns an error that makes the host serve v as the tool's
// structured result with isError set: for replies that are errors but still
// carry data (a server error reply inside an otherwise successful pipeline).
// It is also how a handler whose ctx ended returns what it has (what was
// received before a timeout or cancellation): it has a short grace period to
// do so, and the host then reports the call as timed out or cancelled with v
// as the reply's "partial" ([ToolErrorReply]).
func ErrorResult(v any) error { return &errorResult{value: v} }

// cancelGrace is how long a timed-out or cancelled handler may take to
// return its partial result before the host answers without it.
const cancelGrace = 250 * time.Millisecond

// toolCall is what the host knows of one tool when it runs a call.
type toolCall struct {
	host       *Host
	tool       string
	timeout    time.Duration
	ownTimeout bool // the tool set its own timeout (ToolOptions.Timeout)
}

// outcome is what a handler returned, or its recovered panic.
type outcome struct {
	v        any
	err      error
	panicked bool
}

// run runs one call under the concurrency limit and the timeout and turns
// its outcome into a CallToolResult.
func (c toolCall) run(ctx context.Context, req *mcp.CallToolRequest, fn func(context.Context) (any, error)) (*mcp.CallToolResult, error) {
	s, h := c.host.srv, c.host
	select {
	case s.slots <- struct{}{}:
	default:
		s.calls.rejected.Add(1)
		return toolError(&LimitError{Limit: "concurrent_tool_calls", Max: int64(s.limits.ConcurrentToolCalls),
			Detail: "too many tool calls are running; nothing was done, retry when one finishes"}), nil
	}
	s.mu.RLock()
	if s.closing {
		s.mu.RUnlock()
		<-s.slots
		return toolError(&KindError{Kind: KindUnavailable, Err: fmt.Errorf("%w: the call was not run", ErrClosed)}), nil
	}
	s.inflight.Add(1)
	s.mu.RUnlock()
	s.calls.started.Add(1)
	s.calls.inFlight.Add(1)
	h.inflight.Add(1)
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, ErrTimeout)
	defer cancel() // only after the outcome is classified: ctx.Err must mean timeout or cancellation

	done := make(chan outcome, 1)
	// The handler runs on a goroutine of its own (a kept one: s.workers) so
	// that a handler which ignores ctx still cannot hold the client past
	// the timeout; its slot is only freed when it really returns, so the
	// concurrency limit stays truthful.
	s.workers.run(func() {
		out := c.invoke(ctx, fn) // recovers a panic: what follows always runs
		h.inflight.Add(-1)
		s.calls.inFlight.Add(-1)
		<-s.slots
		s.inflight.Done()
		done <- out
	})
	var out outcome
	select {
	case out = <-done:
	case <-ctx.Done():
		// A handler that honours ctx gets a moment to return what it has
		// (a partial result through ErrorResult); one that ignores ctx is
		// abandoned, and keeps its slot until it really returns.
		grace := time.NewTimer(cancelGrace)
		select {
		case out = <-done:
		case <-grace.C:
			out.err = ctx.Err()
		}
		grace.Stop()
	}
	return c.finish(ctx, resultOwner(h, req), out)
}

// invoke runs the handler, recovering a panic into an outcome.
func (c toolCall) invoke(ctx context.Context, fn func(context.Context) (any, error)) (out outcome) {
	defer func() {
		if r := recover(); r != nil {
			c.host.srv.recovered(ctx, c.host.logger.With("tool", c.tool), "tool handler", r)
			out = outcome{panicked: true, err: &KindError{Kind: KindInternal,
				Err: fmt.Errorf("tool %s failed with an internal error (a panic); the server log has the details", c.tool)}}
		}
	}()
	v, err := fn(ctx)
	return outcome{v: v, err: err}
}

// finish classifies an outcome, counts it and shapes the reply. Once ctx
// has ended, a failed call is reported as timed out or cancelled whatever
// error the handler returned, with its partial result if it gave one.
func (c toolCall) finish(ctx context.Context, owner string, out outcome) (*mcp.CallToolResult, error) {
	s := c.host.srv
	var partial *errorResult
	isPartial := errors.As(out.err, &partial)
	if out.err != nil && !out.panicked && ctx.Err() != nil {
		var err error
		if context.Cause(ctx) == ErrTimeout {
			s.calls.timedOut.Add(1)
			limit := "limit tool_timeout"
			if c.ownTimeout {
				limit = "this tool's own timeout"
			}
			err = fmt.Errorf("%w after %s (%s): the call may have had effects; inspect state before retrying", ErrTimeout, c.timeout, limit)
		} else {
			s.calls.cancelled.Add(1)
			err = &KindError{Kind: KindCancelled, Err: fmt.Errorf("tool call cancelled: %w", out.err)}
			if isPartial {
				err = &KindError{Kind: KindCancelled, Err: errors.New("tool call cancelled; the partial result is attached")}
			}
		}
		if !isPartial {
			return toolError(err), nil
		}
		reply := ToolErrorReply{Error: errorDetail(err), Partial: partial.value}
		return c.serve(ctx, owner, reply, true)
	}
	if out.err == nil {
		return c.serve(ctx, owner, out.v, false)
	}
	s.calls.failed.Add(1)
	var protocolErr *jsonrpc.Error
	switch {
	case isPartial:
		return c.serve(ctx, owner, partial.value, true)
	case errors.As(out.err, &protocolErr):
		// A JSON-RPC error is the plugin's deliberate protocol-level
		// answer (e.g. a missing client capability), as in the SDK.
		return nil, protocolErr
	}
	return toolError(out.err), nil
}

// serve serializes v once and returns it inline or retains it for the read
// tool.
func (c toolCall) serve(ctx context.Context, owner string, v any, isError bool) (*mcp.CallToolResult, error) {
	s := c.host.srv
	if r, ok := v.(*mcp.CallToolResult); ok {
		return c.serveResult(owner, r, isError)
	}
	var data, escaped []byte
	if parts, ok := v.(fastpath.TextParts); ok {
		if parts.Size() > s.limits.InlineResultBytes {
			servedResult(ctx, nil, nil, true)
			return c.page(owner, parts.Memory, parts.Parts, "text", isError)
		}
		v = Text(parts.String()) // a heap copy, served as it is
	}
	text, isText := v.(Text)
	if isText {
		data = []byte(text)
	} else if enc, ok := v.(fastpath.EncodedJSON); ok {
		data = enc
	} else if enc, ok := v.(fastpath.EncodedJSONText); ok {
		data, escaped = enc.JSON, enc.Text
	} else if parts, ok := v.(fastpath.EncodedJSONParts); ok {
		if parts.Size() > s.limits.InlineResultBytes {
			servedResult(ctx, nil, nil, true)
			return c.page(owner, parts.Memory, parts.Parts, "json", isError)
		}
		data, _ = parts.MarshalJSON() // a heap copy, served as it is
	} else if raw, ok := v.(json.RawMessage); ok {
		// segmentio's validator accepts what encoding/json's does, about
		// ten times faster: this check is on every call's path.
		if !segjson.Valid(raw) {
			s.calls.failed.Add(1)
			return toolError(&KindError{Kind: KindInternal, Err: fmt.Errorf("tool %s returned invalid JSON", c.tool)}), nil
		}
		data = raw
	} else {
		var err error
		if data, err = json.Marshal(v); err != nil {
			s.calls.failed.Add(1)
			return toolError(&KindError{Kind: KindInternal, Err: fmt.Errorf("tool %s: serialize result: %w", c.tool, err)}), nil
		}
	}
	inline := int64(len(data)) <= s.limits.InlineResultBytes
	if !isText {
		servedResult(ctx, data, escaped, !inline)
	}
	if inline {
		if isText {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, IsError: isError}, nil
		}
		return inlineResult(data, isError), nil
	}
	format := "json"
	if isText {
		format = "text"
	}
	return c.page(owner, nil, [][]byte{data}, format, isError)
}

// serveResult returns a plugin's own CallToolResult, inline or paged as a
// whole.
func (c toolCall) serveResult(owner string, r *mcp.CallToolResult, isError bool) (*mcp.CallToolResult, error) {
	s := c.host.srv
	if r == nil {
		s.calls.failed.Add(1)
		return toolError(&KindError{Kind: KindInternal, Err: fmt.Errorf("tool %s returned a nil result", c.tool)}), nil
	}
	r.IsError = r.IsError || isError
	if r.InputRequests != nil || r.RequestState != "" {
		return r, nil // a protocol directive to the client, not output
	}
	data, err := json.Marshal(r)
	if err != nil {
		s.calls.failed.Add(1)
		return toolError(&KindError{Kind: KindInternal, Err: fmt.Errorf("tool %s: serialize result: %w", c.tool, err)}), nil
	}
	if int64(len(data)) <= s.limits.InlineResultBytes {
		return r, nil
	}
	return c.page(owner, nil, [][]byte{data}, "mcp_result", r.IsError)
}

// page retains the concatenation of parts, in mem when it is not nil, for
// the read tool and returns the reference to it.
func (c toolCall) page(owner string, mem *fastpath.ResultMemory, parts [][]byte, format string, isError bool) (*mcp.CallToolResult, error) {
	s := c.host.srv
	handle, err := s.results.PutParts(owner, mem, parts)
	if err != nil {
		s.calls.failed.Add(1)
		return toolError(err), nil
	}
	s.calls.paged.Add(1)
	s.calls.pagedBytes.Add(handle.TotalBytes)
	ref, _ := json.Marshal(pagedResult{
		ResultID:   handle.ID,
		TotalBytes: handle.TotalBytes,
		Format:     format,
		ReadTool:   c.host.ReadToolName(),
		ChunkBytes: s.limits.ResultChunkBytes,
		ExpiresAt:  handle.ExpiresAt.UTC().Format(time.RFC3339),
	})
	return inlineResult(ref, isError), nil
}

// resultOwner scopes retained results to the plugin's read tool and, when
// the request was authenticated, to the caller's identity ([Principal]): a
// result_id is unguessable, and with authentication it is also useless to
// anyone else.
func resultOwner(h *Host, req *mcp.CallToolRequest) string {
	owner := h.ReadToolName()
	if req == nil {
		return owner
	}
	if p := Principal(req); p != "" {
		owner += "\x00" + p
	}
	return owner
}

// pagedResult is what a tool returns in place of a result that is too large
// to return inline.
type pagedResult struct {
	ResultID   string `json:"result_id" jsonschema:"handle of the retained result, for the read tool"`
	TotalBytes int64  `json:"total_bytes" jsonschema:"size of the serialized JSON result"`
	Format     string `json:"format" jsonschema:"json (the bytes are the result's JSON), text (they are the result's text, as it is) or mcp_result (they are a complete MCP tool result: content blocks, structuredContent, isError)"`
	ReadTool   string `json:"read_tool" jsonschema:"the tool that reads the result by byte range and releases it"`
	ChunkBytes int64  `json:"chunk_bytes" jsonschema:"default read length"`
	ExpiresAt  string `json:"expires_at" jsonschema:"when the result is freed (RFC 3339)"`
}

// Text is a tool result served as text, as it is: one text content and no
// structuredContent, for output that is prose or markdown rather than
// data. A text larger than inline_result_bytes is retained and paged like
// any result, with format "text" (its bytes are the text).
type Text string

// inlineResult returns data as structuredContent (when it is a JSON object)
// and as the same JSON text. The text is a view of data, not a copy: data
// is the result's from now on (the structured content holds it too), and
// nothing writes to it.
func inlineResult(data []byte, isError bool) *mcp.CallToolResult {
	var text string
	if len(data) > 0 {
		text = unsafe.String(&data[0], len(data))
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
	if len(data) > 0 && data[0] == '{' {
		res.StructuredContent = json.RawMessage(data)
	}
	return res
}

// ToolErrorReply is the structuredContent of a failed call whose error the
// host reports, so that an agent can act on the kind without parsing the
// text: see the Kind constants ("limit" with Limit and Max, "timeout",
// "cancelled", "bad_params" with Path, "internal", "result_not_found",
// "unavailable", "error") and a plugin's own kinds ([KindError]). Partial
// is what a timed-out or cancelled handler returned through [ErrorResult].
type ToolErrorReply struct {
	Error   ToolErrorDetail `json:"error"`
	Partial any             `json:"partial,omitempty" jsonschema:"what the call produced before it timed out or was cancelled"`
}

// ToolErrorDetail describes one error; see [ToolErrorReply].
type ToolErrorDetail struct {
	Kind    string `json:"kind" jsonschema:"what failed: limit, timeout, cancelled, bad_params, internal, result_not_found, unavailable, error, or a plugin's own kind"`
	Message string `json:"message"`
	Limit   string `json:"limit,omitempty" jsonschema:"the limit reached (kind limit)"`
	Max     int64  `json:"max,omitempty" jsonschema:"the limit's configured value (kind limit)"`
	Path    string `json:"path,omitempty" jsonschema:"JSON Pointer of the offending argument (kind bad_params)"`
}

// errorDetail says what kind of error err is.
func errorDetail(err error) ToolErrorDetail {
	d := ToolErrorDetail{Kind: KindOther, Message: err.Error()}
	var le *LimitError
	var pe *ParamError
	var kinded interface{ ErrorKind() string }
	switch {
	case errors.As(err, &le):
		d.Kind, d.Limit, d.Max = KindLimit, le.Limit, le.Max
	case errors.As(err, &pe):
		d.Kind, d.Path = KindBadParams, pe.Path
	case errors.As(err, &kinded) && kinded.ErrorKind() != "":
		d.Kind = kinded.ErrorKind()
	case errors.Is(err, ErrTimeout):
		d.Kind = KindTimeout
	case errors.Is(err, context.Canceled):
		d.Kind = KindCancelled
	case errors.Is(err, ErrResultNotFound):
		d.Kind = KindResultNotFound
	case errors.Is(err, ErrClosed):
		d.Kind = KindUnavailable
	}
	return d
}

// toolError turns err into an isError result: its message as text and, as
// structuredContent, a [ToolErrorReply] that says what kind of error it is.
func toolError(err error) *mcp.CallToolResult {
	d := errorDetail(err)
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: d.Message}}}
	if data, merr := json.Marshal(ToolErrorReply{Error: d}); merr == nil {
		res.StructuredContent = json.RawMessage(data)
	}
	return res
}

// replySchemas are the schemas of the paged reference and of the error
// reply, derived once.
var replySchemas = sync.OnceValues(func() ([2]*jsonschema.Schema, error) {
	paged, err := jsonschema.For[pagedResult](nil)
	if err != nil {
		return [2]*jsonschema.Schema{}, err
	}
	reply, err := jsonschema.For[ToolErrorReply](nil)
	return [2]*jsonschema.Schema{paged, reply}, err
})

// outputUnion returns the output schema a tool declares: an object that is
// the tool's own result, a paged reference or an error reply.
func outputUnion(declared any) (*jsonschema.Schema, error) {
	own, err := toSchema(declared)
	if err != nil {
		return nil, err
	}
	if own.Type != "object" {
		return nil, fmt.Errorf(`must describe an object (type "object"), not %s: structured results are JSON objects`, describeType(own))
	}
	if _, err := own.Resolve(nil); err != nil {
		return nil, err
	}
	replies, err := replySchemas()
	if err != nil {
		return nil, err
	}
	return &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{own, replies[0].CloneSchemas(), replies[1].CloneSchemas()}}, nil
}
