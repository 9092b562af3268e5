package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/plugins/diag"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// roundRobin is the test's load balancer: each request goes to the next
// live backend in turn, whatever session it belongs to.
type roundRobin struct {
	mu      sync.Mutex
	next    int
	proxies []*httputil.ReverseProxy
	live    []bool
	served  []int // requests each backend was given
}

func newRoundRobin(bases []string) *roundRobin {
	rr := &roundRobin{live: make([]bool, len(bases)), served: make([]int, len(bases))}
	for i, b := range bases {
		u, _ := url.Parse(b)
		p := httputil.NewSingleHostReverseProxy(u)
		p.FlushInterval = -1 // SSE streams pass through at once
		rr.proxies = append(rr.proxies, p)
		rr.live[i] = true
	}
	return rr
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rr.mu.Lock()
	i := rr.next
	for !rr.live[i] {
		i = (i + 1) % len(rr.live)
	}
	rr.next = (i + 1) % len(rr.live)
	rr.served[i]++
	rr.mu.Unlock()
	rr.proxies[i].ServeHTTP(w, r)
}

// drop takes backend i out of the rotation, as a load balancer does when
// its health check fails.
func (rr *roundRobin) drop(i int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.live[i] = false
}

// counts returns how many requests each backend was given so far.
func (rr *roundRobin) counts() []int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]int(nil), rr.served...)
}

// scaleConfig is deploy/scale/mcpkit.json with this machine's Redis,
// PostgreSQL (pgAddr: its stores' URLs keep their user, database and
// store names), secret files and a key prefix of the test's own in place
// of the deployment's.
func scaleConfig(t *testing.T, redisAddr, pgAddr, passwordFile, tokensFile string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "scale", "mcpkit.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	actions := cfg["plugins"].(map[string]any)["actions"].(map[string]any)["config"].(map[string]any)
	redis := actions["redis"].(map[string]any)
	redis["addr"], redis["password_file"], redis["prefix"] = redisAddr, passwordFile, "e2e-scale:"
	store := cfg["plugins"].(map[string]any)["store"].(map[string]any)["config"].(map[string]any)
	for _, c := range []map[string]any{actions, store} {
		key := "data_path"
		if c["path"] != nil {
			key = "path"
		}
		u, err := url.Parse(c[key].(string))
		if err != nil {
			t.Fatal(err)
		}
		u.Host = pgAddr
		c[key] = u.String()
	}
	cfg["http"].(map[string]any)["bearer_tokens_file"] = tokensFile
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, string(out))
}

