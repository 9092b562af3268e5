package respadmin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/mcpkit/mcpkit/pkg/respadmin"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Tokens of the gateway under test, one per role.
const (
	viewerTok   = "viewer-token-0123456789"
	operatorTok = "operator-token-0123456789"
	adminTok    = "admin-token-0123456789"
)

// gateway is a Server in front of a disposable redis-server, served by
// httptest on loopback.
type gateway struct {
	srv   *respadmin.Server
	url   string
	rdb   *redis.Client
	audit string
	redis *redistest.Server
}

func startGateway(t *testing.T, tokens bool, mutate func(*respadmin.Options)) *gateway {
	t.Helper()
	rs := redistest.Start(t, redistest.Options{Password: "s3cret-pass", Config: []string{"notify-keyspace-events KEA"}})
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	opts := respadmin.Options{
		Target:            resp.DialOptions{Addr: rs.Addr, Password: rs.Password},
		AuditFile:         audit,
		Reveal:            respadmin.RoleOperator,
		ReplicationExport: true,
	}
	if tokens {
		toks, err := respadmin.ParseTokens([]byte("# roles\nviewer " + viewerTok + "\noperator " + operatorTok + "\n\nadmin " + adminTok + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		opts.Tokens = toks
	}
	if mutate != nil {
		mutate(&opts)
	}
	srv, err := respadmin.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr, Password: rs.Password})
	t.Cleanup(func() { rdb.Close() })
	return &gateway{srv: srv, url: hs.URL, rdb: rdb, audit: audit, redis: rs}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body not JSON: %v\n%s", r.status, err, r.body)
	}
	return m
}

func (r reply) kind() string {
	var m struct {
		Error struct{ Kind string } `json:"error"`
	}
	json.Unmarshal(r.body, &m)
	return m.Error.Kind
}

// do serves one request in process (ServeHTTP with a recorder); the
// checks that need a listener (Host, Origin) go through g.url instead.
func (g *gateway) do(t *testing.T, method, path, token, body string) reply {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	g.srv.ServeHTTP(rec, req)
	return reply{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

func TestParseTokens(t *testing.T) {
	for _, bad := range []string{"", "# only a comment\n", "root abcdefghijklmnopq", "admin short", "admin abcdefghijklmnopq extra",
		"admin abcdefghijklmnopq\nviewer abcdefghijklmnopq"} {
		if _, err := respadmin.ParseTokens([]byte(bad)); err == nil {
			t.Errorf("ParseTokens(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "abcdefghijklmnopq") {
			t.Errorf("the error names the token: %v", err)
		}
	}
	toks, err := respadmin.ParseTokens([]byte("viewer abcdefghijklmnopq\r\n  operator bbcdefghijklmnopq  \n"))
	if err != nil || len(toks) != 2 || toks[0].Role != respadmin.RoleViewer || toks[1].Secret != "bbcdefghijklmnopq" {
		t.Fatalf("%v %v", toks, err)
	}
}

func TestAuthAndRoles(t *testing.T) {
	g := startGateway(t, true, nil)
	if !g.srv.Authenticated() {
		t.Fatal("Authenticated false with tokens")
	}
	if r := g.do(t, "GET", "/api/info", "", ""); r.status != 401 || r.kind() != "unauthorized" || r.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %d %s %v", r.status, r.body, r.header)
	}
	if r := g.do(t, "GET", "/api/info", "wrong-token-0123456789", ""); r.status != 401 {
		t.Fatalf("bad token: %d", r.status)
	}
	if r := g.do(t, "GET", "/api/audit", viewerTok, ""); r.status != 403 || r.kind() != "forbidden" {
		t.Fatalf("viewer audit: %d %s", r.status, r.body)
	}
	if r := g.do(t, "GET", "/api/replication/snapshot", operatorTok, ""); r.status != 403 {
		t.Fatalf("operator snapshot: %d %s", r.status, r.body)
	}
	if r := g.do(t, "GET", "/api/nothing", viewerTok, ""); r.status != 404 || r.kind() != "not_found" {
		t.Fatalf("unknown route: %d %s", r.status, r.body)
	}
	// A browser on another origin is refused, whatever its token.
	req, _ := http.NewRequest("GET", g.url+"/api/info", nil)
	req.Header.Set("Authorization", "Bearer "+adminTok)
	req.Header.Set("Origin", "http://evil.example")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("foreign origin: %d", res.StatusCode)
	}
	// DNS rebinding: a loopback listener reached under another name.
	req, _ = http.NewRequest("GET", g.url+"/api/info", nil)
	req.Host = "attacker.example"
	req.Header.Set("Authorization", "Bearer "+adminTok)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("rebinding Host: %d", res.StatusCode)
	}
}

