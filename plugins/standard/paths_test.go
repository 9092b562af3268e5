package standard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/stdio"
	respwire "github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/mcpkit/mcpkit/pkg/respadmin"
	"github.com/mcpkit/mcpkit/plugins/resp"
	_ "github.com/mcpkit/mcpkit/plugins/standard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBothPathsSameBytes runs every tool of every bundled plugin over
// stdio through the host's direct path (Server.Run, as `mcpkit serve
// --stdio` serves) and through the MCP SDK's own request path (the SDK's
// Server.Run on the same server, which never answers a call itself), with
// the same requests, each path on a world of its own (a fresh redis-server,
// store and app data), and requires the same response lines byte for byte.
// The direct path re-implements the SDK's request path for the RESP
// sidecar's tools: an SDK upgrade that changes what the SDK's path writes
// fails here. Each tool is called with its scripted calls (successes, a
// paged result where the tool can produce one), with no arguments and with
// an unknown argument (bad_params); every tool must succeed at least once.
func TestBothPathsSameBytes(t *testing.T) {
	t.Setenv(resp.EnvAuth, "")
	direct := runPath(t, true)
	sdk := runPath(t, false)
	if len(direct.lines) != len(sdk.lines) {
		t.Errorf("the direct path wrote %d lines, the SDK's %d", len(direct.lines), len(sdk.lines))
	}
	for i := range min(len(direct.lines), len(sdk.lines)) {
		if d, s := direct.lines[i], sdk.lines[i]; d != s {
			t.Errorf("line %d differs (request %s):\ndirect %s\nSDK    %s", i, direct.requests[i], d, s)
		}
	}
	slices.Sort(direct.messages)
	slices.Sort(sdk.messages)
	if only, other := missing(direct.messages, sdk.messages), missing(sdk.messages, direct.messages); len(only)+len(other) > 0 {
		t.Errorf("the server's other messages differ:\nonly direct %q\nonly SDK    %q", only, other)
	}
	if len(direct.messages) == 0 {
		t.Error("no notification seen: diag_notify and the actions plugin's PubSub send some")
	}
	tools := direct.tools
	if len(tools) < 30 {
		t.Fatalf("only %d tools listed: %v", len(tools), tools)
	}
	for _, name := range tools {
		if !direct.succeeded[name] && noSuccess[name] == "" {
			t.Errorf("tool %s never succeeded: give it a scripted call (last answer: %.300s)", name, direct.last[name])
		}
	}
	for name := range scripted {
		if !slices.Contains(tools, name) {
			t.Errorf("scripted tool %s is not served", name)
		}
	}
	for _, p := range []string{"diag_", "resp_", "store_", "actions_", "test_"} {
		if !slices.ContainsFunc(tools, func(n string) bool { return strings.HasPrefix(n, p) }) {
			t.Errorf("no tool %s*: a bundled plugin is missing", p)
		}
	}
}

// missing returns what of a (sorted) is not in b (sorted), repeats counted.
func missing(a, b []string) []string {
	var out []string
	for i, j := 0, 0; i < len(a); i++ {
		for j < len(b) && b[j] < a[i] {
			j++
		}
		if j < len(b) && b[j] == a[i] {
			j++
			continue
		}
		out = append(out, a[i])
	}
	return out
}

// call is one scripted tools/call: a tool and its arguments, in which
// $RESULT is the result_id of the last paged result this path received.
type call struct {
	tool string
	args string
}

// scripted are the calls each path makes first, in order (they build on
// each other's state), covering a success of every tool and a paged
// result for those that can produce one (inline_result_bytes is 4 KiB).
var scripted = map[string]bool{}

