package resp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/mcpkit/mcpkit/pkg/respadmin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mgmt is the resp plugin with a management_url at a real gateway
// (pkg/respadmin, served by httptest) in front of a disposable redis-server.
type mgmt struct {
	*env
	redis    *redistest.Server
	gw       *httptest.Server
	requests atomic.Int64 // requests that reached the gateway
	root     string       // file_root
}

const mgmtToken = "operator-token-for-the-plugin-tests"

func startMgmt(t *testing.T, limits string, opts func(*respadmin.Options)) *mgmt {
	t.Helper()
	rs := redistest.Start(t, redistest.Options{Config: []string{"notify-keyspace-events KEA"}})
	toks, err := respadmin.ParseTokens([]byte("admin " + mgmtToken))
	if err != nil {
		t.Fatal(err)
	}
	o := respadmin.Options{Target: resp.DialOptions{Addr: rs.Addr}, Tokens: toks, AuditFile: filepath.Join(t.TempDir(), "audit"),
		ReplicationExport: true, Reveal: respadmin.RoleViewer}
	if opts != nil {
		opts(&o)
	}
	srv, err := respadmin.New(o)
	if err != nil {
		t.Fatal(err)
	}
	m := &mgmt{redis: rs, root: t.TempDir()}
	m.gw = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.requests.Add(1)
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		m.gw.Close()
	})
	tokFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokFile, []byte(mgmtToken+"\n"), 0o600)
	m.env = connect(t, fmt.Sprintf(`{"targets": {"local": {"host": "127.0.0.1", "port": %d, "management_url": %q, "management_token_file": %q}}, "file_root": %q}`,
		rs.Port, m.gw.URL, tokFile, m.root), limits)
	return m
}

func (m *mgmt) manage(args map[string]any) *mcp.CallToolResult {
	m.t.Helper()
	return m.call(nil, "resp_management", args)
}

func TestManagementRequests(t *testing.T) {
	m := startMgmt(t, "", nil)
	m.exec(cmd("SET", "k1", "v1"))
	r := decode[ManagementReply](t, m.manage(map[string]any{"path": "/api/keys?count=20&reveal=true"}))
	if r.Status != 200 || r.Body.Encoding != "json" || !strings.HasPrefix(r.ContentType, "application/json") || r.Target != "local" {
		t.Fatalf("keys: %+v", r)
	}
	b, _ := json.Marshal(r.Body.Value)
	if !strings.Contains(string(b), `"key":"k1"`) || !strings.Contains(string(b), `"value":"v1"`) {
		t.Fatalf("keys body: %s", b)
	}
	met := decode[ManagementReply](t, m.manage(map[string]any{"path": "/metrics"}))
	if met.Body.Encoding != "text" || !strings.Contains(met.Body.Value.(string), "redis_up 1") {
		t.Fatalf("metrics: %+v", met)
	}
	// A refusal of the API is a real response, marked isError.
	res := m.manage(map[string]any{"method": "POST", "path": "/api/storage/action", "body": map[string]any{"action": "flushdb"}})
	rr := decode[ManagementReply](t, res)
	if !res.IsError || rr.Status != 409 || !rr.HTTPError || rr.Body.Encoding != "json" || rr.Warning != "" {
		t.Fatalf("unconfirmed flushdb: %v %+v", res.IsError, rr)
	}
	// A 5xx answer to a POST: its effect is unknown, and the reply says so.
	res = m.manage(map[string]any{"method": "POST", "path": "/api/config", "body": map[string]any{"parameter": "no-such-parameter", "value": "1"}})
	if rr := decode[ManagementReply](t, res); !res.IsError || rr.Status != 502 || !strings.Contains(rr.Warning, "unknown") {
		t.Fatalf("5xx POST: %+v", rr)
	}
	res = m.manage(map[string]any{"method": "POST", "path": "/api/storage/action", "body": map[string]any{"action": "flushdb", "confirmed": true}})
	if rr := decode[ManagementReply](t, res); res.IsError || rr.Status != 200 {
		t.Fatalf("flushdb: %+v", rr)
	}
	if got := string(m.exec(cmd("DBSIZE")).Replies[0].Value); got != `"0"` {
		t.Fatalf("dbsize %v after flushdb", got)
	}
	// The request carried the configured token: the audit names a token identity.
	audit := decode[ManagementReply](t, m.manage(map[string]any{"path": "/api/audit"}))
	if b, _ := json.Marshal(audit.Body.Value); !strings.Contains(string(b), `"who":"token:`) || strings.Contains(string(b), mgmtToken) {
		t.Fatalf("audit: %s", b)
	}
}

