package test

import (
	"encoding/json"
	"fmt"
	"github.com/mcpkit/mcpkit/internal/resptest"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRespSessions covers explicit sessions through `mcpkit resp`: a
// MULTI/EXEC whose WATCHed key another session changed (EXEC answers null,
// nothing applied), then one that commits; a BRPOP consumer session fed by
// LPUSH from the default session; and SUBSCRIBE then PUBLISH, received
// through receive as RESP3 pushes.
func TestRespSessions(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	cs := startResp(t, nil, "--port", strconv.Itoa(srv.Port))

	tx := session(t, cs, map[string]any{"action": "open"}).Session
	if tx == "" {
		t.Fatal("open returned no handle")
	}
	execute(t, cs, "", []any{"SET", "watched", "1"})
	execute(t, cs, tx, []any{"WATCH", "watched"}, []any{"GET", "watched"})
	execute(t, cs, "", []any{"SET", "watched", "changed elsewhere"})
	got := execute(t, cs, tx, []any{"MULTI"}, []any{"SET", "watched", "2"}, []any{"INCR", "counter"}, []any{"EXEC"})
	if got[1].Str(t) != "QUEUED" || got[3].Type != "null" {
		t.Fatalf("conflicting transaction: %+v, want QUEUED and a null EXEC", got)
	}
	if got := execute(t, cs, "", []any{"GET", "watched"}, []any{"EXISTS", "counter"}); got[0].Str(t) != "changed elsewhere" || got[1].Str(t) != "0" {
		t.Fatalf("after the aborted transaction: %+v", got)
	}
	got = execute(t, cs, tx, []any{"WATCH", "watched"}, []any{"MULTI"}, []any{"SET", "watched", "2"}, []any{"INCR", "counter"}, []any{"EXEC"})
	if exec := got[4]; exec.Type != "array" || len(exec.Items) != 2 || exec.Items[0].Str(t) != "OK" || exec.Items[1].Str(t) != "1" {
		t.Fatalf("committed transaction: EXEC = %+v", exec)
	}

	consumer := session(t, cs, map[string]any{"action": "open"}).Session
	session(t, cs, map[string]any{"action": "send", "session": consumer, "commands": [][]any{{"BRPOP", "jobs", "0"}}})
	if r := session(t, cs, map[string]any{"action": "receive", "format": "json", "session": consumer, "wait_ms": 100}); !r.TimedOut || len(r.Frames) != 0 {
		t.Fatalf("receive before LPUSH: %+v", r)
	}
	execute(t, cs, "", []any{"LPUSH", "jobs", "job-1"})
	r := session(t, cs, map[string]any{"action": "receive", "format": "json", "session": consumer, "wait_ms": 5000})
	if r.TimedOut || len(r.Frames) != 1 || len(r.Frames[0].Items) != 2 || r.Frames[0].Items[0].Str(t) != "jobs" || r.Frames[0].Items[1].Str(t) != "job-1" {
		t.Fatalf("BRPOP reply: %+v", r)
	}
	// A session that used send/receive stays manual: execute is refused.
	if res, isErr := callAs[execReply](t, cs, "resp_execute", map[string]any{"format": "json", "session": consumer, "commands": [][]any{{"PING"}}}); !isErr || res.Error == nil || res.Error.Kind != "refused" {
		t.Fatalf("execute on a manual session: isError=%v %+v", isErr, res)
	}

	sub := session(t, cs, map[string]any{"action": "open"}).Session
	session(t, cs, map[string]any{"action": "send", "session": sub, "commands": [][]any{{"SUBSCRIBE", "news"}}})
	r = session(t, cs, map[string]any{"action": "receive", "format": "json", "session": sub, "wait_ms": 5000})
	if len(r.Frames) != 1 || r.Frames[0].Type != "push" || r.Frames[0].Items[0].Str(t) != "subscribe" || r.Frames[0].Items[1].Str(t) != "news" {
		t.Fatalf("SUBSCRIBE acknowledgement: %+v", r)
	}
	if got := execute(t, cs, "", []any{"PUBLISH", "news", "hello"}); got[0].Str(t) != "1" {
		t.Fatalf("PUBLISH reached %s subscribers, want 1", got[0].Str(t))
	}
	r = session(t, cs, map[string]any{"action": "receive", "format": "json", "session": sub, "wait_ms": 5000})
	if len(r.Frames) != 1 || r.Frames[0].Type != "push" || len(r.Frames[0].Items) != 3 ||
		r.Frames[0].Items[0].Str(t) != "message" || r.Frames[0].Items[2].Str(t) != "hello" {
		t.Fatalf("published message: %+v", r)
	}
	// execute refuses SUBSCRIBE before sending anything.
	if res, isErr := callAs[execReply](t, cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"SUBSCRIBE", "news"}}}); !isErr || res.Error == nil || res.Error.Kind != "refused" {
		t.Fatalf("SUBSCRIBE through execute: isError=%v %+v", isErr, res)
	}
	if got := execute(t, cs, "", []any{"PUBSUB", "NUMSUB", "news"}); got[0].Items[1].Str(t) != "1" {
		t.Fatalf("subscribers of news after the refused SUBSCRIBE: %+v", got[0])
	}

	for _, h := range []string{tx, consumer, sub} {
		if r := session(t, cs, map[string]any{"action": "close", "session": h}); !r.Closed {
			t.Fatalf("close %s: %+v", h, r)
		}
	}
	if r := session(t, cs, map[string]any{"action": "list"}); len(r.Sessions) != 1 || r.Sessions[0].Session != "default" {
		t.Fatalf("sessions after closing every explicit one: %+v, want the default session alone", r.Sessions)
	}
}

