package httpserve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/sessionstore"
)

// redirect sends every request to the host it currently names, the way a
// load balancer without sticky sessions would.
type redirect struct {
	host *atomic.Pointer[string]
	next http.RoundTripper
}

func (rd redirect) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host = *rd.host.Load()
	r.Host = r.URL.Host
	return rd.next.RoundTrip(r)
}

func hostOf(t *testing.T, env *testEnv) *string {
	t.Helper()
	u, err := url.Parse(env.base)
	if err != nil {
		t.Fatal(err)
	}
	return &u.Host
}

// serverSession returns the server's session with the given id.
func serverSession(t *testing.T, srv *mcp.Server, id string) *mcp.ServerSession {
	t.Helper()
	for ss := range srv.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	t.Fatalf("no server session %s", id)
	return nil
}

// waitEnded waits until ss.Wait returns.
func waitEnded(t *testing.T, ss *mcp.ServerSession, what string) {
	t.Helper()
	ended := make(chan struct{})
	go func() {
		ss.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the server session did not end", what)
	}
}

// storedState returns the SDK session state in the store's record of id.
func storedState(t *testing.T, store sessionstore.Store, id string) mcp.ServerSessionState {
	t.Helper()
	rec, ok, err := store.Load(context.Background(), id, time.Time{})
	if err != nil || !ok {
		t.Fatalf("record of %s: found %v, error %v", id, ok, err)
	}
	var st mcp.ServerSessionState
	if err := json.Unmarshal(rec.State, &st); err != nil {
		t.Fatal(err)
	}
	if want := staticUserID("tok"); rec.Principal != want {
		t.Fatalf("record principal %q, want %q", rec.Principal, want)
	}
	return st
}