func TestManagementRefusedBeforeSending(t *testing.T) {
	m := startMgmt(t, "", nil)
	for _, c := range []struct {
		args    map[string]any
		pointer string
	}{
		{map[string]any{"path": "http://127.0.0.1:1/api/info"}, "/path"},
		{map[string]any{"path": "//evil.example/api/info"}, "/path"},
		{map[string]any{"path": "/api/../metrics"}, "/path"},
		{map[string]any{"path": "/api/%2e%2e/metrics"}, "/path"},
		{map[string]any{"path": "/api/info#frag"}, "/path"},
		{map[string]any{"path": "/api\\info"}, "/path"},
		{map[string]any{"path": "/debug/pprof"}, "/path"},
		{map[string]any{"path": "/metricsx"}, "/path"},
		{map[string]any{"path": "api/info"}, "/path"},
		{map[string]any{"path": "/api/info", "body": map[string]any{"a": 1}}, "/body"},
		{map[string]any{"path": "/api/info", "target": "nope"}, "/target"},
		{map[string]any{"method": "POST", "path": "/api/replication/snapshot", "download_path": "x"}, "/download_path"},
		{map[string]any{"path": "/api/replication/snapshot", "download_path": "../x"}, "/download_path"},
		{map[string]any{"path": "/api/replication/snapshot", "download_path": "/etc/x"}, "/download_path"},
		{map[string]any{"path": "/api/replication/snapshot", "download_path": "x", "max_download_bytes": mcpcore.GiB + 1}, "/max_download_bytes"},
		{map[string]any{"path": "/api/replication/snapshot", "download_path": "nodir/x"}, "/download_path"},
	} {
		r := failure(t, m.manage(c.args), mcpcore.KindBadParams)
		if r.Error.Path != c.pointer {
			t.Errorf("%v: path %q, want %q (%s)", c.args, r.Error.Path, c.pointer, r.Error.Message)
		}
	}
	if n := m.requests.Load(); n != 0 {
		t.Fatalf("%d refused requests reached the gateway", n)
	}
	// A redirect (ServeMux cleans //) is not followed.
	r := failure(t, m.manage(map[string]any{"path": "/api//info"}), KindRefused)
	if !strings.Contains(r.Error.Message, "redirect") || m.requests.Load() != 1 {
		t.Fatalf("redirect: %s (%d requests)", r.Error.Message, m.requests.Load())
	}
}

// faultServer accepts HTTP connections, reads the request head, then
// answers with reply (maybe nothing) and closes: faults no real gateway
// produces on demand.
func faultServer(t *testing.T, reply string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			req, err := http.ReadRequest(br)
			if err == nil {
				req.Body.Close()
				c.Write([]byte(reply))
			}
			c.Close()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return "http://" + l.Addr().String()
}