func TestReadRoutes(t *testing.T) {
	g := startGateway(t, true, nil)
	ctx := t.Context()
	g.rdb.Set(ctx, "str:a", "hello", 0)
	g.rdb.Set(ctx, "str:ttl", "x", time.Hour)
	g.rdb.RPush(ctx, "list:a", "1", "2", "3")
	g.rdb.HSet(ctx, "hash:a", "f", "v")
	g.rdb.SAdd(ctx, "set:a", "m")
	g.rdb.ZAdd(ctx, "zset:a", redis.Z{Score: 1.5, Member: "z"})
	g.rdb.XAdd(ctx, &redis.XAddArgs{Stream: "stream:a", ID: "1-1", Values: []string{"k", "v"}})
	g.rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0") // everything is slow: the slow log has entries

	info := g.do(t, "GET", "/api/info", viewerTok, "").json(t)
	if srv, _ := info["server"].(map[string]any); srv == nil || srv["redis_version"] == nil || srv["tcp_port"] != float64(g.redis.Port) {
		t.Fatalf("info server: %v", info["server"])
	}
	if ks, _ := info["keyspace"].(map[string]any); ks["db0"].(map[string]any)["keys"] != float64(7) {
		t.Fatalf("info keyspace: %v", info["keyspace"])
	}
	if r := g.do(t, "GET", "/api/info?section=memory", viewerTok, "").json(t); r["memory"] == nil || r["server"] != nil {
		t.Fatalf("info section: %v", r)
	}

	keys := g.do(t, "GET", "/api/keys?count=1000", viewerTok, "").json(t)
	list := keys["keys"].([]any)
	if len(list) != 7 || keys["cursor"] != "0" {
		t.Fatalf("keys: %v", keys)
	}
	byKey := map[string]map[string]any{}
	for _, k := range list {
		m := k.(map[string]any)
		byKey[m["key"].(string)] = m
		if m["memory_bytes"].(float64) <= 0 || m["value"] != nil {
			t.Errorf("key %v", m)
		}
	}
	if byKey["str:ttl"]["ttl_ms"].(float64) <= 0 || byKey["str:a"]["ttl_ms"] != float64(-1) || byKey["zset:a"]["type"] != "zset" {
		t.Fatalf("keys: %v", byKey)
	}
	if r := g.do(t, "GET", "/api/keys?type=hash&match=*:a", viewerTok, "").json(t); len(r["keys"].([]any)) != 1 {
		t.Fatalf("type filter: %v", r)
	}
	// Values: hidden from a viewer (reveal is operator), shown to an operator.
	if r := g.do(t, "GET", "/api/keys?reveal=true", viewerTok, ""); r.status != 403 {
		t.Fatalf("viewer reveal: %d %s", r.status, r.body)
	}
	rv := g.do(t, "GET", "/api/keys?reveal=true&match=str:a", operatorTok, "").json(t)
	if v := rv["keys"].([]any)[0].(map[string]any)["value"].(map[string]any); v["value"] != "hello" || v["type"] != "bulk_string" {
		t.Fatalf("revealed: %v", rv)
	}
	if r := g.do(t, "GET", "/api/keys/str:a", viewerTok, "").json(t); r["value_hidden"] != true || r["value"] != nil || r["type"] != "string" {
		t.Fatalf("hidden key: %v", r)
	}
	if r := g.do(t, "GET", "/api/keys/str:a", operatorTok, "").json(t); r["value"].(map[string]any)["value"] != "hello" || r["length"] != float64(5) {
		t.Fatalf("key: %v", r)
	}
	g.rdb.Set(ctx, "a/b c", "slashed", 0)
	if r := g.do(t, "GET", "/api/keys/a%2Fb%20c", operatorTok, "").json(t); r["key"] != "a/b c" || r["value"].(map[string]any)["value"] != "slashed" {
		t.Fatalf("escaped key: %v", r)
	}
	g.rdb.Del(ctx, "a/b c")
	page := g.do(t, "GET", "/api/keys/list:a?count=2", operatorTok, "").json(t)
	if items := page["value"].(map[string]any)["items"].([]any); len(items) != 2 || page["next_cursor"] != "2" || page["length"] != float64(3) {
		t.Fatalf("list page: %v", page)
	}
	page = g.do(t, "GET", "/api/keys/list:a?count=2&cursor=2", operatorTok, "").json(t)
	if items := page["value"].(map[string]any)["items"].([]any); len(items) != 1 || page["next_cursor"] != "" {
		t.Fatalf("list page 2: %v", page)
	}
	for _, k := range []string{"hash:a", "set:a", "zset:a", "stream:a"} {
		if r := g.do(t, "GET", "/api/keys/"+k, adminTok, ""); r.status != 200 || r.json(t)["value"] == nil {
			t.Fatalf("%s: %d %s", k, r.status, r.body)
		}
	}
	if r := g.do(t, "GET", "/api/keys/none", viewerTok, ""); r.status != 404 {
		t.Fatalf("missing key: %d", r.status)
	}
	if r := g.do(t, "GET", "/api/keys?count=0", viewerTok, ""); r.status != 400 || r.kind() != "bad_request" {
		t.Fatalf("count=0: %d %s", r.status, r.body)
	}

	clients := g.do(t, "GET", "/api/clients", viewerTok, "").json(t)
	if cs := clients["clients"].([]any); len(cs) == 0 || cs[0].(map[string]any)["addr"] == nil {
		t.Fatalf("clients: %v", clients)
	}
	slow := g.do(t, "GET", "/api/slowlog?count=5", viewerTok, "").json(t)
	if es := slow["entries"].([]any); len(es) == 0 || es[0].(map[string]any)["args"] == nil {
		t.Fatalf("slowlog: %v", slow)
	}
	if r := g.do(t, "GET", "/api/latency", viewerTok, ""); r.status != 200 || r.json(t)["events"] == nil {
		t.Fatalf("latency: %d %s", r.status, r.body)
	}
	if r := g.do(t, "GET", "/api/memory", viewerTok, "").json(t); r["peak.allocated"] == nil {
		t.Fatalf("memory: %v", r)
	}
	cfg := g.do(t, "GET", "/api/config", viewerTok, "").json(t)["config"].(map[string]any)
	if cfg["requirepass"] != "***" || cfg["maxmemory"] != "0" {
		t.Fatalf("config: requirepass %v maxmemory %v", cfg["requirepass"], cfg["maxmemory"])
	}
	if bytes.Contains(g.do(t, "GET", "/api/config?pattern=*pass*", adminTok, "").body, []byte("s3cret-pass")) {
		t.Fatal("a secret in /api/config")
	}
}

