package test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/testcerts"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/plugins/diag"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioFraming: an oversized frame, a malformed line, blank and CRLF
// lines, each followed by a ping that succeeds on the same session.
func TestStdioFraming(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, `{"limits": {"frame_bytes": 65536}}`)
			sp := startStdio(t, "--plugins", "diag", "--config", cfg)
			cs := sp.connect(t, era)

			big := fmt.Sprintf(`{"jsonrpc":"2.0","id":"raw-big","method":"ping","params":{"pad":%q}}`+"\n", strings.Repeat("x", 1<<20))
			sp.Write([]byte(big))
			m := sp.rawResponse(t)
			if m["id"] != "raw-big" || errCode(m) != -32600 || !strings.Contains(errMessage(m), "frame_bytes") {
				t.Fatalf("oversized frame answered with %v", m)
			}
			ping(t, cs)

			sp.Write([]byte("{\"jsonrpc\": \"2.0\", \"id\": \n"))
			if m := sp.rawResponse(t); m["id"] != nil || errCode(m) != -32700 {
				t.Fatalf("malformed line answered with %v", m)
			}
			ping(t, cs)

			sp.Write([]byte("\n\r\n   \n"))
			ping(t, cs)
			if res := callTool(t, cs, "diag_echo", map[string]any{"message": "still here"}); resultText(res) != `{"message":"still here"}` {
				t.Fatalf("echo after framing errors = %q", resultText(res))
			}
		})
	}
}

// TestStdioDefaultFrameCap sends one line just over the default 64 MiB cap.
func TestStdioDefaultFrameCap(t *testing.T) {
	sp := startStdio(t)
	cs := sp.connect(t, legacyEra)
	head := `{"jsonrpc":"2.0","id":"raw-huge","method":"ping","params":{"pad":"`
	line := make([]byte, 0, 64<<20+128)
	line = append(line, head...)
	line = append(line, bytes.Repeat([]byte("y"), 64<<20-len(head))...)
	line = append(line, "\"}}\n"...)
	sp.Write(line)
	if m := sp.rawResponse(t); m["id"] != "raw-huge" || errCode(m) != -32600 {
		t.Fatalf("64 MiB frame answered with %v", m)
	}
	ping(t, cs)
}

