package resp

import "fmt"

// Kind is the RESP type byte that starts a frame.
type Kind byte

// The frame types of RESP2 and RESP3.
const (
	KindSimpleString Kind = '+'
	KindSimpleError  Kind = '-'
	KindInteger      Kind = ':'
	KindBulkString   Kind = '$'
	KindArray        Kind = '*'
	KindNull         Kind = '_'
	KindDouble       Kind = ','
	KindBoolean      Kind = '#'
	KindBulkError    Kind = '!'
	KindVerbatim     Kind = '='
	KindBigNumber    Kind = '('
	KindMap          Kind = '%'
	KindSet          Kind = '~'
	KindAttribute    Kind = '|'
	KindPush         Kind = '>'
)

// String returns the kind's name as used for "type" in the JSON form
// ("simple_string", "bulk_error", "big_number", ...), or "kind(0xNN)" for a
// byte that is not a RESP type.
func (k Kind) String() string {
	switch k {
	case KindSimpleString:
		return "simple_string"
	case KindSimpleError:
		return "simple_error"
	case KindInteger:
		return "integer"
	case KindBulkString:
		return "bulk_string"
	case KindArray:
		return "array"
	case KindNull:
		return "null"
	case KindDouble:
		return "double"
	case KindBoolean:
		return "boolean"
	case KindBulkError:
		return "bulk_error"
	case KindVerbatim:
		return "verbatim"
	case KindBigNumber:
		return "big_number"
	case KindMap:
		return "map"
	case KindSet:
		return "set"
	case KindAttribute:
		return "attribute"
	case KindPush:
		return "push"
	}
	return fmt.Sprintf("kind(0x%02x)", byte(k))
}

// Value is one decoded RESP frame, lossless: re-encoding it with
// [AppendValue] gives a frame that decodes to an equal Value.
type Value struct {
	Kind Kind
	// Bool is a boolean's value.
	Bool bool
	// Nil marks a RESP2 null: a null bulk string ($-1, Kind KindBulkString)
	// or a null array (*-1, Kind KindArray).
	Nil bool
	// Str holds the text of simple and bulk strings, errors, verbatim
	// strings (without the "fmt:" prefix), big-number digits and doubles
	// exactly as received ("3.14", "inf", "nan").
	Str []byte
	// Int is an integer's value.
	Int int64
	// Format is a verbatim string's three-byte format ("txt", "mkd").
	Format string
	// Elems holds the items of an array, set or push, and the entries of a
	// map or attribute flattened in order: key, value, key, value, ...
	// Duplicate keys are kept.
	Elems []Value
	// Wrapped is, for an attribute, the reply it annotates.
	Wrapped *Value
}

// IsError reports whether v is a server error: a simple or bulk error, or
// an attribute annotating one.
func (v Value) IsError() bool {
	switch v.Kind {
	case KindSimpleError, KindBulkError:
		return true
	case KindAttribute:
		return v.Wrapped != nil && v.Wrapped.IsError()
	}
	return false
}

// ErrorText returns the text of a server error (see [Value.IsError]), or ""
// when v is not one.
func (v Value) ErrorText() string {
	switch v.Kind {
	case KindSimpleError, KindBulkError:
		return string(v.Str)
	case KindAttribute:
		if v.Wrapped != nil {
			return v.Wrapped.ErrorText()
		}
	}
	return ""
}

// IsNull reports whether v is a null: RESP3's null or a RESP2 null bulk
// string or array.
func (v Value) IsNull() bool { return v.Kind == KindNull || v.Nil }
