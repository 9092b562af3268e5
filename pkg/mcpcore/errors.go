package mcpcore

import (
	"errors"
	"fmt"
)

// Sentinel errors. Each typed error below matches one of them with errors.Is.
var (
	// ErrLimit matches every [*LimitError].
	ErrLimit = errors.New("limit exceeded")
	// ErrConfig matches every [*ConfigError].
	ErrConfig = errors.New("invalid configuration")
	// ErrResultNotFound is returned for an unknown, expired or released result.
	ErrResultNotFound = errors.New("result not found")
	// ErrTimeout is returned when a tool call runs past its timeout.
	ErrTimeout = errors.New("tool call timed out")
	// ErrClosed is returned for work that arrives after the server started
	// closing: nothing was done.
	ErrClosed = errors.New("the server is shutting down")
)

// The error kinds the host reports in structuredContent.error.kind. A
// plugin's own error may carry any other kind (see [KindError]).
const (
	KindLimit          = "limit"            // a [*LimitError]: see limit and max
	KindTimeout        = "timeout"          // the call ran past its timeout; it may have had effects
	KindCancelled      = "cancelled"        // the client cancelled the call or went away
	KindBadParams      = "bad_params"       // invalid arguments (a [*ParamError]); see path; nothing was done
	KindInternal       = "internal"         // the handler panicked; the server log has the stack
	KindResultNotFound = "result_not_found" // an unknown, expired or released result_id
	KindUnavailable    = "unavailable"      // the server is shutting down; nothing was done
	KindOther          = "error"            // any other failure
)

// LimitError reports that an operation would exceed a limit, the core's
// ([Limits]) or a plugin's ([LimitSpec]). Nothing was truncated: the
// operation either did not happen or, where the message says so, happened
// and only its result could not be kept.
type LimitError struct {
	Limit  string // the limit's name, e.g. "retained_result_bytes"
	Max    int64  // the configured value of the limit
	Actual int64  // what the operation needed, or 0 when unknown
	Detail string // what happened, for the agent
}

func (e *LimitError) Error() string {
	msg := fmt.Sprintf("limit %s (%d) exceeded", e.Limit, e.Max)
	if e.Actual > 0 {
		msg += fmt.Sprintf(": needed %d", e.Actual)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// ErrorKind implements the kind interface [KindError] documents: "limit".
func (e *LimitError) ErrorKind() string { return KindLimit }

// ConfigError reports an invalid configuration value. It never carries a
// credential's value.
type ConfigError struct {
	Field  string // dotted path, e.g. "limits.tool_timeout"
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// KindError gives an error a kind of the plugin's choosing ("not_found",
// "conflict", "auth"...), which the host reports as
// structuredContent.error.kind of the failed call so that an agent can act
// on it without parsing the message. The host finds the kind with
// errors.As on the interface interface{ ErrorKind() string }, so any error
// type of a plugin may implement ErrorKind instead of using KindError.
type KindError struct {
	Kind string
	Err  error
}

// Errorf returns a [*KindError] of the given kind whose error is
// fmt.Errorf(format, args...) (%w wraps as usual).
func Errorf(kind, format string, args ...any) error {
	return &KindError{Kind: kind, Err: fmt.Errorf(format, args...)}
}

func (e *KindError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *KindError) Unwrap() error { return e.Err }

// ErrorKind returns e.Kind.
func (e *KindError) ErrorKind() string { return e.Kind }

// ParamError reports an invalid tool argument: the host returns one for
// arguments that break the tool's input schema or cannot be decoded, and a
// handler may return one for an argument it rejects itself. It is reported
// with kind "bad_params" and the argument's JSON Pointer as
// structuredContent.error.path.
type ParamError struct {
	// Path is the JSON Pointer (RFC 6901) of the offending argument within
	// the arguments object, e.g. "/items/2/name"; "" is the whole object.
	Path   string
	Reason string
}

func (e *ParamError) Error() string {
	if e.Path == "" {
		return "invalid arguments: " + e.Reason
	}
	return fmt.Sprintf("invalid argument %s: %s", briefPath(e.Path), e.Reason)
}

// ErrorKind returns "bad_params".
func (e *ParamError) ErrorKind() string { return KindBadParams }
