// Command fixturebin is mcpkit with the conformance fixture plugin built in,
// for the conformance test's fixture scenarios only.
package main

import (
	"os"

	"github.com/mcpkit/mcpkit/pkg/cli"
	_ "github.com/mcpkit/mcpkit/plugins/standard"
	_ "github.com/mcpkit/mcpkit/test/internal/fixtures"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
