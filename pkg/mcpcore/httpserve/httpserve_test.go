package httpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	legacyVersion = "2025-11-25"
	initBody      = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
)

type echoIn struct {
	Text string `json:"text" jsonschema:"text to echo"`
}

type echoOut struct {
	Text string `json:"text"`
}

// newTestServer returns a server with an echo tool, a tool that waits until
// it is cancelled and a tool that logs through its session.
func newTestServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "httpserve-test", Version: "0.0.1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut(in), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "wait until cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			<-ctx.Done()
			return nil, echoOut{}, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "log text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "test", Data: in.Text})
			return nil, echoOut(in), err
		})
	return s
}

// testEnv is a Handler served by ListenAndServe on 127.0.0.1:0.
type testEnv struct {
	h      *Handler
	srv    *mcp.Server
	base   string // http://127.0.0.1:PORT
	url    string // base + /mcp
	client *http.Client
}

func start(t *testing.T, opts Options) *testEnv {
	t.Helper()
	if opts.Server == nil {
		opts.Server = newTestServer()
	}
	if opts.SessionIdle == 0 {
		opts.SessionIdle = time.Minute
	}
	h, err := NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- ListenAndServe(ctx, "127.0.0.1:0", h, ServeOptions{Ready: func(a net.Addr) { addrc <- a }})
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("ListenAndServe: %v", err)
	}
	tr := &http.Transport{}
	env := &testEnv{
		h:      h,
		srv:    opts.Server,
		base:   "http://" + addr.String(),
		url:    "http://" + addr.String() + MCPPath,
		client: &http.Client{Transport: tr},
	}
	t.Cleanup(func() {
		// First drop the client's idle connections: http.Server.Shutdown
		// waits up to 5 s for a connection that never carried a request.
		tr.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ListenAndServe returned %v", err)
		}
		tr.CloseIdleConnections()
	})
	return env
}

