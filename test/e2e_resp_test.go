package test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/mcpkit/mcpkit/internal/resptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// execReply is the execute tool's result, also as the partial result of an
// error reply.
type execReply struct {
	Session string                   `json:"session"`
	Outcome string                   `json:"outcome"`
	Replies []resptest.Frame         `json:"replies"`
	Pushes  []resptest.Frame         `json:"pushes"`
	Unknown int                      `json:"unknown"`
	Error   *mcpcore.ToolErrorDetail `json:"error"`
	Partial *execReply               `json:"partial"`
}

// sessionReply is the session tool's result, for every action.
type sessionReply struct {
	Session  string           `json:"session"`
	Frames   []resptest.Frame `json:"frames"`
	TimedOut bool             `json:"timed_out"`
	Closed   bool             `json:"closed"`
	Sessions []struct {
		Session string `json:"session"`
	} `json:"sessions"`
	Error *mcpcore.ToolErrorDetail `json:"error"`
}

// startResp runs `bin/mcpkit resp args...` (the sidecar over stdio) with
// env added to the test's environment, and connects an SDK client to it.
func startResp(t testing.TB, env []string, args ...string) *mcp.ClientSession {
	t.Helper()
	stderr := &syncBuffer{}
	cmd := exec.Command(binary(t), append([]string{"resp"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to mcpkit resp: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("mcpkit resp %s stderr:\n%s", strings.Join(args, " "), stderr.String())
		}
	})
	return cs
}

// respConfig writes a resp plugin configuration (the object `mcpkit resp
// --config` takes) with one target, "local", for srv plus the given target
// fields, and the given top-level fields (e.g. "limits").
func respConfig(t testing.TB, srv *redistest.Server, target, top map[string]any) string {
	t.Helper()
	if target == nil {
		target = map[string]any{}
	}
	target["host"], target["port"] = "127.0.0.1", srv.Port
	if srv.Password != "" && target["password_file"] == nil {
		pw := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(pw, []byte(srv.Password), 0o600); err != nil {
			t.Fatal(err)
		}
		target["password_file"] = pw
	}
	file := map[string]any{"default_target": "local", "targets": map[string]any{"local": target}}
	for k, v := range top {
		file[k] = v
	}
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, string(b))
}

// call calls a tool and returns its full result as JSON, reading it back
// through <prefix>_result when it was paged, and whether it is an error.
func call(t testing.TB, cs *mcp.ClientSession, tool string, args any) (json.RawMessage, bool) {
	t.Helper()
	res := callTool(t, cs, tool, args)
	out, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		ResultID   string `json:"result_id"`
		ReadTool   string `json:"read_tool"`
		TotalBytes int    `json:"total_bytes"`
	}
	if res.IsError || json.Unmarshal(out, &ref) != nil || ref.ResultID == "" {
		return out, res.IsError
	}
	var all []byte
	for offset := 0; ; {
		page := decode[struct {
			Data       string `json:"data_base64"`
			NextOffset *int   `json:"next_offset"`
		}](t, callTool(t, cs, ref.ReadTool, map[string]any{"result_id": ref.ResultID, "offset": offset, "length": 256 * 1024}))
		chunk, err := base64.StdEncoding.DecodeString(page.Data)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, chunk...)
		if page.NextOffset == nil {
			break
		}
		offset = *page.NextOffset
	}
	if len(all) != ref.TotalBytes {
		t.Fatalf("read %d bytes of %s, want total_bytes %d", len(all), ref.ResultID, ref.TotalBytes)
	}
	if res := callTool(t, cs, ref.ReadTool, map[string]any{"result_id": ref.ResultID, "release": true}); res.IsError {
		t.Fatalf("release: %s", resultText(res))
	}
	return all, false
}

// callAs is call decoded into T.
func callAs[T any](t testing.TB, cs *mcp.ClientSession, tool string, args any) (T, bool) {
	t.Helper()
	raw, isErr := call(t, cs, tool, args)
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: decode %.300s: %v", tool, raw, err)
	}
	return v, isErr
}

