package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRespResetAfterCancel: a call cancelled (notifications/cancelled, sent
// by the SDK client when its context ends) while its BLPOP blocks closes
// the session's connection, and with it the SELECT made before. Before, the
// next call on the default session ran on a new connection, on database 0,
// with outcome ok; now it fails with session_reset naming the lost
// database and sends nothing, and the call after it runs on a new
// connection. A handle answers session_reset until it is forgotten, and is
// never reconnected.
func TestRespResetAfterCancel(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	redisDo(t, srv, "SET", "k", "in-db-0")
	cs := startResp(t, nil, "--config", respConfig(t, srv, nil, nil))

	for _, named := range []bool{false, true} {
		h := ""
		if named {
			h = session(t, cs, map[string]any{"action": "open"}).Session
		}
		execute(t, cs, h, []any{"SELECT", "5"})
		execute(t, cs, h, []any{"SET", "k", "in-db-5"})
		cancelBlocked(t, cs, srv, h)

		args := map[string]any{"format": "json", "commands": [][]any{{"GET", "k"}}}
		if h != "" {
			args["session"] = h
		}
		r, isErr := callAs[execReply](t, cs, "resp_execute", args)
		if !isErr || r.Error == nil || r.Error.Kind != "session_reset" || len(r.Replies) != 0 {
			t.Fatalf("session %q after a cancelled call: isError=%v %+v replies %+v", h, isErr, r.Error, r.Replies)
		}
		for _, want := range []string{"cancelled", "database 5", "Nothing was sent"} {
			if !strings.Contains(r.Error.Message, want) {
				t.Errorf("session %q: the reset error does not say %q: %s", h, want, r.Error.Message)
			}
		}
		if named {
			// Never reconnected: every call says why, and a new handle works.
			if r, _ := callAs[execReply](t, cs, "resp_execute", args); r.Error == nil || r.Error.Kind != "session_reset" {
				t.Fatalf("the handle after its reset: %+v", r.Error)
			}
			h2 := session(t, cs, map[string]any{"action": "open", "database": 5}).Session
			if got := execute(t, cs, h2, []any{"GET", "k"}); got[0].Str(t) != "in-db-5" {
				t.Fatalf("a new handle on database 5: %+v", got)
			}
			continue
		}
		// Told once: the next call runs on a new connection (database 0).
		if got := execute(t, cs, "", []any{"GET", "k"}); got[0].Str(t) != "in-db-0" {
			t.Fatalf("the call after the reset: %+v", got)
		}
	}
}

// cancelBlocked runs a BLPOP on session h ("" for the default) and cancels
// the call once the server reports the client blocked.
func cancelBlocked(t *testing.T, cs *mcp.ClientSession, srv *redistest.Server, h string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	args := map[string]any{"commands": [][]any{{"BLPOP", "nothing", "30"}}}
	if h != "" {
		args["session"] = h
	}
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "resp_execute", Arguments: args})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(redisDo(t, srv, "INFO", "clients").Str), "blocked_clients:1") {
		if time.Now().After(deadline) {
			t.Fatal("the BLPOP did not block")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	// The cancellation reaches the server asynchronously: wait until the
	// blocked connection is closed.
	for strings.Contains(string(redisDo(t, srv, "INFO", "clients").Str), "blocked_clients:1") {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled BLPOP's connection was not closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