// connect opens an SDK client session pinned to version.
func (e *testEnv) connect(t *testing.T, version string, copts *mcp.ClientOptions, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	if hc == nil {
		hc = e.client
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

func (e *testEnv) mustConnect(t *testing.T, version string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := e.connect(t, version, copts, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// quietConnect opens a legacy SDK client session without the standalone
// GET stream.
func (e *testEnv) quietConnect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "quiet", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: e.client, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// newRequest builds a raw request to path with the given headers.
func (e *testEnv) newRequest(t *testing.T, method, path, body string, hdr map[string]string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return req
}

// do sends a raw request to path with the given headers and returns the
// response and its body.
func (e *testEnv) do(t *testing.T, method, path, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	resp, err := e.client.Do(e.newRequest(t, method, path, body, hdr))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// pingSession sends a ping on legacy session id, with token as the bearer
// token unless it is "", and returns the response and its body.
func (e *testEnv) pingSession(t *testing.T, id, token string) (*http.Response, string) {
	t.Helper()
	hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": legacyVersion}
	if token != "" {
		hdr["Authorization"] = "Bearer " + token
	}
	return e.do(t, http.MethodPost, MCPPath, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, hdr)
}

// postAll posts the bodies to /mcp at once, each with hdr, and counts the
// responses' status codes.
func (e *testEnv) postAll(t *testing.T, bodies []string, hdr map[string]string) map[int]int {
	t.Helper()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for _, body := range bodies {
		req := e.newRequest(t, http.MethodPost, MCPPath, body, hdr)
		wg.Go(func() {
			resp, err := e.client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return codes
}

// waitOpen waits until h tracks n sessions: a session is registered just
// after its initialize response is written.
func waitOpen(t *testing.T, h *Handler, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := h.OpenSessions()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("open sessions %d, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func callEcho(t *testing.T, cs *mcp.ClientSession, tool, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("call %s: tool error %+v", tool, res.Content)
	}
	got, _ := json.Marshal(res.StructuredContent)
	if want := fmt.Sprintf(`{"text":%q}`, text); string(got) != want {
		t.Fatalf("call %s: structured content %s, want %s", tool, got, want)
	}
}

func TestBothEras(t *testing.T) {
	env := start(t, Options{MaxSessions: 10})
	for _, version := range []string{legacyVersion, statelessVersion} {
		t.Run(version, func(t *testing.T) {
			cs := env.mustConnect(t, version, nil)
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated protocol version %q, want %q", got, version)
			}
			if version == legacyVersion && cs.ID() == "" {
				t.Fatal("legacy session has no Mcp-Session-Id")
			}
			if version == statelessVersion && cs.ID() != "" {
				t.Fatalf("stateless session has session id %q", cs.ID())
			}
			callEcho(t, cs, "echo", "hello "+version)
			// Only the legacy session is tracked.
			want := 0
			if version == legacyVersion {
				want = 1
			}
			waitOpen(t, env.h, want)
		})
	}
}

func TestLegacyNotifications(t *testing.T) {
	env := start(t, Options{})
	logs := make(chan string, 16)
	cs := env.mustConnect(t, legacyVersion, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s, _ := req.Params.Data.(string)
			logs <- s
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}

	// A log sent while a tool call runs arrives on the call's stream.
	callEcho(t, cs, "log", "in-call")
	waitLog(t, logs, "in-call", nil)

	// A log sent outside any request arrives on the standalone GET stream,
	// which the client opens asynchronously: resend until it arrives.
	var ss *mcp.ServerSession
	for s := range env.srv.Sessions() {
		if s.ID() == cs.ID() {
			ss = s
		}
	}
	if ss == nil {
		t.Fatal("server session not found")
	}
	waitLog(t, logs, "out-of-band", func() {
		ss.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "out-of-band"})
	})
}

func waitLog(t *testing.T, logs <-chan string, want string, resend func()) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	if resend != nil {
		resend()
	}
	for {
		select {
		case got := <-logs:
			if got == want {
				return
			}
		case <-tick.C:
			if resend != nil {
				resend()
			}
		case <-deadline:
			t.Fatalf("log message %q not received", want)
		}
	}
}

func TestIdleSessionExpires(t *testing.T) {
	env := start(t, Options{SessionIdle: 200 * time.Millisecond})
	cs := env.quietConnect(t)
	waitOpen(t, env.h, 1)
	if resp, body := env.pingSession(t, cs.ID(), ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("ping on live session: %d %s", resp.StatusCode, body)
	}
	waitOpen(t, env.h, 0)
	if resp, body := env.pingSession(t, cs.ID(), ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("ping on expired session: %d %s, want 404", resp.StatusCode, body)
	}
}

func TestOrigin(t *testing.T) {
	env := start(t, Options{AllowedOrigins: []string{"http://app.example:3000"}})
	tests := []struct {
		origin string
		want   int
	}{
		{"", http.StatusOK},
		{env.base, http.StatusOK}, // same origin
		{strings.Replace(env.base, "127.0.0.1", "localhost", 1), http.StatusForbidden},
		{"http://app.example:3000", http.StatusOK},
		{"http://evil.example", http.StatusForbidden},
		{"http://app.example:3001", http.StatusForbidden},
		{"null", http.StatusForbidden},
	}
	for _, tt := range tests {
		hdr := map[string]string{}
		if tt.origin != "" {
			hdr["Origin"] = tt.origin
		}
		resp, body := env.do(t, http.MethodPost, MCPPath, initBody, hdr)
		if resp.StatusCode != tt.want {
			t.Errorf("Origin %q: status %d (%s), want %d", tt.origin, resp.StatusCode, body, tt.want)
		}
		if tt.origin == "http://app.example:3000" && resp.Header.Get("Access-Control-Allow-Origin") != tt.origin {
			t.Errorf("allowed origin: no Access-Control-Allow-Origin header")
		}
	}
	resp, _ := env.do(t, http.MethodOptions, MCPPath, "", map[string]string{
		"Origin":                         "http://app.example:3000",
		"Access-Control-Request-Method":  "POST",
		"Access-Control-Request-Headers": "content-type, mcp-session-id",
	})
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Headers") == "" {
		t.Errorf("preflight: status %d headers %v", resp.StatusCode, resp.Header)
	}
	env.h.Close()
}

func TestHostRebinding(t *testing.T) {
	env := start(t, Options{})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(env.base, "http://"))
	for host, want := range map[string]int{
		"evil.example:" + port: http.StatusForbidden,
		"evil.example":         http.StatusForbidden,
		"localhost:" + port:    http.StatusOK,
		"[::1]:" + port:        http.StatusOK,
	} {
		resp, body := env.do(t, http.MethodPost, MCPPath, initBody, map[string]string{"Host": host})
		if resp.StatusCode != want {
			t.Errorf("Host %q: status %d (%s), want %d", host, resp.StatusCode, body, want)
		}
	}
	env.h.Close()
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func TestBearer(t *testing.T) {
	env := start(t, Options{BearerTokens: []string{"first-token", "second-token"}})
	for name, hdr := range map[string]map[string]string{
		"none":  nil,
		"wrong": {"Authorization": "Bearer nope"},
		"basic": {"Authorization": "Basic Zmlyc3QtdG9rZW46"},
	} {
		resp, body := env.do(t, http.MethodPost, MCPPath, initBody, hdr)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, resp.StatusCode)
		}
		if wa := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(wa, "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", name, wa)
		}
		if strings.Contains(body, "first-token") {
			t.Errorf("%s: body leaks a token: %s", name, body)
		}
	}
	if resp, _ := env.do(t, http.MethodGet, HealthPath, "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz without token: %d", resp.StatusCode)
	}

	tr := env.client.Transport
	for _, version := range []string{legacyVersion, statelessVersion} {
		hc := &http.Client{Transport: bearerTransport{token: "second-token", next: tr}}
		cs, err := env.connect(t, version, nil, hc)
		if err != nil {
			t.Fatalf("%s with token: %v", version, err)
		}
		callEcho(t, cs, "echo", "authorized")
		// A session is bound to the token that opened it.
		if version == legacyVersion {
			if resp, _ := env.pingSession(t, cs.ID(), "first-token"); resp.StatusCode != http.StatusForbidden {
				t.Errorf("session used with another token: %d, want 403", resp.StatusCode)
			}
		}
		cs.Close()
	}
	if _, err := env.connect(t, legacyVersion, nil, nil); err == nil {
		t.Error("client without token connected")
	}
}