// auditLines reads the audit file.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestPostsAudited(t *testing.T) {
	g := startGateway(t, true, nil)
	ctx := t.Context()
	g.rdb.Set(ctx, "k", "v", 0)
	steps := []struct {
		token, path, body string
		status            int
		kind, outcome     string
	}{
		{viewerTok, "/api/config", `{"parameter":"maxmemory","value":"10mb"}`, 403, "forbidden", "refused"},
		{operatorTok, "/api/config", `{"parameter":"maxmemory","value":"10mb"}`, 200, "", "ok"},
		{operatorTok, "/api/config", `{"parameter":"requirepass","value":"new-secret-value"}`, 403, "forbidden", "refused"},
		{operatorTok, "/api/config", `{"parameter":"no-such-parameter","value":"1"}`, 502, "target_error", "failed"},
		{operatorTok, "/api/config", `{"parameter":"maxmemory","value":"1mb","extra":1}`, 400, "bad_request", "refused"},
		{operatorTok, "/api/storage/action", `{"action":"flushdb"}`, 409, "confirmation_required", "refused"},
		{operatorTok, "/api/storage/action", `{"action":"explode"}`, 400, "bad_request", "refused"},
		{operatorTok, "/api/storage/action", `{"action":"flushall","confirmed":true}`, 403, "forbidden", "refused"},
		{operatorTok, "/api/storage/action", `{"action":"save"}`, 200, "", "ok"},
		{operatorTok, "/api/storage/action", `{"action":"flushdb","confirmed":true}`, 200, "", "ok"},
		{adminTok, "/api/storage/action", `{"action":"flushall","confirmed":true}`, 200, "", "ok"},
	}
	for i, s := range steps {
		r := g.do(t, "POST", s.path, s.token, s.body)
		if r.status != s.status || r.kind() != s.kind {
			t.Fatalf("step %d %s %s: %d %s, want %d %s", i, s.path, s.body, r.status, r.body, s.status, s.kind)
		}
		if i == 5 {
			if n, _ := g.rdb.Exists(ctx, "k").Result(); n != 1 {
				t.Fatal("an unconfirmed flushdb flushed")
			}
		}
	}
	if v, _ := g.rdb.ConfigGet(ctx, "maxmemory").Result(); v["maxmemory"] != "10485760" {
		t.Fatalf("maxmemory %v", v)
	}
	if n, _ := g.rdb.DBSize(ctx).Result(); n != 0 {
		t.Fatalf("flushdb left %d keys", n)
	}
	lines := auditLines(t, g.audit)
	if len(lines) != len(steps) {
		t.Fatalf("%d audit lines for %d POSTs", len(lines), len(steps))
	}
	for i, s := range steps {
		l := lines[i]
		if l["outcome"] != s.outcome || l["status"] != float64(s.status) || !strings.HasPrefix(l["who"].(string), "token:") || l["time"] == nil {
			t.Errorf("audit %d: %v (want %s %d)", i, l, s.outcome, s.status)
		}
	}
	if lines[2]["value"] != "***" || lines[2]["parameter"] != "requirepass" || lines[9]["action"] != "flushdb" || lines[9]["confirmed"] != true {
		t.Errorf("audit details: %v / %v", lines[2], lines[9])
	}
	if lines[0]["role"] != "viewer" || lines[10]["role"] != "admin" || lines[0]["who"] == lines[10]["who"] {
		t.Errorf("audit roles: %v / %v", lines[0], lines[10])
	}
	b, _ := os.ReadFile(g.audit)
	if bytes.Contains(b, []byte("new-secret-value")) || bytes.Contains(b, []byte(operatorTok)) {
		t.Fatal("a secret in the audit file")
	}
	// GET /api/audit: the latest entries, oldest first.
	got := g.do(t, "GET", "/api/audit?limit=2", operatorTok, "").json(t)["entries"].([]any)
	if len(got) != 2 || got[1].(map[string]any)["action"] != "flushall" || got[0].(map[string]any)["action"] != "flushdb" {
		t.Fatalf("audit route: %v", got)
	}
	// Wrong content type: refused and audited.
	req, _ := http.NewRequest("POST", g.url+"/api/storage/action", strings.NewReader(`{"action":"save"}`))
	req.Header.Set("Authorization", "Bearer "+operatorTok)
	req.Header.Set("Content-Type", "text/plain")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 415 || len(auditLines(t, g.audit)) != len(steps)+1 {
		t.Fatalf("text/plain POST: %d", res.StatusCode)
	}
}

