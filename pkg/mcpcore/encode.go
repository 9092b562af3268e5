package mcpcore

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"sync"

	"github.com/mcpkit/mcpkit/pkg/jsonesc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodeToolResults is the outermost receiving middleware: it hands the
// SDK a tools/call result that serializes itself in one pass (see
// encodedResult), when the result is one the host builds: text content and
// raw JSON structured content.
func encodeToolResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil && plainToolResult(r) {
			return &encodedResult{CallToolResult: r}, nil
		}
		return res, err
	}
}

// plainToolResult reports whether r holds only what encodedResult writes
// itself: text content without metadata or annotations, and structured
// content that is already JSON; no input requests.
func plainToolResult(r *mcp.CallToolResult) bool {
	if r == nil || r.InputRequests != nil || r.RequestState != "" {
		return false
	}
	if _, raw := r.StructuredContent.(json.RawMessage); r.StructuredContent != nil && !raw {
		return false
	}
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); !ok || t.Meta != nil || t.Annotations != nil {
			return false
		}
	}
	return true
}

// encodedResult is a tool result that serializes itself, for speed: the
// SDK's own encoding validates and compacts the structured content, the
// text content and the whole result once each at every level of
// marshalling, which for a large result costs more than the call. Here the
// text is escaped once (by jsonesc.AppendQuoted, byte for byte as
// encoding/json), the structured content appended as it is (the host
// validated it), and encoding/json compacts the whole once. The other
// members (isError, resultType, ...) are the SDK's own encoding of them, and
// _meta is read when the response is written, after the SDK has set it (the
// server's identity, 2026-07-28).
//
// It embeds the result, so it is an [mcp.Result] with the result's
// metadata. Receiving middleware in [Options.Middleware] runs inside this
// and sees the *mcp.CallToolResult itself.
type encodedResult struct {
	*mcp.CallToolResult
	// direct: the SDK never saw the result (a direct call), so it carries
	// nothing of the SDK's own (a 2026-07-28 result type).
	direct bool
	// slot is a direct call's result slot: the escaped form of a text
	// content the handler wrote itself (fastpath.EncodedJSONText), if any.
	slot *resultSlot
}

// contentPrefix is how the SDK's encoding of a result without _meta
// begins when its content is nil.
const contentPrefix = `{"content":null`

func (r *encodedResult) MarshalJSON() ([]byte, error) { return r.appendJSON(nil) }

// resultTail returns what the SDK's encoding of res, a plain result
// (plainToolResult), writes after its content when res has no _meta,
// content or structured content: its other members and the closing brace.
// ok is false when that encoding does not begin as contentPrefix. A result
// with no member but isError, most of them, gets a tail the SDK encoded
// once (plainTails). direct: the SDK never saw res, so that a plain result
// has no member but isError (TestResultTailMembers); otherwise the
// unexported members are checked too (the SDK's result type).
func resultTail(res *mcp.CallToolResult, direct bool) (tail []byte, ok bool, err error) {
	rest := *res
	rest.Meta, rest.Content, rest.StructuredContent = nil, nil, nil
	isError := rest.IsError
	rest.IsError = false
	if t := plainTails(); t.known && (direct || reflect.ValueOf(&rest).Elem().IsZero()) {
		if isError {
			return t.isError, true, nil
		}
		return t.ok, true, nil
	}
	rest.IsError = isError
	if tail, err = json.Marshal(&rest); err != nil {
		return nil, false, err
	}
	tail, ok = bytes.CutPrefix(tail, []byte(contentPrefix))
	return tail, ok, nil
}

// plainTails are resultTail of a result with no member at all and of one
// with isError only, as the SDK encodes them; known is false if either
// encoding does not begin as contentPrefix.
var plainTails = sync.OnceValue(func() (t struct {
	ok, isError []byte
	known       bool
}) {
	t.known = true
	for _, r := range []struct {
		isError bool
		tail    *[]byte
	}{{false, &t.ok}, {true, &t.isError}} {
		data, err := json.Marshal(&mcp.CallToolResult{IsError: r.isError})
		tail, ok := bytes.CutPrefix(data, []byte(contentPrefix))
		t.known = t.known && err == nil && ok
		*r.tail = tail
	}
	return t
})

// appendJSON appends the result's JSON to b.
func (r *encodedResult) appendJSON(b []byte) ([]byte, error) {
	res := r.CallToolResult
	tail, ok, err := resultTail(res, r.direct)
	if err != nil {
		return nil, err
	}
	if !ok {
		all, err := json.Marshal(res) // not the layout this was written for: let the SDK encode it all
		return append(b, all...), err
	}
	size := len(tail) + 64
	for _, c := range res.Content {
		size += len(c.(*mcp.TextContent).Text)*5/4 + 32 // room for the escapes of JSON text (its quotes)
	}
	structured, _ := res.StructuredContent.(json.RawMessage)
	b = slices.Grow(b, size+len(structured))
	b = append(b, '{')
	if len(res.Meta) > 0 {
		meta, err := json.Marshal(res.Meta)
		if err != nil {
			return nil, err
		}
		b = append(b, `"_meta":`...)
		b = append(b, meta...)
		b = append(b, ',')
	}
	b = append(b, `"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		text := c.(*mcp.TextContent).Text
		if escaped, ok := r.slot.escapedText(text); ok {
			// The handler's encoder escaped it as jsonesc does.
			b = append(b, '"')
			b = append(b, escaped...)
			b = append(b, '"')
		} else {
			// Byte for byte what encoding/json writes for a string (HTML
			// characters, U+2028/9 and invalid UTF-8 included), faster than
			// encoding/json and segmentio's encoder on JSON text (package jsonesc).
			b = jsonesc.AppendQuoted(b, text)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = append(b, structured...)
	}
	return append(b, tail...), nil
}