// TestStdioEOF: closing stdin ends the process cleanly, with exit status 0.
func TestStdioEOF(t *testing.T) {
	sp := startStdio(t, "--plugins", "diag")
	cs := sp.connect(t, modernEra)
	ping(t, cs)
	sp.closeStdin()
	select {
	case <-sp.done:
		if sp.err != nil {
			t.Fatalf("exit after EOF: %v\n%s", sp.err, sp.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mcpkit still running 10s after EOF on stdin")
	}
	if !strings.Contains(sp.stderr.String(), "stdio session ended") || !strings.Contains(sp.stderr.String(), "msg=\"plugin closed\" plugin=diag") {
		t.Fatalf("stderr lacks the shutdown log:\n%s", sp.stderr.String())
	}
}

// TestHTTPFraming: an oversized body and a malformed body are refused, and
// the session goes on.
func TestHTTPFraming(t *testing.T) {
	hp := startHTTP(t, "--plugins", "diag", "--config", writeConfig(t, `{"limits": {"frame_bytes": 65536}}`))
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs := hp.connect(t, era, nil)
			post := func(body string) *http.Response {
				req, _ := http.NewRequestWithContext(t.Context(), "POST", hp.base+"/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", era)
				if id := cs.ID(); id != "" {
					req.Header.Set("Mcp-Session-Id", id)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp
			}
			if resp := post(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`); resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("oversized body: HTTP %d, want 413", resp.StatusCode)
			}
			pingHTTP(t, cs)
			if resp := post(`{"jsonrpc": "2.0", "id": `); resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("malformed body: HTTP %d, want 400", resp.StatusCode)
			}
			pingHTTP(t, cs)
		})
	}
}

// TestLargeResultPaging reads a 5 MiB result back in chunks, checks its
// SHA-256, releases it, and watches a second one expire.
func TestLargeResultPaging(t *testing.T) {
	const seed, n = 7, 5 * mcpcore.MiB * 3 / 4 // base64 makes it 5 MiB of JSON
	raw := diag.Blob(seed, n)
	sum := sha256.Sum256(raw)
	want, _ := json.Marshal(diag.BlobReply{Bytes: n, Seed: seed, SHA256: hex.EncodeToString(sum[:]), DataBase64: base64.StdEncoding.EncodeToString(raw)})
	wantSum := sha256.Sum256(want)
	for _, c := range clients() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs, _ := c.connect(t, "--plugins", "diag")
			ref := decode[map[string]any](t, callTool(t, cs, "diag_blob", map[string]any{"bytes": n, "seed": seed}))
			id, _ := ref["result_id"].(string)
			if id == "" || ref["read_tool"] != "diag_result" || ref["total_bytes"] != float64(len(want)) {
				t.Fatalf("reference = %v, want result_id, read_tool diag_result, total_bytes %d", ref, len(want))
			}
			h := sha256.New()
			offset, chunks := 0.0, 0
			for {
				page := decode[map[string]any](t, callTool(t, cs, "diag_result", map[string]any{"result_id": id, "offset": offset, "length": 256 * 1024}))
				data, err := base64.StdEncoding.DecodeString(page["data_base64"].(string))
				if err != nil || page["offset"] != offset || float64(len(data)) != page["bytes"] {
					t.Fatalf("page at %v: %v (err %v)", offset, page["offset"], err)
				}
				h.Write(data)
				chunks++
				next, more := page["next_offset"].(float64)
				if !more {
					if page["next_offset"] != nil {
						t.Fatalf("next_offset = %v", page["next_offset"])
					}
					break
				}
				offset = next
			}
			wantChunks := (len(want) + 256*1024 - 1) / (256 * 1024)
			if got := h.Sum(nil); !bytes.Equal(got, wantSum[:]) || chunks != wantChunks {
				t.Fatalf("reassembled SHA-256 %x in %d chunks, want %x in %d", got, chunks, wantSum, wantChunks)
			}
			if res := callTool(t, cs, "diag_result", map[string]any{"result_id": id, "release": true}); res.IsError {
				t.Fatalf("release: %s", resultText(res))
			}
			if res := callTool(t, cs, "diag_result", map[string]any{"result_id": id}); !res.IsError || !strings.Contains(resultText(res), "unknown, expired or released") {
				t.Fatalf("read after release = %q", resultText(res))
			}
			if st := info(t, cs).Results; st.Retained != 0 || st.Bytes != 0 {
				t.Fatalf("store after release = %+v", st)
			}
		})
	}
}

// TestResultExpiry: a retained result expires a fixed time after it was
// created, whatever reads happen in between.
func TestResultExpiry(t *testing.T) {
	cfg := writeConfig(t, `{"limits": {"result_expiry": "2s"}}`)
	for _, c := range clients() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs, _ := c.connect(t, "--plugins", "diag", "--config", cfg)
			created := time.Now()
			ref := decode[map[string]any](t, callTool(t, cs, "diag_blob", map[string]any{"bytes": 100_000}))
			id := ref["result_id"].(string)
			for time.Since(created) < time.Second {
				decode[map[string]any](t, callTool(t, cs, "diag_result", map[string]any{"result_id": id, "length": 10}))
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(time.Until(created.Add(2100 * time.Millisecond)))
			if res := callTool(t, cs, "diag_result", map[string]any{"result_id": id}); !res.IsError || !strings.Contains(resultText(res), "unknown, expired or released") {
				t.Fatalf("read after expiry = %q", resultText(res))
			}
			if st := info(t, cs).Results; st.Retained != 0 || st.Bytes != 0 {
				t.Fatalf("store after expiry = %+v", st)
			}
		})
	}
}

// TestConcurrencyLimit: with concurrent_tool_calls 2, a third call while two
// run fails explicitly, and succeeds once they are done.
func TestConcurrencyLimit(t *testing.T) {
	cfg := writeConfig(t, `{"limits": {"concurrent_tool_calls": 2}}`)
	for _, c := range clients() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs, _ := c.connect(t, "--plugins", "diag", "--config", cfg)
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() { decode[diag.SleepReply](t, callTool(t, cs, "diag_sleep", map[string]any{"ms": 3000})) })
			}
			eventually(t, 5*time.Second, "two calls in flight", func() bool { return info(t, cs).Calls.InFlight == 2 })
			res := callTool(t, cs, "diag_echo", map[string]any{"message": "third"})
			if !res.IsError || !strings.Contains(resultText(res), "concurrent_tool_calls (2)") {
				t.Fatalf("third call = %q, want the concurrent_tool_calls limit error", resultText(res))
			}
			wg.Wait()
			decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", map[string]any{"message": "after"}))
		})
	}
}

// TestTimeout: the tool timeout ends a call with an explicit error.
func TestTimeout(t *testing.T) {
	cfg := writeConfig(t, `{"limits": {"tool_timeout": "300ms"}}`)
	for _, c := range clients() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs, _ := c.connect(t, "--plugins", "diag", "--config", cfg)
			res := callTool(t, cs, "diag_sleep", map[string]any{"ms": 5000})
			if !res.IsError || !strings.Contains(resultText(res), "timed out after 300ms") {
				t.Fatalf("timeout = %q", resultText(res))
			}
			eventually(t, 5*time.Second, "one call timed out and none in flight", func() bool {
				in := info(t, cs)
				return in.Calls.TimedOut == 1 && in.Calls.InFlight == 0
			})
		})
	}
}

// TestCancellation: notifications/cancelled reaches the handler, whose
// context ends; the host counts the call as cancelled.
func TestCancellation(t *testing.T) {
	for _, c := range clients() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs, _ := c.connect(t, "--plugins", "diag")
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "diag_sleep", Arguments: map[string]any{"ms": 8000}})
				errc <- err
			}()
			eventually(t, 5*time.Second, "the call in flight", func() bool { return info(t, cs).Calls.InFlight == 1 })
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("cancelled call returned no error to the client")
			}
			eventually(t, 5*time.Second, "the handler to see the cancellation", func() bool {
				in := info(t, cs)
				return in.Calls.Cancelled == 1 && in.Calls.InFlight == 0
			})
			if took := time.Since(start); took > 6*time.Second {
				t.Fatalf("cancellation took %v: the handler ran to its end", took)
			}
		})
	}
}

// TestNoLeakedGoroutines: many HTTP sessions in both eras come and go; the
// server's goroutine count returns to where it started.
func TestNoLeakedGoroutines(t *testing.T) {
	hp := startHTTP(t, "--plugins", "diag")
	probe := hp.connect(t, modernEra, nil)
	base := info(t, probe).Goroutines
	for i := range 20 {
		cs := hp.connect(t, eras[i%2], nil)
		decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", map[string]any{"message": "x"}))
		ref := decode[map[string]any](t, callTool(t, cs, "diag_blob", map[string]any{"bytes": 100_000}))
		callTool(t, cs, "diag_result", map[string]any{"result_id": ref["result_id"], "release": true})
		cs.Close()
	}
	var last int
	eventually(t, 10*time.Second, "goroutines to return to the baseline", func() bool {
		// Idle keep-alive connections hold a server goroutine each; they are
		// the client's to drop, not a leak.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		last = info(t, probe).Goroutines
		return last <= base+2
	})
	t.Logf("goroutines: %d before, %d after 20 sessions", base, last)
}

// TestCommandLine checks subcommands, help and exit codes.
func TestCommandLine(t *testing.T) {
	run := func(args ...string) (string, int) {
		out, err := exec.Command(binary(t), args...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"version"}, 0, "mcpkit "},
		{[]string{"plugins"}, 0, "diag"},
		{[]string{"help"}, 0, "Examples:"},
		{[]string{}, 2, "Usage:"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"serve", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"serve", "--stdio", "--http", "127.0.0.1:0"}, 2, "choose one"},
		{[]string{"serve", "--log-format", "xml"}, 2, "--log-format"},
		{[]string{"serve", "--plugins", "nope"}, 3, `unknown plugin \"nope\"`},
		{[]string{"serve", "--config", writeConfig(t, `{"limits": {"tool_timeot": "1s"}}`)}, 3, `unknown field \"tool_timeot\"`},
		{[]string{"serve", "--http", "0.0.0.0:0"}, 3, "bearer_tokens_file"},
	} {
		out, code := run(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("mcpkit %v: exit %d, output %q; want exit %d and %q", tc.args, code, out, tc.code, tc.want)
		}
	}
}

// TestHTTPBearerTokens: with static tokens configured, /mcp needs one and
// /healthz does not; the token never reaches the logs.
func TestHTTPBearerTokens(t *testing.T) {
	const token, token2 = "e2e-token-7f3a9c", "e2e-token-second"
	tokens := writeConfig(t, token+"\n"+token2+"\n")
	hp := startHTTP(t, "--plugins", "diag", "--log-level", "debug", "--config",
		writeConfig(t, fmt.Sprintf(`{"http": {"bearer_tokens_file": %q}}`, tokens)))
	resp, err := http.Post(hp.base+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("without a token: HTTP %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, err := http.Get(hp.base + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	for _, era := range eras {
		cs := hp.connect(t, era, &http.Client{Transport: bearer{token: token}})
		decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", map[string]any{"message": "authorized"}))
		// A large result belongs to the token that made it.
		ref := decode[map[string]any](t, callTool(t, cs, "diag_blob", map[string]any{"bytes": 100_000}))
		other := hp.connect(t, era, &http.Client{Transport: bearer{token: token2}})
		if res := callTool(t, other, "diag_result", map[string]any{"result_id": ref["result_id"]}); !res.IsError {
			t.Fatalf("%s: another token read the result", era)
		}
		decode[map[string]any](t, callTool(t, cs, "diag_result", map[string]any{"result_id": ref["result_id"], "release": true}))
	}
	if strings.Contains(hp.stderr.String(), token) {
		t.Fatal("the bearer token appears in the logs")
	}
}

// bearer adds a bearer token to every request, over base (nil: the default
// transport).
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.base == nil {
		return http.DefaultTransport.RoundTrip(r)
	}
	return b.base.RoundTrip(r)
}

// TestHTTPS: with a certificate configured, /mcp is served over TLS (both
// eras), and plain HTTP to the same port gets no MCP answer.
func TestHTTPS(t *testing.T) {
	certs, err := testcerts.Write(t.TempDir(), "mcpkit e2e")
	if err != nil {
		t.Fatal(err)
	}
	const token = "e2e-tls-token-0123456789"
	tokens := writeConfig(t, token+"\n")
	cfg := writeConfig(t, fmt.Sprintf(`{"http": {"tls_cert_file": %q, "tls_key_file": %q, "bearer_tokens_file": %q}}`,
		certs.CertFile, certs.KeyFile, tokens))
	hp := startHTTP(t, "--plugins", "diag", "--config", cfg)
	if !strings.HasPrefix(hp.base, "https://") {
		t.Fatalf("listening at %s, want https", hp.base)
	}
	tlsTransport := &http.Transport{TLSClientConfig: certs.ClientConfig()}
	defer tlsTransport.CloseIdleConnections()
	for _, era := range eras {
		cs := hp.connect(t, era, &http.Client{Transport: bearer{token, tlsTransport}})
		decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", map[string]any{"message": "over tls"}))
	}
	resp, err := http.Get("http://" + strings.TrimPrefix(hp.base, "https://") + "/healthz")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was served on the TLS port")
		}
	}
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// TestHTTPShutdown: SIGINT ends the HTTP server cleanly, with exit status 0,
// after closing every plugin.
func TestHTTPShutdown(t *testing.T) {
	hp := startHTTP(t, "--plugins", "diag")
	cs := hp.connect(t, legacyEra, nil)
	decode[diag.EchoReply](t, callTool(t, cs, "diag_echo", map[string]any{"message": "x"}))
	hp.stop(t)
	if hp.err != nil {
		t.Fatalf("exit after SIGINT: %v", hp.err)
	}
	if logs := hp.stderr.String(); !strings.Contains(logs, `"msg":"plugin closed","plugin":"diag"`) || !strings.Contains(logs, `"msg":"shut down"`) {
		t.Fatalf("stderr lacks the shutdown logs:\n%s", logs)
	}
}

// TestStdioClientGone: when the client closes the server's stdout and then
// writes, the server does not die of SIGPIPE: it ends the session and closes
// its plugins.
func TestStdioClientGone(t *testing.T) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, stdinR, stdoutW, "serve", "--stdio", "--plugins", "diag")
	stdinR.Close() // the child holds its own copies
	stdoutW.Close()
	defer stdinW.Close()
	stdoutR.Close() // the client goes away
	fmt.Fprintln(stdinW, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("server still running 10s after its stdout was closed")
	}
	if ee, ok := p.err.(*exec.ExitError); ok && ee.ExitCode() < 0 {
		t.Fatalf("server killed by a signal: %v", p.err)
	}
	if !strings.Contains(p.stderr.String(), `msg="plugin closed" plugin=diag`) {
		t.Fatalf("plugins not closed:\n%s", p.stderr.String())
	}
}

// TestNotifications: progress notifications reach the client in every
// transport and era; log messages reach legacy clients that set a level
// (2026-07-28 carries the level per request instead).
func TestNotifications(t *testing.T) {
	for _, c := range clients() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var progress []float64
			logs := make(chan string, 8)
			cs := c.connectWith(t, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					progress = append(progress, r.Params.Progress)
				},
				LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
					logs <- fmt.Sprint(r.Params.Data)
				},
			}, "--plugins", "diag")
			if c.era == legacyEra {
				if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
					t.Fatal(err)
				}
			}
			params := &mcp.CallToolParams{Name: "diag_sleep", Arguments: map[string]any{"ms": 500, "progress_every_ms": 100}}
			params.SetProgressToken("sleep-1")
			res, err := cs.CallTool(t.Context(), params)
			if err != nil || res.IsError {
				t.Fatalf("call: %v %v", err, res)
			}
			mu.Lock()
			got := slices.Clone(progress)
			mu.Unlock()
			if len(got) < 2 || !slices.IsSorted(got) {
				t.Fatalf("progress notifications = %v, want at least 2, increasing", got)
			}
			if c.era == legacyEra {
				select {
				case msg := <-logs:
					if !strings.Contains(msg, "sleeping") {
						t.Fatalf("log message = %q", msg)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no log message reached the client")
				}
			}
		})
	}
}

