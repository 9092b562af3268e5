// Package standard links mcpkit's first-party plugins into a binary. A
// custom binary blank-imports it, adds its own plugins, and calls cli.Main.
package standard

import (
	_ "github.com/mcpkit/mcpkit/plugins/actions"     // action framework (the example app)
	_ "github.com/mcpkit/mcpkit/plugins/conformance" // the MCP conformance suite's fixtures (never a default)
	_ "github.com/mcpkit/mcpkit/plugins/diag"        // diagnostics plugin
	_ "github.com/mcpkit/mcpkit/plugins/resp"        // RESP sidecar
	_ "github.com/mcpkit/mcpkit/plugins/store"       // document store
)
