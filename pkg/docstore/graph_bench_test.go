package docstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkTraverse: breadth-first traversals over 100,000 documents
// with 5 random outgoing edges each (a file store), from random starts,
// to depths 2 and 3, limited to 1,000 nodes.
func BenchmarkTraverse(b *testing.B) {
	s := benchStore(b)
	putBench(b, s, "nodes", benchDocs, func(i int) Value { return Map(Field{"n", Int(int64(i))}) })
	rng := rand.New(rand.NewPCG(3, 3))
	ctx := context.Background()
	var lines []edgeLine
	for i := range benchDocs {
		for range 5 {
			lines = append(lines, edgeLine{From: refLine{"nodes", json.RawMessage(fmt.Sprint(i))}, Type: "next",
				To: refLine{"nodes", json.RawMessage(fmt.Sprint(rng.IntN(benchDocs)))}})
		}
		if len(lines) == 50_000 {
			if err := s.loadEdges(ctx, lines); err != nil {
				b.Fatal(err)
			}
			lines = lines[:0]
		}
	}
	for _, depth := range []int{2, 3} {
		b.Run(fmt.Sprintf("depth-%d", depth), func(b *testing.B) {
			nodes := 0
			p50, p99, n := latencies(b, func(int) {
				res, err := s.Traverse(ctx, Ref{"nodes", Int(int64(rng.IntN(benchDocs)))}, TraverseQuery{MaxDepth: depth, Limit: 1000})
				if err != nil {
					b.Fatal(err)
				}
				nodes += len(res.Nodes)
			})
			b.Logf("depth %d over %d nodes × 5 edges: p50 %v, p99 %v, %.0f nodes a traversal", depth, benchDocs, p50, p99, float64(nodes)/float64(n))
		})
	}
	b.Run("neighbors", func(b *testing.B) {
		p50, p99, _ := latencies(b, func(int) {
			if _, err := s.Neighbors(ctx, Ref{"nodes", Int(int64(rng.IntN(benchDocs)))}, NeighborQuery{WithDocs: true}); err != nil {
				b.Fatal(err)
			}
		})
		b.Logf("neighbors with documents: p50 %v, p99 %v", p50, p99)
	})
}