// execute runs commands on session ("" for the default one) and fails the
// test unless every reply came back without an error reply.
func execute(t testing.TB, cs *mcp.ClientSession, session string, cmds ...[]any) []resptest.Frame {
	t.Helper()
	args := map[string]any{"format": "json", "commands": cmds}
	if session != "" {
		args["session"] = session
	}
	r, isErr := callAs[execReply](t, cs, "resp_execute", args)
	if isErr || r.Outcome != "ok" || len(r.Replies) != len(cmds) {
		t.Fatalf("execute %v: isError=%v %+v", cmds, isErr, r)
	}
	return r.Replies
}

// session calls the session tool and fails the test on an error.
func session(t testing.TB, cs *mcp.ClientSession, args map[string]any) sessionReply {
	t.Helper()
	r, isErr := callAs[sessionReply](t, cs, "resp_session", args)
	if isErr {
		t.Fatalf("session %v: %+v", args, r.Error)
	}
	return r
}

// framedSize is the RESP size of one command, computed here independently
// of pkg/resp: *N\r\n, then $len\r\n arg \r\n for each argument.
func framedSize(args ...string) int {
	n := len(fmt.Sprintf("*%d\r\n", len(args)))
	for _, a := range args {
		n += len(fmt.Sprintf("$%d\r\n", len(a))) + len(a) + 2
	}
	return n
}

// TestRespExecute covers execute through `mcpkit resp --host --port`: ordered
// replies in their RESP3 types, an error reply among successes (outcome
// error, isError, the other commands still ran), integers beyond 2^53 and a
// binary key round-tripped exactly, an unsafe JSON integer refused with its
// path before anything is sent, and a 300 KiB value read back through
// result paging.
func TestRespExecute(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	cs := startResp(t, nil, "--host", "127.0.0.1", "--port", strconv.Itoa(srv.Port))

	got := execute(t, cs, "", []any{"SET", "k", "v"}, []any{"GET", "k"}, []any{"HSET", "h", "f", 1}, []any{"HGETALL", "h"}, []any{"GET", "missing"})
	want := []string{"simple_string", "bulk_string", "integer", "map", "null"}
	for i, f := range got {
		if f.Type != want[i] {
			t.Fatalf("reply %d = %+v, want type %s", i, f, want[i])
		}
	}
	if got[1].Str(t) != "v" || got[2].Str(t) != "1" || len(got[3].Entries) != 1 || got[3].Entries[0][0].Str(t) != "f" || got[3].Entries[0][1].Str(t) != "1" {
		t.Fatalf("replies = %+v", got)
	}

	r, isErr := callAs[execReply](t, cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"INCR", "k"}, {"SET", "after", "yes"}}})
	if !isErr || r.Outcome != "error" || len(r.Replies) != 2 || r.Replies[0].Type != "simple_error" ||
		!strings.HasPrefix(r.Replies[0].Str(t), "ERR value is not an integer") || r.Replies[1].Str(t) != "OK" {
		t.Fatalf("error reply: isError=%v %+v", isErr, r)
	}

	// 9007199254740993 = 2^53+1, which a float64 cannot hold.
	got = execute(t, cs, "", []any{"SET", "n", "9007199254740992"}, []any{"INCR", "n"}, []any{"INCRBY", "n", "9007199254740993"})
	if got[1].Type != "integer" || got[1].Str(t) != "9007199254740993" || got[2].Str(t) != "18014398509481986" {
		t.Fatalf("big integers = %+v", got)
	}
	r, isErr = callAs[execReply](t, cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"SET", "unsafe", int64(9007199254740993)}}})
	if !isErr || r.Error == nil || r.Error.Kind != "bad_params" || r.Error.Path != "/commands/0/2" {
		t.Fatalf("unsafe integer argument: isError=%v %+v", isErr, r)
	}
	if got := execute(t, cs, "", []any{"EXISTS", "unsafe"}); got[0].Str(t) != "0" {
		t.Fatalf("the refused command ran: EXISTS = %+v", got[0])
	}

	key := []byte{0, 0xff, 'k', 0x80, '\r', '\n'}
	b64 := map[string]any{"base64": base64.StdEncoding.EncodeToString(key)}
	got = execute(t, cs, "", []any{"SET", b64, b64}, []any{"GET", b64}, []any{"KEYS", map[string]any{"base64": base64.StdEncoding.EncodeToString([]byte("*k\x80*"))}})
	if got[1].Encoding != "base64" || got[1].Str(t) != string(key) || len(got[2].Items) != 1 || got[2].Items[0].Str(t) != string(key) {
		t.Fatalf("binary key: %+v", got)
	}

	big := strings.Repeat("0123456789abcdef", 300*1024/16)
	execute(t, cs, "", []any{"SET", "big", big})
	raw, isErr := call(t, cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"GET", "big"}}})
	var paged execReply
	if err := json.Unmarshal(raw, &paged); err != nil || isErr || len(paged.Replies) != 1 || paged.Replies[0].Str(t) != big {
		t.Fatalf("300 KiB value through paging: %v isError=%v, %d replies", err, isErr, len(paged.Replies))
	}
	if first := callTool(t, cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"GET", "big"}}}); !strings.Contains(resultText(first), `"read_tool":"resp_result"`) {
		t.Fatalf("a 300 KiB reply came back inline: %.200s", resultText(first))
	}
}