func TestNoAuditNoTokens(t *testing.T) {
	g := startGateway(t, false, func(o *respadmin.Options) {
		o.AuditFile = ""
		o.ReplicationExport = false
		o.Reveal = respadmin.RoleNone
	})
	if g.srv.Authenticated() {
		t.Fatal("Authenticated true without tokens")
	}
	if r := g.do(t, "GET", "/api/info", "", ""); r.status != 200 {
		t.Fatalf("anonymous: %d", r.status)
	}
	if r := g.do(t, "POST", "/api/storage/action", "", `{"action":"save"}`); r.status != 503 || r.kind() != "disabled" {
		t.Fatalf("POST without audit: %d %s", r.status, r.body)
	}
	if r := g.do(t, "GET", "/api/replication/snapshot", "", ""); r.status != 403 || r.kind() != "disabled" {
		t.Fatalf("snapshot disabled: %d %s", r.status, r.body)
	}
	g.rdb.Set(t.Context(), "k", "v", 0)
	if r := g.do(t, "GET", "/api/keys?reveal=true", "", ""); r.status != 403 {
		t.Fatalf("reveal off: %d", r.status)
	}
	if r := g.do(t, "GET", "/api/keys/k", "", "").json(t); r["value_hidden"] != true {
		t.Fatalf("reveal off: %v", r)
	}
}

