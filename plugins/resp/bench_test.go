package resp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/benchpair"
	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/stdio"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkExecute compares an execute call through the host in memory
// (argument validation, the session, the pipeline, the JSON of the
// replies) with the same pipeline on a direct connection, alternating
// rounds, per batch size. The ratio is the plugin's and the host's cost in
// memory; `make bench-resp` measures the binary over stdio.
func BenchmarkExecute(b *testing.B) {
	s := redistest.Start(b, redistest.Options{})
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"resp": {Config: json.RawMessage(targetAt(s, ""))}}
	cs, _, err := mcptest.Connect(b, mcpcore.Options{Plugins: []string{"resp"}, Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	conn, err := resp.Dial(b.Context(), resp.DialOptions{Addr: s.Addr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	for _, n := range []int{1, 16, 128} {
		cmds := make([][]any, n)
		wire := make([][][]byte, n)
		for i := range cmds {
			key := fmt.Sprintf("bench:%d", i)
			cmds[i] = []any{"SET", key, "value"}
			wire[i] = [][]byte{[]byte("SET"), []byte(key), []byte("value")}
		}
		params := &mcp.CallToolParams{Name: "resp_execute", Arguments: map[string]any{"format": "json", "commands": cmds}}
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			benchpair.Compare(b, [2]string{"mcp", "direct"}, [2]func(){
				func() {
					if res, err := cs.CallTool(b.Context(), params); err != nil || res.IsError {
						b.Fatalf("execute: %v %v", err, res)
					}
				},
				func() {
					if _, err := conn.Pipeline(b.Context(), wire, resp.PipelineOptions{}); err != nil {
						b.Fatal(err)
					}
				},
			})
		})
	}
}

// BenchmarkExecuteStdio measures the server side of `make bench-resp` in
// one process: mcpcore.Server.Run over the stdio transport on OS pipes,
// with a thin client writing request lines and reading response lines, so
// that a CPU profile shows the sidecar's whole cost per call (framing,
// decoding, the pipeline, encoding) and nothing of a client library's.
func BenchmarkExecuteStdio(b *testing.B) {
	s := redistest.Start(b, redistest.Options{})
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"resp": {Config: json.RawMessage(targetAt(s, ""))}}
	srv, err := mcpcore.NewServer(b.Context(), mcpcore.Options{Config: cfg, Plugins: []string{"resp"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close(context.Background()) })
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	// The server's ends in blocking mode (Fd sets it), as a child
	// process's inherited stdin and stdout are.
	inR.Fd()
	outW.Fd()
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), stdio.NewTransport(inR, outW, stdio.Options{})) }()
	b.Cleanup(func() {
		inW.Close()
		<-done
		outR.Close()
	})
	out := bufio.NewReaderSize(outR, 1<<20)
	roundTrip := func(line string) []byte {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			b.Fatal(err)
		}
		reply, err := out.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		return reply
	}
	roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 128} {
		cmds := make([]string, n)
		for i := range cmds {
			cmds[i] = fmt.Sprintf(`["SET","bench:%d","value-%010d"]`, i, i)
		}
		args := `{"format":"json","commands":[` + strings.Join(cmds, ",") + `]}`
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			id := 0
			for b.Loop() {
				id++
				reply := roundTrip(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"resp_execute","arguments":` + args + `}}`)
				if !bytes.Contains(reply, []byte(`"outcome":"ok"`)) {
					b.Fatalf("reply: %.300s", reply)
				}
			}
		})
	}
}
