// Package fastpath holds the hooks of the host's direct tools/call path
// (pkg/mcpcore's Server.Run) for mcpkit's bundled plugins: a tool marked
// [Direct], argument types that decode their own arguments
// ([ArgumentsDecoder], [ArgumentsPrefixDecoder]), results already encoded
// ([EncodedJSON], [EncodedJSONText], [EncodedJSONParts]) into memory the
// host reuses ([ResultBuffer]) or keeps outside the Go heap
// ([ResultMemory]).
//
// They live here rather than in pkg/mcpcore because they exist for one
// benchmark (the RESP sidecar's batch of 128 commands) and bind a tool to
// rules a plugin author should not have to learn: what a handler may keep
// of its raw arguments, which memory it may return, which JSON the host
// trusts without checking it. Being internal, they can change with the MCP
// SDK without breaking a third-party plugin, and a plugin outside this
// module cannot use them. The host works the same for a tool that uses
// none of them: the fast path only saves work, and a test holds its bytes
// equal to the SDK's path for every bundled tool.
//
// The package imports nothing of pkg/mcpcore (which imports it): the
// host's side of [ResultBuffer] and [Direct] is connected at init through
// [Register], as net/http's internals are.
package fastpath

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
)

// ArgumentsDecoder is implemented, on its pointer, by a tool's argument
// type that decodes the raw arguments (a JSON object) itself and, as it
// does, refuses everything the tool's input schema refuses, reporting a
// failure as a *mcpcore.ParamError with the argument's JSON Pointer (any
// other error becomes one without a path). The host then hands it the
// arguments instead of taking its generic path (decoding them into a tree,
// validating that against the schema, decoding again into the type),
// which for an argument of thousands of elements costs more than the call
// itself. The decoder applies the schema's defaults, if any. The schema is
// still what the tool advertises: test that the decoder refuses what it
// refuses with [github.com/mcpkit/mcpkit/internal/fastpath/fastpathtest.RefusesAsSchema].
type ArgumentsDecoder interface {
	DecodeArguments(raw json.RawMessage) error
}

// ArgumentsPrefixDecoder is an [ArgumentsDecoder] that also decodes the
// arguments at the start of a longer text: DecodeArgumentsPrefix decodes
// the JSON object that b begins with (no space before it), as
// DecodeArguments would decode that object, and returns the index just
// after it; for anything else it reports false, keeping nothing, and the
// host then isolates the arguments and calls DecodeArguments, which says
// what is wrong. On a direct call ([Direct]) of a server without
// mcpcore.Options.Middleware, the host decodes the arguments with it as
// it reads the call's params, rather than first finding where they end and
// then decoding them: one pass over a large argument instead of two.
type ArgumentsPrefixDecoder interface {
	ArgumentsDecoder
	DecodeArgumentsPrefix(b []byte) (end int, ok bool)
}

// EncodedJSON is a tool result already serialized, compactly, by an
// encoder of the tool's own that never writes invalid JSON (one tested
// against encoding/json): the host serves it as it serves a
// json.RawMessage result, but without validating it again, a pass over
// every byte of a large result. Invalid bytes here would reach the client
// as they are: when in doubt, return a json.RawMessage.
type EncodedJSON []byte

// MarshalJSON returns e itself, so that an EncodedJSON inside another value
// (the partial result of a timed-out call, in mcpcore.ToolErrorReply) is
// written as the JSON it is, as a json.RawMessage would be, not as base64
// bytes.
func (e EncodedJSON) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	return e, nil
}

// EncodedJSONText is an [EncodedJSON] result with its text form, written
// by the same encoder: Text is JSON escaped as the contents of a JSON
// string, byte for byte what Append of package pkg/jsonesc writes for it
// (its Pair writes the two at once). Where the host serves the result inline on a
// direct call, it writes Text as the text content instead of escaping the
// JSON itself; elsewhere it serves JSON as an EncodedJSON. Text is trusted
// as JSON is: other bytes would reach the client as they are.
type EncodedJSONText struct {
	JSON EncodedJSON
	Text []byte
}

// MarshalJSON returns the JSON, as [EncodedJSON.MarshalJSON] does.
func (e EncodedJSONText) MarshalJSON() ([]byte, error) { return e.JSON.MarshalJSON() }

