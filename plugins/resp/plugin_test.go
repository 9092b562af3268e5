package resp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/mcpkit/mcpkit/internal/resptest"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type execReply struct {
	Session string           `json:"session"`
	Outcome string           `json:"outcome"`
	Replies []resptest.Frame `json:"replies"`
	Pushes  []resptest.Frame `json:"pushes"`
	Unknown int              `json:"unknown"`
}

type errReply struct {
	Error   mcpcore.ToolErrorDetail `json:"error"`
	Partial json.RawMessage         `json:"partial"`
}

// env is a server with the resp plugin and one client session.
type env struct {
	t      *testing.T
	srv    *mcpcore.Server
	plugin *Plugin
	cs     *mcp.ClientSession
}

// connect serves the resp plugin with the given plugin configuration and
// limits (JSON objects, "" for none).
func connect(t *testing.T, config, pluginLimits string, core ...func(*mcpcore.Limits)) *env {
	t.Helper()
	t.Setenv(EnvAuth, "")
	cfg := mcpcore.DefaultConfig()
	for _, f := range core {
		f(&cfg.Limits)
	}
	pc := mcpcore.PluginConfig{Config: json.RawMessage(config)}
	if pluginLimits != "" {
		pc.Limits = json.RawMessage(pluginLimits)
	}
	cfg.Plugins = map[string]mcpcore.PluginConfig{"resp": pc}
	// Embedded rather than registered, so that a test can look inside;
	// NewServer configures and attaches both alike.
	p := new(Plugin)
	cs, srv, err := mcptest.Connect(t, mcpcore.Options{Config: cfg, Instances: []mcpcore.Instance{{Name: "resp", Plugin: p, Limits: Limits()}}})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, srv: srv, plugin: p, cs: cs}
}

// target is the configuration of one target at a test server.
func targetAt(s *redistest.Server, extra string) string {
	host, port, _ := net.SplitHostPort(s.Addr)
	return fmt.Sprintf(`{"targets": {"local": {"host": %q, "port": %s%s}}}`, host, port, extra)
}

// legacyVersion is a protocol version of the legacy era, whose clients
// keep one MCP session (the 2026-07-28 era's are scoped to their
// principal: see TestHTTPEras).
const legacyVersion = "2025-11-25"

// session connects one more in-memory client, pinned to version.
func (e *env) session(version string) *mcp.ClientSession {
	return mcptest.Session(e.t, e.srv, nil, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

func (e *env) call(cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	e.t.Helper()
	if cs == nil {
		cs = e.cs
	}
	res, err := cs.CallTool(e.t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		e.t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func decode[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return out
}

// exec runs a batch on the default session and wants it to succeed.
func (e *env) exec(cmds ...[]any) execReply {
	e.t.Helper()
	res := e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": cmds})
	r := decode[execReply](e.t, res)
	if res.IsError || r.Outcome != OutcomeOK || len(r.Replies) != len(cmds) {
		b, _ := json.Marshal(res.StructuredContent)
		e.t.Fatalf("execute %v: %s", cmds, b)
	}
	return r
}

// failure wants an error result of the given kind and returns it.
func failure(t *testing.T, res *mcp.CallToolResult, kind string) errReply {
	t.Helper()
	r := decode[errReply](t, res)
	if !res.IsError || r.Error.Kind != kind {
		b, _ := json.Marshal(res.StructuredContent)
		t.Fatalf("want an error of kind %s, got %s", kind, b)
	}
	return r
}

func cmd(args ...any) []any { return args }

// TestLazyConnect: with the target down, the server starts and lists its
// tools; a call fails at once with a connection error naming the target.
func TestLazyConnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// Through the registry, as `mcpkit serve --plugins resp` with
	// plugins.resp.config.
	t.Setenv(EnvAuth, "")
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"resp": {Config: json.RawMessage(fmt.Sprintf(`{"targets": {"down": {"port": %d}}}`, port))}}
	cs, srv, err := mcptest.Connect(t, mcpcore.Options{Plugins: []string{"resp"}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, cs: cs}
	tools, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "resp_commands,resp_execute,resp_result,resp_session" {
		t.Fatalf("tools = %s", got)
	}
	start := time.Now()
	r := failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}}), KindConnection)
	if !strings.Contains(r.Error.Message, `"down"`) || !strings.Contains(r.Error.Message, strconv.Itoa(port)) || time.Since(start) > 5*time.Second {
		t.Fatalf("error %q after %v", r.Error.Message, time.Since(start))
	}
	failure(t, e.call(nil, "resp_session", map[string]any{"action": "open"}), KindConnection)
	failure(t, e.call(nil, "resp_commands", map[string]any{}), KindConnection)
}