var script = []call{
	{"diag_echo", `{"message":"héllo \u2028 \"q\" <&>"}`},
	{"diag_blob", `{"bytes":6000}`}, // paged
	{"diag_result", `{"result_id":"$RESULT","offset":0,"length":100}`},
	{"diag_sleep", `{"ms":1}`},
	{"diag_fail", `{"kind":"limit"}`},
	{"diag_whoami", `{}`},
	{"diag_notify", `{"message":"hi"}`},

	{"resp_execute", `{"commands":[["SET","k","v"],["GET","k"],["INCR","n"],["HSET","h","a","1"],["HGETALL","h"],["GET","missing"],["BADCMD"]]}`},
	{"resp_execute", `{"commands":[["SET","big","` + strings.Repeat("x", 10000) + `"],["GET","big"]]}`}, // paged, streamed
	{"resp_result", `{"result_id":"$RESULT","offset":0,"length":200}`},
	{"resp_execute", `{"commands":[["SET","k",1.5]]}`}, // bad_params: a fraction
	{"resp_commands", `{"prefix":"get","limit":3}`},
	{"resp_session", `{"action":"list"}`},
	{"resp_process", `{"action":"help"}`},
	{"resp_management", `{"path":"/api/keys?match=k"}`}, // one key: SCAN's order differs between two servers
	{"resp_management_live", `{"action":"list"}`},

	{"store_store", `{"collection":"people","id":"ann","doc":{"name":"Ann","age":30,"city":"Paris","loc":{"lat":48.85,"lon":2.35},"bio":"solar panels on the roof","v":{"$vector":[0.1,0.2]}}}`},
	{"store_store", `{"collection":"people","id":"bob","doc":{"name":"Bob","age":25,"city":"Lyon","loc":{"lat":45.76,"lon":4.84},"bio":"a garden and solar panel","v":{"$vector":[0.2,0.1]}}}`},
	{"store_store", `{"collection":"orders","id":1,"doc":{"who":"ann","total":12.5}}`},
	{"store_insert_auto", `{"collection":"orders","doc":{"who":"bob","total":3}}`},
	{"store_get", `{"collection":"people","id":"ann"}`},
	{"store_patch", `{"collection":"people","id":"ann","patch":{"age":31}}`},
	{"store_compare_and_set", `{"collection":"people","id":"bob","expect_revision":2,"doc":{"name":"Bob","age":26,"city":"Lyon","loc":{"lat":45.76,"lon":4.84},"bio":"a garden and solar panel","v":{"$vector":[0.2,0.1]}}}`},
	{"store_create_index", `{"collection":"people","fields":["v"],"type":"vector","dimension":2}`},
	{"store_create_scalar_index", `{"collection":"people","field":"age"}`},
	{"store_create_compound_index", `{"collection":"people","fields":["city","age"]}`},
	{"store_create_text_index", `{"collection":"people","name":"bio","fields":["bio"],"stem":true}`},
	{"store_create_geo_index", `{"collection":"people","field":"loc"}`},
	{"store_set_schema", `{"collection":"orders","fields":[{"name":"who","type":"text","required":true}]}`},
	{"store_get_schema", `{"collection":"orders"}`},
	{"store_page", `{"collection":"people","filter":{"age":{"$gte":20}},"order_by":"age","explain":true}`},
	{"store_count", `{"collection":"people","filter":{"city":"Paris"}}`},
	{"store_phrase_search", `{"collection":"people","phrase":"solar panel"}`},
	{"store_search", `{"collection":"people","text":{"query":"solar"},"vector":{"vector":[0.1,0.2]},"limit":2}`},
	{"store_geo", `{"collection":"people","near":{"lat":48.8566,"lon":2.3522,"radius_m":5000}}`},
	{"store_link", `{"from":{"collection":"people","id":"ann"},"type":"knows","to":{"collection":"people","id":"bob"},"props":{"since":2020}}`},
	{"store_write", `{"ops":[{"op":"store","collection":"notes","id":"n1","doc":{"t":"a"}},{"op":"patch","collection":"notes","id":"n1","patch":{"u":1}},{"op":"insert_auto","collection":"notes","doc":{"t":"b"}},{"op":"compare_and_set","collection":"notes","id":"n2","expect_revision":0,"doc":{}},{"op":"link","from":{"collection":"notes","id":"n1"},"type":"about","to":{"collection":"people","id":"ann"}},{"op":"unlink","from":{"collection":"notes","id":"n1"},"type":"about","to":{"collection":"people","id":"ann"}},{"op":"delete","collection":"notes","id":"n1"}]}`},
	{"store_neighbors", `{"collection":"people","id":"ann","with_docs":true}`},
	{"store_in_neighbors", `{"collection":"people","id":"bob"}`},
	{"store_traverse", `{"collection":"people","id":"ann","max_depth":2}`},
	{"store_join", `{"collection":"people","foreign":"orders","local_field":"name","foreign_field":"who"}`},
	{"store_page", `{"collection":"people","limit":10}`},
	{"store_dump", `{"path":"dump.jsonl"}`},
	{"store_backup", `{"path":"backup.db"}`},
	{"store_unlink", `{"from":{"collection":"people","id":"ann"},"type":"knows","to":{"collection":"people","id":"bob"}}`},
	{"store_delete", `{"collection":"orders","id":1}`},
	{"store_delete_where", `{"collection":"orders","filter":{}}`},
	{"store_load", `{"path":"dump.jsonl","mode":"replace"}`},
	{"store_store", `{"collection":"big","id":"x","doc":{"text":"` + strings.Repeat("y", 6000) + `"}}`},
	{"store_get", `{"collection":"big","id":"x"}`}, // paged
	{"store_result", `{"result_id":"$RESULT","offset":0,"length":100}`},

	{"actions_status", `{}`},
	{"actions_user-create", `{"name":"Ann","email":"ann@example.com","password":"correct horse"}`},
	{"actions_session-create", `{"email":"ann@example.com","password":"correct horse"}`},
	{"actions_session-destroy", `{}`},
	{"actions_message-post", `{"channel":"general","text":"` + strings.Repeat("hello ", 10) + `","author":"Ann"}`},
	{"actions_message-list", `{"channel":"general"}`},
	{"actions_message-post", `{"channel":"long","text":"` + strings.Repeat("long ", 600) + `","author":"Ann"}`},
	{"actions_message-post", `{"channel":"long","text":"` + strings.Repeat("more ", 600) + `","author":"Ann"}`},
	{"actions_message-list", `{"channel":"long"}`}, // paged
	{"actions_result", `{"result_id":"$RESULT","offset":0,"length":100}`},

	{"json_schema_2020_12_tool", `{"name":"Ann","contactMethod":"email","email":"ann@example.com","address":{"city":"Paris"}}`},
	{"test_simple_text", `{}`},
}

