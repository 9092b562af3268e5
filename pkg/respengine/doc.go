// Package respengine is the engine of mcpkit's RESP sidecar: what the
// sidecar owns beyond the wire codec of pkg/resp.
//
//   - [Sessions], the session registry: one dedicated connection per
//     session, a default session per [Scope] and explicit handles, calls on
//     one session one at a time, send and receive in manual mode, idle
//     expiry, and resets reported to the next call rather than hidden
//     behind a new connection;
//   - [Target] and [TargetConfig]: the endpoints it may reach, resolved
//     (credentials, TLS material, management origin) before any call;
//   - [Processes], the process supervisor: server processes it starts,
//     owns, signals through their own handles, and terminates and reaps on
//     Close, with their output in bounded logs;
//   - [Management] and [Live]: the client of a target's management HTTP
//     API (requests, confined downloads) and its /api/live WebSocket;
//   - [CommandRegistry]: each target's command registry, cached;
//   - [Redirects] and [RefusedName]: what a reply or a command means for
//     the sidecar (cluster redirects, commands without one reply);
//   - [ParseCommands] and [BatchLimits]: a batch parsed from its JSON
//     arguments and checked whole (sizes, refused commands) before its
//     first byte is written, by [Sessions.Send] itself and, for a
//     pipeline, by [Sessions.CheckPipeline].
//
// It holds no MCP code and imports none (the test in internal/layering
// fails if it does): plugins/resp decodes tool arguments, calls it, and
// maps its errors to the host's error kinds. Its failures are typed: the
// sentinels a caller tests with errors.Is ([ErrSessionNotFound],
// [ErrSessionReset], [ErrRefused], [ErrUnavailable], [ErrConnectionLost],
// [ErrUnknownEffect], [ErrProcessNotFound], [ErrClosed]), carried by an
// [*Error] whose message is for the caller's user; [*LimitError] for a
// limit reached, [*ArgError] for an argument it refuses,
// [*CommandRefusedError] for a command a pipeline does not run, and
// [*ConfigError] for a bad configuration value, each before anything is
// done.
//
// Every goroutine it starts is owned by the value that started it and
// stopped by that value's Close; contexts bound the calls that wait. It
// never starts or restarts a datastore of its own accord, never retries or
// replays a command, and reaches only the targets it was given.
package respengine
