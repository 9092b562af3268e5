package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "stdio-test", Version: "v0.0.1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes its text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{Text: in.Text}, nil
		})
	return s
}

// TestSDKEras connects a real SDK server through this transport to an SDK
// client over io.Pipe pairs, in both protocol eras.
func TestSDKEras(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			c2sR, c2sW := io.Pipe()
			s2cR, s2cW := io.Pipe()
			defer s2cW.Close()

			ss, err := newServer().Connect(ctx, NewTransport(c2sR, s2cW, Options{}), nil)
			if err != nil {
				t.Fatal(err)
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0.0.1"}, nil)
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: s2cR, Writer: c2sW},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated protocol version %q, want %q", got, version)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi " + version}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("tool call failed: %+v", res.Content)
			}
			var out echoOut
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &out); err != nil || out.Text != "hi "+version {
				t.Fatalf("structured content %s, want text %q", b, "hi "+version)
			}
			if err := cs.Ping(ctx, nil); err != nil {
				t.Fatalf("ping: %v", err)
			}
			// The client closes its pipe ends: the server reads EOF and its
			// session ends.
			if err := cs.Close(); err != nil {
				t.Logf("client close: %v", err)
			}
			waitSession(t, ss)
		})
	}
}

func waitSession(t *testing.T, ss *mcp.ServerSession) {
	t.Helper()
	done := make(chan struct{})
	go func() { ss.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("server session did not end")
	}
}

// rawServer is an SDK server on this transport driven by raw lines.
type rawServer struct {
	t     *testing.T
	in    *io.PipeWriter // lines to the server
	lines chan []byte    // lines from the server
	ss    *mcp.ServerSession
}

func startRawServer(t *testing.T, opts Options) *rawServer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := newServer().Connect(context.Background(), NewTransport(inR, outW, opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	rs := &rawServer{t: t, in: inW, lines: lines, ss: ss}
	t.Cleanup(func() {
		inW.Close() // EOF: the session ends
		waitSession(t, ss)
		outW.Close()
		for range lines {
		}
	})
	return rs
}

// send writes raw bytes to the server from a goroutine, so that a large
// write cannot deadlock with the server's replies.
func (rs *rawServer) send(s string) {
	errc := make(chan error, 1)
	go func() {
		_, err := io.WriteString(rs.in, s)
		errc <- err
	}()
	rs.t.Cleanup(func() { <-errc })
}

func (rs *rawServer) recv() *wireResponse {
	rs.t.Helper()
	select {
	case line, ok := <-rs.lines:
		if !ok {
			rs.t.Fatal("server output closed")
		}
		r, err := parseResponse(line)
		if err != nil {
			rs.t.Fatal(err)
		}
		return r
	case <-time.After(waitTimeout):
		rs.t.Fatal("no response from server")
	}
	return nil
}

func (rs *rawServer) expectError(id string, code int64, msg string) {
	rs.t.Helper()
	r := rs.recv()
	if r.Error == nil {
		rs.t.Fatalf("want error response, got result %s", r.Result)
	}
	if string(*r.ID) != id || r.Error.Code != code || !strings.Contains(r.Error.Message, msg) {
		rs.t.Fatalf("got error id=%s code=%d message=%q; want id=%s code=%d message containing %q",
			*r.ID, r.Error.Code, r.Error.Message, id, code, msg)
	}
}

func (rs *rawServer) expectPing(id string) {
	rs.t.Helper()
	rs.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` + "\n")
	r := rs.recv()
	if r.Error != nil || string(*r.ID) != id {
		rs.t.Fatalf("ping %s: got id=%s error=%+v", id, *r.ID, r.Error)
	}
}

func TestServerRecovers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  Options
		input string
		id    string
		code  int64
		msg   string
	}{
		{
			name:  "oversized frame, small cap",
			opts:  Options{MaxFrameBytes: 1024},
			input: bigRequest("101", 4096, true) + "\n",
			id:    "101", code: jsonrpc.CodeInvalidRequest,
			msg: "frame of more than 1024 bytes exceeds the frame_bytes limit (1024)",
		},
		{
			name:  "oversized frame of several MiB",
			opts:  Options{MaxFrameBytes: 1 << 20},
			input: bigRequest(`"big"`, 5<<20, true) + "\r\n",
			id:    `"big"`, code: jsonrpc.CodeInvalidRequest,
			msg: "frame of more than 1048576 bytes exceeds the frame_bytes limit (1048576)",
		},
		{
			name:  "malformed JSON",
			input: `{"jsonrpc":"2.0","id":3,"method":` + "\n",
			id:    "null", code: jsonrpc.CodeParseError, msg: "parse error",
		},
		{
			name:  "valid JSON, invalid JSON-RPC",
			input: `{"jsonrpc":"1.0","id":4,"method":"ping"}` + "\n",
			id:    "4", code: jsonrpc.CodeInvalidRequest, msg: "invalid request",
		},
		{
			name:  "batch",
			input: `[{"jsonrpc":"2.0","id":5,"method":"ping"}]` + "\n",
			id:    "null", code: jsonrpc.CodeInvalidRequest, msg: "batches are not supported",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rs := startRawServer(t, tt.opts)
			rs.send("\n  \r\n" + tt.input)
			rs.expectError(tt.id, tt.code, tt.msg)
			rs.expectPing("1")
			rs.expectPing(`"after"`)
		})
	}
}

func TestServerEOFEndsSession(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer outR.Close()
	ss, err := newServer().Connect(context.Background(), NewTransport(inR, outW, Options{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, outR)
	if _, err := fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	waitSession(t, ss)
}