// noSuccess are the tools that cannot succeed in this test, with why (they
// still get both calls with generic arguments).
var noSuccess = map[string]string{
	"diag_fail":                                  "fails by design",
	"test_error_handling":                        "fails by design",
	"test_missing_capability":                    "fails by design: the client lacks the capability",
	"actions_session-destroy":                    "signs out a web session; an MCP connection has none",
	"result":                                     "the conformance plugin's read tool: its tools never page a result",
	"test_elicitation":                           "asks the client, which declares no elicitation",
	"test_elicitation_sep1034_defaults":          "asks the client, which declares no elicitation",
	"test_elicitation_sep1330_enums":             "asks the client, which declares no elicitation",
	"test_sampling":                              "asks the client, which declares no sampling",
	"test_input_required_result_elicitation":     "a 2026-07-28 multi-round-trip result, which a legacy-era client cannot take",
	"test_input_required_result_list_roots":      "a 2026-07-28 multi-round-trip result, which a legacy-era client cannot take",
	"test_input_required_result_multi_round":     "a 2026-07-28 multi-round-trip result, which a legacy-era client cannot take",
	"test_input_required_result_multiple_inputs": "a 2026-07-28 multi-round-trip result, which a legacy-era client cannot take",
	"test_input_required_result_request_state":   "a 2026-07-28 multi-round-trip result, which a legacy-era client cannot take",
	"test_input_required_result_sampling":        "a 2026-07-28 multi-round-trip result, which a legacy-era client cannot take",
	"test_input_required_result_tampered_state":  "a 2026-07-28 multi-round-trip result, which a legacy-era client cannot take",
}

// unorderedAsks are the tools whose requests to the client are not
// compared, with why; their responses are.
var unorderedAsks = map[string]string{
	"test_input_required_result_multiple_inputs": "asks several things at once and cancels the rest when the client refuses one: which were sent, and which refusal ends the call, is a race",
}

// errorRe matches a response's error object, to the end of the line.
var errorRe = regexp.MustCompile(`"error":\{.*\}\}$`)

func init() {
	for _, c := range script {
		scripted[c.tool] = true
	}
}

// pathRun is what one path wrote: the responses and the requests they
// answered, the other messages, the tools it listed and those that
// succeeded at least once.
type pathRun struct {
	lines     []string          // the responses, in order
	requests  []string          // the request each answered
	messages  []string          // the server's notifications and requests
	last      map[string]string // each tool's last response
	tools     []string
	succeeded map[string]bool
}

