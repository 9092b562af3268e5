// Command sdkpeer is the benchmark peer of bin/mcpkit: the same no-op tool
// (diag_echo) served by the MCP Go SDK alone, over the SDK's own
// StdioTransport, or over its StreamableHTTPHandler (stateful for the legacy
// era, stateless for 2026-07-28). It exists only to measure mcpkit's
// overhead against.
//
//	sdkpeer                          stdio
//	sdkpeer --http ADDR [--stateless] prints "listening ADDR" on stderr
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/mcpkit/mcpkit/plugins/diag"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP at this address instead of stdio")
	stateless := flag.Bool("stateless", false, "with --http: the stateless (2026-07-28) handler")
	flag.Parse()

	s := mcp.NewServer(&mcp.Implementation{Name: "sdkpeer", Version: "bench"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "diag_echo", Description: "Return the message unchanged."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in diag.EchoArgs) (*mcp.CallToolResult, diag.EchoReply, error) {
			return nil, diag.EchoReply{Message: in.Message}, nil
		})
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "listening %s\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: *stateless})
	log.Fatal(http.Serve(ln, h))
}
