package test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// rawPost sends a POST to /mcp with body and the headers given
// ("Name: value"), and returns its status.
func rawPost(t testing.TB, url, body string, headers ...string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestTelemetryRefusalsHTTP: every refusal of the HTTP transport is
// counted once in mcpkit.server.rejected_calls, with its reason and the
// limit that refused it: a body over frame_bytes (413), a body beyond
// inflight_request_bytes (503), a session beyond http_sessions (503), a
// missing or wrong bearer token and another principal's session (401,
// 403). (A body that takes longer than its 30 s is counted in
// pkg/mcpcore/httpserve's TestStalledBodies.)
func TestTelemetryRefusalsHTTP(t *testing.T) {
	const tokenA, tokenB = "e2e-refusals-token-a-77d1", "e2e-refusals-token-b-0c3e"
	tokens := writeConfig(t, tokenA+"\n"+tokenB+"\n")
	cfg := writeConfig(t, fmt.Sprintf(`{"http": {"bearer_tokens_file": %q}, "limits": {"frame_bytes": 1048576, "inflight_request_bytes": 1048576, "http_sessions": 1}}`, tokens))
	hp := startHTTP(t, "--plugins", "diag", "--config", cfg)
	mcpURL, metrics := hp.base+"/mcp", hp.base+"/metrics"
	authA, authB := "Authorization: Bearer "+tokenA, "Authorization: Bearer "+tokenB
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	rejected := func(labels ...string) float64 {
		want := map[string]string{}
		for i := 0; i < len(labels); i += 2 {
			want[labels[i]] = labels[i+1]
		}
		return sample(scrape(t, metrics, tokenA), "mcpkit_server_rejected_calls_total", want)
	}
	for _, l := range []string{"frame_bytes", "inflight_request_bytes", "http_sessions"} {
		if got := rejected("reason", "limit", "limit", l); got != 0 {
			t.Errorf("before any refusal: rejected_calls{limit=%q} = %v, want a series at 0", l, got)
		}
	}

	// frame_bytes: a body one byte over.
	if code := rawPost(t, mcpURL, paddedPingBody(1<<20+1), authA); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("body over frame_bytes: HTTP %d, want 413", code)
	}

	// inflight_request_bytes: a body of 1 MiB announced and stalled holds
	// the whole budget; the next bodies are refused until it ends. Every
	// 503 the test sees is one refusal (the stalled request's own, should
	// a ping's body have been in flight when it arrived, included).
	addr := strings.TrimPrefix(hp.base, "http://")
	refusedInflight := 0
	post := func() int {
		code := rawPost(t, mcpURL, ping, authA)
		if code == http.StatusServiceUnavailable {
			refusedInflight++
		}
		return code
	}
	for attempt := 0; refusedInflight == 0 && attempt < 5; attempt++ {
		stalled, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(stalled, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s\r\nContent-Length: %d\r\n\r\n{", addr, authA, 1<<20)
		time.Sleep(200 * time.Millisecond) // the server takes the request
		post()
		stalled.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if line, _ := bufio.NewReader(stalled).ReadString('\n'); strings.HasPrefix(line, "HTTP/1.1 503") {
			refusedInflight++
		}
		stalled.Close()
	}
	if refusedInflight == 0 {
		t.Fatal("no body was refused for inflight_request_bytes")
	}
	eventually(t, 5*time.Second, "the budget back", func() bool { return post() != http.StatusServiceUnavailable })

	// http_sessions: the second legacy session.
	first := hp.connect(t, legacyEra, &http.Client{Transport: bearer{token: tokenA}})
	initialize := `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"` + legacyEra + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	if code := rawPost(t, mcpURL, initialize, authA); code != http.StatusServiceUnavailable {
		t.Fatalf("a second legacy session: HTTP %d, want 503", code)
	}

	// auth: no token, a wrong one, and token B on token A's session.
	if code := rawPost(t, mcpURL, ping); code != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d", code)
	}
	if code := rawPost(t, mcpURL, ping, "Authorization: Bearer wrong"); code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: HTTP %d", code)
	}
	if code := rawPost(t, mcpURL, ping, authB, "Mcp-Session-Id: "+first.ID(), "Mcp-Protocol-Version: "+legacyEra); code != http.StatusForbidden {
		t.Fatalf("another principal's session: HTTP %d, want 403", code)
	}

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"reason", "limit", "limit", "frame_bytes"}, 1},
		{[]string{"reason", "limit", "limit", "inflight_request_bytes"}, float64(refusedInflight)},
		{[]string{"reason", "limit", "limit", "http_sessions"}, 1},
		{[]string{"reason", "limit", "limit", "concurrent_tool_calls"}, 0},
		{[]string{"reason", "timeout", "limit", "body_timeout"}, 0},
		{[]string{"reason", "auth"}, 3},
	} {
		if got := rejected(c.labels...); got != c.want {
			t.Errorf("rejected_calls%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := rejected("reason", "_OTHER"); got != -1 {
		t.Errorf("a refusal of an unknown kind was counted: %v", got)
	}
}

// paddedPingBody is a ping of exactly n bytes.
func paddedPingBody(n int) string {
	head, tail := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"`, `"}}}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// metricsReceiver keeps the last value of each counter point an OTLP/HTTP