func TestExecute(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	r := e.exec(cmd("SET", "agent:counter", "41"), cmd("INCR", "agent:counter"), cmd("GET", "agent:counter"))
	if r.Session != DefaultSession || r.Replies[0].Str(t) != "OK" || r.Replies[0].Type != "simple_string" ||
		r.Replies[1].Type != "integer" || string(r.Replies[1].Value) != `"42"` || r.Replies[2].Str(t) != "42" || len(r.Pushes) != 0 {
		t.Fatalf("reply = %+v", r)
	}
	// Integers beyond 2^53 and binary keys round-trip exactly.
	r = e.exec(cmd("SET", "big", "9007199254740992"), cmd("INCR", "big"), cmd("INCRBY", "big", 9007199254740991),
		cmd("SET", map[string]string{"base64": "AP8="}, map[string]string{"base64": "gAE="}), cmd("GET", map[string]string{"base64": "AP8="}))
	if string(r.Replies[1].Value) != `"9007199254740993"` || string(r.Replies[2].Value) != `"18014398509481984"` ||
		r.Replies[4].Encoding != "base64" || r.Replies[4].Str(t) != "\x80\x01" {
		t.Fatalf("reply = %+v", r)
	}
	r = e.exec(cmd("INCRBY", "big", "-18014398509481985"))
	if string(r.Replies[0].Value) != `"-1"` {
		t.Fatalf("INCRBY with a decimal string = %s", r.Replies[0].Value)
	}
	// A server error is a typed reply among the others: outcome error,
	// isError, the other commands ran.
	res := e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"SET", "k", "v"}, {"INCR", "k"}, {"GET", "k"}}})
	er := decode[execReply](t, res)
	if !res.IsError || er.Outcome != OutcomeError || len(er.Replies) != 3 || er.Replies[1].Type != "simple_error" ||
		!strings.HasPrefix(er.Replies[1].Str(t), "ERR") || er.Replies[2].Str(t) != "v" {
		t.Fatalf("error reply = %+v", er)
	}
	// The default session is persistent: SELECT and the connection survive.
	id := e.exec(cmd("CLIENT", "ID"), cmd("SELECT", 2), cmd("SET", "db2", "x")).Replies[0].Value
	r = e.exec(cmd("CLIENT", "ID"), cmd("GET", "db2"))
	if string(r.Replies[0].Value) != string(id) || r.Replies[1].Str(t) != "x" {
		t.Fatalf("the default session changed: %s then %+v", id, r)
	}
	// Another client session has its own default session.
	other := e.session(legacyVersion)
	or := decode[execReply](t, e.call(other, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"CLIENT", "ID"}, {"GET", "db2"}}}))
	if string(or.Replies[0].Value) == string(id) || or.Replies[1].Type != "null" {
		t.Fatalf("a second client shares the default session: %+v", or)
	}
}

// TestExecuteRefusesBeforeSending: structural validation fails the whole
// batch before any byte is sent.
func TestExecuteRefusesBeforeSending(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), `{"batch_commands": 3, "command_bytes": 1024, "batch_bytes": 2048}`)
	exec := func(cmds ...[]any) *mcp.CallToolResult {
		return e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": cmds})
	}
	for _, c := range [][]any{{"SUBSCRIBE", "c"}, {"psubscribe", "c*"}, {"SSUBSCRIBE", "c"}, {"MONITOR"}, {"client", "reply", "off"},
		{"CLIENT", "TRACKING", "on"}, {"SCRIPT", "DEBUG", "yes"}, {"SHUTDOWN"}, {"QUIT"}, {"SYNC"}, {"PSYNC", "?", "-1"}, {"REPLCONF", "x"}} {
		r := failure(t, exec(cmd("SET", "sent", "1"), c), KindRefused)
		if !strings.Contains(r.Error.Message, "resp_session") || !strings.Contains(r.Error.Message, "nothing was sent") {
			t.Errorf("%v: %s", c, r.Error.Message)
		}
	}
	if r := failure(t, exec(cmd("SET", "sent", "1"), cmd("A"), cmd("B"), cmd("C")), mcpcore.KindLimit); r.Error.Limit != LimitBatchCommands || r.Error.Max != 3 {
		t.Errorf("batch_commands: %+v", r.Error)
	}
	if r := failure(t, exec(cmd("SET", "sent", strings.Repeat("x", 1024))), mcpcore.KindLimit); r.Error.Limit != LimitCommandBytes {
		t.Errorf("command_bytes: %+v", r.Error)
	}
	big := strings.Repeat("x", 900)
	if r := failure(t, exec(cmd("SET", "sent", big), cmd("SET", "sent", big), cmd("SET", "sent", big)), mcpcore.KindLimit); r.Error.Limit != LimitBatchBytes {
		t.Errorf("batch_bytes: %+v", r.Error)
	}
	for args, path := range map[string]string{
		`[["SET","k",1.5]]`:              "/commands/0/2",
		`[["SET","k",9007199254740993]]`: "/commands/0/2",
		`[["GET"],["SET",{"x":1}]]`:      "/commands/1/1/x",
		`[["GET"],[]]`:                   "/commands/1",
		`[]`:                             "/commands",
		`[["SET","k",{"base64":"!"}]]`:   "/commands/0/2",
	} {
		r := failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": json.RawMessage(args)}), mcpcore.KindBadParams)
		if r.Error.Path != path {
			t.Errorf("%s: path %q, want %q (%s)", args, r.Error.Path, path, r.Error.Message)
		}
	}
	if r := e.exec(cmd("EXISTS", "sent")); string(r.Replies[0].Value) != `"0"` {
		t.Fatal("a refused batch was sent")
	}
}