func TestMaxBody(t *testing.T) {
	env := start(t, Options{MaxBodyBytes: 2048})
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 4096) + `"}}}`
	cs := env.mustConnect(t, legacyVersion, nil)
	cases := map[string]map[string]string{
		"no session": nil,
		"session":    {"Mcp-Session-Id": cs.ID(), "Mcp-Protocol-Version": legacyVersion},
		"stateless":  {"Mcp-Protocol-Version": statelessVersion},
	}
	for name, hdr := range cases {
		resp, body := env.do(t, http.MethodPost, MCPPath, big, hdr)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: status %d (%s), want 413", name, resp.StatusCode, body)
		}
	}
	// The session survives.
	callEcho(t, cs, "echo", "small")
}

func TestMaxSessions(t *testing.T) {
	env := start(t, Options{MaxSessions: 2})
	a := env.mustConnect(t, legacyVersion, nil)
	env.mustConnect(t, legacyVersion, nil)
	resp, body := env.do(t, http.MethodPost, MCPPath, initBody, nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third initialize: %d %s, want 503", resp.StatusCode, body)
	}
	var msg struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.ID != 7 || !strings.Contains(msg.Error.Message, "http_sessions") {
		t.Fatalf("503 body %s (err %v): want a JSON-RPC error for id 7 naming http_sessions", body, err)
	}
	if _, err := env.connect(t, legacyVersion, nil, nil); err == nil {
		t.Fatal("third client connected")
	}
	// The stateless era is not capped, and a non-initialize request without
	// a session is not counted.
	env.mustConnect(t, statelessVersion, nil)
	if resp, body := env.do(t, http.MethodPost, MCPPath, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); resp.StatusCode == http.StatusServiceUnavailable {
		t.Fatalf("sessionless ping refused: %s", body)
	}
	// Ending a session frees its slot.
	a.Close()
	env.mustConnect(t, legacyVersion, nil)
}

func TestCloseEndsSessions(t *testing.T) {
	env := start(t, Options{})
	cs := env.mustConnect(t, legacyVersion, nil)
	id := cs.ID()
	env.h.Close()
	env.h.Close() // idempotent
	if n := env.h.OpenSessions(); n != 0 {
		t.Fatalf("open sessions after Close: %d", n)
	}
	if resp, _ := env.pingSession(t, id, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("closed session: %d, want 404", resp.StatusCode)
	}
	if resp, _ := env.do(t, http.MethodPost, MCPPath, initBody, nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("initialize after Close: %d, want 503", resp.StatusCode)
	}
}

