package respengine

import (
	"errors"
	"fmt"
)

// Classes of failure: an [*Error] is one of them (errors.Is), and a caller
// maps each to what it reports.
var (
	// ErrClosed: the engine value was closed; nothing was done.
	ErrClosed = errors.New("respengine: closed")
	// ErrUnavailable: something the call needs is missing or unreachable
	// (the server binary, a target); nothing was done.
	ErrUnavailable = errors.New("respengine: unavailable")
	// ErrRefused: an operation the engine does not run as asked; nothing
	// was done.
	ErrRefused = errors.New("respengine: refused")
	// ErrConnectionLost: the connection failed after something was written
	// to it: what reached the server has unknown outcomes.
	ErrConnectionLost = errors.New("respengine: connection lost")
	// ErrUnknownEffect: a management POST failed after it was sent; it may
	// or may not have taken effect.
	ErrUnknownEffect = errors.New("respengine: unknown effect")
	// ErrSessionNotFound: an unknown, closed or expired session or live
	// handle, or one of another scope.
	ErrSessionNotFound = errors.New("respengine: session not found")
	// ErrSessionReset: the session's connection was closed by the sidecar
	// (a call cancelled or timed out after dispatch, a failed connection,
	// idle expiry), and with it its state; nothing was sent. The default
	// session reports it to its next call only, and the call after that
	// runs on a new connection; a handle reports it until it is forgotten
	// (Idle later), and is never reconnected.
	ErrSessionReset = errors.New("respengine: session reset")
	// ErrProcessNotFound: an unknown or released process handle, or one
	// that another owner started.
	ErrProcessNotFound = errors.New("respengine: process not found")
)

// Error is a failure of one class (Class, one of the sentinels above) with
// a message for the person or agent that made the call. errors.Is matches
// its class; errors.Unwrap returns the cause it wraps, if any.
type Error struct {
	Class error
	msg   string
	cause error
}

func (e *Error) Error() string { return e.msg }

// Is makes errors.Is(e, e.Class) true.
func (e *Error) Is(target error) bool { return target == e.Class }

// Unwrap returns the error e's message wraps (%w), or nil.
func (e *Error) Unwrap() error { return e.cause }

// errorf returns an [*Error] of class whose message is fmt.Errorf(format,
// args...) and which wraps what that wraps.
func errorf(class error, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Class: class, msg: err.Error(), cause: errors.Unwrap(err)}
}

// LimitError reports a configured limit reached: nothing was done.
type LimitError struct {
	Limit  string // the limit's name, e.g. LimitChildProcesses
	Max    int64  // its configured value
	Actual int64  // what the operation needed, or 0 when unknown
	Detail string // what happened
}

// Error says which limit was reached; a caller that reports limits in a
// form of its own (plugins/resp: the core's LimitError) reads the fields.
func (e *LimitError) Error() string {
	return fmt.Sprintf("respengine: limit %s of %d reached (needed %d; 0: unknown): %s", e.Limit, e.Max, e.Actual, e.Detail)
}

// ArgError reports an argument the engine refuses, by its name (a field of
// the call's options, e.g. "max_bytes"), or by its path below one, a JSON
// pointer without its leading slash ("commands/3/1": a batch's command 3,
// argument 1; see [ParseCommands]): nothing was done.
type ArgError struct {
	Arg    string
	Reason string
}

func (e *ArgError) Error() string { return fmt.Sprintf("invalid argument %s: %s", e.Arg, e.Reason) }