// setSize is the framed size of SET k:<i> <n bytes>.
func setSize(i, n int) int64 {
	return int64(len(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$6\r\nk:%04d\r\n$%d\r\n", i, n)) + n + 2)
}

// TestBigBatch: 1,024 SETs of 15 KiB values in one execute, just under the
// 16 MiB batch limit, run in order without deadlock (writes and reads
// overlap).
func TestBigBatch(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	value := strings.Repeat("v", 15*1024)
	cmds := make([][]any, 1024)
	var total int64
	for i := range cmds {
		cmds[i] = cmd("SET", fmt.Sprintf("k:%04d", i), value)
		total += setSize(i, len(value))
	}
	if total > 16*mcpcore.MiB {
		t.Fatalf("the batch is %d bytes, over the limit", total)
	}
	// Serialized once here: the SDK client would re-encode 16 MiB of
	// strings on every attempt.
	args, _ := json.Marshal(map[string]any{"format": "json", "commands": cmds})
	res := e.call(nil, "resp_execute", json.RawMessage(args))
	r := decode[execReply](t, res)
	if res.IsError || len(r.Replies) != 1024 || r.Replies[1023].Str(t) != "OK" {
		t.Fatalf("outcome %s, %d replies", r.Outcome, len(r.Replies))
	}
	if r := e.exec(cmd("STRLEN", "k:1023"), cmd("DBSIZE")); string(r.Replies[0].Value) != `"15360"` || string(r.Replies[1].Value) != `"1024"` {
		t.Fatalf("after the batch: %+v", r.Replies)
	}
}

// TestBatchBytesBoundary: a batch of exactly batch_bytes runs; one byte
// more is refused before anything is sent (at a small configured limit;
// the e2e tests do it at 16 MiB through the binary).
func TestBatchBytesBoundary(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	const limit = 64 * mcpcore.KiB
	e := connect(t, targetAt(s, ""), fmt.Sprintf(`{"batch_bytes": %d}`, limit))
	cmds := make([][]any, 64)
	var total int64
	for i := range cmds {
		cmds[i] = cmd("SET", fmt.Sprintf("k:%04d", i), strings.Repeat("v", 900))
		total += setSize(i, 900)
	}
	// Grow the last value until the batch is exactly at the limit.
	last := func(extra int64) []any {
		want := limit + extra - (total - setSize(63, 900))
		n := 900
		for setSize(63, n) != want {
			n += int(want - setSize(63, n))
		}
		return cmd("SET", "k:0063", strings.Repeat("v", n))
	}
	cmds[63] = last(1)
	f := failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": cmds}), mcpcore.KindLimit)
	if f.Error.Limit != LimitBatchBytes || f.Error.Max != limit || !strings.Contains(f.Error.Message, fmt.Sprint(limit+1)) || !strings.Contains(f.Error.Message, "nothing was sent") {
		t.Fatalf("one byte over: %+v", f.Error)
	}
	if r := e.exec(cmd("DBSIZE")); string(r.Replies[0].Value) != `"0"` {
		t.Fatal("a refused batch was sent")
	}
	cmds[63] = last(0)
	if r := e.exec(cmds...); r.Replies[63].Str(t) != "OK" {
		t.Fatalf("at the limit: %+v", r.Replies[63])
	}
}

func (e *env) open(cs *mcp.ClientSession, args map[string]any) string {
	e.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	args["action"] = "open"
	res := e.call(cs, "resp_session", args)
	info := decode[SessionInfo](e.t, res)
	if res.IsError || !strings.HasPrefix(info.Session, "rs_") || len(info.Session) != 35 {
		b, _ := json.Marshal(res.StructuredContent)
		e.t.Fatalf("open: %s", b)
	}
	return info.Session
}

// execOn runs a batch on a session and returns the raw result.
func (e *env) execOn(cs *mcp.ClientSession, session string, cmds ...[]any) *mcp.CallToolResult {
	e.t.Helper()
	return e.call(cs, "resp_execute", map[string]any{"session": session, "format": "json", "commands": cmds})
}

func (e *env) list(cs *mcp.ClientSession) []SessionInfo {
	e.t.Helper()
	return decode[struct {
		Sessions []SessionInfo `json:"sessions"`
	}](e.t, e.call(cs, "resp_session", map[string]any{"action": "list"})).Sessions
}

// TestSessionsAreScoped: a handle is unknown to another client session,
// close ends it, and a client session that ends closes its sessions.
func TestSessionsAreScoped(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, `, "database": 1`), "")
	e.cs = e.session(legacyVersion)
	h := e.open(nil, map[string]any{"database": 3})
	if r := decode[execReply](t, e.execOn(nil, h, cmd("SET", "in3", "x"))); r.Session != h || r.Outcome != OutcomeOK {
		t.Fatalf("execute on the handle: %+v", r)
	}
	e.exec(cmd("SET", "in1", "y"))
	if l := e.list(nil); len(l) != 2 || l[0].Session != DefaultSession || l[0].Database != 1 || l[1].Session != h || l[1].Database != 3 || l[1].Target != "local" {
		t.Fatalf("list = %+v", l)
	}
	other := e.session(legacyVersion)
	r := failure(t, e.execOn(other, h, cmd("GET", "in3")), KindSessionNotFound)
	if !strings.Contains(r.Error.Message, h) {
		t.Fatalf("message %q", r.Error.Message)
	}
	failure(t, e.call(other, "resp_session", map[string]any{"action": "close", "session": h}), KindSessionNotFound)
	failure(t, e.execOn(nil, "rs_00000000000000000000000000000000", cmd("PING")), KindSessionNotFound)
	if l := e.list(other); len(l) != 0 {
		t.Fatalf("another client lists %+v", l)
	}
	// A second handle of the other client; its session ends: closed.
	h2 := e.open(other, nil)
	clients := func() int {
		r := e.exec(cmd("CLIENT", "LIST"))
		return strings.Count(r.Replies[0].Str(t), "\n")
	}
	if n := clients(); n != 3 { // default, h, h2
		t.Fatalf("%d clients, want 3", n)
	}
	other.Close()
	waitFor(t, func() bool { return clients() == 2 })
	failure(t, e.execOn(nil, h2, cmd("PING")), KindSessionNotFound)
	// close
	if res := e.call(nil, "resp_session", map[string]any{"action": "close", "session": h}); res.IsError {
		t.Fatal("close failed")
	}
	failure(t, e.execOn(nil, h, cmd("PING")), KindSessionNotFound)
	waitFor(t, func() bool { return clients() == 1 })
	failure(t, e.call(nil, "resp_session", map[string]any{"action": "open", "target": "nope"}), mcpcore.KindBadParams)
	failure(t, e.call(nil, "resp_session", map[string]any{"action": "open", "protocol": 4}), mcpcore.KindBadParams)
	failure(t, e.call(nil, "resp_session", map[string]any{"action": "open", "mode": "x"}), mcpcore.KindBadParams)
	failure(t, e.call(nil, "resp_session", map[string]any{"action": "dance"}), mcpcore.KindBadParams)
}