// TestScaleOutRoundRobin: three `mcpkit serve` processes with
// deploy/scale/mcpkit.json share one Redis and one PostgreSQL database
// (its password from the password file PGPASSFILE names, as compose.yaml
// gives it) behind a round-robin proxy that sends each request to the next
// instance, a harder case than the deployment's pinning. One MCP client's
// legacy session and its calls work whichever instance serves each
// request, a document written through one instance is read through the
// others, a token is accepted everywhere and its absence refused
// everywhere, the HTTP API's rate limit counts across instances, and after
// one instance is killed (and dropped from the rotation) the same session
// carries on.
func TestScaleOutRoundRobin(t *testing.T) {
	t.Parallel()
	const password, token, pgPassword = "e2e-scale-redis-pw", "e2e-scale-token-93c1d7", "e2e-scale-pg-pw"
	srv := redistest.Start(t, redistest.Options{Password: password})
	pg := pgtest.Start(t, pgtest.Options{Password: pgPassword})
	pgAddr := "127.0.0.1:" + strconv.Itoa(pg.Port)
	dir := t.TempDir()
	pwFile, tokensFile, pgpass := filepath.Join(dir, "redis-password"), filepath.Join(dir, "tokens"), filepath.Join(dir, "pgpass")
	for f, s := range map[string]string{pwFile: password, tokensFile: token, pgpass: pgAddr + ":" + pgtest.Database + ":" + pgtest.User + ":" + pgPassword} {
		if err := os.WriteFile(f, []byte(s+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := scaleConfig(t, srv.Addr, pgAddr, pwFile, tokensFile)
	var procs []*proc
	for range 3 { // at once, on the fresh database
		procs = append(procs, startBinaryEnv(t, []string{"PGPASSFILE=" + pgpass}, binary(t), nil, nil,
			"serve", "--http", "127.0.0.1:0", "--log-format", "json", "--config", cfg))
	}
	var instances []*httpProc
	var bases []string
	for _, p := range procs {
		hp := awaitListening(t, p)
		instances = append(instances, hp)
		bases = append(bases, hp.base)
	}
	rr := newRoundRobin(bases)
	lb := httptest.NewServer(rr)
	t.Cleanup(lb.Close) // after the clients' sessions close (cleanups run last first)
	front := &httpProc{base: lb.URL}

	for range 3 {
		resp, err := http.Post(lb.URL+"/mcp", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("/mcp without a token: HTTP %d, want 401", resp.StatusCode)
		}
	}

	// One legacy session, every request to the next instance; a modern
	// client alike.
	cs := front.connect(t, legacyEra, &http.Client{Transport: bearer{token: token}})
	modern := front.connect(t, modernEra, &http.Client{Transport: bearer{token: token}})
	before := rr.counts()
	for i := range 6 {
		for _, s := range []*mcp.ClientSession{cs, modern} {
			msg := fmt.Sprintf("call %d", i)
			if got := decode[diag.EchoReply](t, callTool(t, s, "diag_echo", map[string]any{"message": msg})); got.Message != msg {
				t.Fatalf("diag_echo = %+v", got)
			}
		}
	}
	for i, n := range rr.counts() {
		if n-before[i] < 3 {
			t.Fatalf("instance %d served %d of the calls (counts %v → %v): not spread", i, n-before[i], before, rr.counts())
		}
	}

	// The store plugin's documents are one set: written through one
	// instance, read at once through each of the others.
	id := decode[struct{ ID int64 }](t, callTool(t, cs, "store_insert_auto", map[string]any{"collection": "notes", "doc": map[string]any{"text": "shared"}})).ID
	for i := range 3 {
		if got := decode[struct{ Doc struct{ Text string } }](t, callTool(t, cs, "store_get", map[string]any{"collection": "notes", "id": id})); got.Doc.Text != "shared" {
			t.Fatalf("read %d of the document written through another instance: %+v", i, got)
		}
	}

	// PubSub: a message posted through any instance reaches a legacy
	// client's standalone GET stream on whichever instance holds it, by
	// the log level the client set through whichever instance served that.
	_, logs := listenLogs(t, front, token)
	awaitBroadcast(t, cs, logs, "before the kill")

	// The API's unauthenticated limit (20 a window per client) counts
	// across instances: the 21st request in the window, whichever instance
	// serves it, is refused.
	for i := 1; i <= 21; i++ {
		code, body := httpDo(t, "GET", lb.URL+"/api/status", "")
		if i <= 20 && code != http.StatusOK || i == 21 && code != http.StatusTooManyRequests {
			t.Fatalf("request %d of the window: HTTP %d %s", i, code, body)
		}
	}

	// Kill one instance; the balancer drops it and the session carries on.
	instances[1].cmd.Process.Kill()
	<-instances[1].done
	rr.drop(1)
	before = rr.counts()
	for i := range 4 {
		msg := fmt.Sprintf("after the kill %d", i)
		if got := decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", map[string]any{"message": msg})); got.Message != msg {
			t.Fatalf("diag_echo = %+v", got)
		}
	}
	if c := rr.counts(); c[0]-before[0] < 2 || c[2]-before[2] < 2 {
		t.Fatalf("after the kill the survivors served %v → %v", before, c)
	}
	// The listening client's GET stream, if it was on the killed instance,
	// reconnects to a survivor, which resumes the session with its level.
	awaitBroadcast(t, cs, logs, "after the kill")
}

// awaitBroadcast posts text on the channel "scale" through cs (the
// example app's message-post) until logs carries it: the listener's GET
// stream may still be opening, or reconnecting.
func awaitBroadcast(t *testing.T, cs *mcp.ClientSession, logs chan logged, text string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		callTool(t, cs, "actions_message-post", map[string]any{"channel": "scale", "text": text, "author": "ann"})
		wait := time.After(500 * time.Millisecond)
	drain:
		for {
			select {
			case l := <-logs:
				if l.channel == "scale" && l.text == text {
					return
				}
			case <-wait:
				break drain
			case <-deadline:
				t.Fatalf("the broadcast %q never reached the listening client", text)
			}
		}
	}
}