// TestRespTargets covers targets beyond a plain local server: an ACL user
// whose forbidden command gets a typed NOPERM reply, a TLS server with a CA
// the test generated (and a client certificate), a RESP2 target, and a
// default target's password from MCPKIT_RESP_AUTH.
func TestRespTargets(t *testing.T) {
	t.Parallel()
	t.Run("acl", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.Options{ACL: []string{"user default off", "user agent on >agent-secret ~* +@all -flushall"}})
		cs := startResp(t, nil, "--config", respConfig(t, srv, map[string]any{"username": "agent", "password_file": writeConfig(t, "agent-secret")}, nil))
		if got := execute(t, cs, "", []any{"ACL", "WHOAMI"}); got[0].Str(t) != "agent" {
			t.Fatalf("ACL WHOAMI = %+v", got[0])
		}
		r, isErr := callAs[execReply](t, cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"SET", "k", "v"}, {"FLUSHALL"}, {"GET", "k"}}})
		if !isErr || r.Outcome != "error" || len(r.Replies) != 3 || r.Replies[1].Type != "simple_error" ||
			!strings.HasPrefix(r.Replies[1].Str(t), "NOPERM") || r.Replies[2].Str(t) != "v" {
			t.Fatalf("forbidden FLUSHALL: isError=%v %+v", isErr, r)
		}
	})
	t.Run("tls", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.Options{TLS: true, RequireClientCert: true})
		cs := startResp(t, nil, "--config", respConfig(t, srv, map[string]any{"tls": map[string]any{
			"ca_cert": srv.CAFile, "server_name": "localhost", "client_cert": srv.ClientCertFile, "client_key": srv.ClientKeyFile}}, nil))
		if got := execute(t, cs, "", []any{"SET", "over", "tls"}, []any{"GET", "over"}); got[1].Str(t) != "tls" {
			t.Fatalf("over TLS: %+v", got)
		}
		// Without the CA the server's certificate is not trusted: a
		// connection error naming the target, not a hang.
		plain := startResp(t, nil, "--config", respConfig(t, srv, map[string]any{"tls": map[string]any{
			"client_cert": srv.ClientCertFile, "client_key": srv.ClientKeyFile}}, nil))
		r, isErr := callAs[execReply](t, plain, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}})
		if !isErr || r.Error == nil || r.Error.Kind != "unavailable" || !strings.Contains(r.Error.Message, `"local"`) || !strings.Contains(r.Error.Message, "certificate") {
			t.Fatalf("TLS without the CA: isError=%v %+v", isErr, r.Error)
		}
	})
	t.Run("resp2", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.Options{})
		cs := startResp(t, nil, "--config", respConfig(t, srv, map[string]any{"protocol": 2}, nil))
		got := execute(t, cs, "", []any{"HSET", "h", "f", "v"}, []any{"HGETALL", "h"}, []any{"GET", "missing"}, []any{"HELLO"})
		if got[1].Type != "array" || len(got[1].Items) != 2 || got[2].Type != "null" {
			t.Fatalf("RESP2 replies: %+v", got)
		}
		if proto := helloField(t, got[3], "proto"); proto != "2" {
			t.Fatalf("HELLO says proto %s on a RESP2 target", proto)
		}
		// An explicit session can still ask for RESP3 on the same target.
		s3 := session(t, cs, map[string]any{"action": "open", "protocol": 3}).Session
		if got := execute(t, cs, s3, []any{"HGETALL", "h"}); got[0].Type != "map" {
			t.Fatalf("HGETALL on a RESP3 session: %+v", got[0])
		}
	})
	t.Run("auth-env", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.Options{Password: "env-pass-1234"})
		cs := startResp(t, []string{"MCPKIT_RESP_AUTH=env-pass-1234"}, "--port", strconv.Itoa(srv.Port))
		if got := execute(t, cs, "", []any{"PING"}); got[0].Str(t) != "PONG" {
			t.Fatalf("PING = %+v", got[0])
		}
	})
}