func TestMetricsParse(t *testing.T) {
	g := startGateway(t, true, nil)
	g.rdb.Set(t.Context(), "a", "1", 0)
	r := g.do(t, "GET", "/metrics", viewerTok, "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %v", r.status, r.header)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, r.body)
	}
	if fams["redis_up"].GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatal("redis_up != 1")
	}
	if m := fams["redis_db_keys"].GetMetric(); len(m) != 1 || m[0].GetGauge().GetValue() != 1 || m[0].GetLabel()[0].GetValue() != "db0" {
		t.Fatalf("redis_db_keys: %v", m)
	}
	if fams["redis_connected_clients"].GetMetric()[0].GetGauge().GetValue() < 1 {
		t.Fatal("connected_clients")
	}
	if fams["redis_total_commands_processed"].GetType().String() != "COUNTER" {
		t.Fatal("total_commands_processed is not a counter")
	}
	var sawSet bool
	for _, m := range fams["redis_command_calls_total"].GetMetric() {
		sawSet = sawSet || m.GetLabel()[0].GetValue() == "set"
	}
	if !sawSet {
		t.Fatal("no commandstats for set")
	}
	// Down target: redis_up 0, still a valid exposition.
	g.redis.Stop()
	r = g.do(t, "GET", "/metrics", viewerTok, "")
	fams, err = p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil || fams["redis_up"].GetMetric()[0].GetGauge().GetValue() != 0 {
		t.Fatalf("down: %v %s", err, r.body)
	}
}

func TestSnapshot(t *testing.T) {
	g := startGateway(t, true, nil)
	g.rdb.Set(t.Context(), "snap", "shot", 0)
	r := g.do(t, "GET", "/api/replication/snapshot", adminTok, "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("snapshot: %d %s", r.status, r.body)
	}
	if !bytes.HasPrefix(r.body, []byte("REDIS")) || !bytes.Contains(r.body, []byte("shot")) || r.header.Get("Content-Length") == "" {
		t.Fatalf("not an RDB: %q", r.body[:min(len(r.body), 32)])
	}
}

