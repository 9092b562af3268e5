package resp

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/httpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveHTTP serves e's server over streamable HTTP on loopback until the
// test ends and returns a client connector pinned to a protocol version.
func (e *env) serveHTTP() func(version string) *mcp.ClientSession {
	t := e.t
	h, err := httpserve.NewHandler(httpserve.Options{Server: e.srv.MCP(), SessionIdle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan net.Addr, 1), make(chan error, 1)
	go func() {
		done <- httpserve.ListenAndServe(ctx, "127.0.0.1:0", h, httpserve.ServeOptions{Ready: func(a net.Addr) { addrc <- a }})
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		cancel()
		<-done
		h.Close()
	})
	return func(version string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "resp-test"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr.String() + httpserve.MCPPath,
			HTTPClient: &http.Client{Transport: tr}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
}

// TestHTTPEras: a legacy HTTP client keeps its default session and handles
// for its MCP session; a 2026-07-28 client, whose every request is a
// session of its own, keeps them for its principal across requests; a
// handle of one is unknown to the other.
func TestHTTPEras(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	dial := e.serveHTTP()
	legacy, stateless := dial(legacyVersion), dial(statelessEra)
	for name, cs := range map[string]*mcp.ClientSession{"legacy": legacy, "stateless": stateless} {
		id := decode[execReply](t, e.call(cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"CLIENT", "ID"}, {"SELECT", 5}}}))
		again := decode[execReply](t, e.call(cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"CLIENT", "ID"}, {"SET", "db", name}}}))
		if string(id.Replies[0].Value) != string(again.Replies[0].Value) {
			t.Fatalf("%s: the default session changed between calls: %s, %s", name, id.Replies[0].Value, again.Replies[0].Value)
		}
		h := e.open(cs, nil)
		if res := e.execOn(cs, h, cmd("PING")); res.IsError {
			t.Fatalf("%s: a handle does not work in the next call: %v", name, res.StructuredContent)
		}
		other := legacy
		if cs == legacy {
			other = stateless
		}
		failure(t, e.execOn(other, h, cmd("PING")), KindSessionNotFound)
	}
}
