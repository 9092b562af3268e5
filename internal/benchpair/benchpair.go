// Package benchpair measures two implementations of one operation side by
// side in one benchmark: mcpkit and the peer it is compared with. Rounds of
// the two alternate so that machine noise hits both alike, and the result is
// a ratio, which stays meaningful on a noisy machine where absolute times do
// not. It is for benchmarks only.
package benchpair

import (
	"testing"
	"time"
)

const (
	warmup = 200 // untimed calls of each before measuring
	round  = 50  // calls of one before switching to the other
)

// Compare calls each op b.N times (after a warm-up), alternating rounds, and
// reports "<name>-ns/call" for both and "ratio", the first's time over the
// second's, which it also returns. Runs of fewer than 100 calls only
// calibrate b.N; longer ones log the result.
func Compare(b *testing.B, names [2]string, ops [2]func()) float64 {
	b.Helper()
	_, ratio := CompareCalls(b, names, ops)
	return ratio
}

// CompareCalls is Compare, also returning each op's time per call.
func CompareCalls(b *testing.B, names [2]string, ops [2]func()) (perCall [2]time.Duration, ratio float64) {
	b.Helper()
	for _, op := range ops {
		for range warmup {
			op()
		}
	}
	var took [2]time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		for i, op := range ops {
			start := time.Now()
			for range min(round, b.N-done) {
				op()
			}
			took[i] += time.Since(start)
		}
	}
	b.StopTimer()
	ratio = float64(took[0]) / float64(took[1])
	for i, name := range names {
		perCall[i] = took[i] / time.Duration(b.N)
		b.ReportMetric(float64(took[i].Nanoseconds())/float64(b.N), name+"-ns/call")
	}
	b.ReportMetric(ratio, "ratio")
	if b.N >= 100 {
		b.Logf("%s over %d calls: %s %v/call, %s %v/call, ratio %.3f", b.Name(), b.N,
			names[0], perCall[0], names[1], perCall[1], ratio)
	}
	return perCall, ratio
}