// blocked reports whether the server has one client blocked (BLPOP).
func (e *env) blocked() bool {
	return strings.Contains(e.exec(cmd("INFO", "clients")).Replies[0].Str(e.t), "blocked_clients:1")
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionLimits: max_sessions counts every session and fails
// explicitly; idle sessions expire, and their next call is told.
func TestSessionLimits(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), `{"max_sessions": 2, "session_idle": "1s"}`)
	e.exec(cmd("PING"))
	h := e.open(nil, nil)
	r := failure(t, e.call(nil, "resp_session", map[string]any{"action": "open"}), mcpcore.KindLimit)
	if r.Error.Limit != LimitMaxSessions || r.Error.Max != 2 {
		t.Fatalf("limit = %+v", r.Error)
	}
	other := e.session(legacyVersion)
	failure(t, e.call(other, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}}), mcpcore.KindLimit)
	time.Sleep(1500 * time.Millisecond)
	waitFor(t, func() bool { return len(e.list(nil)) == 0 })
	// Expired sessions are reported reset: the default session to its next
	// call only, a handle until session_idle later, when it is forgotten.
	if r := failure(t, e.execOn(nil, h, cmd("PING")), KindSessionReset); !strings.Contains(r.Error.Message, LimitSessionIdle) {
		t.Fatalf("the reset does not say why: %+v", r.Error)
	}
	failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}}), KindSessionReset)
	e.open(other, nil)
	waitFor(t, func() bool {
		return decode[errReply](t, e.execOn(nil, h, cmd("PING"))).Error.Kind == KindSessionNotFound
	})
}

// TestTransaction: MULTI/EXEC across calls on a session, and a WATCH
// conflict caused by another session.
func TestTransaction(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	h := e.open(nil, nil)
	for _, c := range [][]any{{"MULTI"}, {"SET", "agent:transaction", "retained"}, {"INCR", "agent:counter"}} {
		if res := e.execOn(nil, h, c); res.IsError {
			t.Fatalf("%v failed", c)
		}
	}
	r := decode[execReply](t, e.execOn(nil, h, cmd("EXEC")))
	if r.Replies[0].Type != "array" || len(r.Replies[0].Items) != 2 || string(r.Replies[0].Items[1].Value) != `"1"` {
		t.Fatalf("EXEC = %+v", r)
	}
	e.execOn(nil, h, cmd("WATCH", "agent:counter"))
	e.exec(cmd("INCR", "agent:counter")) // the default session breaks the watch
	r = decode[execReply](t, e.execOn(nil, h, cmd("MULTI"), cmd("INCR", "agent:counter"), cmd("EXEC")))
	if r.Replies[2].Type != "null" {
		t.Fatalf("EXEC after a WATCH conflict = %+v", r.Replies[2])
	}
}

type receiveReply struct {
	Frames   []resptest.Frame `json:"frames"`
	TimedOut bool             `json:"timed_out"`
}