func TestManagementFaults(t *testing.T) {
	root := t.TempDir()
	dropped := faultServer(t, "")
	short := faultServer(t, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\nonly a part")
	e := connect(t, fmt.Sprintf(`{"default_target": "dropped", "targets": {"dropped": {"management_url": %q}, "short": {"management_url": %q}, "down": {"management_url": "http://127.0.0.1:1"}}, "file_root": %q}`, dropped, short, root), "")
	// A POST whose connection drops after sending: unknown effect.
	r := failure(t, e.call(nil, "resp_management", map[string]any{"method": "POST", "path": "/api/storage/action", "body": map[string]any{"action": "save"}}), KindUnknownEffect)
	if !strings.Contains(r.Error.Message, "unknown") {
		t.Fatalf("unknown effect: %s", r.Error.Message)
	}
	// A GET the same way: no such warning.
	failure(t, e.call(nil, "resp_management", map[string]any{"path": "/api/info"}), KindConnectionLost)
	// Nothing listening: not sent, so no warning either, POST included.
	failure(t, e.call(nil, "resp_management", map[string]any{"target": "down", "method": "POST", "path": "/api/storage/action", "body": map[string]any{"action": "save"}}), KindConnection)
	// A download cut short: its partial file is removed.
	failure(t, e.call(nil, "resp_management", map[string]any{"target": "short", "path": "/api/replication/snapshot", "download_path": "cut.rdb"}), KindConnectionLost)
	if _, err := os.Stat(filepath.Join(root, "cut.rdb")); !os.IsNotExist(err) {
		t.Fatalf("partial file left: %v", err)
	}
}

func TestManagementDownloads(t *testing.T) {
	m := startMgmt(t, "", nil)
	m.exec(cmd("SET", "snap", "shot"))
	dl := func(path string, extra map[string]any) *mcp.CallToolResult {
		args := map[string]any{"path": "/api/replication/snapshot", "download_path": path}
		for k, v := range extra {
			args[k] = v
		}
		return m.manage(args)
	}
	res := dl("snap.rdb", nil)
	r := decode[ManagementReply](t, res)
	if res.IsError || r.Download == nil || r.Body != nil {
		t.Fatalf("download: %+v", r)
	}
	data, err := os.ReadFile(filepath.Join(m.root, "snap.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if r.Download.Path != filepath.Join(m.root, "snap.rdb") || r.Download.Bytes != int64(len(data)) || r.Download.SHA256 != hex.EncodeToString(sum[:]) || !strings.HasPrefix(string(data), "REDIS") {
		t.Fatalf("download %+v vs %d bytes", r.Download, len(data))
	}
	if fi, _ := os.Stat(r.Download.Path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	// Existing files are refused; so are symlinks, even to inside the root.
	failure(t, dl("snap.rdb", nil), mcpcore.KindBadParams)
	os.Mkdir(filepath.Join(m.root, "sub"), 0o700)
	os.Symlink(filepath.Join(m.root, "sub"), filepath.Join(m.root, "link"))
	os.Symlink(filepath.Join(m.root, "sub", "target.rdb"), filepath.Join(m.root, "sub", "dangling.rdb"))
	for _, p := range []string{"link/x.rdb", "sub/dangling.rdb", filepath.Join(m.root, "link", "y.rdb")} {
		if r := failure(t, dl(p, nil), mcpcore.KindBadParams); r.Error.Path != "/download_path" {
			t.Fatalf("%s: %+v", p, r)
		}
	}
	if _, err := os.Stat(filepath.Join(m.root, "sub", "target.rdb")); !os.IsNotExist(err) {
		t.Fatal("a download went through a symlink")
	}
	// Absolute paths beneath the root, as configured or canonical.
	if res := dl(filepath.Join(m.root, "sub", "abs.rdb"), nil); res.IsError {
		t.Fatalf("absolute: %v", res.StructuredContent)
	}
	// Over max_download_bytes: a limit error, no file left.
	r2 := failure(t, dl("small.rdb", map[string]any{"max_download_bytes": 10}), mcpcore.KindLimit)
	if _, err := os.Stat(filepath.Join(m.root, "small.rdb")); !os.IsNotExist(err) || !strings.Contains(r2.Error.Message, "download_bytes") {
		t.Fatalf("small: %v %s", err, r2.Error.Message)
	}
	// A refused download (role, disabled) returns the response, no file.
	m2 := startMgmt(t, "", func(o *respadmin.Options) { o.ReplicationExport = false })
	res = m2.manage(map[string]any{"path": "/api/replication/snapshot", "download_path": "off.rdb"})
	if r := decode[ManagementReply](t, res); !res.IsError || r.Status != 403 || r.Download != nil {
		t.Fatalf("disabled: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(m2.root, "off.rdb")); !os.IsNotExist(err) {
		t.Fatal("file created for a refused download")
	}
}

func TestManagementLive(t *testing.T) {
	m := startMgmt(t, `{"max_live_handles": 2, "session_idle": "1s"}`, nil)
	live := func(args map[string]any) *mcp.CallToolResult {
		t.Helper()
		return m.call(nil, "resp_management_live", args)
	}
	open := decode[LiveInfo](t, live(map[string]any{"action": "open", "query": "interval_ms=200"}))
	if open.Handle == "" || open.Overview == nil || open.Overview.Encoding != "json" {
		t.Fatalf("open: %+v", open)
	}
	if b, _ := json.Marshal(open.Overview.Value); !strings.Contains(string(b), `"type":"overview"`) {
		t.Fatalf("overview: %s", b)
	}
	m.exec(cmd("SET", "lk", "1"))
	var frames []string
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(strings.Join(frames, "\n"), `"channel":"__keyspace@0__:lk"`) && time.Now().Before(deadline) {
		r := decode[LiveReceiveReply](t, live(map[string]any{"action": "receive", "handle": open.Handle, "max_frames": 4, "wait_ms": 2000}))
		for _, f := range r.Frames {
			b, _ := json.Marshal(f.Value)
			frames = append(frames, string(b))
		}
		if len(r.Frames) > 4 || r.Closed {
			t.Fatalf("receive: %+v", r)
		}
	}
	// open returned the overview: receive does not repeat it.
	if strings.Contains(strings.Join(frames, "\n"), `"type":"overview"`) || !strings.Contains(strings.Join(frames, "\n"), `"channel":"__keyspace@0__:lk"`) {
		t.Fatalf("frames: %v", frames)
	}
	if r := decode[LiveReceiveReply](t, live(map[string]any{"action": "receive", "handle": open.Handle, "include_overview": true, "wait_ms": 0})); r.Overview == nil {
		t.Fatal("overview not retained")
	}
	// The handle limit (2), apart from RESP sessions.
	second := decode[LiveInfo](t, live(map[string]any{"action": "open"}))
	failure(t, live(map[string]any{"action": "open"}), mcpcore.KindLimit)
	if l := decode[LiveListReply](t, live(map[string]any{"action": "list"})); len(l.Handles) != 2 {
		t.Fatalf("list: %+v", l)
	}
	// A receive longer than the idle limit keeps its handle; then idle expiry closes it.
	if r := decode[LiveReceiveReply](t, live(map[string]any{"action": "receive", "handle": second.Handle, "wait_ms": 2500, "max_frames": 1024})); r.Closed {
		t.Fatalf("busy handle closed: %+v", r)
	}
	live(map[string]any{"action": "receive", "handle": second.Handle, "wait_ms": 0, "max_frames": 1024})
	time.Sleep(1600 * time.Millisecond)
	failure(t, live(map[string]any{"action": "receive", "handle": second.Handle, "wait_ms": 0}), KindSessionNotFound)
	// close; then the handle is gone.
	third := decode[LiveInfo](t, live(map[string]any{"action": "open"}))
	live(map[string]any{"action": "close", "handle": third.Handle})
	failure(t, live(map[string]any{"action": "receive", "handle": third.Handle}), KindSessionNotFound)
	// Cancelling a receive closes its handle.
	fourth := decode[LiveInfo](t, live(map[string]any{"action": "open", "query": "keyspace=false&interval_ms=60000"}))
	live(map[string]any{"action": "receive", "handle": fourth.Handle, "wait_ms": 0})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := m.cs.CallTool(ctx, &mcp.CallToolParams{Name: "resp_management_live", Arguments: map[string]any{"action": "receive", "handle": fourth.Handle, "wait_ms": 60000}})
	if err == nil {
		t.Fatal("cancelled receive returned")
	}
	eventually(t, func() bool {
		res := live(map[string]any{"action": "receive", "handle": fourth.Handle, "wait_ms": 0})
		return res.IsError && decode[errReply](t, res).Error.Kind == KindSessionNotFound
	})
	// Monitor needs admin on the gateway: this token is admin, so it opens.
	if r := live(map[string]any{"action": "open", "query": "monitor=true"}); r.IsError {
		t.Fatalf("monitor: %v", r.StructuredContent)
	}
}

// TestManagementLiveShape: what the live feed costs an agent. The first
// receive does not repeat the overview open returned; sections narrow the
// overview and the deltas (an unknown one is a bad_params on /sections);
// a delta carries the moved counters of a cmdstat entry, not the whole
// entry; max_bytes takes small pages, and a frame larger than max_bytes
// fails the receive with kind limit naming its size and stays queued.
func TestManagementLiveShape(t *testing.T) {
	m := startMgmt(t, "", nil)
	live := func(args map[string]any) *mcp.CallToolResult {
		t.Helper()
		return m.call(nil, "resp_management_live", args)
	}
	if r := failure(t, live(map[string]any{"action": "open", "sections": []string{"commandstats", "nosuchsection"}}), mcpcore.KindBadParams); !strings.Contains(fmt.Sprint(r.Error), "/sections") || !strings.Contains(fmt.Sprint(r.Error), "nosuchsection") {
		t.Fatalf("unknown section: %+v", r)
	}
	if r := failure(t, live(map[string]any{"action": "open", "sections": []string{"stats;x"}}), mcpcore.KindBadParams); !strings.Contains(fmt.Sprint(r.Error), "/sections/0") {
		t.Fatalf("bad section name: %+v", r)
	}
	m.exec(cmd("SET", "shape:k", "0"))
	open := decode[LiveInfo](t, live(map[string]any{"action": "open", "sections": []string{"commandstats"}, "query": "keyspace=false&interval_ms=100"}))
	var ov struct {
		Type string                    `json:"type"`
		Info map[string]map[string]any `json:"info"`
	}
	if b, _ := json.Marshal(open.Overview.Value); json.Unmarshal(b, &ov) != nil || ov.Type != "overview" || len(ov.Info) != 1 || ov.Info["commandstats"]["cmdstat_set"] == nil {
		t.Fatalf("overview: %s", b)
	}
	m.exec(cmd("SET", "shape:k", "1"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := decode[LiveReceiveReply](t, live(map[string]any{"action": "receive", "handle": open.Handle, "max_bytes": 1024, "wait_ms": 2000}))
		var set map[string]any
		for _, f := range r.Frames {
			var d struct {
				Type    string                    `json:"type"`
				Changed map[string]map[string]any `json:"changed"`
			}
			b, _ := json.Marshal(f.Value)
			if json.Unmarshal(b, &d) != nil || d.Type != "info_delta" || r.Bytes > 1024 {
				t.Fatalf("frame %s (receive of %d bytes)", b, r.Bytes)
			}
			for k := range d.Changed {
				if !strings.HasPrefix(k, "commandstats.") {
					t.Fatalf("delta outside commandstats: %s", b)
				}
			}
			if c, ok := d.Changed["commandstats.cmdstat_set"]; ok {
				set = c
			}
		}
		if set != nil {
			if set["calls"] == nil || set["usec"] == nil || set["failed_calls"] != nil || set["rejected_calls"] != nil {
				t.Fatalf("cmdstat_set delta: %v", set)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no cmdstat_set delta")
		}
	}
	if r := decode[LiveReceiveReply](t, live(map[string]any{"action": "receive", "handle": open.Handle, "include_overview": true, "wait_ms": 0})); r.Overview == nil {
		t.Fatal("overview not retained")
	}
	failure(t, live(map[string]any{"action": "receive", "handle": open.Handle, "max_bytes": 1023}), mcpcore.KindBadParams)

	// A keyspace frame of a 3000-byte key does not fit in max_bytes 1024:
	// the receive fails naming its size, and the frame stays queued.
	big := decode[LiveInfo](t, live(map[string]any{"action": "open", "query": "interval_ms=60000"}))
	key := strings.Repeat("k", 3000)
	m.exec(cmd("SET", key, "v"))
	var refusal errReply
	for deadline := time.Now().Add(10 * time.Second); ; {
		res := live(map[string]any{"action": "receive", "handle": big.Handle, "max_bytes": 1024, "wait_ms": 2000})
		if res.IsError {
			refusal = failure(t, res, mcpcore.KindLimit)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no refusal")
		}
	}
	if b, _ := json.Marshal(refusal); !strings.Contains(string(b), "max_bytes") || !strings.Contains(string(b), "stays queued") {
		t.Fatalf("refusal: %s", b)
	}
	r := decode[LiveReceiveReply](t, live(map[string]any{"action": "receive", "handle": big.Handle, "max_bytes": 8192, "max_frames": 1, "wait_ms": 0}))
	if b, _ := json.Marshal(r.Frames); len(r.Frames) != 1 || !strings.Contains(string(b), key) || r.Bytes <= 1024 || r.Bytes > 8192 {
		t.Fatalf("the frame after the refusal: %d frames, %d bytes", len(r.Frames), r.Bytes)
	}
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5s")
}