// helloField returns a field of HELLO's reply, a map (RESP3) or a flat
// array of names and values (RESP2).
func helloField(t testing.TB, hello resptest.Frame, name string) string {
	t.Helper()
	for _, e := range hello.Entries {
		if e[0].Str(t) == name {
			return e[1].Str(t)
		}
	}
	for i := 0; i+1 < len(hello.Items); i += 2 {
		if hello.Items[i].Str(t) == name {
			return hello.Items[i+1].Str(t)
		}
	}
	t.Fatalf("HELLO reply has no %q: %+v", name, hello)
	return ""
}

// TestRespFailures covers a target that fails: the sidecar starts and lists
// its tools while the target is down, and a call fails at once with a
// connection error naming the target; the server killed in the middle of a
// pipeline leaves the sidecar up, reports the unobserved commands as
// unknown, closes that session, and a new session works once the server is
// back.
func TestRespFailures(t *testing.T) {
	t.Parallel()
	t.Run("lazy-connect", func(t *testing.T) {
		t.Parallel()
		port := freeLoopbackPort(t)
		cs := startResp(t, nil, "--port", strconv.Itoa(port), "--tool-prefix", "ffkv")
		tools, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatalf("tools/list with the target down: %v", err)
		}
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		if slices.Sort(names); !slices.Equal(names, []string{"ffkv_commands", "ffkv_execute", "ffkv_result", "ffkv_session"}) {
			t.Fatalf("tools with --tool-prefix ffkv: %v", names)
		}
		start := time.Now()
		r, isErr := callAs[execReply](t, cs, "ffkv_execute", map[string]any{"commands": [][]any{{"PING"}}})
		if !isErr || r.Error == nil || r.Error.Kind != "unavailable" || !strings.Contains(r.Error.Message, fmt.Sprintf(`target "default" (127.0.0.1:%d)`, port)) {
			t.Fatalf("execute with the target down: isError=%v %+v", isErr, r.Error)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("the failed connection took %v", took)
		}
		ping(t, cs)
	})
	t.Run("server-killed", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.Options{})
		cs := startResp(t, nil, "--port", strconv.Itoa(srv.Port))
		h := session(t, cs, map[string]any{"action": "open"}).Session
		done := make(chan *mcp.CallToolResult, 1)
		go func() { // no t.Fatal off the test's goroutine: the result is checked below
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "resp_execute", Arguments: map[string]any{"format": "json", "session": h,
				"commands": [][]any{{"SET", "before", "1"}, {"BLPOP", "never", "30"}, {"SET", "after", "1"}}}})
			if err != nil {
				res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			done <- res
		}()
		eventually(t, 5*time.Second, "the BLPOP to block", func() bool {
			got := execute(t, cs, "", []any{"INFO", "clients"})
			return strings.Contains(got[0].Str(t), "blocked_clients:1")
		})
		srv.Kill()
		res := <-done
		var r execReply
		if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &r) != nil {
			t.Fatalf("killed mid-pipeline: %s", resultText(res))
		}
		if p := r.Partial; !res.IsError || r.Error == nil || r.Error.Kind != "connection_lost" || p == nil ||
			p.Outcome != "unknown" || p.Unknown != 2 || len(p.Replies) != 1 || p.Replies[0].Str(t) != "OK" {
			t.Fatalf("killed mid-pipeline: isError=%v %s", res.IsError, resultText(res))
		}
		ping(t, cs)
		if r, isErr := callAs[execReply](t, cs, "resp_execute", map[string]any{"format": "json", "session": h, "commands": [][]any{{"PING"}}}); !isErr || r.Error == nil || r.Error.Kind != "session_reset" {
			t.Fatalf("the broken session still answers: isError=%v %+v", isErr, r.Error)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		h2 := session(t, cs, map[string]any{"action": "open"}).Session
		if got := execute(t, cs, h2, []any{"EXISTS", "before"}, []any{"PING"}); got[1].Str(t) != "PONG" {
			t.Fatalf("after the restart: %+v", got)
		}
		// The default session's connection died with the server too; the
		// sidecar does not silently reconnect it (that would reset its
		// database and transaction state): its next call reports the broken
		// connection and an unknown outcome, the one after it the reset
		// (nothing sent), and the one after that works.
		r, isErr := callAs[execReply](t, cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}})
		if !isErr || r.Error == nil || r.Error.Kind != "connection_lost" || !strings.Contains(r.Error.Message, "new default session") || r.Partial == nil || r.Partial.Unknown != 1 {
			t.Fatalf("default session after the restart: isError=%v %+v %+v", isErr, r.Error, r.Partial)
		}
		if r, isErr := callAs[execReply](t, cs, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"PING"}}}); !isErr || r.Error == nil || r.Error.Kind != "session_reset" {
			t.Fatalf("the call after the lost connection: isError=%v %+v", isErr, r.Error)
		}
		if got := execute(t, cs, "", []any{"PING"}); got[0].Str(t) != "PONG" {
			t.Fatalf("the new default session: %+v", got)
		}
	})
}