func TestHealthAndPaths(t *testing.T) {
	env := start(t, Options{})
	resp, body := env.do(t, http.MethodGet, HealthPath, "", nil)
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != `{"status":"ok"}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("/healthz: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, _ := env.do(t, http.MethodPost, HealthPath, "{}", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d", resp.StatusCode)
	}
	for _, p := range []string{"/", "/mcp/", "/other"} {
		if resp, _ := env.do(t, http.MethodGet, p, "", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
	// GET and DELETE without a session are legacy requests the SDK refuses.
	if resp, _ := env.do(t, http.MethodGet, MCPPath, "", map[string]string{"Accept": "text/event-stream"}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /mcp without session: %d, want 400", resp.StatusCode)
	}
}

func TestCheckListenAddr(t *testing.T) {
	tests := []struct {
		addr string
		auth bool
		ok   bool
	}{
		{"127.0.0.1:8080", false, true},
		{"127.1.2.3:0", false, true},
		{"[::1]:8080", false, true},
		{"localhost:8080", false, true},
		{"LOCALHOST:8080", false, true},
		{":8080", false, false},
		{"0.0.0.0:8080", false, false},
		{"[::]:8080", false, false},
		{"192.168.1.10:8080", false, false},
		{"example.com:80", false, false},
		{":8080", true, true},
		{"0.0.0.0:8080", true, true},
		{"example.com:80", true, true},
		{"127.0.0.1", false, false}, // no port
	}
	for _, tt := range tests {
		err := CheckListenAddr(tt.addr, tt.auth)
		if (err == nil) != tt.ok {
			t.Errorf("CheckListenAddr(%q, %v) = %v, want ok=%v", tt.addr, tt.auth, err, tt.ok)
		}
	}
	err := CheckListenAddr("0.0.0.0:80", false)
	if !errors.Is(err, ErrUnauthenticatedListen) || !strings.Contains(err.Error(), "http.bearer_tokens_file") || !strings.Contains(err.Error(), "http.bearer_tokens_env") {
		t.Errorf("error does not say how to enable auth: %v", err)
	}
}

func TestListenAndServeStopsWithOpenStream(t *testing.T) {
	h, err := NewHandler(Options{Server: newTestServer(), SessionIdle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- ListenAndServe(ctx, "127.0.0.1:0", h, ServeOptions{Ready: func(a net.Addr) { addrc <- a }})
	}()
	addr := <-addrc
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: "http://" + addr.String() + MCPPath, HTTPClient: &http.Client{Transport: tr}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the standalone GET stream open
	tr.CloseIdleConnections()
	began := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServe: %v", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("shutdown took %v: the hanging GET stream was not ended", d)
	}
	cs.Close()

	// A second server on a taken port fails to listen.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := ListenAndServe(context.Background(), ln.Addr().String(), h, ServeOptions{}); err == nil {
		t.Error("ListenAndServe on a taken port succeeded")
	}
}

func TestConcurrentInitialize(t *testing.T) {
	env := start(t, Options{MaxSessions: 5})
	codes := env.postAll(t, slices.Repeat([]string{initBody}, 12), nil)
	if ok, refused := codes[http.StatusOK], codes[http.StatusServiceUnavailable]; ok != 5 || refused != 7 {
		t.Errorf("ok %d refused %d, want 5 7", ok, refused)
	}
	waitOpen(t, env.h, 5)
	env.h.Close()
}

func TestRouting(t *testing.T) {
	env := start(t, Options{})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	discover := `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{` + meta + `}}`

	// With the header: the stateless handler answers, listing the new era.
	resp, body := env.do(t, http.MethodPost, MCPPath, discover, map[string]string{"Mcp-Protocol-Version": statelessVersion, "Mcp-Method": "server/discover"})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, statelessVersion) || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("discover with header: %d %s", resp.StatusCode, body)
	}
	// Without it (not what the SDK client sends): the stateful handler
	// refuses it with HeaderMismatch and opens no session.
	resp, body = env.do(t, http.MethodPost, MCPPath, discover, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "-32020") {
		t.Errorf("discover without header: %d %s", resp.StatusCode, body)
	}
	// A legacy session id wins over a new-era header: the stateful handler
	// refuses the new era on a session (-32022).
	cs := env.mustConnect(t, legacyVersion, nil)
	list := `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + meta + `}}`
	resp, body = env.do(t, http.MethodPost, MCPPath, list, map[string]string{
		"Mcp-Protocol-Version": statelessVersion, "Mcp-Session-Id": cs.ID(), "Mcp-Method": "tools/list",
	})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "-32022") {
		t.Errorf("new-era request on a legacy session: %d %s", resp.StatusCode, body)
	}
	waitOpen(t, env.h, 1)
}
