package stdio

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	segjson "github.com/segmentio/encoding/json"
)

// sdkMaxDepth is the deepest nesting the SDK's decoder accepts.
const sdkMaxDepth = 1000

// decodeMessage decodes msg, one JSON object and nothing after it, as
// jsonrpc.DecodeMessage does: the same decoder (segmentio's, which the SDK
// wraps) with the same flags, depth limit and checks. What it saves is the
// SDK's per-message stream decoder, whose 32 KiB buffer is allocated and
// zeroed for every message (twice: the message, then its method): on a
// small call that costs more than the decoding itself, and it drives the
// garbage collector.
//
// When owned, msg belongs to the message: its params or result (and the
// strings of an error) alias msg instead of being copied, so a large frame
// is not copied at all; its method and id are copied, so that they outlive
// a buffer the transport reuses once a taken call is done with its params
// (see Transport.ConnectTaking). Otherwise everything is copied (msg is
// the read buffer).
//
// It reports false when msg is not a message the SDK accepts; the caller
// then decodes it with DecodeMessage, which says why (and would decide
// for itself, were the two ever to differ: FuzzDecodeMessage checks they
// do not).
func decodeMessage(msg []byte, owned bool) (jsonrpc.Message, bool) {
	return decodeScanned(msg, jsonscan.Depth(msg), owned)
}

// decodeScanned is decodeMessage of msg whose nesting depth, as
// jsonscan.Depth counts it, the caller has already found (as the scan of
// its members does): the depth limit is checked against depth rather than
// with another pass over msg. A depth that undercounts a message that is
// not valid JSON does no harm: the decoder refuses that message.
func decodeScanned(msg []byte, depth int, owned bool) (jsonrpc.Message, bool) {
	if depth > sdkMaxDepth {
		return nil, false
	}
	msgOut, _, ok := parseMessage(msg, owned)
	return msgOut, ok
}