// runPath serves every bundled plugin over a stdio pipe, through the
// direct path or the SDK's, and runs the script on it.
func runPath(t *testing.T, direct bool) *pathRun {
	t.Helper()
	srv := newServer(t)
	var respViaSDK atomic.Int64 // resp_* calls the SDK's request path saw
	srv.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok && strings.HasPrefix(r.Params.Name, "resp_") {
				respViaSDK.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	lim := srv.Limits()
	tr := stdio.NewTransport(inR, outW, stdio.Options{MaxFrameBytes: lim.FrameBytes,
		MaxPendingRequests: 2 * lim.ConcurrentToolCalls, MaxInflightBytes: lim.InflightRequestBytes})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		if direct {
			done <- srv.Run(ctx, tr)
		} else {
			done <- srv.MCP().Run(ctx, tr)
		}
		outW.Close()
	}()
	c := &rawClient{t: t, w: inW, lines: make(chan string, 64), run: &pathRun{succeeded: map[string]bool{}, last: map[string]string{}}}
	go c.readAll(outR)
	defer func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the session did not end at EOF")
		}
		cancel()
		inR.Close()
		outR.Close()
	}()
	c.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"paths","version":"1"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	list := c.request("tools/list", `{}`)
	var tl struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(list), &tl); err != nil {
		t.Fatalf("tools/list: %v: %s", err, list)
	}
	for _, tool := range tl.Result.Tools {
		c.run.tools = append(c.run.tools, tool.Name)
	}
	slices.Sort(c.run.tools)
	for _, sc := range script {
		c.callTool(sc.tool, sc.args)
	}
	for _, name := range c.run.tools {
		c.callTool(name, `{}`)
		c.callTool(name, `{"no_such_argument":true}`)
	}
	// Middleware added to the SDK's server sees the calls of its request
	// path only: none of the resp tools' on the direct path.
	if n := respViaSDK.Load(); direct != (n == 0) {
		t.Errorf("direct %v: the SDK's request path saw %d resp_* calls", direct, n)
	}
	return c.run
}

