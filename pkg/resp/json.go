package resp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/mcpkit/mcpkit/pkg/jsonesc"
	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	segjson "github.com/segmentio/encoding/json"
)

// MarshalJSON returns the JSON form of v, which keeps every RESP type:
//
//   - simple_string, simple_error, bulk_string, bulk_error, big_number:
//     {"type", "encoding": "utf8" or "base64", "value"}; base64 (standard,
//     padded) when the bytes are not valid UTF-8
//   - integer: {"type": "integer", "value": "123"} (a decimal string, so no
//     JSON reader loses precision)
//   - double: {"type": "double", "value": "3.14"}, the text as received,
//     including "inf", "-inf" and "nan"
//   - null (RESP3 null and the RESP2 null bulk string and array):
//     {"type": "null"}
//   - boolean: {"type": "boolean", "value": true}
//   - array, set, push: {"type", "items": [...]}
//   - map: {"type": "map", "entries": [[key, value], ...]}, in order,
//     duplicate keys kept
//   - attribute: {"type": "attribute", "entries": [...], "value": frame},
//     where frame is the reply the attribute annotates
//   - verbatim: {"type": "verbatim", "format": "txt", "encoding", "value"}
//
// It fails only for a Value no decoder produces (an unknown kind, a map with
// an odd number of elements, an attribute without its reply).
func (v Value) MarshalJSON() ([]byte, error) {
	return AppendJSON(nil, &v)
}

// AppendJSON appends the JSON form of v ([Value.MarshalJSON]) to b and
// returns the extended buffer, so that many values can be written into one
// buffer without an allocation each. It fails, returning nil, as
// MarshalJSON does.
func AppendJSON(b []byte, v *Value) ([]byte, error) {
	p := jsonesc.Pair{JSON: b, JSONOnly: true}
	if err := AppendJSONPair(&p, v); err != nil {
		return nil, err
	}
	return p.JSON, nil
}

// AppendJSONPair appends the JSON form of v to p.JSON, as AppendJSON does,
// and its text form (the JSON escaped as a JSON string's contents) to
// p.Text, the two at once: a tool result's structured content and its
// text copy without a second pass of the escaper over the JSON. On an
// error what p holds is unspecified.
func AppendJSONPair(p *jsonesc.Pair, v *Value) error {
	if v.Nil {
		p.Lit(litNull)
		return nil
	}
	if int(v.Kind) >= len(litType) || litType[v.Kind] == (jsonesc.Literal{}) {
		return fmt.Errorf("resp: cannot marshal %s", v.Kind)
	}
	if v.Kind.isText() && jsonscan.Plain(v.Str) {
		// Most replies: the whole frame around the text is two literals.
		p.Lit(litPlainText[v.Kind])
		p.Write(v.Str)
		p.Lit(litQuoteBrace)
		return nil
	}
	p.Lit(litType[v.Kind])
	switch v.Kind {
	case KindSimpleString, KindSimpleError, KindBulkString, KindBulkError, KindBigNumber:
		appendEscapedText(p, v.Str) // not plain: seen above
	case KindVerbatim:
		p.Lit(litFormat)
		from := len(p.JSON)
		p.JSON = segjson.AppendEscape(p.JSON, v.Format, 0)
		p.Mirror(from)
		appendText(p, v.Str)
	case KindInteger:
		p.Lit(litQuotedValue)
		from := len(p.JSON)
		p.JSON = strconv.AppendInt(p.JSON, v.Int, 10)
		p.Mirror(from)
		p.Lit(litQuote)
	case KindDouble:
		p.Lit(litValue)
		from := len(p.JSON)
		p.JSON = segjson.AppendEscape(p.JSON, string(v.Str), 0)
		p.Mirror(from)
	case KindNull:
	case KindBoolean:
		p.Lit(litValue)
		if v.Bool {
			p.Lit(litTrue)
		} else {
			p.Lit(litFalse)
		}
	case KindArray, KindSet, KindPush:
		p.Lit(litItems)
		for i := range v.Elems {
			if i > 0 {
				p.Lit(litComma)
			}
			if err := AppendJSONPair(p, &v.Elems[i]); err != nil {
				return err
			}
		}
		p.Lit(litCloseBracket)
	case KindMap, KindAttribute:
		if len(v.Elems)%2 != 0 {
			return fmt.Errorf("resp: %s with %d elements (want key/value pairs)", v.Kind, len(v.Elems))
		}
		p.Lit(litEntries)
		for i := 0; i < len(v.Elems); i += 2 {
			if i > 0 {
				p.Lit(litComma)
			}
			p.Lit(litOpenBracket)
			if err := AppendJSONPair(p, &v.Elems[i]); err != nil {
				return err
			}
			p.Lit(litComma)
			if err := AppendJSONPair(p, &v.Elems[i+1]); err != nil {
				return err
			}
			p.Lit(litCloseBracket)
		}
		p.Lit(litCloseBracket)
		if v.Kind == KindAttribute {
			if v.Wrapped == nil {
				return fmt.Errorf("resp: attribute without the reply it annotates")
			}
			p.Lit(litValue)
			if err := AppendJSONPair(p, v.Wrapped); err != nil {
				return err
			}
		}
	}
	p.Lit(litCloseBrace)
	return nil
}

