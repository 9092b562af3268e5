// Package test holds mcpkit's end-to-end tests and benchmarks, in a module of
// its own: they run the built bin/mcpkit as a subprocess (`make build` first)
// and drive it with real MCP clients over stdio and streamable HTTP, in both
// protocol eras, plus the official MCP conformance suite. Nothing here is
// imported by mcpkit itself.
package test