// TestHTTPSessionLimits: legacy sessions expire after http_session_idle, and
// no more than http_sessions are open at once; 2026-07-28 clients, which
// hold no session, are not counted.
func TestHTTPSessionLimits(t *testing.T) {
	hp := startHTTP(t, "--plugins", "diag", "--config", writeConfig(t, `{"limits": {"http_sessions": 1, "http_session_idle": "1s"}}`))
	first := hp.connect(t, legacyEra, nil)
	// A second initialize is refused with 503, Retry-After and a JSON-RPC
	// error naming the limit. (The Go SDK client treats 503 as transient and
	// shows only the status; the body is for clients that read it.)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", hp.base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		ID    int `json:"id"`
		Error struct {
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || body.ID != 7 ||
		body.Error.Data["limit"] != "http_sessions" || body.Error.Data["max"] != float64(1) {
		t.Fatalf("second legacy session: HTTP %d, Retry-After %q, body %+v; want 503 naming http_sessions",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	modern := hp.connect(t, modernEra, nil)
	decode[diag.EchoReply](t, callTool(t, modern, "diag_echo", map[string]any{"message": "stateless"}))

	time.Sleep(1500 * time.Millisecond)
	if _, err := first.CallTool(t.Context(), &mcp.CallToolParams{Name: "diag_echo", Arguments: map[string]any{"message": "late"}}); err == nil {
		t.Fatal("a session idle past http_session_idle still answered")
	}
	hp.connect(t, legacyEra, nil) // its slot is free again
}
