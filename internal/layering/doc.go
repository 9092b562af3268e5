// Package layering holds no code: its test keeps mcpkit's layers apart.
// The engines (pkg/resp, pkg/respadmin, pkg/respengine, pkg/docstore,
// pkg/action and what they import) must never import MCP code, neither
// the host (pkg/mcpcore and below) nor the MCP SDK: a plugin translates
// between MCP and an engine, never the engine itself.
package layering
