package telemetry

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// This file writes spans in the OTLP protobuf wire format
// (opentelemetry-proto, trace/v1/trace.proto, common/v1/common.proto,
// resource/v1/resource.proto) as the batcher queues them: an ended span
// becomes the bytes it will be sent as, with the field values the OTLP
// exporter's own transform gives (status always present, flags with the
// parent's remote bit), so that a queued span is a few hundred bytes
// without pointers rather than the SDK's snapshot.

// The field numbers of the OTLP messages written here.
const (
	// ResourceSpans
	fieldRSResource   protowire.Number = 1
	fieldRSScopeSpans protowire.Number = 2
	fieldRSSchemaURL  protowire.Number = 3
	// Resource, InstrumentationScope (name 1, version 2, attributes 3)
	fieldResourceAttributes protowire.Number = 1
	fieldScopeName          protowire.Number = 1
	fieldScopeVersion       protowire.Number = 2
	fieldScopeAttributes    protowire.Number = 3
	// ScopeSpans
	fieldSSScope     protowire.Number = 1
	fieldSSSpans     protowire.Number = 2
	fieldSSSchemaURL protowire.Number = 3
	// Span
	fieldTraceID       protowire.Number = 1
	fieldSpanID        protowire.Number = 2
	fieldTraceState    protowire.Number = 3
	fieldParentSpanID  protowire.Number = 4
	fieldName          protowire.Number = 5
	fieldKind          protowire.Number = 6
	fieldStart         protowire.Number = 7
	fieldEnd           protowire.Number = 8
	fieldAttributes    protowire.Number = 9
	fieldDroppedAttrs  protowire.Number = 10
	fieldEvents        protowire.Number = 11
	fieldDroppedEvents protowire.Number = 12
	fieldLinks         protowire.Number = 13
	fieldDroppedLinks  protowire.Number = 14
	fieldStatus        protowire.Number = 15
	fieldFlags         protowire.Number = 16
	// Span.Event (time 1, name 2, attributes 3, dropped 4)
	// Span.Link (trace id 1, span id 2, attributes 4, dropped 5, flags 6;
	// trace state 3 is left out, as the exporter does)
	// Status (message 2, code 3)
	fieldStatusMessage protowire.Number = 2
	fieldStatusCode    protowire.Number = 3
	// KeyValue (key 1, value 2), AnyValue's oneof, ArrayValue and
	// KeyValueList (values 1)
	fieldKVKey      protowire.Number = 1
	fieldKVValue    protowire.Number = 2
	fieldAnyString  protowire.Number = 1
	fieldAnyBool    protowire.Number = 2
	fieldAnyInt     protowire.Number = 3
	fieldAnyDouble  protowire.Number = 4
	fieldAnyArray   protowire.Number = 5
	fieldAnyKVList  protowire.Number = 6
	fieldAnyBytes   protowire.Number = 7
	fieldListValues protowire.Number = 1

	// The SpanFlags bits beside the W3C trace flags: the parent's
	// remoteness is known, and it is remote.
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// appendMessage appends field num holding the message that fill
// appends: its length is known only once written, so the content is
// moved up by the length's size (a span's nested messages are small).
func appendMessage(b []byte, num protowire.Number, fill func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	at := len(b)
	b = fill(b)
	n := len(b) - at
	size := protowire.SizeVarint(uint64(n))
	var pad [binaryMaxVarint]byte
	b = append(b, pad[:size]...)
	copy(b[at+size:], b[at:at+n])
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

// binaryMaxVarint is the longest a varint can be.
const binaryMaxVarint = 10

// appendField appends field num of wire type typ holding v, as put
// writes it; a zero v is left out, as proto3 leaves out a default.
func appendField[T comparable](b []byte, num protowire.Number, typ protowire.Type, v T, put func([]byte, T) []byte) []byte {
	var zero T
	if v == zero {
		return b
	}
	return put(protowire.AppendTag(b, num, typ), v)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	return appendField(b, num, protowire.BytesType, s, protowire.AppendString)
}

func appendUint(b []byte, num protowire.Number, v uint64) []byte {
	return appendField(b, num, protowire.VarintType, v, protowire.AppendVarint)
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	return appendField(b, num, protowire.Fixed64Type, v, protowire.AppendFixed64)
}

func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	return appendField(b, num, protowire.Fixed32Type, v, protowire.AppendFixed32)
}

// appendID appends a trace or span ID, written even when zero, as the
// exporter writes it.
func appendID(b []byte, num protowire.Number, id []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), id)
}

