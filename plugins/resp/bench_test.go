package resp

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpkit/mcpkit/internal/benchpair"
	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
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
		params := &mcp.CallToolParams{Name: "resp_execute", Arguments: map[string]any{"commands": cmds}}
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
