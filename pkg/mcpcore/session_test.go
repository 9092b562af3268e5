package mcpcore

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// whoReply is what the session test plugin's tool reports.
type whoReply struct {
	ID        string   `json:"id"`
	Principal string   `json:"principal"`
	Live      []string `json:"live"`
}

// sessionRecorder is a plugin attach function that serves "ta_who" and
// records the sessions that end.
type sessionRecorder struct {
	mu    sync.Mutex
	ended []*Session
	host  *Host
}

func (r *sessionRecorder) attach(h *Host) {
	r.host = h
	AddTool(h, &mcp.Tool{Name: "who"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (any, error) {
		s := h.SessionOf(req)
		if s == nil {
			return nil, errors.New("no session for the request")
		}
		if s.Principal() != Principal(req) || s.ServerSession() != req.Session {
			return nil, errors.New("the session does not match the request")
		}
		reply := whoReply{ID: s.ID(), Principal: s.Principal()}
		for _, l := range h.Sessions() {
			reply.Live = append(reply.Live, l.ID())
		}
		return reply, nil
	})
	h.OnSessionEnd(func(s *Session) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ended = append(r.ended, s)
	})
}

func (r *sessionRecorder) endedIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, s := range r.ended {
		ids = append(ids, s.ID())
	}
	return ids
}

func who(t *testing.T, cs *mcp.ClientSession) whoReply {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ta_who", Arguments: struct{}{}})
	if err != nil || res.IsError {
		t.Fatalf("who: %v %v", err, res)
	}
	var w whoReply
	if err := json.Unmarshal([]byte(text(res)), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

func connectMemory(t testing.TB, srv *mcp.Server) (*mcp.ClientSession, *mcp.ServerSession) {
	t.Helper()
	return connectMemoryWith(t, srv, nil, nil)
}

// connectMemoryWith is connectMemory with client and session options.
func connectMemoryWith(t testing.TB, srv *mcp.Server, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) (*mcp.ClientSession, *mcp.ServerSession) {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(t.Context(), ct, sopts)
	if err != nil {
		t.Fatal(err)
	}
	return cs, ss
}

// TestSessionsInMemory: stdio-like sessions are tracked from their first
// message, listed, found from a request, and ended, with the end hooks
// run, when the client goes away and when the server closes (before the
// plugin's Close).
func TestSessionsInMemory(t *testing.T) {
	srv, rec := newRecorded(t)
	var endedAtClose []string
	srv.hosts[0].plugin.(*testPlugin).onClose = func() { endedAtClose = rec.endedIDs() }
	a, ssA := connectMemory(t, srv.MCP())
	b, _ := connectMemory(t, srv.MCP())
	wa, wb := who(t, a), who(t, b)
	if wa.ID == "" || wa.ID == wb.ID || wa.Principal != "" || !slices.Equal(wb.Live, []string{wa.ID, wb.ID}) {
		t.Fatalf("sessions: a %+v, b %+v", wa, wb)
	}
	if n := srv.Info().Sessions; n != 2 {
		t.Fatalf("info counts %d sessions, want 2", n)
	}
	a.Close()
	ssA.Wait()
	eventually(t, "a's end hook", func() bool { return slices.Equal(rec.endedIDs(), []string{wa.ID}) })
	if w := who(t, b); !slices.Equal(w.Live, []string{wb.ID}) {
		t.Fatalf("after a ended, live = %v", w.Live)
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(endedAtClose, []string{wa.ID, wb.ID}) {
		t.Fatalf("when the plugin closed, the ended sessions were %v, want both", endedAtClose)
	}
	b.Close()
}

// TestSessionEndHookPanic: a panicking end hook is recovered and counted.
func TestSessionEndHookPanic(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) { h.OnSessionEnd(func(*Session) { panic("hook bug") }) })
	logs := &logBuffer{}
	srv, err := NewServer(t.Context(), Options{Plugins: []string{"ta"}, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	cs, ss := connectMemory(t, srv.MCP())
	cs.Close()
	ss.Wait()
	eventually(t, "the hook's panic to be counted", func() bool { return srv.Info().Calls.Panicked == 1 })
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "hook bug") {
		t.Fatalf("the log lacks the hook's panic:\n%s", logs)
	}
}

// bearerClient adds a bearer token to every request.
type bearerClient struct{ token string }

func (b bearerClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// newRecorded assembles a server whose plugin ta records sessions; the
// server is closed when the test ends (if the test did not close it).
func newRecorded(t *testing.T) (*Server, *sessionRecorder) {
	t.Helper()
	registerTestPlugins()
	rec := &sessionRecorder{}
	setAttach("ta", rec.attach)
	srv, err := NewServer(t.Context(), Options{Plugins: []string{"ta"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv, rec
}

// serveRecorded serves a newRecorded server with the SDK's streamable HTTP handler behind bearer-token authentication
// (token "tok-<name>" is principal "<name>").
func serveRecorded(t *testing.T, opts *mcp.StreamableHTTPOptions) (*Server, *sessionRecorder, *httptest.Server) {
	t.Helper()
	srv, rec := newRecorded(t)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		name, ok := strings.CutPrefix(token, "tok-")
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: name, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCP() }, opts)
	ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return srv, rec, ts
}

func connectHTTP(t *testing.T, url, principal, era string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerClient{"tok-" + principal}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestSessionsHTTP: legacy streamable HTTP sessions carry the
// Mcp-Session-Id and the authenticated principal, and end on DELETE and on
// idle expiry.
func TestSessionsHTTP(t *testing.T) {
	srv, rec, ts := serveRecorded(t, &mcp.StreamableHTTPOptions{SessionTimeout: 300 * time.Millisecond})

	alice := connectHTTP(t, ts.URL, "alice", "2025-11-25")
	w := who(t, alice)
	if w.ID != alice.ID() || w.Principal != "alice" {
		t.Fatalf("alice's session: %+v, client session id %q", w, alice.ID())
	}
	alice.Close() // DELETE
	eventually(t, "the end of alice's session", func() bool { return slices.Contains(rec.endedIDs(), w.ID) })

	bob := connectHTTP(t, ts.URL, "bob", "2025-11-25")
	defer bob.Close()
	wb := who(t, bob)
	if wb.Principal != "bob" || slices.Contains(wb.Live, w.ID) {
		t.Fatalf("bob's session: %+v", wb)
	}
	eventually(t, "the idle expiry of bob's session", func() bool { return slices.Contains(rec.endedIDs(), wb.ID) })
	if n := srv.Info().Sessions; n != 0 {
		t.Fatalf("info counts %d sessions after both ended", n)
	}
}

// TestSessionsStateless: in the 2026-07-28 era every request is its own
// session, which ends with the request.
func TestSessionsStateless(t *testing.T) {
	srv, rec, ts := serveRecorded(t, &mcp.StreamableHTTPOptions{Stateless: true})
	cs := connectHTTP(t, ts.URL, "carol", "2026-07-28")
	defer cs.Close()
	before := len(rec.endedIDs())
	ids := map[string]bool{}
	for range 3 {
		w := who(t, cs)
		if w.Principal != "carol" || !slices.Contains(w.Live, w.ID) {
			t.Fatalf("stateless request: %+v", w)
		}
		ids[w.ID] = true
	}
	if len(ids) != 3 {
		t.Fatalf("3 requests had sessions %v, want 3 distinct", ids)
	}
	eventually(t, "each request's session to end", func() bool { return len(rec.endedIDs()) >= before+3 && srv.Info().Sessions == 0 })
}
