// Command hello-mcpkit is an mcpkit binary with a third-party plugin built
// in: mcpkit's command line, its first-party plugins, and package hello.
//
//	go build -o hello-mcpkit . && ./hello-mcpkit serve --stdio --plugins hello
package main

import (
	"os"

	_ "github.com/mcpkit/mcpkit/examples/hello-plugin/hello" // registers the hello plugin
	"github.com/mcpkit/mcpkit/pkg/cli"
	_ "github.com/mcpkit/mcpkit/plugins/standard"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