// TestRespBatchLimit sends 1,024 SETs of 15 KiB in one execute (just under
// the 16 MiB batch limit) after the same batch one byte over the limit was
// refused before anything was sent.
func TestRespBatchLimit(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	cs := startResp(t, nil, "--port", strconv.Itoa(srv.Port))

	value := strings.Repeat("v", 15*1024)
	cmds := make([][]any, 1024)
	total := 0
	for i := range cmds {
		key := fmt.Sprintf("key:%04d", i)
		cmds[i] = []any{"SET", key, value}
		total += framedSize("SET", key, value)
	}
	const limit = 16 << 20
	if total >= limit {
		t.Fatalf("the batch is %d bytes, not under the limit", total)
	}
	// The same batch one byte over: every value grown so that each command
	// is 16 KiB framed, and one of them by one byte more.
	over := make([][]any, len(cmds))
	overTotal := 0
	for i, c := range cmds {
		v := c[2].(string) + strings.Repeat("v", limit/len(cmds)-framedSize("SET", c[1].(string), value))
		if i == 512 {
			v += "v"
		}
		over[i] = []any{"SET", c[1], v}
		overTotal += framedSize("SET", c[1].(string), v)
	}
	if overTotal != limit+1 {
		t.Fatalf("over-limit batch is %d bytes, want %d", overTotal, limit+1)
	}
	r, isErr := callAs[execReply](t, cs, "resp_execute", map[string]any{"format": "json", "commands": over})
	if !isErr || r.Error == nil || r.Error.Kind != "limit" || r.Error.Limit != "batch_bytes" || r.Error.Max != limit {
		t.Fatalf("over-limit batch: isError=%v %+v", isErr, r.Error)
	}
	if got := execute(t, cs, "", []any{"DBSIZE"}); got[0].Str(t) != "0" {
		t.Fatalf("DBSIZE after the refused batch = %s, want 0: something was sent", got[0].Str(t))
	}

	got := execute(t, cs, "", cmds...)
	for i, f := range got {
		if f.Str(t) != "OK" {
			t.Fatalf("reply %d = %+v", i, f)
		}
	}
	if got := execute(t, cs, "", []any{"DBSIZE"}, []any{"STRLEN", "key:0512"}); got[0].Str(t) != "1024" || got[1].Str(t) != "15360" {
		t.Fatalf("after the batch: DBSIZE %s, STRLEN %s", got[0].Str(t), got[1].Str(t))
	}
}