// EncodedJSONParts is an [EncodedJSON] result written in parts, the JSON
// being their concatenation: a tool whose result can be large writes it
// part by part as it produces it, freeing what it encoded, and a result
// larger than inline_result_bytes is retained for paging as those parts,
// never copied whole; a smaller one is joined and served inline. Parts may
// lie in Memory ([ResultMemory], nil for none), which they keep while the
// host holds them. Parts are trusted as EncodedJSON is, and must not
// change once returned.
type EncodedJSONParts struct {
	Parts  [][]byte
	Memory *ResultMemory
}

// MarshalJSON returns the parts joined into heap memory, for a result
// inside another value (the partial result of a failed call).
func (e EncodedJSONParts) MarshalJSON() ([]byte, error) {
	if len(e.Parts) == 0 {
		return []byte("null"), nil
	}
	b := bytes.Join(e.Parts, nil)
	runtime.KeepAlive(e.Memory) // the parts may lie in it
	return b, nil
}

// Size returns the length of the JSON, the parts' lengths summed.
func (e EncodedJSONParts) Size() int64 {
	var n int64
	for _, p := range e.Parts {
		n += int64(len(p))
	}
	return n
}

// Hooks is the host's side of the fast path, which pkg/mcpcore registers
// at init.
type Hooks struct {
	// ResultBuffer implements [ResultBuffer].
	ResultBuffer func(ctx context.Context, n int) []byte
	// Direct returns its argument, an mcpcore.ToolOptions, marked direct.
	Direct func(opts any) any
	// DecodeArguments implements [DecodeArguments].
	DecodeArguments func(raw json.RawMessage, v any) error
}

var hooks Hooks

// Register connects the host's side of the fast path; pkg/mcpcore calls it
// once, at init, before any tool is added or called.
func Register(h Hooks) { hooks = h }

// Direct returns opts, an mcpcore.ToolOptions, with the tool declared
// direct: it never returns input requests (an *mcp.CallToolResult with
// InputRequests or RequestState), so that mcpcore's Server.Run may answer
// its legacy-era calls itself rather than through the SDK's request path:
// the same answers at about half the cost of a small call. It also declares
// that the handler keeps nothing of the request's raw arguments
// (req.Params.Arguments) once it returns, nor returns memory that aliases
// them: they may alias a buffer the transport reuses for a later line once
// the result is served. (The decoded arguments never alias them.)
func Direct[O any](opts O) O { return hooks.Direct(opts).(O) }

// DecodeArguments decodes raw into v as the host decodes tool arguments:
// exact (case-sensitive) member names, no unknown member. A failure is a
// *mcpcore.ParamError, with the member's path when the decoder names it.
// It is for argument types that decode their own arguments
// ([ArgumentsDecoder]).
func DecodeArguments(raw json.RawMessage, v any) error { return hooks.DecodeArguments(raw, v) }

// ResultBuffer returns an empty buffer with room for at least n bytes, for
// a handler to encode its result into and return as [EncodedJSON] (append
// to the buffer, return what append gave), or its result and its text
// form, each into a buffer of its own, as [EncodedJSONText]. On a direct
// call ([Direct], served by mcpcore's Server.Run) of a server without
// mcpcore.Options.Middleware, where nothing but the host sees the result,
// the first two buffers of a call are memory kept from earlier calls, and
// the host keeps them again once the call's response is written, so that a
// tool with large results does not allocate one per call; elsewhere, and
// from the third on, it is a new buffer.
//
// The handler must keep no reference to the buffers once it returns. A
// result encoded past n into memory append allocated, or retained for
// paging, is not reused.
func ResultBuffer(ctx context.Context, n int) []byte {
	if hooks.ResultBuffer == nil {
		return make([]byte, 0, n)
	}
	return hooks.ResultBuffer(ctx, n)
}

// TextParts is a text result (as pkg/mcpcore's Text: one text content, no
// structuredContent) written in parts, as [EncodedJSONParts] is: the host
// pages one larger than inline_result_bytes as those parts, with format
// "text", and serves a smaller one inline, joined. Parts may lie in Memory
// and must not change once returned.
type TextParts struct {
	Parts  [][]byte
	Memory *ResultMemory
}

// Size returns the length of the text, the parts' lengths summed.
func (t TextParts) Size() int64 { return EncodedJSONParts(t).Size() }

// String returns the parts joined into heap memory.
func (t TextParts) String() string {
	b, _ := EncodedJSONParts(t).MarshalJSON()
	if len(t.Parts) == 0 {
		return ""
	}
	return string(b)
}

// MarshalJSON returns the text as a JSON string, for a text result inside
// another value (the partial result of a failed call).
func (t TextParts) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }
