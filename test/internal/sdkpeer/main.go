// Command sdkpeer is the benchmark peer of bin/mcpkit: the same no-op tool
// (diag_echo) served by the MCP Go SDK alone, over the SDK's own
// StdioTransport. It exists only to measure mcpkit's stdio overhead against.
package main

import (
	"context"
	"log"

	"github.com/mcpkit/mcpkit/plugins/diag"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdkpeer", Version: "bench"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "diag_echo", Description: "Return the message unchanged."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in diag.EchoArgs) (*mcp.CallToolResult, diag.EchoReply, error) {
			return nil, diag.EchoReply{Message: in.Message}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