// appendSpan appends s as a ScopeSpans.spans field: what the OTLP
// exporter's transform makes of a span, encoded.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	return appendMessage(b, fieldSSSpans, func(b []byte) []byte {
		sc, parent := s.SpanContext(), s.Parent()
		tid, sid := sc.TraceID(), sc.SpanID()
		b = appendID(b, fieldTraceID, tid[:])
		b = appendID(b, fieldSpanID, sid[:])
		b = appendString(b, fieldTraceState, sc.TraceState().String())
		if psid := parent.SpanID(); psid.IsValid() {
			b = appendID(b, fieldParentSpanID, psid[:])
		}
		b = appendString(b, fieldName, s.Name())
		b = appendUint(b, fieldKind, spanKind(s.SpanKind()))
		b = appendFixed64(b, fieldStart, unixNano(s.StartTime().UnixNano()))
		b = appendFixed64(b, fieldEnd, unixNano(s.EndTime().UnixNano()))
		b = appendKeyValues(b, fieldAttributes, s.Attributes())
		b = appendUint(b, fieldDroppedAttrs, clampUint32(s.DroppedAttributes()))
		for _, e := range s.Events() {
			b = appendMessage(b, fieldEvents, func(b []byte) []byte {
				b = appendFixed64(b, 1, unixNano(e.Time.UnixNano()))
				b = appendString(b, 2, e.Name)
				b = appendKeyValues(b, 3, e.Attributes)
				return appendUint(b, 4, clampUint32(e.DroppedAttributeCount))
			})
		}
		b = appendUint(b, fieldDroppedEvents, clampUint32(s.DroppedEvents()))
		for _, l := range s.Links() {
			b = appendMessage(b, fieldLinks, func(b []byte) []byte {
				ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
				b = appendID(b, 1, ltid[:])
				b = appendID(b, 2, lsid[:])
				b = appendKeyValues(b, 4, l.Attributes)
				b = appendUint(b, 5, clampUint32(l.DroppedAttributeCount))
				return appendFixed32(b, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
			})
		}
		b = appendUint(b, fieldDroppedLinks, clampUint32(s.DroppedLinks()))
		st := s.Status()
		b = appendMessage(b, fieldStatus, func(b []byte) []byte {
			b = appendString(b, fieldStatusMessage, st.Description)
			return appendUint(b, fieldStatusCode, statusCode(st.Code))
		})
		return appendFixed32(b, fieldFlags, spanFlags(sc.TraceFlags(), parent))
	})
}

// spanKind is kind's OTLP value (the same numbers; an unknown kind is
// unspecified).
func spanKind(kind trace.SpanKind) uint64 {
	if kind > trace.SpanKindConsumer {
		return 0
	}
	return uint64(kind)
}

// statusCode is code's OTLP value: unset 0, ok 1, error 2.
func statusCode(code codes.Code) uint64 {
	switch code {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

// spanFlags are the W3C trace flags with whether parent is remote.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		flags |= flagIsRemote
	}
	return flags
}

// unixNano is a time in nanoseconds, 0 before the epoch.
func unixNano(ns int64) uint64 { return uint64(max(0, ns)) }

// clampUint32 is a count as OTLP's uint32.
func clampUint32(v int) uint64 { return uint64(min(max(v, 0), math.MaxUint32)) }

// appendKeyValues appends each attribute as a KeyValue field num.
func appendKeyValues(b []byte, num protowire.Number, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		b = appendMessage(b, num, func(b []byte) []byte {
			b = appendString(b, fieldKVKey, string(kv.Key))
			return appendMessage(b, fieldKVValue, func(b []byte) []byte { return appendValue(b, kv.Value) })
		})
	}
	return b
}

// appendValue appends v's AnyValue fields (the oneof member is written
// even when zero: its presence is the type).
func appendValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		return appendBool(b, v.AsBool())
	case attribute.INT64:
		return appendInt(b, v.AsInt64())
	case attribute.FLOAT64:
		return appendDouble(b, v.AsFloat64())
	case attribute.STRING:
		b = protowire.AppendTag(b, fieldAnyString, protowire.BytesType)
		return protowire.AppendString(b, v.AsString())
	case attribute.BYTESLICE:
		b = protowire.AppendTag(b, fieldAnyBytes, protowire.BytesType)
		return protowire.AppendBytes(b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), appendBool)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), appendInt)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), appendDouble)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), func(b []byte, s string) []byte {
			b = protowire.AppendTag(b, fieldAnyString, protowire.BytesType)
			return protowire.AppendString(b, s)
		})
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), appendValue)
	case attribute.MAP:
		return appendMessage(b, fieldAnyKVList, func(b []byte) []byte { return appendKeyValues(b, fieldListValues, v.AsMap()) })
	case attribute.EMPTY:
		return b
	}
	b = protowire.AppendTag(b, fieldAnyString, protowire.BytesType) // as the OTLP exporter writes a type it does not know
	return protowire.AppendString(b, "INVALID")
}

func appendBool(b []byte, v bool) []byte {
	b = protowire.AppendTag(b, fieldAnyBool, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeBool(v))
}

func appendInt(b []byte, v int64) []byte {
	b = protowire.AppendTag(b, fieldAnyInt, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func appendDouble(b []byte, v float64) []byte {
	b = protowire.AppendTag(b, fieldAnyDouble, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

// appendArray appends an ArrayValue of vs, each an AnyValue that one
// appends.
func appendArray[T any](b []byte, vs []T, one func([]byte, T) []byte) []byte {
	return appendMessage(b, fieldAnyArray, func(b []byte) []byte {
		for _, v := range vs {
			b = appendMessage(b, fieldListValues, func(b []byte) []byte { return one(b, v) })
		}
		return b
	})
}

// appendResource appends res as a ResourceSpans' resource and schema
// URL, the head of every ResourceSpans the batcher sends.
func appendResource(b []byte, res *resource.Resource) []byte {
	if res == nil {
		return b
	}
	b = appendMessage(b, fieldRSResource, func(b []byte) []byte {
		return appendKeyValues(b, fieldResourceAttributes, res.Attributes())
	})
	return appendString(b, fieldRSSchemaURL, res.SchemaURL())
}

// appendScope appends the head of a ScopeSpans of scope: its
// InstrumentationScope (none for the zero scope) and schema URL.
func appendScope(b []byte, scope instrumentation.Scope) []byte {
	if scope != (instrumentation.Scope{}) {
		b = appendMessage(b, fieldSSScope, func(b []byte) []byte {
			b = appendString(b, fieldScopeName, scope.Name)
			b = appendString(b, fieldScopeVersion, scope.Version)
			return appendKeyValues(b, fieldScopeAttributes, scope.Attributes.ToSlice())
		})
	}
	return appendString(b, fieldSSSchemaURL, scope.SchemaURL)
}
