package stdio

import (
	"encoding/json"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// largeValueBytes is the size from which a request's params or a response's
// result is not copied by decoding (see decodeLarge). It equals the read
// buffer's size, so a line holding such a value is never decoded in place
// in the read buffer: it is in the line-assembly buffer, which the decoded
// message then owns.
const largeValueBytes = readBufferBytes

// sdkMaxDepth is the deepest nesting the SDK's decoder accepts.
const sdkMaxDepth = 1000

// decodeLarge decodes msg, one JSON object, as jsonrpc.DecodeMessage does,
// but without copying a request's "params" or a response's "result" of at
// least min bytes: the decoded message's Params or Result is that value's
// subslice of msg, which the caller must then leave alone. The SDK's decoder
// costs about five times a value's size in allocations (it buffers the
// input and copies the value); this costs a scan and a validation.
//
// It reports false when msg has no such value, or when msg is not one the
// SDK accepts: the caller then decodes it with DecodeMessage, which reports
// the error. The SDK decodes a skeleton of msg in which the value is
// replaced by 0, so every other member is checked exactly as before; the
// value itself is checked for validity and nesting depth as the SDK would.
func decodeLarge(msg []byte, min int) (jsonrpc.Message, bool) {
	var (
		hasMethod      bool
		params, result []byte
		pAt, rAt       int
	)
	m := wire.NewMembers(msg)
	for m.Next() {
		switch {
		case wire.KeyIs(m.Key, "method"):
			hasMethod = true
		case wire.KeyIs(m.Key, "params"):
			params, pAt = m.Value, m.ValueAt
		case wire.KeyIs(m.Key, "result"):
			result, rAt = m.Value, m.ValueAt
		}
	}
	v, at := result, rAt
	if hasMethod {
		v, at = params, pAt
	}
	if m.End() < 0 || len(v) < min || len(v) == 0 || !json.Valid(v) || 1+wire.Depth(v) > sdkMaxDepth {
		return nil, false
	}
	skeleton := make([]byte, 0, len(msg)-len(v)+1)
	skeleton = append(skeleton, msg[:at]...)
	skeleton = append(skeleton, '0')
	skeleton = append(skeleton, msg[at+len(v):]...)
	dec, err := jsonrpc.DecodeMessage(skeleton)
	if err != nil {
		return nil, false
	}
	switch dec := dec.(type) {
	case *jsonrpc.Request:
		dec.Params = v
	case *jsonrpc.Response:
		dec.Result = v
	}
	return dec, true
}