// idMessage is the form in which the SDK decodes a JSON-RPC message (its
// jsonrpc2.wireDecode; "method" stays raw so that its presence shows),
// but with the id kept as its JSON text, which the wire table reads; it is
// then decoded as the SDK decodes it.
type idMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         json.RawMessage `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// parseMessage decodes msg, one JSON object, with the SDK's decoder and
// flags and its checks but the depth limit (the callers check it), and
// returns the message and the JSON text of its id (nil if it has none);
// false when the SDK would refuse msg. Ownership is as in decodeMessage.
func parseMessage(msg []byte, owned bool) (jsonrpc.Message, json.RawMessage, bool) {
	flags := segjson.DontMatchCaseInsensitiveStructFields
	if owned {
		flags |= segjson.ZeroCopy
	}
	var w idMessage
	if rest, err := segjson.Parse(msg, &w, flags); err != nil || jsonscan.SkipWS(rest, 0) != len(rest) || w.VersionTag != "2.0" {
		return nil, nil, false
	}
	own := flags &^ segjson.ZeroCopy // the method and id, which outlive msg
	var rawID any                    // as the SDK decodes an id
	if len(w.ID) > 0 {
		if _, err := segjson.Parse(w.ID, &rawID, own); err != nil {
			return nil, nil, false
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, nil, false
	}
	if len(w.Method) > 0 {
		var method string
		if _, err := segjson.Parse(w.Method, &method, own); err != nil {
			return nil, nil, false
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: w.Params}, w.ID, true
	}
	if !id.IsValid() {
		return nil, nil, false
	}
	res := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		res.Error = w.Error
	}
	return res, w.ID, true
}

// decodeCommon decodes msg, a line without surrounding whitespace, in one
// pass, as a connection's decode does by scanning it for the wire table
// and then decoding it: the decoder keeps the id's JSON text for the
// table (ids.InboundPlain), so no scan is needed. It reports false, having
// done nothing, when msg is not the common case: not a message the SDK
// accepts, a message the table must rewrite (an id the SDK would coerce, a
// cancellation), or one with so many brackets that its depth must be
// counted against the SDK's limit. Ownership is as in decodeMessage.
func decodeCommon(msg []byte, owned bool, ids *wire.Table) (jsonrpc.Message, bool) {
	if mayBeTooDeep(msg) {
		return nil, false
	}
	m, id, ok := parseMessage(msg, owned)
	if !ok {
		return nil, false
	}
	req, isReq := m.(*jsonrpc.Request)
	if !ids.InboundPlain(id, isReq, isReq && req.Method == "notifications/cancelled") {
		return nil, false
	}
	return m, true
}

// mayBeTooDeep reports whether msg has more opening brackets than the
// SDK's depth limit: its nesting depth is at most their number, so a line
// with fewer needs no count of its depth.
func mayBeTooDeep(msg []byte) bool {
	return bytes.Count(msg, []byte{'{'})+bytes.Count(msg, []byte{'['}) > sdkMaxDepth
}

// decodeCall decodes msg, a line without surrounding whitespace, when it
// is a plain request: the members jsonrpc ("2.0"), id (a decimal integer
// of at most 15 digits, or a string of printable ASCII without escapes)
// and method (such a string), in any order, then params, an object, last;
// each once, nothing else, every key plain. It does not validate or even walk the
// params: they are taken to run to the line's closing brace, which is
// right only when they are one object, so the message's taker checks them
// as it reads them, and the connection validates them when the taker
// declines (readMessages); either way a line that is not what it looks
// like goes back to decode's other paths. It reports false, having done
// nothing, for anything else; msg is owned, as in decodeMessage.
func decodeCall(msg []byte, ids *wire.Table) (*jsonrpc.Request, bool) {
	if len(msg) == 0 || msg[len(msg)-1] != '}' {
		return nil, false
	}
	var version, idText, method []byte
	m := jsonscan.NewMembers(msg)
	for m.NextKey() {
		key, end := jsonscan.PlainString(m.Key, 0)
		if end != len(m.Key) {
			return nil, false
		}
		var into *[]byte
		switch string(key) {
		case "jsonrpc":
			into = &version
		case "id":
			into = &idText
		case "method":
			into = &method
		case "params":
			params := bytes.TrimRight(msg[m.ValueAt:len(msg)-1], " \t\r\n")
			if version == nil || idText == nil || method == nil || len(params) == 0 || params[0] != '{' || mayBeTooDeep(msg) {
				return nil, false
			}
			return plainCall(version, idText, method, params, ids)
		default:
			return nil, false
		}
		if *into != nil || !m.SkipValue() {
			return nil, false
		}
		*into = m.Value
	}
	return nil, false
}

// plainCall is decodeCall's request from its members' JSON text.
func plainCall(version, idText, method, params []byte, ids *wire.Table) (*jsonrpc.Request, bool) {
	if string(version) != `"2.0"` {
		return nil, false
	}
	name, end := jsonscan.PlainString(method, 0)
	if end != len(method) || string(name) == "notifications/cancelled" { // the table reads cancellations
		return nil, false
	}
	var rawID any // as the SDK decodes an id: a number as a float64
	if s, end := jsonscan.PlainString(idText, 0); end == len(idText) {
		rawID = string(s)
	} else if n, ok := plainInteger(idText); ok {
		rawID = float64(n)
	} else {
		return nil, false
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil || !ids.InboundPlain(idText, true, false) {
		return nil, false
	}
	return &jsonrpc.Request{Method: string(name), ID: id, Params: params}, true
}

// plainInteger parses a JSON integer of 1 to 15 digits without a sign
// (exact as a float64), as JSON writes it (no leading zero).
func plainInteger(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// appendMessage appends msg to dst as jsonrpc.EncodeMessage encodes it. A
// successful response is written around its result as it is: the SDK
// encoded the result itself (jsonrpc2.NewResponse), so it is valid,
// compact JSON, and EncodeMessage would only validate and compact it a
// second time, a pass over every byte of a large result.
func appendMessage(dst []byte, msg jsonrpc.Message) ([]byte, error) {
	res, ok := msg.(*jsonrpc.Response)
	if !ok || res.Error != nil || len(res.Result) == 0 || !res.ID.IsValid() {
		data, err := jsonrpc.EncodeMessage(msg)
		return append(dst, data...), err
	}
	b := append(dst, `{"jsonrpc":"2.0","id":`...)
	switch id := res.ID.Raw().(type) {
	case int64:
		b = strconv.AppendInt(b, id, 10)
	case string:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // as the SDK's encoder
		if err := enc.Encode(id); err != nil {
			return dst, err
		}
		b = append(b, bytes.TrimRight(buf.Bytes(), "\n")...)
	default:
		data, err := jsonrpc.EncodeMessage(msg)
		return append(dst, data...), err
	}
	b = append(b, `,"result":`...)
	b = append(b, res.Result...)
	return append(b, '}'), nil
}
