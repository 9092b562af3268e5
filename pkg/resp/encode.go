package resp

import (
	"bytes"
	"strconv"
)

// AppendCommand appends args to dst as a RESP array of bulk strings, the
// form in which a server accepts a command, and returns the extended slice.
func AppendCommand(dst []byte, args [][]byte) []byte {
	dst = appendHeader(dst, '*', int64(len(args)))
	for _, a := range args {
		dst = appendHeader(dst, '$', int64(len(a)))
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// CommandSize returns the exact number of bytes AppendCommand appends for
// args.
func CommandSize(args [][]byte) int64 {
	n := headerSize(int64(len(args)))
	for _, a := range args {
		n += headerSize(int64(len(a))) + int64(len(a)) + 2
	}
	return n
}

// headerSize is the size of "<type><n>\r\n".
func headerSize(n int64) int64 {
	digits := int64(1)
	for ; n >= 10; n /= 10 {
		digits++
	}
	return 1 + digits + 2
}

func appendHeader(dst []byte, t byte, n int64) []byte {
	dst = append(dst, t)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// AppendValue appends v to dst in RESP and returns the extended slice. For a
// Value the [Reader] produced, decoding the result gives an equal Value (the
// bytes are the frame as received, except that integers and lengths are
// written in canonical form). Values built by hand that no frame can carry
// are written as close as RESP allows: a simple string or error containing
// CR or LF as its bulk counterpart, a map's odd trailing element dropped, an
// attribute without its reply, or an unknown Kind, as a null.
func AppendValue(dst []byte, v Value) []byte {
	if v.Nil {
		return append(dst, byte(v.Kind), '-', '1', '\r', '\n')
	}
	switch v.Kind {
	case KindSimpleString, KindSimpleError, KindDouble, KindBigNumber:
		if bytes.ContainsAny(v.Str, "\r\n") {
			k := KindBulkString
			if v.Kind == KindSimpleError {
				k = KindBulkError
			}
			return appendBulk(dst, k, "", v.Str)
		}
		dst = append(dst, byte(v.Kind))
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case KindInteger:
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, v.Int, 10)
		return append(dst, '\r', '\n')
	case KindBoolean:
		if v.Bool {
			return append(dst, "#t\r\n"...)
		}
		return append(dst, "#f\r\n"...)
	case KindBulkString, KindBulkError:
		return appendBulk(dst, v.Kind, "", v.Str)
	case KindVerbatim:
		return appendBulk(dst, v.Kind, v.Format, v.Str)
	case KindArray, KindSet, KindPush, KindMap, KindAttribute:
		n := int64(len(v.Elems))
		if v.Kind == KindMap || v.Kind == KindAttribute {
			n /= 2
		}
		dst = appendHeader(dst, byte(v.Kind), n)
		for _, e := range v.Elems[:elemsWritten(v)] {
			dst = AppendValue(dst, e)
		}
		if v.Kind == KindAttribute {
			if v.Wrapped == nil {
				return append(dst, "_\r\n"...)
			}
			dst = AppendValue(dst, *v.Wrapped)
		}
		return dst
	}
	return append(dst, "_\r\n"...)
}

// elemsWritten is how many of v's elements the header announces (a map's
// odd trailing element is dropped).
func elemsWritten(v Value) int {
	if v.Kind == KindMap || v.Kind == KindAttribute {
		return len(v.Elems) &^ 1
	}
	return len(v.Elems)
}

func appendBulk(dst []byte, k Kind, format string, s []byte) []byte {
	n := int64(len(s))
	if k == KindVerbatim {
		n += 4
	}
	dst = appendHeader(dst, byte(k), n)
	if k == KindVerbatim {
		dst = append(dst, format...)
		dst = append(dst, ':')
	}
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}
