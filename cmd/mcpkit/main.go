// Command mcpkit serves MCP for data systems; see `mcpkit help`.
package main

import (
	"os"

	"github.com/mcpkit/mcpkit/pkg/cli"
	_ "github.com/mcpkit/mcpkit/plugins/standard"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