// The fixed pieces of the JSON form, each with its escaped form.
var (
	litNull         = jsonesc.Lit(`{"type":"null"}`)
	litFormat       = jsonesc.Lit(`,"format":`)
	litValue        = jsonesc.Lit(`,"value":`)
	litQuotedValue  = jsonesc.Lit(`,"value":"`)
	litQuote        = jsonesc.Lit(`"`)
	litTrue         = jsonesc.Lit(`true`)
	litFalse        = jsonesc.Lit(`false`)
	litItems        = jsonesc.Lit(`,"items":[`)
	litEntries      = jsonesc.Lit(`,"entries":[`)
	litComma        = jsonesc.Lit(`,`)
	litOpenBracket  = jsonesc.Lit(`[`)
	litCloseBracket = jsonesc.Lit(`]`)
	litCloseBrace   = jsonesc.Lit(`}`)
	litUTF8Plain    = jsonesc.Lit(`,"encoding":"utf8","value":"`)
	litUTF8         = jsonesc.Lit(`,"encoding":"utf8","value":`)
	litBase64       = jsonesc.Lit(`,"encoding":"base64","value":"`)
	litQuoteBrace   = jsonesc.Lit(`"}`)
	// litType is, for each kind, its JSON form's opening up to its type;
	// litPlainText, for each kind of text, up to a text written as it is
	// (appendText's plain case).
	litType, litPlainText = func() (types, plain [256]jsonesc.Literal) {
		for _, k := range []Kind{KindSimpleString, KindSimpleError, KindBulkString, KindBulkError, KindBigNumber, KindVerbatim,
			KindInteger, KindDouble, KindNull, KindBoolean, KindArray, KindSet, KindPush, KindMap, KindAttribute} {
			types[k] = jsonesc.Lit(`{"type":"` + k.String() + `"`)
			if k.isText() {
				plain[k] = jsonesc.Lit(`{"type":"` + k.String() + `","encoding":"utf8","value":"`)
			}
		}
		return types, plain
	}()
)

// isText reports whether k's JSON form is its type and appendText's.
func (k Kind) isText() bool {
	switch k {
	case KindSimpleString, KindSimpleError, KindBulkString, KindBulkError, KindBigNumber:
		return true
	}
	return false
}

// appendText appends `,"encoding":...,"value":...` for s.
func appendText(p *jsonesc.Pair, s []byte) {
	if !jsonscan.Plain(s) {
		appendEscapedText(p, s)
		return
	}
	// Most replies: written as they are, without an escaper's pass
	// (segmentio's AppendEscape, flags 0, writes such text as it is too).
	p.Lit(litUTF8Plain)
	p.Write(s)
	p.Lit(litQuote)
}

// appendEscapedText is appendText of s that is not plain.
func appendEscapedText(p *jsonesc.Pair, s []byte) {
	switch {
	case utf8.Valid(s):
		p.Lit(litUTF8)
		from := len(p.JSON)
		// A view of s, not a copy: AppendEscape only reads it, during the call.
		p.JSON = segjson.AppendEscape(p.JSON, unsafe.String(unsafe.SliceData(s), len(s)), 0)
		p.Mirror(from)
	default:
		p.Lit(litBase64)
		from := len(p.JSON)
		p.JSON = base64.StdEncoding.AppendEncode(p.JSON, s)
		p.Mirror(from)
		p.Lit(litQuote)
	}
}

// MaxSafeInteger is the largest integer a JSON number argument may carry
// (2^53-1, the largest integer every JSON reader represents exactly); larger
// magnitudes must be given as decimal strings.
const MaxSafeInteger = 1<<53 - 1

// ArgError is an argument that [ParseArgs] refused.
type ArgError struct {
	Index  int    // the argument's position in the command, from 0
	Member string // the member of an object argument at fault, or ""
	Reason string // what is wrong and what to send instead
}