// TestSendReceive: a BRPOP consumer fed by LPUSH from another session,
// SUBSCRIBE then PUBLISH, the one-way switch to manual mode.
func TestSendReceive(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	consumer := e.open(nil, nil)
	send := func(h string, cmds ...[]any) {
		t.Helper()
		res := e.call(nil, "resp_session", map[string]any{"action": "send", "session": h, "commands": cmds})
		if res.IsError || decode[SendReply](t, res).BytesWritten == 0 {
			t.Fatalf("send: %v", res.StructuredContent)
		}
	}
	receive := func(h string, frames, wait int) receiveReply {
		t.Helper()
		res := e.call(nil, "resp_session", map[string]any{"action": "receive", "format": "json", "session": h, "max_frames": frames, "wait_ms": wait})
		if res.IsError {
			t.Fatalf("receive: %v", res.StructuredContent)
		}
		return decode[receiveReply](t, res)
	}
	send(consumer, cmd("BRPOP", "agent:jobs", "0"))
	if r := receive(consumer, 1, 50); !r.TimedOut || len(r.Frames) != 0 {
		t.Fatalf("receive before the push = %+v", r)
	}
	e.exec(cmd("LPUSH", "agent:jobs", "job-1"))
	r := receive(consumer, 1, 5000)
	if len(r.Frames) != 1 || r.Frames[0].Items[1].Str(t) != "job-1" {
		t.Fatalf("BRPOP reply = %+v", r)
	}
	f := failure(t, e.execOn(nil, consumer, cmd("PING")), KindRefused)
	if !strings.Contains(f.Error.Message, "manual") {
		t.Fatalf("execute on a manual session: %s", f.Error.Message)
	}
	sub := e.open(nil, nil)
	send(sub, cmd("SUBSCRIBE", "news"))
	if r := receive(sub, 1, 5000); len(r.Frames) != 1 || r.Frames[0].Type != "push" || r.Frames[0].Items[0].Str(t) != "subscribe" {
		t.Fatalf("subscribe ack = %+v", r)
	}
	e.exec(cmd("PUBLISH", "news", "one"), cmd("PUBLISH", "news", "two"))
	var got []string
	for len(got) < 2 {
		r := receive(sub, 10, 5000)
		for _, fr := range r.Frames {
			got = append(got, fr.Items[2].Str(t))
		}
	}
	if strings.Join(got, ",") != "one,two" {
		t.Fatalf("messages = %v", got)
	}
	// A receive waiting for a message does not hold up a send on the same
	// session: the send's SUBSCRIBE acknowledgement ends the wait.
	waiting := make(chan receiveReply, 1)
	go func() { waiting <- receive(sub, 1, 10000) }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	send(sub, cmd("SUBSCRIBE", "more"))
	if r := <-waiting; time.Since(start) > 3*time.Second || len(r.Frames) != 1 || r.Frames[0].Items[1].Str(t) != "more" {
		t.Fatalf("receive during a send: %+v after %v", r, time.Since(start))
	}
	failure(t, e.call(nil, "resp_session", map[string]any{"action": "send", "commands": [][]any{{"PING"}}}), mcpcore.KindBadParams)
	failure(t, e.call(nil, "resp_session", map[string]any{"action": "receive", "session": sub, "wait_ms": -1}), mcpcore.KindBadParams)
}

type rawReply struct {
	DataBase64 string `json:"data_base64"`
	Bytes      int    `json:"bytes"`
	TimedOut   bool   `json:"timed_out"`
	EOF        bool   `json:"eof"`
}

// TestRawSession: bytes in, bytes out, and eof when the server closes.
func TestRawSession(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	h := e.open(nil, map[string]any{"mode": "raw", "protocol": 2})
	raw := func(wait int) rawReply {
		t.Helper()
		res := e.call(nil, "resp_session", map[string]any{"action": "receive", "session": h, "wait_ms": wait})
		if res.IsError {
			t.Fatalf("raw receive: %v", res.StructuredContent)
		}
		return decode[rawReply](t, res)
	}
	if r := e.call(nil, "resp_session", map[string]any{"action": "send", "session": h, "data_base64": base64.StdEncoding.EncodeToString([]byte("PING\r\n"))}); r.IsError {
		t.Fatalf("raw send: %v", r.StructuredContent)
	}
	var got []byte
	for len(got) < 7 {
		r := raw(5000)
		b, _ := base64.StdEncoding.DecodeString(r.DataBase64)
		got = append(got, b...)
	}
	if string(got) != "+PONG\r\n" {
		t.Fatalf("raw reply %q", got)
	}
	failure(t, e.execOn(nil, h, cmd("PING")), KindRefused)
	e.call(nil, "resp_session", map[string]any{"action": "send", "session": h, "commands": [][]any{{"QUIT"}}})
	var eof bool
	for deadline := time.Now().Add(5 * time.Second); !eof && time.Now().Before(deadline); {
		eof = raw(1000).EOF
	}
	if !eof {
		t.Fatal("no eof after QUIT")
	}
}

type commandsReply struct {
	Count    int64 `json:"count"`
	Matching int   `json:"matching"`
	Commands []struct {
		Name string         `json:"name"`
		Info resptest.Frame `json:"info"`
		Docs resptest.Frame `json:"docs"`
	} `json:"commands"`
	NextCursor *string `json:"next_cursor"`
}

