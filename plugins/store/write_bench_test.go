package store

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkWriteNotes is the store's side of test/BenchmarkAgent's
// ingest, through an MCP client on a file store (durable): 2,000 short
// notes in 20 write calls of 100 store operations, into a collection with
// a text index on their text ("text") or without it ("plain"). One
// b.Loop iteration is the whole ingest into a new store; the engine alone
// is pkg/docstore's BenchmarkAgentIngest.
func BenchmarkWriteNotes(b *testing.B) {
	const notes, batch = 2000, 100
	var calls []json.RawMessage
	for lo := 0; lo < notes; lo += batch {
		ops := make([]map[string]any, 0, batch)
		for i := lo; i < lo+batch; i++ {
			text := fmt.Sprintf("note %d is about topic%03d and a short observation on item %d kept for later", i, i%200, i)
			ops = append(ops, map[string]any{"op": "store", "collection": "notes", "id": fmt.Sprintf("note-%04d", i), "doc": map[string]any{"type": "note", "text": text}})
		}
		raw, err := json.Marshal(map[string]any{"ops": ops})
		if err != nil {
			b.Fatal(err)
		}
		calls = append(calls, raw)
	}
	call := func(b *testing.B, cs *mcp.ClientSession, tool string, args json.RawMessage) {
		res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", tool, err, res)
		}
	}
	for _, text := range []bool{true, false} {
		b.Run(map[bool]string{true: "text", false: "plain"}[text], func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				cs, _, err := serve(b, new(Plugin), Config{Path: filepath.Join(b.TempDir(), "notes.db")}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if text {
					call(b, cs, "create_text_index", json.RawMessage(`{"collection": "notes", "name": "text", "fields": ["text"]}`))
				}
				b.StartTimer()
				for _, args := range calls {
					call(b, cs, "write", args)
				}
			}
			b.ReportMetric(float64(notes*b.N)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}
