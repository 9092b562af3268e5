// Package mcptest connects an MCP Go SDK client to an assembled mcpkit
// server in memory, for plugin tests, the way net/http/httptest serves a
// handler. It starts no process and opens no port.
package mcptest

import (
	"context"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect assembles a server from opts (registered plugins, or embedded
// instances in opts.Instances), connects a client session to it and closes
// the session, the server session and the server (its plugins) when the
// test ends. It returns the assembly error, so that tests of startup
// failures can use it too.
func Connect(t testing.TB, opts mcpcore.Options) (*mcp.ClientSession, *mcpcore.Server, error) {
	t.Helper()
	srv, err := mcpcore.NewServer(t.Context(), opts)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("mcptest: close server: %v", err)
		}
	})
	return Session(t, srv, nil, nil), srv, nil
}

// Session connects one more client session to srv, with the client options
// given (nil for none: set handlers there to receive notifications) and the
// session options (nil for none: set ProtocolVersion there to pin an era),
// and closes it when the test ends, before the server. A plugin test uses it to
// check per-session state and notifications across sessions.
func Session(t testing.TB, srv *mcpcore.Server, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatalf("mcptest: server connect: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcptest"}, opts).Connect(t.Context(), ct, sopts)
	if err != nil {
		ss.Close()
		t.Fatalf("mcptest: client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// RunSession is Session through [mcpcore.Server.Run], the way `mcpkit
// serve --stdio` serves a client: a legacy-era session's calls of the
// bundled RESP plugin's tools skip the SDK's request path. The
// session is closed, and Run awaited, when the test ends.
func RunSession(t testing.TB, srv *mcpcore.Server, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcptest"}, opts).Connect(t.Context(), ct, sopts)
	if err != nil {
		t.Fatalf("mcptest: client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("mcptest: Server.Run did not return after the client closed")
		}
	})
	return cs
}