// TestCommands: the live registry, subcommands included, filtered by
// prefix and paged by cursor in name order, in the lossless form that
// detail "full" asks for; the resources.
func TestCommands(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	var names []string
	args := map[string]any{"prefix": "CONFIG", "limit": 2, "detail": "full"}
	for page := 0; ; page++ {
		res := e.call(nil, "resp_commands", args)
		r := decode[commandsReply](t, res)
		if res.IsError || r.Count < 200 || r.Matching < 5 || len(r.Commands) == 0 || len(r.Commands) > 2 {
			t.Fatalf("page %d: %+v", page, r)
		}
		for _, c := range r.Commands {
			if c.Info.Type != "array" || c.Info.Items[0].Str(t) != c.Name || c.Docs.Type != "map" {
				t.Fatalf("entry %s: info %+v docs %s", c.Name, c.Info.Type, c.Docs.Type)
			}
			names = append(names, c.Name)
		}
		if r.NextCursor == nil {
			break
		}
		args["cursor"] = *r.NextCursor
	}
	if got := strings.Join(names, ","); got != "config,config|get,config|help,config|resetstat,config|rewrite,config|set" {
		t.Fatalf("config commands = %s", got)
	}
	failure(t, e.call(nil, "resp_commands", map[string]any{"limit": 1000}), mcpcore.KindBadParams)

	read := func(uri string) string {
		res, err := e.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		return res.Contents[0].Text
	}
	var page CompactCommandsReply
	if err := json.Unmarshal([]byte(read("resp://commands")), &page); err != nil || len(page.Commands) != DefaultCommandsLimit || page.NextCursor == nil || page.Commands[0].Syntax == "" {
		t.Fatalf("resp://commands: %v %+v", err, page.NextCursor)
	}
	var caps Capabilities
	if err := json.Unmarshal([]byte(read("resp://capabilities")), &caps); err != nil {
		t.Fatal(err)
	}
	if caps.DefaultTarget != "local" || len(caps.Targets) != 1 || caps.Targets[0].Address != s.Addr || caps.Privileges.Process ||
		caps.Access["resp_execute"] == "" || len(caps.Limits) != len(Limits())+len(mcpcore.CoreLimits()) {
		t.Fatalf("capabilities = %+v", caps)
	}
}

// TestLargeResultPaged: a 300 KiB value comes back through the read tool.
func TestLargeResultPaged(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	value := strings.Repeat("0123456789abcdef", 300*1024/16)
	e.exec(cmd("SET", "big", value))
	res := e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"GET", "big"}}})
	var r execReply
	if err := json.Unmarshal(e.resultJSON(res), &r); err != nil || r.Replies[0].Str(t) != value {
		t.Fatalf("reassembled result: %v", err)
	}
}

// resultJSON returns the JSON of a call's result: inline, or read back
// through resp_result when it was paged (which it checks it was, for a
// result over 300 KiB).
func (e *env) resultJSON(res *mcp.CallToolResult) []byte {
	t := e.t
	t.Helper()
	ref := decode[struct {
		ResultID string `json:"result_id"`
		ReadTool string `json:"read_tool"`
		Total    int64  `json:"total_bytes"`
	}](t, res)
	if ref.ResultID == "" {
		return []byte(res.Content[0].(*mcp.TextContent).Text) // the JSON as served
	}
	if ref.ReadTool != "resp_result" {
		t.Fatalf("reference = %+v", ref)
	}
	var data []byte
	for off := int64(0); off < ref.Total; {
		r := decode[struct {
			DataBase64 string `json:"data_base64"`
			NextOffset *int64 `json:"next_offset"`
		}](t, e.call(nil, "resp_result", map[string]any{"result_id": ref.ResultID, "offset": off, "length": 256 * 1024}))
		b, _ := base64.StdEncoding.DecodeString(r.DataBase64)
		data = append(data, b...)
		if r.NextOffset == nil {
			break
		}
		off = *r.NextOffset
	}
	if int64(len(data)) != ref.Total {
		t.Fatalf("read %d of %d bytes", len(data), ref.Total)
	}
	return data
}

// TestExecuteStreamed: replies past the inline size are encoded as they
// arrive (and paged as parts): the result is byte for byte the one a
// small inline limit does not stream, with the same outcome, redirect-free
// errors and session state (the SELECT seen on the way).
func TestExecuteStreamed(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	value := strings.Repeat("v", 3000)
	var batch [][]any
	var results [2][]byte
	for i, inline := range []int64{64 * mcpcore.KiB, 1 * mcpcore.KiB} {
		list := fmt.Sprint("list", i) // the same replies from each run
		batch = [][]any{{"SELECT", "1"}, {"SET", "k", value}, {"GET", "k"}, {"NOPE"}, {"GET", "missing"}, {"GET", "k"},
			{"SET", "bin", map[string]any{"base64": "AP8="}}, {"GET", "bin"}, {"RPUSH", list, "a", value}, {"LRANGE", list, "0", "-1"}}
		e := connect(t, targetAt(s, ""), "", func(l *mcpcore.Limits) { l.InlineResultBytes = inline })
		res := e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": batch})
		if !res.IsError {
			t.Fatalf("inline %d: a batch with an error reply is not an error", inline)
		}
		results[i] = e.resultJSON(res)
		if l := e.list(nil); len(l) != 1 || l[0].Database != 1 {
			t.Fatalf("inline %d: sessions %+v", inline, l)
		}
	}
	var r execReply
	if err := json.Unmarshal(results[1], &r); err != nil || r.Outcome != OutcomeError || len(r.Replies) != len(batch) || r.Replies[5].Str(t) != value {
		t.Fatalf("streamed: %v %.300s", err, results[1])
	}
	if !bytes.Equal(results[0], results[1]) {
		i := 0
		for i < min(len(results[0]), len(results[1])) && results[0][i] == results[1][i] {
			i++
		}
		t.Fatalf("streamed result differs at byte %d:\n%.300s\n%.300s", i, results[0][i:], results[1][i:])
	}
}

