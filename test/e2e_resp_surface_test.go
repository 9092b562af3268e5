package test

import (
	"encoding/base64"
	"encoding/json"
	"github.com/mcpkit/mcpkit/internal/resptest"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRespSurface covers the rest of the sidecar's surface through `mcpkit
// resp --config`: the live command registry (subcommands, prefix filter,
// cursor paging), the capabilities resource (target names and limits, never
// the password) and the commands resource, a raw session, and the session
// cap (max_sessions) failing explicitly.
func TestRespSurface(t *testing.T) {
	t.Parallel()
	const password = "surface-secret-7d1c"
	srv := redistest.Start(t, redistest.Options{Password: password})
	cs := startResp(t, nil, "--config", respConfig(t, srv, nil, map[string]any{"limits": map[string]any{"max_sessions": 2}}))

	type commandsPage struct {
		Count    int64 `json:"count"`
		Matching int   `json:"matching"`
		Commands []struct {
			Name string         `json:"name"`
			Info resptest.Frame `json:"info"`
		} `json:"commands"`
		NextCursor *string `json:"next_cursor"`
	}
	var names []string
	args := map[string]any{"prefix": "config|", "limit": 2, "detail": "full"}
	for page := 0; ; page++ {
		p, isErr := callAs[commandsPage](t, cs, "resp_commands", args)
		if isErr || page > 10 {
			t.Fatalf("resp_commands %v: isError=%v %+v", args, isErr, p)
		}
		for _, c := range p.Commands {
			names = append(names, c.Name)
			if c.Info.Type != "array" {
				t.Fatalf("COMMAND INFO of %s: %+v", c.Name, c.Info)
			}
		}
		if p.NextCursor == nil {
			if len(names) != p.Matching {
				t.Fatalf("paged %d subcommands of config, matching says %d", len(names), p.Matching)
			}
			break
		}
		args["cursor"] = *p.NextCursor
	}
	if !strings.Contains(strings.Join(names, " "), "config|get") || !strings.Contains(strings.Join(names, " "), "config|set") {
		t.Fatalf("config subcommands: %v", names)
	}

	// The default form is compact: plain JSON, what an agent needs to
	// write the command, a whole page of 25 inline.
	type compactPage struct {
		Commands []struct {
			Name, Summary, Syntax, Group, Since string
			Arity                               int64
			Flags                               []string
		} `json:"commands"`
		NextCursor *string `json:"next_cursor"`
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "resp_commands", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("resp_commands default: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); len(b) > 16<<10 || strings.Contains(string(b), `"encoding"`) || strings.Contains(string(b), `"result_id"`) {
		t.Fatalf("resp_commands default page: %d bytes: %.300s", len(b), b)
	}
	get, isErr := callAs[compactPage](t, cs, "resp_commands", map[string]any{"prefix": "get", "limit": 5})
	if isErr || len(get.Commands) != 5 || get.Commands[0].Name != "get" || get.Commands[0].Syntax != "GET key" || get.Commands[0].Arity != 2 ||
		get.Commands[0].Group != "string" || get.Commands[0].Since == "" || get.Commands[0].Summary == "" || !slices.Contains(get.Commands[0].Flags, "readonly") {
		t.Fatalf("resp_commands prefix get: %+v", get)
	}

	for _, uri := range []string{"resp://capabilities", "resp://commands"} {
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		text := res.Contents[0].Text
		if strings.Contains(text, password) {
			t.Fatalf("%s shows the password", uri)
		}
		if uri == "resp://capabilities" && (!strings.Contains(text, `"name":"local"`) || !strings.Contains(text, `"max_sessions"`)) {
			t.Fatalf("%s: %.400s", uri, text)
		}
		if uri == "resp://commands" && !strings.Contains(text, `"next_cursor"`) {
			t.Fatalf("%s: %.400s", uri, text)
		}
	}

	rawSession := session(t, cs, map[string]any{"action": "open", "mode": "raw"}).Session
	session(t, cs, map[string]any{"action": "send", "session": rawSession, "data_base64": base64.StdEncoding.EncodeToString([]byte("PING\r\n"))})
	var got []byte
	for len(got) < len("+PONG\r\n") {
		r, isErr := callAs[struct {
			Data     string `json:"data_base64"`
			TimedOut bool   `json:"timed_out"`
			EOF      bool   `json:"eof"`
		}](t, cs, "resp_session", map[string]any{"action": "receive", "session": rawSession, "wait_ms": 5000})
		chunk, _ := base64.StdEncoding.DecodeString(r.Data)
		if isErr || r.TimedOut || r.EOF {
			t.Fatalf("raw receive: isError=%v %+v", isErr, r)
		}
		got = append(got, chunk...)
	}
	if string(got) != "+PONG\r\n" {
		t.Fatalf("raw PING answered %q", got)
	}

	// max_sessions 2: the raw session and one more; a third open is refused.
	second := session(t, cs, map[string]any{"action": "open"}).Session
	r, isErr := callAs[sessionReply](t, cs, "resp_session", map[string]any{"action": "open"})
	if !isErr || r.Error == nil || r.Error.Kind != "limit" || r.Error.Limit != "max_sessions" || r.Error.Max != 2 {
		t.Fatalf("a third session: isError=%v %+v", isErr, r.Error)
	}
	session(t, cs, map[string]any{"action": "close", "session": second})
	session(t, cs, map[string]any{"action": "open"})
}

// TestRespClientSessionEnd checks over HTTP that a legacy client session
// that ends closes the RESP sessions it opened: their connections leave the
// server.
func TestRespClientSessionEnd(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	cfg, _ := json.Marshal(map[string]any{
		"enable":  []string{"resp"},
		"plugins": map[string]any{"resp": map[string]any{"config": map[string]any{"targets": map[string]any{"local": map[string]any{"host": "127.0.0.1", "port": srv.Port}}}}},
	})
	hp := startHTTP(t, "--config", writeConfig(t, string(cfg)))
	observer := hp.connect(t, legacyEra, &http.Client{})
	clients := func() int {
		got := execute(t, observer, "", []any{"INFO", "clients"})
		for line := range strings.Lines(got[0].Str(t)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		t.Fatalf("INFO clients: %s", got[0].Str(t))
		return 0
	}
	before := clients()
	leaving := hp.connect(t, legacyEra, &http.Client{})
	for range 3 {
		h := session(t, leaving, map[string]any{"action": "open"}).Session
		execute(t, leaving, h, []any{"PING"})
	}
	execute(t, leaving, "", []any{"PING"})
	if n := clients(); n != before+4 {
		t.Fatalf("connected clients = %d, want %d (three sessions and a default one more)", n, before+4)
	}
	if err := leaving.Close(); err != nil { // DELETE ends the session on the server
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the ended client session's connections to close", func() bool { return clients() == before })
}