func TestLive(t *testing.T) {
	g := startGateway(t, true, func(o *respadmin.Options) { o.Live.MaxConnections = 2 })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	dial := func(token, query string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, strings.Replace(g.url, "http", "ws", 1)+"/api/live"+query,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	}
	if _, res, err := dial(viewerTok, "?monitor=true"); err == nil || res.StatusCode != 403 {
		t.Fatalf("viewer monitor: %v %v", err, res)
	}
	read := func(c *websocket.Conn, want string) map[string]any {
		t.Helper()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read %s: %v", want, err)
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			if m["type"] == want {
				return m
			}
			if m["type"] == "error" {
				t.Fatalf("error frame: %v", m)
			}
		}
	}
	c, _, err := dial(adminTok, "?monitor=true&interval_ms=200")
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	ov := read(c, "overview")
	if ov["keyspace_notifications"] == "" || ov["info"] == nil || ov["seq"] != float64(1) {
		t.Fatalf("overview: %v", ov)
	}
	// The second connection fills the limit of 2; a third is refused.
	c2, _, err := dial(viewerTok, "")
	if err != nil {
		t.Fatal(err)
	}
	read(c2, "overview")
	if _, res, err := dial(viewerTok, ""); err == nil || res.StatusCode != 429 {
		t.Fatalf("third live connection: %v %v", err, res)
	}
	c2.Close(websocket.StatusNormalClosure, "")
	g.rdb.Set(ctx, "live:key", "1", 0)
	// Keyspace, monitor and delta frames interleave: wait for all three.
	var sawKeyspace, sawMonitor, sawDelta bool
	for !sawKeyspace || !sawMonitor || !sawDelta {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("keyspace %v monitor %v delta %v: %v", sawKeyspace, sawMonitor, sawDelta, err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		switch m["type"] {
		case "keyspace":
			sawKeyspace = sawKeyspace || m["channel"] == "__keyspace@0__:live:key" && m["message"] == "set"
		case "monitor":
			sawMonitor = sawMonitor || strings.Contains(strings.ToLower(m["line"].(string)), `"set" "live:key" "1"`)
		case "info_delta":
			sawDelta = sawDelta || len(m["changed"].(map[string]any)) > 0
		case "error", "dropped":
			t.Fatalf("frame %v", m)
		}
	}
	// Close ends the live connection from the gateway's side, with a close
	// frame the client answers while Close waits for the handshake.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		g.srv.Close()
	}()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Fatalf("closed with %v", err)
			}
			break
		}
	}
	<-closed
}

// TestLiveDropsOversizedFrames: a frame over MaxFrameBytes (a long MONITOR
// line) is not cut but dropped, and a "dropped" frame counts it.
func TestLiveDropsOversizedFrames(t *testing.T) {
	g := startGateway(t, true, func(o *respadmin.Options) { o.Live.MaxFrameBytes = 32 << 10 })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, strings.Replace(g.url, "http", "ws", 1)+"/api/live?monitor=true&keyspace=false&interval_ms=60000",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + adminTok}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	sent := false
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 32<<10 {
			t.Fatalf("a frame of %d bytes", len(b))
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		switch m["type"] {
		case "dropped":
			if m["count"] != float64(1) {
				t.Fatalf("dropped %v", m)
			}
			return
		case "monitor":
			if strings.Contains(m["line"].(string), "big") {
				t.Fatalf("the long line arrived: %d bytes", len(b))
			}
			continue
		}
		if !sent {
			g.rdb.Set(ctx, "big", strings.Repeat("x", 40<<10), 0)
			sent = true
		}
	}
}

func TestOpenAPI(t *testing.T) {
	g := startGateway(t, true, nil)
	r := g.do(t, "GET", "/api/openapi.json", viewerTok, "")
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("invalid OpenAPI: %v\n%s", err, r.body)
	}
	if !bytes.Equal(r.body, g.srv.OpenAPI()) {
		t.Fatal("served document differs from OpenAPI()")
	}
	for _, p := range []string{"/api/info", "/api/keys", "/api/keys/{key}", "/api/clients", "/api/slowlog", "/api/latency", "/api/memory",
		"/api/config", "/api/audit", "/api/storage/action", "/metrics", "/api/replication/snapshot", "/api/live"} {
		if doc.Paths.Find(p) == nil {
			t.Errorf("no path %s", p)
		}
	}
	if op := doc.Paths.Find("/api/config").Post; op == nil || op.RequestBody == nil {
		t.Fatal("POST /api/config has no body")
	}
}

