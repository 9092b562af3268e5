package actions

import (
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

// BenchmarkOAuthVerify measures what verifying an OAuth access token adds
// to a tools/call on /mcp (the example app's status tool, legacy era, one
// session each) over the same call with a static bearer token, on one
// server accepting both, in alternating rounds; with the OAuth records in
// process, in Redis, and in Redis read on every request (no verification
// cache). It reports each call's p50 and their difference
// (the budget: 100 µs).
func BenchmarkOAuthVerify(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  func(b *testing.B) string
	}{
		{"memory", func(*testing.B) string { return `{"oauth": {}}` }},
		{"redis", func(b *testing.B) string {
			r := redistest.Start(b, redistest.Options{})
			return `{"oauth": {}, "redis": {"addr": "` + r.Addr + `"}}`
		}},
		{"redis-uncached", func(b *testing.B) string {
			r := redistest.Start(b, redistest.Options{})
			return `{"oauth": {"verify_cache_ms": -1}, "redis": {"addr": "` + r.Addr + `"}}`
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const static = "static-bench-token-0123456789"
			base := oauthWeb(b, tc.cfg(b), static)
			tok := oauthToken(b, base, "signup", "bench@example.com")
			var calls [2]func() time.Duration
			for i, token := range []string{static, tok.AccessToken} {
				cs, err := connectBearer(b, base, token)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { cs.Close() })
				params := &mcp.CallToolParams{Name: "status"}
				calls[i] = func() time.Duration {
					start := time.Now()
					if res, err := cs.CallTool(b.Context(), params); err != nil || res.IsError {
						b.Fatalf("call: %v %+v", err, res)
					}
					return time.Since(start)
				}
			}
			for range 100 { // warm up
				calls[0]()
				calls[1]()
			}
			var took [2][]time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := range 2 { // each goes first every other time
					j := (i + k) % 2
					took[j] = append(took[j], calls[j]())
				}
			}
			b.StopTimer()
			p50 := func(d []time.Duration) float64 {
				slices.Sort(d)
				return float64(d[len(d)/2].Nanoseconds()) / 1e3
			}
			s, o := p50(took[0]), p50(took[1])
			b.ReportMetric(s, "static-p50-µs")
			b.ReportMetric(o, "oauth-p50-µs")
			b.ReportMetric(o-s, "added-p50-µs")
		})
	}
}
