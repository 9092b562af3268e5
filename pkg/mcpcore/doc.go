// Package mcpcore is the mcpkit host: the plugin registry, the assembly of one
// MCP server from the selected plugins, tool naming, the shared limits
// (concurrent calls, per-call timeouts), result paging and the built-in
// mcpkit://info resource.
//
// Plugins register at init with [Register] and add their tools through the
// [Host] they are given; every tool result passes through the host, which
// serializes it once and either returns it inline or retains it for the
// plugin's "<prefix>_result" read tool. The package knows no transport: the
// stdio and HTTP transports (subpackages) serve the [*mcp.Server] that
// [Server.MCP] returns. It must not know any plugin's engine either.
package mcpcore