// TestTimeoutAfterDispatch: the call times out while a command blocks:
// the replies received come back, the rest are unknown, the connection is
// closed; the next call is told the session was reset, and the one after
// it gets a new default session.
func TestTimeoutAfterDispatch(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "", func(l *mcpcore.Limits) { l.ToolTimeout = mcpcore.Duration(500 * time.Millisecond) })
	id := e.exec(cmd("CLIENT", "ID")).Replies[0].Value
	res := e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"SET", "t", "1"}, {"BLPOP", "nothing", "5"}, {"SET", "t", "2"}}})
	r := failure(t, res, mcpcore.KindTimeout)
	var partial execReply
	if err := json.Unmarshal(r.Partial, &partial); err != nil || partial.Outcome != OutcomeUnknown || partial.Unknown != 2 ||
		len(partial.Replies) != 1 || partial.Replies[0].Str(t) != "OK" {
		t.Fatalf("partial = %s", r.Partial)
	}
	if r := failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"GET", "t"}}}), KindSessionReset); !strings.Contains(r.Error.Message, "timed out") {
		t.Fatalf("the reset does not say why: %+v", r.Error)
	}
	next := e.exec(cmd("CLIENT", "ID"), cmd("GET", "t"))
	if string(next.Replies[0].Value) == string(id) || next.Replies[1].Str(t) != "1" {
		t.Fatalf("after the timeout: %+v", next)
	}
}

// TestServerKilled: the server dies in the middle of a pipeline: the
// sidecar stays up, reports unknown outcomes and closes that session; once
// the server is back, new sessions work.
func TestServerKilled(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	h := e.open(nil, nil)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		// BLPOP blocks the client, not the server, so the SET's reply is
		// flushed before the kill.
		done <- e.execOn(nil, h, cmd("SET", "a", "1"), cmd("BLPOP", "nothing", "5"), cmd("GET", "a"))
	}()
	waitFor(t, e.blocked)
	// A second call on h waits for the first; it is told of the reset
	// rather than that the handle never existed.
	waiting := make(chan *mcp.CallToolResult, 1)
	go func() { waiting <- e.execOn(nil, h, cmd("PING")) }()
	waitFor(t, func() bool { return len(e.list(nil)) == 2 && e.list(nil)[1].Busy })
	time.Sleep(50 * time.Millisecond) // the SET's reply on its way, the PING at the gate
	s.Kill()
	r := failure(t, <-done, KindConnectionLost)
	failure(t, <-waiting, KindSessionReset)
	var partial execReply
	if err := json.Unmarshal(r.Partial, &partial); err != nil || partial.Outcome != OutcomeUnknown || partial.Unknown != 2 || len(partial.Replies) != 1 ||
		!strings.Contains(r.Error.Message, "unknown outcomes") || !strings.Contains(r.Error.Message, `"local"`) {
		t.Fatalf("error %+v, partial %s", r.Error, r.Partial)
	}
	failure(t, e.execOn(nil, h, cmd("PING")), KindSessionReset)
	// The default session's connection died too: the PING was written to it
	// and its outcome is unknown; the next call is told of the reset.
	failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}}), KindConnectionLost)
	failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}}), KindSessionReset)
	// Now nothing is connected: the next call cannot connect, and sends nothing.
	failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}}), KindConnection)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	e.exec(cmd("PING"))
	e.execOn(nil, e.open(nil, nil), cmd("PING"))
}

