// Package mcpcore is the mcpkit host: the plugin registry, the assembly of
// one MCP server from the selected plugins, tool naming, the limits, the
// shared concurrency limit and per-call timeouts, argument validation, error
// kinds, result paging, client-session tracking and the built-in
// mcpkit://info resource.
//
// It knows no transport: the stdio and HTTP transports (subpackages) serve
// the [*mcp.Server] that [Server.MCP] returns. [Server.Run] serves one
// stream session (stdio) on it and answers legacy-era calls of the bundled
// RESP plugin's tools itself, without the SDK's request path, with the
// same semantics and bytes (a fast path internal to mcpkit, see
// docs/architecture.md). It must not know any plugin's
// engine either: everything a plugin contributes comes through its
// registration and its [Host].
//
// # Plugins
//
// A plugin registers at init with [Register] (or is embedded: [Instance] in
// [Options.Instances], as sql.OpenDB takes a connector). [NewServer]
// creates it, configures it when it is a [Configurer], attaches it with a
// [Host] and, at [Server.Close], closes it. Through the host a plugin adds
// tools ([AddTool]), resources, resource templates and prompts; every name
// and URI is checked at startup (collisions between plugins name both), and
// a definition the MCP SDK would refuse with a panic is a startup error
// naming the plugin.
//
// # Limits
//
// Every limit is a [LimitSpec] row (name, kind, default, range, unit,
// meaning): the core's own ([CoreLimits], typed as [Limits] for the
// transports and the command line) and each plugin's ([PluginInfo.Limits]),
// set in the configuration file under "limits" and "plugins.<name>.limits",
// validated the same way (an unknown name or a value out of range is a
// [*ConfigError] naming it), read by a plugin with [Host.Limit], and listed
// in mcpkit://info with their meaning. A limit that is reached fails with a
// [*LimitError], never by truncating. inflight_request_bytes is enforced by
// the transports (the bytes of requests read and not yet answered).
//
// # Tool calls
//
// The host validates a call's arguments against the tool's input schema
// and decodes them strictly; invalid arguments fail with kind "bad_params"
// and the JSON Pointer of the offending argument. The host then takes one of the
// concurrent_tool_calls slots (or fails at once), runs the handler under
// the tool's timeout (tool_timeout, or the tool's own [ToolOptions.Timeout],
// at most 5m) with a context that also ends on notifications/cancelled,
// recovers a panic (kind "internal", stack in the log, counter "panicked"),
// serializes the result once (a [Text] result is served as its text, without
// structuredContent) and returns it inline or retains it for the
// plugin's "<prefix>_result" read tool. A failed call's structuredContent
// is a [ToolErrorReply] whose kind an agent can act on: the host's kinds
// (limit, timeout, cancelled, bad_params, internal, result_not_found,
// unavailable, error) or a plugin's own ([KindError], [Errorf], any error
// with an ErrorKind method). A call whose context ended is reported as
// timed out or cancelled whatever its handler returned, with its partial
// result ([ErrorResult]) attached. A tool that declares an output schema
// lists the union of it, the paged reference and the error reply.
//
// # Identity and sessions
//
// [Principal] is the authenticated caller of a request ("" without
// authentication); retained results are scoped to it, and plugins scope
// their own handles the same way. The host tracks client sessions
// ([Session]) from their first message to their end (stdio EOF, HTTP
// DELETE, idle expiry, a vanished client, server close): [Host.SessionOf]
// finds a request's session, [Host.Sessions] lists the live ones (to send
// them notifications), and [Host.OnSessionEnd] hooks free per-session
// resources. In the 2026-07-28 era HTTP is stateless, so each request is a
// session of its own that ends with it: state that must outlive a request
// is keyed by principal or handed to the client as a handle.
//
// # Resources
//
// [Host.URIScheme] and [Host.ResourceURI] give a plugin a valid RFC 3986
// scheme from its prefix ("_" becomes "-"; an empty prefix uses the plugin
// name; a scheme that would not start with a letter gets "x-" in front):
// prefix "ffkv_2" serves "ffkv-2://...".
//
// # HTTP
//
// Over streamable HTTP a plugin may serve routes of its own on the same
// listener ([Host.HandleHTTP]: an API, a WebSocket endpoint, OAuth metadata
// and pages), behind the same Host and Origin checks as /mcp, which, with
// /healthz, stays reserved; a conflict is refused at startup naming both
// plugins. One plugin may supply the token verifier for /mcp
// ([Host.SetTokenVerifier], with the protected-resource metadata for
// WWW-Authenticate: a URL, or a path named on the origin each loopback
// request reached), which counts as authentication for listening beyond
// loopback, and one may share legacy HTTP sessions between instances
// ([Host.SetSessionStore], see package sessionstore). [Server.HTTP] hands
// all of it to the transport.
//
// # Commands
//
// A plugin contributes subcommands to the binary (`mcpkit resp ...`) with
// cli.RegisterCommand (package pkg/cli) from its init, as Caddy modules do;
// a command serves an assembled server with cli.Serve exactly as
// `mcpkit serve` does.
//
// # Lifetime and shutdown
//
// [Host.Context] ends when [Server.Close] starts; background work of a
// plugin runs under it. Close then refuses new calls, waits (bounded by its
// context) for calls in flight, closes the remaining sessions and runs their
// end hooks, closes the plugins in reverse order (logging any plugin whose
// abandoned handlers still run, see [Plugin.Close]) and frees every
// retained result; a result that finishes later is not retained.
package mcpcore
