package stdio

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchTransports are the two server-side transports every benchmark compares.
var benchTransports = []struct {
	name string
	mk   func(r io.ReadCloser, w io.WriteCloser) mcp.Transport
}{
	{"mcpkit", func(r io.ReadCloser, w io.WriteCloser) mcp.Transport { return NewTransport(r, w, Options{}) }},
	{"sdk", func(r io.ReadCloser, w io.WriteCloser) mcp.Transport { return &mcp.IOTransport{Reader: r, Writer: w} }},
}

// BenchmarkRoundTrip compares a round trip through this transport on the
// server side with the SDK's own IOTransport (the transport behind
// mcp.StdioTransport), the client using IOTransport in both cases.
func BenchmarkRoundTrip(b *testing.B) {
	calls := []struct {
		name string
		do   func(ctx context.Context, cs *mcp.ClientSession) error
	}{
		{"ping", func(ctx context.Context, cs *mcp.ClientSession) error { return cs.Ping(ctx, nil) }},
		{"echo-64KiB", func() func(ctx context.Context, cs *mcp.ClientSession) error {
			text := strings.Repeat("x", 64<<10)
			return func(ctx context.Context, cs *mcp.ClientSession) error {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
				return err
			}
		}()},
	}
	for _, call := range calls {
		for _, tr := range benchTransports {
			b.Run(call.name+"/"+tr.name, func(b *testing.B) {
				ctx := context.Background()
				c2sR, c2sW := io.Pipe()
				s2cR, s2cW := io.Pipe()
				ss, err := newServer().Connect(ctx, tr.mk(c2sR, s2cW), nil)
				if err != nil {
					b.Fatal(err)
				}
				client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0.0.1"}, nil)
				cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: s2cR, Writer: c2sW},
					&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := call.do(ctx, cs); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				cs.Close()
				ss.Wait()
				s2cW.Close()
			})
		}
	}
}

// repeatReader yields line forever, never returning EOF.
type repeatReader struct {
	line []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.line[r.off:])
		n += c
		r.off = (r.off + c) % len(r.line)
	}
	return n, nil
}

func (r *repeatReader) Close() error { return nil }

type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }

// BenchmarkTransport isolates the transport: each iteration reads one
// request off the connection and writes one response, with no MCP server.
func BenchmarkTransport(b *testing.B) {
	lines := []struct{ name, line string }{
		{"ping", ping(12345) + "\n"},
		{"call-64KiB", bigRequest("12345", 64<<10, true) + "\n"},
	}
	for _, l := range lines {
		for _, tr := range benchTransports {
			b.Run(l.name+"/"+tr.name, func(b *testing.B) {
				ctx := context.Background()
				c, err := tr.mk(&repeatReader{line: []byte(l.line)}, discardCloser{}).Connect(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				b.SetBytes(int64(len(l.line)))
				b.ReportAllocs()
				for b.Loop() {
					msg, err := c.Read(ctx)
					if err != nil {
						b.Fatal(err)
					}
					req := msg.(*jsonrpc.Request)
					if err := c.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