func (e *ArgError) Error() string {
	if e.Member != "" {
		return fmt.Sprintf("argument %d, member %q: %s", e.Index, e.Member, e.Reason)
	}
	return fmt.Sprintf("argument %d: %s", e.Index, e.Reason)
}

// ParseArgs converts one command's JSON arguments to the bytes sent to the
// server. Each argument is a JSON string (its UTF-8 bytes), an object
// {"base64": "..."} (the decoded bytes; standard padded base64), or a JSON
// integer within ±[MaxSafeInteger] (its decimal text). Anything else, a
// fraction, an exponent, a larger integer, true, false, null, an array or
// another object, is refused with an [*ArgError] naming the argument, so a
// value is never silently rounded: floats and large integers are sent as
// decimal strings.
func ParseArgs(raw []json.RawMessage) ([][]byte, error) {
	out := make([][]byte, len(raw))
	// One buffer holds every argument: a decoded argument is rarely longer
	// than its JSON (only invalid UTF-8 grows, and append copes).
	size := 0
	for _, r := range raw {
		size += len(r)
	}
	buf := make([]byte, 0, size)
	for i, r := range raw {
		start := len(buf)
		var ae *ArgError
		if buf, ae = AppendArg(buf, r); ae != nil {
			ae.Index = i
			return nil, ae
		}
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out, nil
}

// AppendArg appends the bytes of one JSON argument (as [ParseArgs] takes
// it) to dst, or says why it is refused; the error's Index is 0, for the
// caller, who knows the argument's position, to set.
func AppendArg(dst []byte, arg json.RawMessage) ([]byte, *ArgError) {
	b, member, reason := appendArg(dst, bytes.TrimSpace(arg))
	if reason != "" {
		return dst, &ArgError{Member: member, Reason: reason}
	}
	return b, nil
}

// appendArg appends the bytes of the JSON argument r to buf, or says why r
// is refused (and which member of an object argument).
func appendArg(buf, r []byte) ([]byte, string, string) {
	if len(r) == 0 {
		return buf, "", "empty JSON value"
	}
	switch c := r[0]; {
	case c == '"':
		if s, ok := plainString(r); ok {
			return append(buf, s...), "", ""
		}
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			return buf, "", "invalid JSON string: " + err.Error()
		}
		return append(buf, s...), "", ""
	case c == '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r, &obj); err != nil {
			return buf, "", "invalid JSON object: " + err.Error()
		}
		if extra := slices.Sorted(maps.Keys(obj)); len(extra) > 0 && (extra[0] != "base64" || len(extra) > 1) {
			if extra[0] == "base64" {
				extra = extra[1:]
			}
			return buf, extra[0], `unexpected member: an object argument must be exactly {"base64": "..."}`
		}
		enc, ok := obj["base64"]
		if !ok {
			return buf, "", `an object argument must be exactly {"base64": "..."}`
		}
		var s string
		if err := json.Unmarshal(enc, &s); err != nil {
			return buf, "base64", `"base64" must be a string`
		}
		b, err := base64.StdEncoding.AppendDecode(buf, []byte(s))
		if err != nil {
			return buf, "", "invalid base64 (standard alphabet, padded): " + err.Error()
		}
		return b, "", ""
	case c == '-' || (c >= '0' && c <= '9'):
		if bytes.ContainsAny(r, ".eE") {
			return buf, "", "a JSON number argument must be an integer; send " + string(r) + " as a decimal string"
		}
		n, err := strconv.ParseInt(string(r), 10, 64)
		if err != nil || n > MaxSafeInteger || n < -MaxSafeInteger {
			return buf, "", "integer outside ±9007199254740991 (JSON readers may round it); send it as a decimal string"
		}
		return strconv.AppendInt(buf, n, 10), "", ""
	}
	return buf, "", `want a string, {"base64": "..."} or an integer, got ` + jsonType(r[0])
}

// plainString returns the content of the JSON string r when it has no
// escape, no control character and only valid UTF-8: then its bytes are
// the string's, and decoding it would only copy them.
func plainString(r []byte) ([]byte, bool) {
	if len(r) < 2 || r[len(r)-1] != '"' {
		return nil, false
	}
	s := r[1 : len(r)-1]
	ascii := true
	for _, c := range s {
		if c == '"' || c == '\\' || c < 0x20 {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return s, ascii || utf8.Valid(s)
}

func jsonType(c byte) string {
	switch c {
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '[':
		return "an array"
	}
	return "invalid JSON"
}
