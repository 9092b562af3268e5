package resp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// compactPageBytes bounds a default page of resp_commands (25 commands):
// well inside the core's inline result size (64 KiB), so that an agent
// reads a page in one call, never through resp_result.
const compactPageBytes = 16 << 10

// TestCommandsCompact: resp_commands answers in the compact form by
// default (name, summary, syntax, arity, flags, group, since as plain
// JSON, no {type, encoding, value} wrappers), small enough to come back
// inline; detail "full" gives the lossless COMMAND INFO and DOCS; any
// other detail is refused.
func TestCommandsCompact(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	for _, protocol := range []int{2, 3} {
		e := connect(t, targetAt(s, `, "protocol": `+string(rune('0'+protocol))), "")
		res := e.call(nil, "resp_commands", map[string]any{})
		b, _ := json.Marshal(res.StructuredContent)
		if res.IsError || len(b) > compactPageBytes || strings.Contains(string(b), `"result_id"`) || strings.Contains(string(b), `"encoding"`) {
			t.Fatalf("RESP%d: default page of %d bytes: %.300s", protocol, len(b), b)
		}
		t.Logf("RESP%d: default page (25 commands): %d bytes", protocol, len(b))
		page := decode[CompactCommandsReply](t, res)
		if len(page.Commands) != DefaultCommandsLimit || page.NextCursor == nil {
			t.Fatalf("RESP%d: page: %d commands, next %v", protocol, len(page.Commands), page.NextCursor)
		}

		res = e.call(nil, "resp_commands", map[string]any{"prefix": "set", "limit": 1})
		set := decode[CompactCommandsReply](t, res).Commands
		want := CompactCommand{Name: "set", Summary: set[0].Summary, Arity: -3, Group: "string", Since: "1.0.0",
			Syntax: "SET key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]"}
		if len(set) != 1 || set[0].Summary == "" || !slices.Contains(set[0].Flags, "write") || set[0].Syntax != want.Syntax ||
			set[0].Arity != want.Arity || set[0].Group != want.Group || set[0].Since != want.Since {
			t.Fatalf("RESP%d: set = %+v", protocol, set)
		}
		res = e.call(nil, "resp_commands", map[string]any{"prefix": "get", "limit": 5})
		b, _ = json.Marshal(res.StructuredContent)
		t.Logf("RESP%d: prefix get, limit 5: %d bytes", protocol, len(b))
		gets := decode[CompactCommandsReply](t, res).Commands
		if len(gets) != 5 || gets[0].Name != "get" || gets[0].Syntax != "GET key" || gets[0].Arity != 2 {
			t.Fatalf("RESP%d: get = %+v", protocol, gets)
		}
		// Subcommands, repeated arguments and deprecated commands.
		for prefix, syntax := range map[string]string{
			"config|get": "CONFIG GET parameter [parameter ...]",
			"mset":       "MSET key value [key value ...]",
			"zadd":       "ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]",
			"getset":     "GETSET key value",
		} {
			c := decode[CompactCommandsReply](t, e.call(nil, "resp_commands", map[string]any{"prefix": prefix, "limit": 1})).Commands
			if len(c) != 1 || c[0].Syntax != syntax {
				t.Fatalf("RESP%d: %s: %+v", protocol, prefix, c)
			}
			if prefix == "getset" && c[0].ReplacedBy == "" {
				t.Fatalf("RESP%d: getset is deprecated: %+v", protocol, c[0])
			}
		}

		full := decode[commandsReply](t, e.call(nil, "resp_commands", map[string]any{"prefix": "set", "limit": 1, "detail": "full"}))
		if len(full.Commands) != 1 || full.Commands[0].Info.Type != "array" || full.Commands[0].Docs.Type != map[int]string{2: "array", 3: "map"}[protocol] {
			t.Fatalf("RESP%d: full = %+v", protocol, full)
		}
		failure(t, e.call(nil, "resp_commands", map[string]any{"detail": "everything"}), mcpcore.KindBadParams)
	}
}
