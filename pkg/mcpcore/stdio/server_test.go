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
// Nothing reads its output until the test does (recv), so a test can also
// play a client that does not read.
type rawServer struct {
	t    *testing.T
	in   *io.PipeWriter // lines to the server
	out  *bufio.Reader  // lines from the server
	outW *io.PipeWriter
	ss   *mcp.ServerSession
}

func startRawServer(t *testing.T, opts Options) *rawServer {
	t.Helper()
	return startRawServerWith(t, newServer(), opts)
}

// startRawServerWith serves srv over this transport through pipes.
func startRawServerWith(t *testing.T, srv *mcp.Server, opts Options) *rawServer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := srv.Connect(context.Background(), NewTransport(inR, outW, opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		inW.Close() // EOF: the session ends once every reply is written
		drained := make(chan struct{})
		go func() { io.Copy(io.Discard, outR); close(drained) }()
		waitSession(t, ss)
		outW.Close()
		<-drained
	})
	return &rawServer{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), outW: outW, ss: ss}
}

// initialize opens the MCP session, for tests that call tools.
func (rs *rawServer) initialize() {
	rs.t.Helper()
	rs.write(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}` + "\n")
	if r := rs.recv(); string(*r.ID) != `"init"` || r.Error != nil {
		rs.t.Fatalf("initialize: id %s error %+v", *r.ID, r.Error)
	}
	rs.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
}

// write writes s to the server; it blocks while the server does not read.
func (rs *rawServer) write(s string) {
	rs.t.Helper()
	if _, err := io.WriteString(rs.in, s); err != nil {
		rs.t.Fatalf("write: %v", err)
	}
}

// send writes s to the server from a goroutine, so that a large write
// cannot deadlock with the server's replies, and returns a channel closed
// once the write has completed.
func (rs *rawServer) send(s string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.WriteString(rs.in, s) // fails only once the test has closed the pipe
	}()
	rs.t.Cleanup(func() { <-done })
	return done
}

// recv reads the next response, failing after waitTimeout.
func (rs *rawServer) recv() *wireResponse {
	rs.t.Helper()
	type lineErr struct {
		line []byte
		err  error
	}
	c := make(chan lineErr, 1)
	go func() {
		line, err := rs.out.ReadBytes('\n')
		c <- lineErr{line, err}
	}()
	select {
	case le := <-c:
		if le.err != nil {
			rs.t.Fatalf("reading the server's output: %v", le.err)
		}
		r, err := parseResponse(le.line)
		if err != nil {
			rs.t.Fatal(err)
		}
		return r
	case <-time.After(waitTimeout):
		rs.t.Fatal("no response from the server")
	}
	return nil
}

// readAll closes the input and reads the server's output until the
// session has ended.
func (rs *rawServer) readAll() []*wireResponse {
	rs.t.Helper()
	rs.in.Close()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		rs.ss.Wait()
		rs.outW.Close()
	}()
	rs.t.Cleanup(func() { <-ended })
	var all []*wireResponse
	for {
		line, err := rs.out.ReadBytes('\n')
		if err != nil {
			return all
		}
		r, err := parseResponse(line)
		if err != nil {
			rs.t.Fatal(err)
		}
		all = append(all, r)
	}
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
