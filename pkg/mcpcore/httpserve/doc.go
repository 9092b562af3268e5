// Package httpserve is the streamable-HTTP mount of the mcpkit host: one
// /mcp endpoint that serves both MCP protocol eras over a single *mcp.Server,
// GET /healthz, the plugins' own routes, and the listener that runs them.
//
// Legacy clients (initialize, protocol 2025-11-25 and earlier) get stateful
// sessions addressed by Mcp-Session-Id, with server notifications and
// logging, an idle timeout and a cap on their number. This package owns the
// table of those sessions (each an SDK ServerSession over a
// StreamableServerTransport it creates) rather than the SDK's stateful
// handler, so that it counts every session it opens, can share sessions
// between instances and sees every message. Clients of 2026-07-28
// (server/discover, per-request _meta) are served statelessly by the SDK's
// stateless handler.
//
// The seams, each an [Options] field:
//
//   - Routes: plugin routes ([Route], Go 1.22 ServeMux patterns) on the same
//     listener, behind the same Host (DNS-rebinding) and Origin checks and
//     body deadline as /mcp but not behind its bearer check (a plugin route
//     authenticates itself). /mcp and /healthz are reserved: [NewHandler]
//     refuses a route that ServeMux finds in conflict with another, or that
//     would take requests for /mcp or /healthz, naming both owners
//     ([ErrRouteConflict]).
//   - BearerTokens and Verifier: /mcp authenticates with the SDK's
//     bearer-token middleware; static tokens are one verifier
//     ([StaticTokens]) and a plugin's verifier another, a token either
//     accepts being accepted. ResourceMetadataURL goes into the
//     WWW-Authenticate header of a refusal. Either counts as authentication
//     for the rule that a non-loopback address needs it, which
//     [ListenAndServe] enforces.
//   - SessionStore: legacy sessions shared between instances. A session's
//     record (principal, SDK session state, expiry) is saved before the
//     client learns of each state change (the initialize result,
//     notifications/initialized, a logging/setLevel result). An instance
//     that gets a request for a session it does not hold resumes it from
//     the record, for the same principal only (403 otherwise). Every request
//     for a session loads its record, which extends its expiry; DELETE
//     removes the record, then the local copy, and any other instance still
//     holding a copy closes it and answers 404 on its next request for it.
//     Idle expiry and [Handler.Close] end only the local copy. A copy keeps
//     the state it was opened or resumed with but for the log level: the
//     SDK copy's level is pinned at debug and every log message the
//     session is sent is checked against the level in the record, so a
//     setLevel through any instance applies on all at once. Every lasting
//     session, a copy resumed only for a GET stream too, is announced
//     through Options.SessionOpened before it serves anything. Resource
//     subscriptions are not shared (the SDK keeps them outside the session
//     state).
//   - Session ends: idle expiry, DELETE, a store record gone and
//     [Handler.Close] each close the SDK ServerSession, so ServerSession.Wait
//     returns for whoever tracks sessions from the SDK side.
//
// Limits: a request body is capped by MaxBodyBytes (413), must arrive
// within BodyTimeout (408; the connection closes), and counts against
// MaxInflightBytes, the bytes of /mcp bodies being read or handled, until
// its request ends (503 with a JSON-RPC error naming
// inflight_request_bytes). A refusal sent before the body is read (Host,
// Origin, token) is sent at once and closes the connection. Whether a POST
// opens a session (and takes one of the MaxSessions slots, else 503 naming
// http_sessions) is decided with the SDK's own decoder, and only a session
// that took a slot outlives its request.
//
// JSON-RPC ids are echoed exactly: each message of a POST body passes
// through an id table (package internal/wire; one per legacy session, one
// per stateless request) before the SDK decodes it, and each message the
// SDK writes back (an SSE event's data, or a JSON body) passes through it
// again, which restores ids the SDK would have altered (9007199254740993,
// 1.5) and drops the response to a request the client cancelled with
// notifications/cancelled, so its POST stream ends without it.
//
// This package must not know any plugin, build the server or read
// configuration: the caller passes the assembled server, the limits, the
// routes and the verifier. It must never log a bearer token or an
// Authorization header.
package httpserve
