// Package respengine is the engine of mcpkit's RESP sidecar: what the
// sidecar owns beyond the wire codec of pkg/resp. It holds the process
// supervisor (server processes it starts, owns, signals through their own
// handles, and terminates and reaps on Close) and its log rings, and is
// where the session registry and the management clients belong.
//
// It holds no MCP code and imports none (a test in internal/layering
// checks): plugins/resp decodes tool arguments, calls it, and maps its
// errors to the host's error kinds. Its failures are typed: the sentinels
// a caller tests with errors.Is ([ErrClosed], [ErrProcessNotFound],
// [ErrRefused], [ErrUnavailable]...), [*LimitError] for a limit reached and
// [*ArgError] for an argument it refuses, each before anything is done.
//
// Every goroutine it starts is owned by the value that started it and
// stopped by that value's Close; contexts bound the calls that wait.
package respengine
