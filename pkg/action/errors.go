package action

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind classifies an action error; every transport maps it to its own
// status (HTTP: [Kind.HTTPStatus]).
type Kind string

// The kinds of action error.
const (
	KindMissingParam Kind = "missing_param" // a required input is absent (HTTP 400)
	KindInvalidParam Kind = "invalid_param" // an input is unknown, of the wrong type or out of its schema (HTTP 400)
	KindNotFound     Kind = "not_found"     // no such action, route or thing the action looked for (HTTP 404)
	KindUnauthorized Kind = "unauthorized"  // no or bad credentials (HTTP 401)
	KindForbidden    Kind = "forbidden"     // credentials without the right (HTTP 403)
	KindRateLimited  Kind = "rate_limited"  // too many calls (HTTP 429)
	KindTimeout      Kind = "timeout"       // the action's timeout expired (HTTP 408)
	KindConflict     Kind = "conflict"      // the state does not allow the call (HTTP 409)
	KindTooLarge     Kind = "too_large"     // the request is over a size limit (HTTP 413)
	KindUnavailable  Kind = "unavailable"   // a server the action needs (its database) is unreachable: retry later (HTTP 503)
	KindInternal     Kind = "internal"      // anything else; its cause is logged, never shown (HTTP 500)
)

var kindStatus = map[Kind]int{
	KindMissingParam: http.StatusBadRequest,
	KindInvalidParam: http.StatusBadRequest,
	KindNotFound:     http.StatusNotFound,
	KindUnauthorized: http.StatusUnauthorized,
	KindForbidden:    http.StatusForbidden,
	KindRateLimited:  http.StatusTooManyRequests,
	KindTimeout:      http.StatusRequestTimeout,
	KindConflict:     http.StatusConflict,
	KindTooLarge:     http.StatusRequestEntityTooLarge,
	KindUnavailable:  http.StatusServiceUnavailable,
	KindInternal:     http.StatusInternalServerError,
}

// HTTPStatus is the HTTP status of an error of kind k: 500 for a kind this
// package does not define.
func (k Kind) HTTPStatus() int {
	if s, ok := kindStatus[k]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is a typed action error. Message is shown to the caller; Err, the
// cause, is not (it is for logs and errors.Is/As). Field names the input at
// fault, when there is one.
type Error struct {
	Kind    Kind
	Message string
	Field   string
	Err     error
}

// Errorf returns an *Error of kind k whose message is formatted from format
// and args (a %w verb also sets Err).
func Errorf(k Kind, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: k, Message: err.Error(), Err: errors.Unwrap(err)}
}

// Error returns "kind: message" (with the field when there is one).
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Kind, e.Field, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// paramError is an error of kind k about the input named field. Its
// message and field echo at most a prefix of any long value the client
// sent ([clipMessage], [clip]): a 1 MiB bad value is not sent back.
func paramError(k Kind, field, format string, args ...any) *Error {
	return &Error{Kind: k, Field: clip(field), Message: clipMessage(fmt.Sprintf(format, args...))}
}

// Bounds of what an error message echoes of the client's input.
const (
	// EchoChars is how many characters of a long value an error message
	// quotes, followed by "…(N bytes)" with the value's whole length.
	EchoChars = 64
	// maxMessageBytes bounds a whole param error message, for the values
	// a message shows unquoted (a number, an array).
	maxMessageBytes = 512
)

// clip returns s when it has at most EchoChars characters, else its
// first EchoChars characters followed by "…(N bytes)", N being len(s).
func clip(s string) string {
	if p, ok := echoPrefix(s); ok {
		return fmt.Sprintf("%s…(%d bytes)", p, len(s))
	}
	return s
}

// echo is v quoted (as %q does) and clipped as [clip] does: the way a
// message names a value the client sent.
func echo(v string) string {
	if p, ok := echoPrefix(v); ok {
		return fmt.Sprintf("%s…(%d bytes)", strconv.Quote(p), len(v))
	}
	return strconv.Quote(v)
}

// echoPrefix returns the first EchoChars characters of s and true, or ""
// and false when s has no more than that.
func echoPrefix(s string) (string, bool) {
	if len(s) <= EchoChars {
		return "", false // fewer bytes than EchoChars: fewer characters too
	}
	n := 0
	for i := range s {
		if n == EchoChars {
			return s[:i], true
		}
		n++
	}
	return "", false
}

// clipMessage shortens a message that echoes long values: each Go-quoted
// string in it (how the schema validator and this package quote a value)
// of more than EchoChars characters is replaced by [echo] of it, and a
// message still over maxMessageBytes (a long value shown unquoted) is
// clipped to that many bytes.
func clipMessage(msg string) string {
	msg = clipQuoted(msg)
	if len(msg) <= maxMessageBytes {
		return msg
	}
	n := maxMessageBytes
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return fmt.Sprintf("%s…(%d bytes)", msg[:n], len(msg))
}

// clipQuoted replaces each Go-quoted string in msg of more than EchoChars
// characters by [echo] of it.
func clipQuoted(msg string) string {
	if len(msg) <= EchoChars {
		return msg
	}
	var b strings.Builder
	for rest := msg; ; {
		i := strings.IndexByte(rest, '"')
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		b.WriteString(rest[:i])
		rest = rest[i:]
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			b.WriteByte('"')
			rest = rest[1:]
			continue
		}
		if v, err := strconv.Unquote(q); err == nil {
			b.WriteString(echo(v))
		} else {
			b.WriteString(q)
		}
		rest = rest[len(q):]
	}
}