// exporter sends it, by metric name and attributes ("k=v,..." sorted).
type metricsReceiver struct {
	url  string
	mu   sync.Mutex
	last map[string]float64
}

func startMetricsReceiver(t testing.TB) *metricsReceiver {
	t.Helper()
	r := &metricsReceiver{last: map[string]float64{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var in colmetrics.ExportMetricsServiceRequest
		if req.URL.Path != "/v1/metrics" || err != nil || proto.Unmarshal(body, &in) != nil {
			w.Header().Set("Content-Type", "application/x-protobuf")
			return // spans: accepted and dropped
		}
		r.mu.Lock()
		for _, rm := range in.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					for _, p := range m.GetSum().GetDataPoints() {
						var kv []string
						for _, a := range p.Attributes {
							kv = append(kv, a.Key+"="+a.Value.GetStringValue())
						}
						slices.Sort(kv)
						r.last[m.Name+"{"+strings.Join(kv, ",")+"}"] = float64(p.GetAsInt()) + p.GetAsDouble()
					}
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.url = "http://" + ln.Addr().String()
	return r
}

func (r *metricsReceiver) value(key string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.last[key]
	return v, ok
}

// TestTelemetryRefusalsStdio: over stdio, a line over frame_bytes is
// counted once in mcpkit.server.rejected_calls{reason=limit,
// limit=frame_bytes}, exported over OTLP (stdio has no /metrics).
func TestTelemetryRefusalsStdio(t *testing.T) {
	rcv := startMetricsReceiver(t)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_EXPORTER=none", "OTEL_METRIC_EXPORT_INTERVAL=100"}
	sp := startStdioEnv(t, env, "--plugins", "diag", "--config", writeConfig(t, `{"limits": {"frame_bytes": 65536}}`))
	cs := sp.connect(t, legacyEra)
	const key = "mcpkit.server.rejected_calls{limit=frame_bytes,reason=limit}"
	eventually(t, 10*time.Second, "the frame_bytes series at 0", func() bool {
		v, ok := rcv.value(key)
		return ok && v == 0
	})
	for i := range 2 {
		fmt.Fprintf(sp, `{"jsonrpc":"2.0","id":"raw-big-%d","method":"ping","params":{"pad":%q}}`+"\n", i, strings.Repeat("x", 1<<17))
		if m := sp.rawResponse(t); errCode(m) != -32600 {
			t.Fatalf("oversized line answered with %v", m)
		}
	}
	ping(t, cs)
	eventually(t, 10*time.Second, key+" = 2", func() bool {
		v, _ := rcv.value(key)
		return v == 2
	})
	time.Sleep(300 * time.Millisecond) // a few more exports: still 2, never more
	if v, _ := rcv.value(key); v != 2 {
		t.Errorf("%s = %v, want 2", key, v)
	}
}
