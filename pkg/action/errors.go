package action

import (
	"errors"
	"fmt"
	"net/http"
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

// paramError is an error of kind k about the input named field.
func paramError(k Kind, field, format string, args ...any) *Error {
	return &Error{Kind: k, Field: field, Message: fmt.Sprintf(format, args...)}
}
