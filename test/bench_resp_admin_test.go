package test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/resp"
)

// BenchmarkRespAdmin measures the management gateway (`bin/mcpkit resp
// admin`, over HTTP with keep-alive) against the direct RESP commands it
// wraps, on the same disposable redis-server holding 1000 keys, one call of
// each side in turn: a /metrics scrape against INFO ALL, and
// /api/keys?count=100 against SCAN 0 COUNT 100 followed by the pipeline of
// TYPE, PTTL and MEMORY USAGE for the keys it returned. It reports the p50
// and p95 of each side and the p50 ratio.
func BenchmarkRespAdmin(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{})
	direct, err := resp.Dial(b.Context(), resp.DialOptions{Addr: srv.Addr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })
	var fill [][][]byte
	for i := range 1000 {
		fill = append(fill, [][]byte{[]byte("SET"), []byte(fmt.Sprintf("bench:key:%04d", i)), []byte(fmt.Sprintf("value-%010d", i))})
	}
	if _, err := direct.Pipeline(b.Context(), fill, resp.PipelineOptions{}); err != nil {
		b.Fatal(err)
	}
	gw := startListening(b, binary(b), "resp", "--log-format", "json", "admin", "--target", srv.Addr, "--listen", "127.0.0.1:0")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	b.Cleanup(client.CloseIdleConnections)
	get := func(path string) func() {
		return func() {
			res, err := client.Get(gw.base + path)
			if err != nil {
				b.Fatal(err)
			}
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != 200 {
				b.Fatalf("GET %s: %d %v", path, res.StatusCode, err)
			}
		}
	}
	do := func(cmds ...[][]byte) resp.PipelineResult {
		res, err := direct.Pipeline(b.Context(), cmds, resp.PipelineOptions{})
		if err != nil || len(res.Replies) != len(cmds) {
			b.Fatalf("pipeline: %v", err)
		}
		return res
	}
	info := func() { do([][]byte{[]byte("INFO"), []byte("ALL")}) }
	keys := func() {
		scan := do([][]byte{[]byte("SCAN"), []byte("0"), []byte("COUNT"), []byte("100")}).Replies[0]
		var cmds [][][]byte
		for _, k := range scan.Elems[1].Elems {
			cmds = append(cmds, [][]byte{[]byte("TYPE"), k.Str}, [][]byte{[]byte("PTTL"), k.Str}, [][]byte{[]byte("MEMORY"), []byte("USAGE"), k.Str})
		}
		do(cmds...)
	}
	for _, c := range []struct {
		name            string
		gateway, direct func()
	}{
		{"metrics", get("/metrics"), info},
		{"keys100", get("/api/keys?count=100"), keys},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range 20 { // warm-up: connections, caches
				c.gateway()
				c.direct()
			}
			var gwRounds, directRounds respRounds
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				c.gateway()
				gwRounds = append(gwRounds, time.Since(start))
				start = time.Now()
				c.direct()
				directRounds = append(directRounds, time.Since(start))
			}
			b.StopTimer()
			_, gwP50, gwP95 := gwRounds.stats(1)
			_, dP50, dP95 := directRounds.stats(1)
			ratio := float64(gwP50) / float64(dP50)
			b.ReportMetric(float64(gwP50.Microseconds()), "gateway-p50-µs")
			b.ReportMetric(float64(dP50.Microseconds()), "direct-p50-µs")
			b.ReportMetric(float64(gwP95.Microseconds()), "gateway-p95-µs")
			b.ReportMetric(float64(dP95.Microseconds()), "direct-p95-µs")
			b.ReportMetric(ratio, "p50-ratio")
			b.Logf("%s over %d calls: gateway p50 %v p95 %v, direct RESP p50 %v p95 %v, p50 ratio %s",
				c.name, b.N, gwP50, gwP95, dP50, dP95, strconv.FormatFloat(ratio, 'f', 2, 64))
		})
	}
}