// TestReadsAndRefusalsAudited: beyond POSTs, the audit file records every
// refused request (401 without or with a wrong token, 403 for a role, a
// foreign Origin) and the reads that disclose data: values revealed
// (reveal=true, a key's value), snapshot downloads, MONITOR through the
// live feed, all in the POSTs' format and without a token. Before, only
// POSTs were recorded.
func TestReadsAndRefusalsAudited(t *testing.T) {
	g := startGateway(t, true, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	g.rdb.Set(ctx, "k", "v", 0)
	type want struct {
		method, path, role, action, parameter, outcome string
		status                                         int
	}
	var wants []want
	get := func(path, token string, status int, w want) {
		t.Helper()
		if r := g.do(t, "GET", path, token, ""); r.status != status {
			t.Fatalf("GET %s: %d %s, want %d", path, r.status, r.body, status)
		}
		wants = append(wants, w)
	}
	get("/api/info", "", 401, want{"GET", "/api/info", "none", "", "", "refused", 401})
	get("/api/info", "not-a-token-0123456789", 401, want{"GET", "/api/info", "none", "", "", "refused", 401})
	get("/api/audit", viewerTok, 403, want{"GET", "/api/audit", "viewer", "", "", "refused", 403})
	get("/api/keys?reveal=true&match=k*", viewerTok, 403, want{"GET", "/api/keys", "viewer", "reveal", "k*", "refused", 403})
	get("/api/keys?reveal=true&match=k*", operatorTok, 200, want{"GET", "/api/keys", "operator", "reveal", "k*", "ok", 200})
	get("/api/keys/k", operatorTok, 200, want{"GET", "/api/keys/{key}", "operator", "reveal", "k", "ok", 200})
	get("/api/replication/snapshot", operatorTok, 403, want{"GET", "/api/replication/snapshot", "operator", "snapshot", "", "refused", 403})
	get("/api/replication/snapshot", adminTok, 200, want{"GET", "/api/replication/snapshot", "admin", "snapshot", "", "ok", 200})
	// Not audited: reads that disclose no value.
	for _, path := range []string{"/api/info", "/api/keys?match=k*", "/api/keys/k"} {
		if r := g.do(t, "GET", path, viewerTok, ""); r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	// MONITOR through the live feed, refused and served.
	dial := func(token string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, strings.Replace(g.url, "http", "ws", 1)+"/api/live?monitor=true",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	}
	if _, res, err := dial(viewerTok); err == nil || res.StatusCode != 403 {
		t.Fatalf("viewer monitor: %v %v", err, res)
	}
	wants = append(wants, want{"GET", "/api/live", "viewer", "monitor", "", "refused", 403})
	c, _, err := dial(adminTok)
	if err != nil {
		t.Fatal(err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	wants = append(wants, want{"GET", "/api/live", "admin", "monitor", "", "ok", 200})
	// A browser request from another origin (checked before the token).
	req, _ := http.NewRequestWithContext(ctx, "GET", g.url+"/api/info", nil)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Authorization", "Bearer "+adminTok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("foreign origin: %d", res.StatusCode)
	}
	wants = append(wants, want{"GET", "/api/info", "none", "", "", "refused", 403})

	lines := auditLines(t, g.audit)
	if len(lines) != len(wants) {
		t.Fatalf("%d audit lines, want %d: %v", len(lines), len(wants), lines)
	}
	str := func(v any) string { s, _ := v.(string); return s }
	for i, w := range wants {
		l := lines[i]
		got := want{str(l["method"]), str(l["path"]), str(l["role"]), str(l["action"]), str(l["parameter"]), str(l["outcome"]), int(l["status"].(float64))}
		if got != w || l["time"] == nil {
			t.Errorf("audit %d: %v, want %+v", i, l, w)
		}
		who := str(l["who"])
		if (w.role == "none") != (who == "unauthenticated") || (w.role != "none" && !strings.HasPrefix(who, "token:")) {
			t.Errorf("audit %d: who %q for role %s", i, who, w.role)
		}
		if w.outcome == "refused" && str(l["error"]) == "" {
			t.Errorf("audit %d: a refusal without its reason: %v", i, l)
		}
	}
	b, _ := os.ReadFile(g.audit)
	for _, secret := range []string{viewerTok, operatorTok, adminTok, "not-a-token-0123456789", "s3cret-pass"} {
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("a credential in the audit file: %s", b)
		}
	}
}

// TestLiveSectionsAndFieldDeltas: sections= narrows the overview and the
// deltas to the INFO sections named (an unknown one is a 400 naming the
// target's), deltas=fields sends only the pairs of a cmdstat entry that
// moved, and without them the feed is the original one (whole entries,
// every section).
func TestLiveSectionsAndFieldDeltas(t *testing.T) {
	g := startGateway(t, true, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	dial := func(query string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, strings.Replace(g.url, "http", "ws", 1)+"/api/live"+query,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + viewerTok}}})
	}
	for _, q := range []string{"?sections=commandstats,nosuchsection", "?sections=", "?deltas=some"} {
		_, res, err := dial(q)
		if err == nil || res.StatusCode != 400 {
			t.Fatalf("%s: %v %v", q, err, res)
		}
		if b, _ := io.ReadAll(res.Body); q == "?sections=commandstats,nosuchsection" && (!strings.Contains(string(b), `\"nosuchsection\" is not an INFO section`) || !strings.Contains(string(b), "keyspace")) {
			t.Fatalf("%s: %s", q, b)
		}
	}
	frame := func(c *websocket.Conn, want string) map[string]any {
		t.Helper()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read %s: %v", want, err)
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			if m["type"] == want {
				return m
			}
		}
	}
	// Keyspace is a section even on an empty server (its header alone).
	g.rdb.FlushAll(ctx)
	narrow, _, err := dial("?sections=Commandstats,keyspace&deltas=fields&keyspace=false&interval_ms=100")
	if err != nil {
		t.Fatal(err)
	}
	defer narrow.CloseNow()
	whole, _, err := dial("?keyspace=false&interval_ms=100")
	if err != nil {
		t.Fatal(err)
	}
	defer whole.CloseNow()
	ov := frame(narrow, "overview")
	if info := ov["info"].(map[string]any); len(info) != 1 || info["commandstats"] == nil {
		t.Fatalf("narrow overview info: %v", info)
	}
	if info := frame(whole, "overview")["info"].(map[string]any); info["server"] == nil || info["memory"] == nil {
		t.Fatalf("whole overview info: %v", info)
	}
	// The narrow feed: nothing of the other sections; cmdstat_set whole
	// when it is new, then by its moved pairs only (calls, usec), never the
	// counters that stayed (failed_calls, rejected_calls).
	setDelta := func() map[string]any {
		t.Helper()
		for {
			d := frame(narrow, "info_delta")
			changed := d["changed"].(map[string]any)
			for k := range changed {
				if !strings.HasPrefix(k, "commandstats.") && !strings.HasPrefix(k, "keyspace.") {
					t.Fatalf("narrow delta outside its sections: %v", d)
				}
			}
			if set, ok := changed["commandstats.cmdstat_set"].(map[string]any); ok {
				return set
			}
		}
	}
	g.rdb.Set(ctx, "fd:k", "v", 0)
	calls := setDelta()["calls"].(float64)
	g.rdb.Set(ctx, "fd:k", "w", 0)
	if set := setDelta(); set["calls"] != calls+1 || set["usec"] == nil || set["failed_calls"] != nil || set["rejected_calls"] != nil {
		t.Fatalf("field delta of cmdstat_set after %v calls: %v", calls, set)
	}
	// The original feed: whole entries.
	for {
		d := frame(whole, "info_delta")
		if set, ok := d["changed"].(map[string]any)["commandstats.cmdstat_set"].(map[string]any); ok {
			if set["failed_calls"] == nil || set["rejected_calls"] == nil {
				t.Fatalf("whole delta of cmdstat_set: %v", set)
			}
			break
		}
	}
}