// TestTargets: TLS with a generated CA and client certificate, an ACL
// user whose forbidden command is a typed NOPERM reply, a RESP2 target.
func TestTargets(t *testing.T) {
	tlsServer := redistest.Start(t, redistest.Options{TLS: true, RequireClientCert: true})
	aclServer := redistest.Start(t, redistest.Options{ACL: []string{"user default off", "user agent on >agent-pw ~* +@all -flushall"}})
	t.Setenv("RESP_TEST_AGENT_PW", "agent-pw")
	_, tlsPort, _ := net.SplitHostPort(tlsServer.Addr)
	_, aclPort, _ := net.SplitHostPort(aclServer.Addr)
	e := connect(t, fmt.Sprintf(`{"default_target": "tls", "targets": {
		"tls": {"port": %s, "tls": {"ca_cert": %q, "server_name": "localhost", "client_cert": %q, "client_key": %q}},
		"acl": {"port": %s, "username": "agent", "password_env": "RESP_TEST_AGENT_PW"},
		"old": {"port": %s, "username": "agent", "password_env": "RESP_TEST_AGENT_PW", "protocol": 2}}}`,
		tlsPort, tlsServer.CAFile, tlsServer.ClientCertFile, tlsServer.ClientKeyFile, aclPort, aclPort), "")
	if r := e.exec(cmd("SET", "over", "tls"), cmd("GET", "over")); r.Replies[1].Str(t) != "tls" {
		t.Fatalf("TLS: %+v", r)
	}
	acl := e.open(nil, map[string]any{"target": "acl"})
	res := e.execOn(nil, acl, cmd("SET", "k", "v"), cmd("FLUSHALL"))
	r := decode[execReply](t, res)
	if !res.IsError || r.Outcome != OutcomeError || r.Replies[0].Str(t) != "OK" || !strings.HasPrefix(r.Replies[1].Str(t), "NOPERM") {
		t.Fatalf("ACL: %+v", r)
	}
	old := e.open(nil, map[string]any{"target": "old"})
	r = decode[execReply](t, e.execOn(nil, old, cmd("HSET", "h", "f", "v"), cmd("HGETALL", "h"), cmd("GET", "missing")))
	if r.Replies[1].Type != "array" || r.Replies[2].Type != "null" {
		t.Fatalf("RESP2: %+v", r)
	}
	r = decode[execReply](t, e.execOn(nil, acl, cmd("HGETALL", "h")))
	if r.Replies[0].Type != "map" {
		t.Fatalf("RESP3 map: %+v", r)
	}
}

// TestConcurrency: handles run in parallel (a BLPOP on one is served by an
// LPUSH on another); calls on one handle run one at a time; a call
// cancelled while it waits for its turn sends nothing and leaves the
// session's connection as it was.
func TestConcurrency(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	h1, h2 := e.open(nil, nil), e.open(nil, nil)
	id := decode[execReply](t, e.execOn(nil, h1, cmd("CLIENT", "ID"))).Replies[0].Value

	popped := make(chan execReply, 1)
	go func() { popped <- decode[execReply](t, e.execOn(nil, h1, cmd("BLPOP", "q", "5"))) }()
	waitFor(t, e.blocked)
	start := time.Now()
	e.execOn(nil, h2, cmd("LPUSH", "q", "job"))
	if r := <-popped; r.Replies[0].Type != "array" || r.Replies[0].Items[1].Str(t) != "job" || time.Since(start) > 2*time.Second {
		t.Fatalf("BLPOP on h1 fed by h2: %+v after %v", r, time.Since(start))
	}

	// One at a time on h1: a PING sent while the BLPOP blocks (the server
	// says so) returns only after the BLPOP's 1 s timeout.
	blpopDone := make(chan struct{})
	start = time.Now()
	go func() {
		defer close(blpopDone)
		r := decode[execReply](t, e.execOn(nil, h1, cmd("BLPOP", "q", "1")))
		if r.Replies[0].Type != "null" {
			t.Errorf("BLPOP = %+v", r.Replies[0])
		}
	}()
	waitFor(t, e.blocked)
	if r := decode[execReply](t, e.execOn(nil, h1, cmd("PING"))); r.Replies[0].Str(t) != "PONG" {
		t.Fatalf("PING = %+v", r.Replies[0])
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("the PING on h1 returned %v after the BLPOP on h1 started, before its 1 s timeout", d)
	}
	<-blpopDone

	// Cancelled while waiting for its turn: nothing sent, connection kept.
	blpopDone = make(chan struct{})
	go func() { defer close(blpopDone); e.execOn(nil, h1, cmd("BLPOP", "q", "1")) }()
	waitFor(t, e.blocked)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: "resp_execute", Arguments: map[string]any{"session": h1, "commands": [][]any{{"SET", "cancelled", "1"}}}}); err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	<-blpopDone
	r := decode[execReply](t, e.execOn(nil, h1, cmd("CLIENT", "ID"), cmd("EXISTS", "cancelled")))
	if string(r.Replies[0].Value) != string(id) || string(r.Replies[1].Value) != `"0"` {
		t.Fatalf("after a cancelled wait: %+v (connection %s before)", r.Replies, id)
	}
}

// TestReplyBudget: replies beyond reply_bytes fail the call explicitly
// with the replies read so far; the connection is closed and the rest are
// unknown.
func TestReplyBudget(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), `{"reply_bytes": 2048}`)
	e.exec(cmd("SET", "big", strings.Repeat("x", 3000)))
	r := failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}, {"GET", "big"}, {"PING"}}}), mcpcore.KindLimit)
	var partial execReply
	if err := json.Unmarshal(r.Partial, &partial); err != nil || r.Error.Limit != LimitReplyBytes || r.Error.Max != 2048 ||
		partial.Outcome != OutcomeUnknown || len(partial.Replies) != 1 || partial.Unknown != 2 {
		t.Fatalf("error %+v, partial %s", r.Error, r.Partial)
	}
	failure(t, e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}}), KindSessionReset)
	e.exec(cmd("PING"))
}