// newServer assembles every bundled plugin on a world of its own.
func newServer(t *testing.T) *mcpcore.Server {
	t.Helper()
	rs := redistest.Start(t, redistest.Options{})
	host, port, _ := net.SplitHostPort(rs.Addr)
	dir := t.TempDir()
	cfg := mcpcore.DefaultConfig()
	cfg.Limits.InlineResultBytes = 4 * mcpcore.KiB
	js := func(s string, args ...any) json.RawMessage { return json.RawMessage(fmt.Sprintf(s, args...)) }
	gw := startGateway(t, rs)
	cfg.Plugins = map[string]mcpcore.PluginConfig{
		"diag": {},
		"resp": {Config: js(`{"targets":{"local":{"host":%q,"port":%s,"management_url":%q,"management_token_file":%q}},"file_root":%q,"process":{"enabled":true}}`,
			host, port, gw.url, gw.tokenFile, dir)},
		"store":       {Config: js(`{"path":%q,"files_dir":%q}`, filepath.Join(dir, "store.db"), dir)},
		"actions":     {Config: js(`{"data_path":%q}`, filepath.Join(dir, "app.db"))},
		"conformance": {},
	}
	srv, err := mcpcore.NewServer(t.Context(), mcpcore.Options{Config: cfg,
		Plugins: []string{"diag", "resp", "store", "actions", "conformance"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv
}

// gateway is a management gateway (mcpkit resp admin) in front of a test
// server, for the resp plugin's management tools.
type gateway struct{ url, tokenFile string }

func startGateway(t *testing.T, rs *redistest.Server) gateway {
	t.Helper()
	const token = "operator-token-for-the-paths-test"
	toks, err := respadmin.ParseTokens([]byte("admin " + token))
	if err != nil {
		t.Fatal(err)
	}
	adm, err := respadmin.New(respadmin.Options{Target: respwire.DialOptions{Addr: rs.Addr}, Tokens: toks,
		AuditFile: filepath.Join(t.TempDir(), "audit")})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(adm)
	t.Cleanup(func() {
		adm.Close()
		hs.Close()
	})
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return gateway{url: hs.URL, tokenFile: file}
}

// rawClient speaks JSON-RPC lines to the server, as an MCP client does,
// and keeps every line the server writes.
type rawClient struct {
	t      *testing.T
	w      *os.File
	lines  chan string
	nextID int
	result string // the last paged result's result_id
	tool   string // the tool being called
	run    *pathRun
}

func (c *rawClient) readAll(r *os.File) {
	defer close(c.lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		c.lines <- sc.Text()
	}
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := c.w.WriteString(line + "\n"); err != nil {
		c.t.Fatal(err)
	}
}

// request sends a request and returns its response line, keeping every
// line read until then; a request from the server is refused with an
// error, as a client without the capability would.
func (c *rawClient) request(method, params string) string {
	c.t.Helper()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
	c.send(req)
	for {
		var line string
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the server closed its output before answering %s", req)
			}
			line = l
		case <-time.After(30 * time.Second):
			c.t.Fatalf("no answer to %s", req)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			c.t.Fatalf("not JSON: %s", line)
		}
		if m.Method != "" && unorderedAsks[c.tool] != "" {
			// not compared (see unorderedAsks); the response is
		} else if strings.HasSuffix(m.Method, "/list_changed") {
			// not compared: the SDK sends a list change after a short
			// delay of its own, so whether it is written before the
			// session ends is timing, on either path
		} else if m.Method == "notifications/cancelled" {
			// not compared: the cancellation of an ask a tool abandoned
			// (see unorderedAsks) is written when the tool's context ends,
			// which may be after its response, during the next call
		} else if m.Method != "" {
			// A notification a plugin sends from a goroutine of its own
			// (the actions plugin's PubSub) is not ordered with the
			// responses on either path: they are compared as a set.
			// A tool that asks the client several things at once
			// (test_input_required_result_multiple_inputs) numbers its
			// requests in the order its goroutines reach the session.
			c.run.messages = append(c.run.messages, requestIDRe.ReplaceAllString(normalize(line), "${1}N"))
		} else {
			kept := normalize(line)
			if unorderedAsks[c.tool] != "" {
				// Which of its asks the client refused first, and so which
				// error ends the call, is the same race: only that it
				// failed is compared.
				kept = errorRe.ReplaceAllString(kept, `"error":{"racy":true}}`)
			}
			if strings.HasPrefix(c.tool, "actions_") {
				// The example app's results hold times of a varying
				// length (RFC 3339 drops trailing zeros of the fraction),
				// so a paged one's size varies too.
				kept = totalBytesRe.ReplaceAllString(kept, "${1}N")
			}
			c.run.lines = append(c.run.lines, kept)
			c.run.requests = append(c.run.requests, req)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"not supported by this client"}}`, m.ID))
		case m.Method == "" && string(m.ID) == id:
			return line
		}
	}
}

var requestIDRe = regexp.MustCompile(`((?:^\{"jsonrpc":"2.0","id":)|(?:"requestId":))[0-9]+`)

var totalBytesRe = regexp.MustCompile(`(total_bytes\\?":)[0-9]+`)

var resultIDRe = regexp.MustCompile(`result_id\\?":\\?"([^"\\]+)`)

// callTool calls a tool and notes whether it succeeded and the result_id
// of a paged result.
func (c *rawClient) callTool(name, args string) {
	c.t.Helper()
	args = strings.ReplaceAll(args, "$RESULT", c.result)
	c.tool = name
	defer func() { c.tool = "" }()
	line := c.request("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args))
	c.run.last[name] = line
	var r struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(line), &r) == nil && r.Result != nil && !r.Result.IsError {
		c.run.succeeded[name] = true
	}
	if m := resultIDRe.FindStringSubmatch(line); m != nil && strings.Contains(line, `read_tool`) {
		c.result = m[1]
	}
}

// normalizers replace what must differ between two worlds: a paged
// result's handle and expiry.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(result_id\\?":\\?")[^"\\]+`), "${1}ID"},
	{regexp.MustCompile(`r_[A-Z2-7]{26}`), "r_ID"}, // a result_id in an error message
	{regexp.MustCompile(`(expires_at\\?":\\?")[^"\\]+`), "${1}T"},
	// Clock readings: RFC 3339 times (a document's created_at) and the
	// example app's uptime.
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "TIME"},
	{regexp.MustCompile(`(uptime_seconds\*\*: )[0-9.]+`), "${1}N"},
	{regexp.MustCompile(`(uptime_seconds\\?":)[0-9.]+`), "${1}N"},
	{regexp.MustCompile(`(slept_ms\\?":)[0-9]+`), "${1}N"},
	{regexp.MustCompile(`(idle_ms\\?":)[0-9]+`), "${1}N"},
}

func normalize(line string) string {
	for _, n := range normalizers {
		line = n.re.ReplaceAllString(line, n.with)
	}
	return line
}