// TestRespHandleScope checks over HTTP that a session handle belongs to the
// client session that opened it (legacy era) and to the caller's token
// (both eras): another client gets session_not_found, and the handle still
// works for its owner.
func TestRespHandleScope(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	const token, token2 = "e2e-resp-token-1a2b", "e2e-resp-token-3c4d"
	var rc map[string]any
	if err := json.Unmarshal([]byte(`{"default_target":"local","targets":{"local":{"host":"127.0.0.1","port":`+strconv.Itoa(srv.Port)+`}}}`), &rc); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{
		"enable":  []string{"resp"},
		"plugins": map[string]any{"resp": map[string]any{"config": rc}},
		"http":    map[string]any{"bearer_tokens_file": writeConfig(t, token+"\n"+token2+"\n")},
	})
	hp := startHTTP(t, "--config", writeConfig(t, string(cfg)))
	owner := hp.connect(t, legacyEra, &http.Client{Transport: bearer{token: token}})
	h := session(t, owner, map[string]any{"action": "open"}).Session
	others := map[string]*http.Client{
		"another client session": {Transport: bearer{token: token}},
		"another token":          {Transport: bearer{token: token2}},
	}
	for what, client := range others {
		for _, era := range eras {
			if what == "another client session" && era == modernEra {
				continue // 2026-07-28 has no client sessions: the same token is the same caller
			}
			other := hp.connect(t, era, client)
			if r, isErr := callAs[execReply](t, other, "resp_execute", map[string]any{"format": "json", "session": h, "commands": [][]any{{"PING"}}}); !isErr || r.Error == nil || r.Error.Kind != "session_not_found" {
				t.Fatalf("%s (%s) used the handle: isError=%v %+v", what, era, isErr, r.Error)
			}
			if r, isErr := callAs[sessionReply](t, other, "resp_session", map[string]any{"action": "close", "session": h}); !isErr || r.Error == nil || r.Error.Kind != "session_not_found" {
				t.Fatalf("%s (%s) closed the handle: isError=%v %+v", what, era, isErr, r.Error)
			}
		}
	}
	if got := execute(t, owner, h, []any{"PING"}); got[0].Str(t) != "PONG" {
		t.Fatalf("the owner's handle: %+v", got)
	}
}

// freeLoopbackPort returns a loopback port nothing listened on a moment ago.
func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
