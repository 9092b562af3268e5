package test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTPSessionCapAsTheSDKDecodes: whether a body opens a session is
// decided as the SDK decodes it, so an initialize spelled so that
// encoding/json missed it (a second "Method" key, data after the object)
// counts against http_sessions too. Before, each opened a session beyond
// the cap, untracked.
func TestHTTPSessionCapAsTheSDKDecodes(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, "--plugins", "diag", "--config", writeConfig(t, `{"limits": {"http_sessions": 1}}`))
	(&rawHTTP{hp: hp}).initialize(t, "1")
	const init = `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for name, body := range map[string]string{
		"a second method key": strings.Replace(init, `"method":"initialize"`, `"method":"initialize","Method":"ping"`, 1),
		"trailing data":       init + ` x`,
		"a second object":     init + `{}`,
	} {
		resp, msgs := (&rawHTTP{hp: hp}).post(t, body)
		if resp.StatusCode != http.StatusServiceUnavailable || len(msgs) != 1 || !strings.Contains(msgs[0], `"limit":"http_sessions"`) {
			t.Errorf("%s: HTTP %d %.300q, want 503 naming http_sessions", name, resp.StatusCode, msgs)
		}
	}
}

// TestHTTPInflightBytes: of concurrent large bodies, those beyond
// inflight_request_bytes are refused with 503 naming the limit, and mcpkit's
// peak memory follows the limit, not the number of requests (before: 16
// concurrent 12 MiB echoes peaked at 740 MiB; now 180 MiB).
//
// NOTE: needs the command line to pass limits.inflight_request_bytes to
// httpserve.Options.MaxInflightBytes.
func TestHTTPInflightBytes(t *testing.T) {
	t.Parallel()
	const (
		inflight = 32 * mib
		size     = 12 * mib
		n        = 16
	)
	hp := startHTTP(t, "--plugins", "diag", "--config", writeConfig(t, fmt.Sprintf(`{"limits":{"frame_bytes":%d,"inflight_request_bytes":%d}}`, 16*mib, inflight)))
	c := &rawHTTP{hp: hp}
	c.initialize(t, "0")
	idle := vmHWM(t, hp.cmd.Process.Pid)
	text := strings.Repeat("x", size-200)
	statuses := make(chan string, n)
	for i := range n {
		go func() {
			resp, msgs, err := c.send(t.Context(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"diag_echo","arguments":{"message":"%s"}}}`, i+1, text))
			switch {
			case err != nil:
				statuses <- err.Error()
			case resp.StatusCode == http.StatusOK:
				statuses <- "served"
			case resp.StatusCode == http.StatusServiceUnavailable && len(msgs) == 1 && strings.Contains(msgs[0], `"limit":"inflight_request_bytes"`):
				statuses <- "refused"
			default:
				statuses <- fmt.Sprintf("HTTP %d %.200q", resp.StatusCode, msgs)
			}
		}()
	}
	counts := map[string]int{}
	for range n {
		counts[<-statuses]++
	}
	peak := vmHWM(t, hp.cmd.Process.Pid)
	bound := idle + memFactor*inflight
	t.Logf("%d concurrent %d MiB echoes, inflight_request_bytes %d MiB: %v; peak RSS %d MiB (idle %d MiB, bound %d MiB)",
		n, size/mib, inflight/mib, counts, peak/mib, idle/mib, bound/mib)
	if counts["served"] < 2 || counts["served"]+counts["refused"] != n {
		t.Errorf("outcomes %v: want at least 2 served and the rest refused naming inflight_request_bytes", counts)
	}
	if peak > bound {
		t.Errorf("peak RSS %d MiB exceeds %d MiB, the bound derived from the limit", peak/mib, bound/mib)
	}
}

// TestHTTPRefusedBeforeBody: a request refused before its body is read (no
// token) is answered at once, however its body stalls, and its connection
// closes; a stalled authenticated body holds the connection no longer than
// the body deadline. Before, the 401 waited for the body, forever.
func TestHTTPRefusedBeforeBody(t *testing.T) {
	t.Parallel()
	const token = "e2e-refused-before-body-token"
	hp := startHTTP(t, "--plugins", "diag", "--config", writeConfig(t, `{"http": {"bearer_tokens_file": "`+writeConfig(t, token+"\n")+`"}}`))
	host := strings.TrimPrefix(hp.base, "http://")
	var conns []net.Conn
	for range 50 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", host)
		conns = append(conns, c)
	}
	for i, c := range conns {
		// Well before the body deadline (30 s), which alone would end it.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		reply, err := io.ReadAll(c) // the reply, then EOF: the server closed the connection
		if err != nil || !strings.HasPrefix(string(reply), "HTTP/1.1 401 ") {
			t.Fatalf("stalled unauthenticated request %d: %v %.100q, want 401 and the connection closed", i, err, reply)
		}
	}
	if resp, err := http.Get(hp.base + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
}