// TestSharedSessions serves one legacy session from two instances (two
// handlers over two servers) sharing one store: a client initializes on A,
// its requests then go to B, which resumes the session with its state;
// DELETE on B ends it everywhere, so A refuses it afterwards.
func TestSharedSessions(t *testing.T) {
	store := sessionstore.NewMemory()
	tokens := []string{"tok", "other"}
	a := start(t, Options{SessionStore: store, BearerTokens: tokens, MaxSessions: 4})
	b := start(t, Options{SessionStore: store, BearerTokens: tokens, MaxSessions: 4})
	var target atomic.Pointer[string]
	target.Store(hostOf(t, a))
	hc := &http.Client{Transport: bearerTransport{token: "tok", next: redirect{host: &target, next: a.client.Transport}}}
	logs := make(chan string, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "roaming", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s, _ := req.Params.Data.(string)
			logs <- s
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	id := cs.ID()
	callEcho(t, cs, "echo", "on A")
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	st := storedState(t, store, id)
	if st.InitializeParams == nil || st.InitializeParams.ClientInfo.Name != "roaming" || st.InitializedParams == nil ||
		st.NegotiatedProtocolVersion != legacyVersion || st.LogLevel != "debug" {
		t.Fatalf("stored state %+v", st)
	}
	ssA := serverSession(t, a.srv, id)

	// Another principal cannot take the session over through B.
	if resp, body := b.pingSession(t, id, "other"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("session resumed for another principal: %d %s", resp.StatusCode, body)
	}
	if n := b.h.OpenSessions(); n != 0 {
		t.Fatalf("B holds %d sessions after a refused resume", n)
	}

	// B resumes it, with its state: the log level set on A applies.
	target.Store(hostOf(t, b))
	callEcho(t, cs, "echo", "on B")
	callEcho(t, cs, "log", "logged on B")
	waitLog(t, logs, "logged on B", nil)
	if n := b.h.OpenSessions(); n != 1 {
		t.Fatalf("B holds %d sessions, want the resumed one", n)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	if st := storedState(t, store, id); st.LogLevel != "error" {
		t.Fatalf("level set on B not stored: %q", st.LogLevel)
	}

	// DELETE on B ends it everywhere.
	ssB := serverSession(t, b.srv, id)
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, ssB, "DELETE on B")
	if _, ok, _ := store.Load(ctx, id, time.Time{}); ok {
		t.Fatal("record survived DELETE")
	}
	if n := a.h.OpenSessions(); n != 1 {
		t.Fatalf("A holds %d sessions before its next request, want 1", n)
	}
	if resp, body := a.pingSession(t, id, "tok"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("A served a deleted session: %d %s", resp.StatusCode, body)
	}
	waitEnded(t, ssA, "A's copy after DELETE on B")
	if n := a.h.OpenSessions(); n != 0 {
		t.Fatalf("A holds %d sessions after refusing the deleted one", n)
	}
}

// TestSharedSessionOutlivesInstance: idle expiry and Close end only an
// instance's copy; the record stays for the others while it is used, and
// lapses SessionIdle after its last use.
func TestSharedSessionOutlivesInstance(t *testing.T) {
	store := sessionstore.NewMemory()
	a := start(t, Options{SessionStore: store, SessionIdle: 300 * time.Millisecond})
	b := start(t, Options{SessionStore: store, SessionIdle: time.Minute})
	// Without the standalone GET stream: when A's copy expires, the client
	// would see that stream end, give up and DELETE the session.
	cs := a.quietConnect(t)
	// B serves it (and its use extends the record) ...
	if resp, body := b.pingSession(t, cs.ID(), ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("B: %d %s", resp.StatusCode, body)
	}
	// ... while A's idle copy expires: A resumes it again.
	waitOpen(t, a.h, 0)
	if resp, body := a.pingSession(t, cs.ID(), ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("A after its copy's idle expiry: %d %s", resp.StatusCode, body)
	}
	b.h.Close()
	if resp, body := a.pingSession(t, cs.ID(), ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("A after B closed: %d %s", resp.StatusCode, body)
	}

	// Unused for longer than SessionIdle, the record lapses.
	c := start(t, Options{SessionStore: store, SessionIdle: 200 * time.Millisecond})
	cs = c.quietConnect(t)
	time.Sleep(300 * time.Millisecond)
	if resp, body := a.pingSession(t, cs.ID(), ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("lapsed record: %d %s", resp.StatusCode, body)
	}
}

// TestResumeCountsAgainstCap: a resumed session takes a slot like any other.
func TestResumeCountsAgainstCap(t *testing.T) {
	store := sessionstore.NewMemory()
	a := start(t, Options{SessionStore: store})
	b := start(t, Options{SessionStore: store, MaxSessions: 1})
	b.mustConnect(t, legacyVersion, nil)
	cs := a.mustConnect(t, legacyVersion, nil)
	resp, body := b.pingSession(t, cs.ID(), "")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"limit":"http_sessions"`) {
		t.Fatalf("resume beyond the cap: %d %s", resp.StatusCode, body)
	}
}

func TestSessionEnds(t *testing.T) {
	for _, how := range []string{"idle", "DELETE", "Close"} {
		t.Run(how, func(t *testing.T) {
			idle := time.Minute
			if how == "idle" {
				idle = 200 * time.Millisecond
			}
			env := start(t, Options{SessionIdle: idle})
			cs := env.quietConnect(t)
			ss := serverSession(t, env.srv, cs.ID())
			switch how {
			case "DELETE":
				cs.Close()
			case "Close":
				env.h.Close()
			}
			waitEnded(t, ss, how)
			waitOpen(t, env.h, 0)
		})
	}
}

// TestInitializeBypass: whether a body opens a session is decided as the
// SDK decodes it, so bodies the SDK takes as an initialize count against the
// cap however they are spelled, and nothing else opens a lasting session.
func TestInitializeBypass(t *testing.T) {
	env := start(t, Options{MaxSessions: 1})
	env.mustConnect(t, legacyVersion, nil)
	params := `"params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`
	for name, body := range map[string]string{
		"a second method key": `{"jsonrpc":"2.0","id":7,"method":"initialize","Method":"x",` + params + `}`,
		"trailing data":       initBody + ` x`,
		"a second object":     initBody + `{}`,
		"a batch":             `[` + initBody + `]`,
	} {
		resp, got := env.do(t, http.MethodPost, MCPPath, body, nil)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(got, `"limit":"http_sessions"`) {
			t.Errorf("%s: %d %s, want 503 naming http_sessions", name, resp.StatusCode, got)
		}
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"Method":"initialize","method":"ping"}`,
		`not json`,
	} {
		env.do(t, http.MethodPost, MCPPath, body, nil)
	}
	n := 0
	for range env.srv.Sessions() {
		n++
	}
	if n != 1 || env.h.OpenSessions() != 1 {
		t.Fatalf("server sessions %d, tracked %d: want only the first", n, env.h.OpenSessions())
	}
}

// TestSharedLogLevel: the log level is the session's, whichever instance
// the client set it through. The client's standalone GET stream is on A;
// it sets the level through B; a message A sends outside any request is
// delivered or not by that level, never by A's copy's own.
func TestSharedLogLevel(t *testing.T) {
	store := sessionstore.NewMemory()
	a := start(t, Options{SessionStore: store})
	b := start(t, Options{SessionStore: store})
	var target atomic.Pointer[string]
	target.Store(hostOf(t, a))
	hc := &http.Client{Transport: redirect{host: &target, next: a.client.Transport}}
	logs := make(chan string, 64)
	var (
		mu  sync.Mutex
		all []string // every message delivered, waitLog's skipped ones too
	)
	c := mcp.NewClient(&mcp.Implementation{Name: "roaming", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s, _ := req.Params.Data.(string)
			msg := string(req.Params.Level) + " " + s
			mu.Lock()
			all = append(all, msg)
			mu.Unlock()
			logs <- msg
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.url, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ssA := serverSession(t, a.srv, cs.ID())
	send := func(level mcp.LoggingLevel, text string) func() {
		return func() { ssA.Log(ctx, &mcp.LoggingMessageParams{Level: level, Data: text}) }
	}
	// The GET stream is on A (the client opened it at once); A's copy
	// never saw a setLevel. Nothing was set yet: nothing is delivered.
	callEcho(t, cs, "echo", "on A")
	send("emergency", "before any level")()

	target.Store(hostOf(t, b))
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "info set through B", send("info", "set through B"))
	// On B's own stream (a tool call's), with B's copy: the same level.
	callEcho(t, cs, "log", "logged on B")
	waitLog(t, logs, "info logged on B", nil)

	// Raised through B: A's info messages stop, its errors still arrive.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	send("info", "below the level")()
	waitLog(t, logs, "error at the level", send("error", "at the level"))
	// Lowered through A: B's copy, which saw "error" set, follows.
	target.Store(hostOf(t, a))
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	target.Store(hostOf(t, b))
	callEcho(t, cs, "log", "debug era on B")
	waitLog(t, logs, "info debug era on B", nil)
	mu.Lock()
	defer mu.Unlock()
	for _, got := range all {
		if strings.Contains(got, "before any level") || strings.Contains(got, "below the level") {
			t.Errorf("delivered against the session's level: %q", got)
		}
	}
}

// TestSessionOpenedForResumedStream: a session resumed only to carry the
// client's GET stream is announced through SessionOpened, with the
// principal of its record, before the stream is served; an error from it
// refuses the session.
func TestSessionOpenedForResumedStream(t *testing.T) {
	store := sessionstore.NewMemory()
	a := start(t, Options{SessionStore: store, BearerTokens: []string{"tok"}})
	opened := make(chan string, 4)
	refuse := atomic.Bool{}
	b := start(t, Options{SessionStore: store, BearerTokens: []string{"tok"}, SessionOpened: func(ss *mcp.ServerSession, principal string) error {
		if refuse.Load() {
			return errors.New("no more")
		}
		opened <- ss.ID() + " " + principal
		return nil
	}})
	cs, err := a.connect(t, legacyVersion, nil, &http.Client{Transport: bearerTransport{token: "tok", next: a.client.Transport}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	hdr := map[string]string{"Mcp-Session-Id": cs.ID(), "Mcp-Protocol-Version": legacyVersion, "Accept": "text/event-stream", "Authorization": "Bearer tok"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := b.client.Do(b.newRequest(t, http.MethodGet, MCPPath, "", hdr).WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET on B: HTTP %d", resp.StatusCode)
	}
	select {
	case got := <-opened:
		if want := cs.ID() + " " + staticUserID("tok"); got != want {
			t.Fatalf("SessionOpened(%q), want %q", got, want)
		}
	default:
		t.Fatal("the stream was served before SessionOpened was called")
	}
	cancel()
	waitOpen(t, b.h, 1)
	b.h.sessions[cs.ID()].close()
	waitOpen(t, b.h, 0)

	refuse.Store(true)
	if resp, body := b.pingSession(t, cs.ID(), "tok"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a session SessionOpened refused: HTTP %d %s", resp.StatusCode, body)
	}
	if n := b.h.OpenSessions(); n != 0 {
		t.Fatalf("B holds %d sessions after refusing one", n)
	}
}
