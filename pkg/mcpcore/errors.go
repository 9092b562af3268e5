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
	// ErrTimeout is returned when a tool call runs past the tool_timeout limit.
	ErrTimeout = errors.New("tool call timed out")
)

// LimitError reports that an operation would exceed one of the [Limits].
// Nothing was truncated: the operation either did not happen or, where the
// message says so, happened and only its result could not be kept.
type LimitError struct {
	Limit  string // the limit's JSON name, e.g. "retained_result_bytes"
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

// ConfigError reports an invalid configuration value. It never carries a
// credential's value.
type ConfigError struct {
	Field  string // dotted path, e.g. "limits.tool_timeout"
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }
