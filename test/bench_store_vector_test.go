package test

import (
	"context"
	"errors"
	"fmt"
	"math"
	mrand "math/rand"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/hnsw"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/test/internal/hnswlibpeer"
	"github.com/philippgille/chromem-go"
)

// The workload of BenchmarkStoreVector (issue 10).
const (
	vecDocs    = 100_000
	vecHNSW    = vecDocs // of them in the HNSW collection (see BenchmarkStoreVector)
	vecDim     = 384
	vecRank    = 16 // the vectors' intrinsic dimension (see vecSet)
	vecBatch   = 1_000
	vecRound   = 20_000 // vectors each side of the HNSW build adds in its turn (see buildHNSW)
	vecExactQs = 40     // exact queries per side
	vecApproxQ = 200    // approximate and hybrid queries
	vecK       = 10

	vecExactTarget  = 20 * time.Millisecond // exact top-10 p50
	vecApproxTarget = time.Millisecond      // approximate top-10 p50
	vecMinRecall    = 0.95
	vecBuildTarget  = 8_000 // HNSW build, vectors per second (and at least the peer's rate)
)

// The HNSW peer: github.com/coder/hnsw, the pure-Go HNSW library a user
// would embed, building in memory with the store's settings and searched
// at ef=100 like the store. Its knobs are M, Ml (the chance of each level
// above 0: 1/M, as hnswlib's 1/ln M multiplier draws) and EfSearch, which
// Add's neighbour searches use too (it has no ef_construction of its own):
// 40 while adding, 100 while searching, with cosine distance (the
// vectors are unit). v0.6.1, the only version published, searches with a
// result set of k (M while adding) rather than ef, stops at the first
// expansion that finds nothing closer than the best so far, and its heap's
// Max and PopLast take the last element of a min-heap rather than the
// farthest: its recall@10 on these vectors is about 0.05 at ef=100 (0.10
// even when asked for 200 and reranked), whatever the settings; the fixes
// are upstream, unreleased. Its rate is reported beside its recall, and the
// store's build is held to it only when that recall reaches vecMinRecall:
// a build that finds a twentieth of the neighbours does less work than
// the target asks for.
const (
	vecPeer           = "coder/hnsw v0.6.1"
	vecPeerEfBuild    = 40
	vecPeerEfSearch   = 100
	vecPeerM          = 16
	vecPeerLevelRatio = 1.0 / vecPeerM
)

// The HNSW build's reference peer: hnswlib, the C++ library of HNSW's
// authors (Debian's libhnswlib-dev, header-only; test/internal/hnswlibpeer
// compiles a small program against it with g++ -O3 -march=native and
// drives it), building the same vectors in memory with the same M and
// ef_construction (InnerProductSpace: the vectors are unit, so cosine is
// the inner product), each batch on vecLibThreads threads taking the next
// vector from an atomic counter (as its own ParallelFor), and searched at
// ef=100 like the store. Its rate and recall are reported beside the
// store's, not judged: they are what a build of such a graph does on this
// machine, its reads partly from cache, as a graph walk's are.
const vecLibThreads = 2

// vecSet returns n random unit vectors of vecDim components that lie
// near a random vecRank-dimensional subspace (Gaussian coordinates in a
// random basis, plus 5% Gaussian noise in every component), as text
// embeddings do: their nearest neighbours mean something. (Independent
// uniform components in 384 dimensions put every vector at nearly the
// same distance from every other, where no approximate index beats a
// scan.) The same seed gives the same vectors.
func vecSet(seed uint64, n int) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 0x7ec))
	basis := make([][]float32, vecRank)
	brng := rand.New(rand.NewPCG(1, 0xba5e))
	for i := range basis {
		basis[i] = make([]float32, vecDim)
		for j := range basis[i] {
			basis[i][j] = float32(brng.NormFloat64())
		}
	}
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, vecDim)
		for _, b := range basis {
			z := float32(rng.NormFloat64())
			for j := range v {
				v[j] += z * b[j]
			}
		}
		var norm float64
		for j := range v {
			v[j] += float32(rng.NormFloat64() * 0.05 * 4) // 4 ≈ a component's spread
			norm += float64(v[j]) * float64(v[j])
		}
		for j := range v {
			v[j] = float32(float64(v[j]) / math.Sqrt(norm))
		}
		out[i] = v
	}
	return out
}

var vecWords = strings.Fields("solar wind battery grid panel turbine storage hydro carbon meter inverter charge")

// vecDoc is document i: its vector, a group (i mod 100) and a short text.
func vecDoc(i int, v []float32) docstore.Value {
	return docstore.Map(
		storeField("v", docstore.Vector(v)),
		storeField("g", docstore.Int(int64(i%100))),
		storeField("t", docstore.Text(vecWords[i%len(vecWords)]+" "+vecWords[(i/7)%len(vecWords)]+" "+vecWords[(i/49)%len(vecWords)])),
	)
}

// BenchmarkStoreVector measures, in one run (`make bench-store`, b.N is
// not used), vector search in the document store (a bbolt file) against
// chromem-go (in memory, exact, the pure-Go library a user would embed)
// on the same 100,000 × 384 vectors (vecSet): exact top-10 on each side
// (the same queries, alternating sides in chunks, results compared),
// then the docstore's approximate top-10 (HNSW, default settings) with
// its recall@10 against exact, and a hybrid query (a filter passing half
// the documents, vector and text sources, RRF and MMR). It fails when
// exact top-10 p50 exceeds 20 ms, approximate p50 exceeds 1 ms or its
// recall is under 0.95.
//
// The exact side is a flat vector field (no graph) holding all 100,000.
// The approximate and hybrid queries run on a second collection holding
// the first vecHNSW of them (all) with an HNSW graph, built incrementally
// by the ingest (transactions of 1,000, whose vectors the store's linker
// links into the graph in the background, in batches, the neighbour
// searches on every core; the build's time ends when it has linked them).
// Both ingests commit durably (each transaction synced to the disk, the
// linker's too), as a store does unless told otherwise: the HNSW build's
// rate is that of a build persisted as it goes, against coder/hnsw and
// hnswlib building the same vectors in memory in the same run (see
// buildHNSW; hnswlib must be installed: scripts/install-deps.sh --bench).
func BenchmarkStoreVector(b *testing.B) {
	ctx := b.Context()
	vecs := vecSet(1, vecDocs)
	lib := startHnswlib(b, vecs[:vecHNSW])
	queries := vecSet(2, vecApproxQ)
	path := filepath.Join(b.TempDir(), "vectors.db")
	s, err := docstore.Open(path, docstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.SetVector(ctx, "flat", docstore.VectorDef{Field: "v", Dimension: vecDim, Flat: true}, nil); err != nil {
		b.Fatal(err)
	}
	flatBuild := ingestVecs(b, s, "flat", vecs, vecDocs)
	textErr := setUpHybrid(b, s)
	hb := buildHNSW(b, s, vecs, lib)
	build := hb.docstore

	start := time.Now()
	cdb := chromem.NewDB()
	cc, err := cdb.CreateCollection("v", nil, func(context.Context, string) ([]float32, error) {
		return nil, errors.New("no embedding: the vectors are given")
	})
	if err != nil {
		b.Fatal(err)
	}
	cdocs := make([]chromem.Document, vecDocs)
	for i, v := range vecs {
		cdocs[i] = chromem.Document{ID: strconv.Itoa(i), Embedding: slices.Clone(v)}
	}
	if err := cc.AddDocuments(ctx, cdocs, 2); err != nil {
		b.Fatal(err)
	}
	chromemBuild := time.Since(start)
	b.ResetTimer()

	search := func(coll string, q []float32, approx bool) []int64 {
		res, err := s.Search(ctx, coll, docstore.SearchQuery{Vector: &docstore.VectorQuery{Vector: q, Approximate: approx}, Limit: vecK})
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]int64, len(res.Hits))
		for i, h := range res.Hits {
			ids[i], _ = h.Doc.ID.Int()
		}
		return ids
	}
	chromemSearch := func(q []float32) []int64 {
		res, err := cc.QueryEmbedding(ctx, q, vecK, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]int64, len(res))
		for i, r := range res {
			ids[i], _ = strconv.ParseInt(r.ID, 10, 64)
		}
		return ids
	}

	// Exact top-10, the sides alternating every 10 queries; the answers
	// must agree.
	var exact [2]respRounds
	truth := make([][]int64, vecExactQs)
	for lo := 0; lo < vecExactQs; lo += 10 {
		for j := range 2 {
			side := (j + lo/10) % 2
			for i := lo; i < lo+10; i++ {
				t0 := time.Now()
				var ids []int64
				if side == 0 {
					ids = search("flat", queries[i], false)
				} else {
					ids = chromemSearch(queries[i])
				}
				exact[side] = append(exact[side], time.Since(t0))
				if side == 0 {
					truth[i] = ids
				} else if truth[i] != nil && !slices.Equal(ids, truth[i]) {
					b.Fatalf("query %d: docstore %v, chromem-go %v", i, truth[i], ids)
				}
			}
		}
	}

	// Approximate top-10 on the HNSW collection, and its recall against
	// exact search there.
	hnswTruth := make([][]int64, vecApproxQ)
	for i, q := range queries {
		hnswTruth[i] = search("v", q, false)
	}
	for _, q := range queries[:10] {
		search("v", q, true) // warm-up (the first searches after the writes read the file)
	}
	var approx respRounds
	approxIDs := make([][]int64, len(queries))
	for i, q := range queries {
		t0 := time.Now()
		approxIDs[i] = search("v", q, true)
		approx = append(approx, time.Since(t0))
	}
	recall := recallAt10(approxIDs, hnswTruth)
	peerRecall := hb.recall(queries, hnswTruth)
	libRecall := hb.libRecall(b, queries, hnswTruth)

	hybridQ, hybridWhat := hybridQuery(b, textErr)
	hybrid := measureHybrid(b, s, queries, hybridQ)
	b.StopTimer()

	_, dsExact, dsExact95 := exact[0].stats(1)
	_, chExact, chExact95 := exact[1].stats(1)
	_, apP50, apP95 := approx.stats(1)
	hyP50, hyP95 := hybrid.approxP50(), hybrid.approxP95()
	peerJudged := peerRecall >= vecMinRecall // a peer below the recall floor did less work
	peerTarget := "≥ the peer's"
	if !peerJudged {
		peerTarget = fmt.Sprintf("the peer's not judged (its recall@10 %.3f < %.2f)", peerRecall, vecMinRecall)
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	b.Logf("vector search, %d × %d vectors (rank-%d + noise, unit), top %d; docstore: bbolt file, flat field ingested in %v; %d of them with HNSW (M=16, ef_construction=40) ingested in %v (%.0f vectors/s); chromem-go %s: in memory, added in %v\n"+
		"%-44s  %5s  %9s  %9s  %9s  %s\n"+
		"%-44s  %5d  %9s  %9s  %9.2f  p50 ≤ %v: %s\n"+
		"%-44s  %5d  %9s  %9s  %9s\n"+
		"%-44s  %5d  %9s  %9s  %9s  p50 ≤ %v, recall@10 %.3f ≥ %.2f: %s\n"+
		"%-44s  %5d  %9s  %9s  %9s  %s",
		vecDocs, vecDim, vecRank, vecK, flatBuild.Round(time.Millisecond), vecHNSW, build.Round(time.Millisecond), float64(vecHNSW)/build.Seconds(), "v0.7.0", chromemBuild.Round(time.Millisecond),
		"query", "n", "p50 µs", "p95 µs", "ratio", "target",
		"exact top-10: docstore (2 goroutines)", vecExactQs, micros(dsExact), micros(dsExact95), float64(dsExact)/float64(chExact), vecExactTarget, verdict(dsExact <= vecExactTarget),
		"exact top-10: chromem-go", vecExactQs, micros(chExact), micros(chExact95), "1",
		fmt.Sprintf("approximate top-10 of %d: docstore HNSW ef=100", vecHNSW), vecApproxQ, micros(apP50), micros(apP95), "-", vecApproxTarget, recall, vecMinRecall, verdict(apP50 <= vecApproxTarget && recall >= vecMinRecall),
		fmt.Sprintf("hybrid of %d: %s, RRF, MMR 0.7", vecHNSW, hybridWhat), vecApproxQ, micros(hyP50), micros(hyP95), "-", "reported")
	libName := "hnswlib"
	if hb.libVersion != "" {
		libName += " " + hb.libVersion
	}
	b.Logf("HNSW build of %d × %d vectors (M=16, ef_construction=40), rounds of %d, each round by the three sides in turn (the first rotating), the store's in transactions of %d and timed until its linker has linked them; load average %s before, %s after; "+
		"%s computes %.0f distances per vector on 1 goroutine, its search stopping early (its rate is held against the store's only at recall@10 ≥ %.2f); "+
		"%s (C++, g++ -O3 -march=native, in memory, InnerProductSpace: the vectors are unit) adds each batch on %d threads taking the next vector from an atomic counter, as its ParallelFor, timed in its process; ratio: over %s's rate\n"+
		"%-56s  %7s  %9s  %9s  %5s  %s\n"+
		"%-56s  %7d  %9.0f  %9.3f  %5.2f  ≥ %d/s and %s, recall@10 %.3f at ef=100: %s\n"+
		"%-56s  %7d  %9.0f  %9.3f  %5s  recall@10 %.3f at ef=%d\n"+
		"%-56s  %7d  %9.0f  %9.3f  %5.2f  recall@10 %.3f at ef=%d; reported (the store's build over hnswlib's: %.2f)",
		vecHNSW, vecDim, vecRound, vecBatch, hb.loadBefore, hb.loadAfter,
		vecPeer, float64(hb.peerDistances)/vecHNSW, vecMinRecall,
		libName, vecLibThreads, vecPeer,
		"build", "vectors", "vectors/s", "seconds", "ratio", "target",
		"HNSW build: docstore (bbolt file, durable commits)", vecHNSW, hb.rate(build), build.Seconds(), hb.rate(build)/hb.rate(hb.peer),
		vecBuildTarget, peerTarget, recall, verdict(hb.rate(build) >= vecBuildTarget && (!peerJudged || build <= hb.peer) && recall >= vecMinRecall),
		"HNSW build: "+vecPeer+" (in memory)", vecHNSW, hb.rate(hb.peer), hb.peer.Seconds(), "1", peerRecall, vecPeerEfSearch,
		fmt.Sprintf("HNSW build: %s (C++, in memory, %d threads)", libName, vecLibThreads), vecHNSW, hb.rate(hb.lib), hb.lib.Seconds(), hb.rate(hb.lib)/hb.rate(hb.peer),
		libRecall, vecPeerEfSearch, hb.rate(build)/hb.rate(hb.lib))
	b.ReportMetric(float64(dsExact.Microseconds()), "exact-p50-µs")
	b.ReportMetric(float64(chExact.Microseconds()), "chromem-exact-p50-µs")
	b.ReportMetric(float64(apP50.Microseconds()), "approx-p50-µs")
	b.ReportMetric(recall, "recall@10")
	b.ReportMetric(float64(hyP50.Microseconds()), "hybrid-p50-µs")
	b.ReportMetric(build.Seconds(), "build-s")
	b.ReportMetric(hb.rate(build), "build-vectors/s")
	b.ReportMetric(hb.rate(hb.peer), "peer-build-vectors/s")
	b.ReportMetric(hb.rate(hb.lib), "hnswlib-build-vectors/s")
	b.ReportMetric(libRecall, "hnswlib-recall@10")
	if hb.rate(build) < vecBuildTarget {
		b.Errorf("HNSW build at %.0f vectors/s is under the target of %d/s", hb.rate(build), vecBuildTarget)
	}
	if peerJudged && build > hb.peer {
		b.Errorf("HNSW build at %.0f vectors/s is slower than %s's %.0f/s in memory", hb.rate(build), vecPeer, hb.rate(hb.peer))
	}
	if dsExact > vecExactTarget {
		b.Errorf("exact top-10 p50 %v is over the target of %v", dsExact, vecExactTarget)
	}
	if apP50 > vecApproxTarget {
		b.Errorf("approximate top-10 p50 %v is over the target of %v", apP50, vecApproxTarget)
	}
	if recall < vecMinRecall {
		b.Errorf("approximate recall@10 %.3f is under %.2f", recall, vecMinRecall)
	}
	hybrid.report(b, hybridWhat)
	measureVecMemory(b, s, path, vecs)
}

// hnswBuild is the HNSW build of BenchmarkStoreVector: the store's, the
// peer's and hnswlib's times over the same vectors, the peer's graph,
// hnswlib's process, and the load average around them (the machine is
// shared: the ratios are the figures).
type hnswBuild struct {
	docstore, peer, lib   time.Duration
	graph                 *hnsw.Graph[int64]
	peerDistances         int // the distances the peer's build computed
	libPeer               *hnswlibpeer.Peer
	libVersion            string // libhnswlib-dev's, "" when unknown
	loadBefore, loadAfter string
}

func (h hnswBuild) rate(d time.Duration) float64 { return float64(vecHNSW) / d.Seconds() }

// startHnswlib compiles and starts hnswlib's peer process on vecs (see
// vecLibThreads), or fails the benchmark saying how to install it.
func startHnswlib(b *testing.B, vecs [][]float32) *hnswlibpeer.Peer {
	b.Helper()
	if missing := hnswlibpeer.Missing(); missing != "" {
		b.Fatalf("%s not found: the HNSW build is measured against hnswlib (C++), which needs Debian's libhnswlib-dev and g++: "+
			"run scripts/install-deps.sh --bench (as root or with sudo; make bench-store runs it first)", missing)
	}
	p, err := hnswlibpeer.Start(b.TempDir(), vecs, vecPeerM, vecPeerEfBuild, vecLibThreads)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// buildHNSW stores the first vecHNSW of vecs in the store's collection
// "v" (an HNSW field) and adds the same vectors to the peer's graph and to
// hnswlib's index (lib) in memory, in rounds of vecRound vectors, each
// side's part of a round in turn with the first rotating, so that all
// three meet the same load. The store writes its part in transactions of
// vecBatch, and its time runs until its linker has linked them (WaitLinked):
// its linking in the background never overlaps another side's turn.
func buildHNSW(b *testing.B, s *docstore.Store, vecs [][]float32, lib *hnswlibpeer.Peer) hnswBuild {
	h := hnswBuild{graph: hnsw.NewGraph[int64](), libPeer: lib, libVersion: hnswlibpeer.Version(), loadBefore: loadAverage()}
	h.graph.M, h.graph.EfSearch, h.graph.Ml = vecPeerM, vecPeerEfBuild, vecPeerLevelRatio
	distances := 0
	h.graph.Distance = func(a, b []float32) float32 { distances++; return hnsw.CosineDistance(a, b) }
	h.graph.Rng = mrand.New(mrand.NewSource(1))
	for lo := 0; lo < vecHNSW; lo += vecRound {
		hi := min(lo+vecRound, vecHNSW)
		for j := range 3 {
			t0 := time.Now()
			switch (j + lo/vecRound) % 3 {
			case 0:
				for blo := lo; blo < hi; blo += vecBatch {
					docs := make([]docstore.Doc, 0, vecBatch)
					for i := blo; i < min(blo+vecBatch, hi); i++ {
						docs = append(docs, docstore.Doc{ID: docstore.Int(int64(i)), Value: vecDoc(i, vecs[i])})
					}
					if _, err := s.PutMany(b.Context(), "v", docs); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.WaitLinked(b.Context(), "v"); err != nil {
					b.Fatal(err)
				}
				h.docstore += time.Since(t0)
			case 1:
				nodes := make([]hnsw.Node[int64], 0, hi-lo)
				for i := lo; i < hi; i++ {
					nodes = append(nodes, hnsw.MakeNode(int64(i), slices.Clone(vecs[i])))
				}
				t0 = time.Now()
				h.graph.Add(nodes...)
				h.peer += time.Since(t0)
			case 2:
				d, err := lib.Add(lo, hi)
				if err != nil {
					b.Fatal(err)
				}
				h.lib += d
			}
		}
	}
	h.loadAfter = loadAverage()
	h.graph.EfSearch, h.graph.Distance, h.peerDistances = vecPeerEfSearch, hnsw.CosineDistance, distances
	return h
}

// recall returns the peer graph's recall@10 for queries against the
// exact top 10 of each (truth).
func (h hnswBuild) recall(queries [][]float32, truth [][]int64) float64 {
	got := make([][]int64, len(queries))
	for i, q := range queries {
		for _, n := range h.graph.Search(q, vecK) {
			got[i] = append(got[i], n.Key)
		}
	}
	return recallAt10(got, truth)
}

// libRecall returns hnswlib's recall@10 at ef=100 for queries against the
// exact top 10 of each (truth), and ends its process.
func (h hnswBuild) libRecall(b *testing.B, queries [][]float32, truth [][]int64) float64 {
	got, err := h.libPeer.Search(queries, vecK, vecPeerEfSearch)
	if err != nil {
		b.Fatal(err)
	}
	if err := h.libPeer.Close(); err != nil {
		b.Fatal(err)
	}
	return recallAt10(got, truth)
}

// recallAt10 is the share of the exact top 10 of each query (truth) that
// the ids found for it (got) hold.
func recallAt10(got, truth [][]int64) float64 {
	found := 0
	for i, ids := range got {
		for _, id := range ids {
			if slices.Contains(truth[i], id) {
				found++
			}
		}
	}
	return float64(found) / float64(vecK*len(truth))
}

// ingestVecs stores documents 0 to n-1 of vecs in coll, in transactions
// of vecBatch, waits until the store's linker has linked them into the
// HNSW graph (if coll has one), and returns the time it took.
func ingestVecs(b *testing.B, s *docstore.Store, coll string, vecs [][]float32, n int) time.Duration {
	start := time.Now()
	for lo := 0; lo < n; lo += vecBatch {
		docs := make([]docstore.Doc, 0, vecBatch)
		for i := lo; i < min(lo+vecBatch, n); i++ {
			docs = append(docs, docstore.Doc{ID: docstore.Int(int64(i)), Value: vecDoc(i, vecs[i])})
		}
		if _, err := s.PutMany(b.Context(), coll, docs); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.WaitLinked(b.Context(), coll); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// setUpHybrid gives collection "v" of s what the hybrid queries search: an
// HNSW vector field, an index on g and a text index on t. It returns why
// the text index could not be made, if it could not (the queries then
// leave text out).
func setUpHybrid(b *testing.B, s *docstore.Store) error {
	ctx := b.Context()
	if _, err := s.SetVector(ctx, "v", docstore.VectorDef{Field: "v", Dimension: vecDim}, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := s.CreateIndex(ctx, "v", docstore.IndexDef{Name: "g", Fields: []string{"g"}}, nil); err != nil {
		b.Fatal(err)
	}
	_, err := s.CreateTextIndex(ctx, "v", docstore.TextIndexDef{Name: "t", Fields: []string{"t"}}, nil)
	if err != nil {
		b.Logf("no text index: %v", err)
	}
	return err
}

// hybridQuery returns the hybrid search of a query vector — a filter
// passing half the documents (answered by the index on g), an approximate
// vector source and a text source (unless textErr says there is no text
// index), RRF and MMR 0.7 — and what it combines.
func hybridQuery(b testing.TB, textErr error) (func(q []float32) docstore.SearchQuery, string) {
	half := make([]docstore.Value, 50)
	for i := range half {
		half[i] = docstore.Int(int64(2 * i))
	}
	filter, err := docstore.ParseFilter(docstore.Map(storeField("g", docstore.Map(storeField("$in", docstore.Array(half...))))))
	if err != nil {
		b.Fatal(err)
	}
	lambda := 0.7
	text := &docstore.TextQuery{Query: "solar battery"}
	what := "filter + vector + text"
	if textErr != nil {
		text, what = nil, fmt.Sprintf("filter + vector only (no text index: %v)", textErr)
	}
	return func(q []float32) docstore.SearchQuery {
		return docstore.SearchQuery{Filter: filter, Vector: &docstore.VectorQuery{Vector: q, Approximate: true},
			Text: text, MMR: &lambda, Limit: vecK, Profile: true}
	}, what
}

// vecHybridTarget is the hybrid query's p50 target, with approximate
// vectors.
const vecHybridTarget = 5 * time.Millisecond

// hybridRounds is how many rounds of the hybrid queries
// BenchmarkStoreVector runs: its figures are the medians of the rounds'
// p50s, since one round's p50 varies by a quarter from run to run on a
// quiet machine.
const hybridRounds = 5

// hybridRuns is what BenchmarkStoreVector measures of the hybrid query,
// in hybridRounds rounds: in each round the query with approximate
// vectors, the same query with exact vectors, then each stage's work
// alone over the same queries (in turn for each query): the filter's
// documents counted from the index (its entries read, no set built), the
// approximate vector search unfiltered at twice the ef (a walk keeping
// the 100 closest of the half that pass expands about as far as one
// keeping the 200 closest of all, without the membership tests) and BM25 over
// the two terms unfiltered (their postings read). With the two sources on
// two cores, the query's bound is the filter's time plus the slower
// source's. After the rounds, the vector source's recall with the filter
// is measured against an exact ranking among the documents that pass.
type hybridRuns struct {
	approx, exact             []respRounds // per round
	approxStages, exactStages []*docstore.SearchProfile
	count, vector, text       respRounds
	loadBefore, loadAfter     string
	vectorRecall              float64 // the filtered approximate window's, against exact
}

// measureHybrid runs the rounds of the hybrid query over queries.
func measureHybrid(b *testing.B, s *docstore.Store, queries [][]float32, hybridQ func(q []float32) docstore.SearchQuery) hybridRuns {
	ctx := b.Context()
	h := hybridRuns{loadBefore: loadAverage()}
	timed := func(rounds *respRounds, fn func() error) {
		t0 := time.Now()
		err := fn()
		*rounds = append(*rounds, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
	}
	search := func(q docstore.SearchQuery, stages *[]*docstore.SearchProfile) error {
		res, err := s.Search(ctx, "v", q)
		if err != nil {
			return err
		}
		if len(res.Hits) != vecK {
			return fmt.Errorf("hybrid query: %d hits, want %d", len(res.Hits), vecK)
		}
		*stages = append(*stages, res.Profile)
		return nil
	}
	pool := docstore.MMRPool(vecK) // what each source ranks under MMR
	for range hybridRounds {
		var approx, exact respRounds
		for _, q := range queries {
			timed(&approx, func() error { return search(hybridQ(q), &h.approxStages) })
		}
		for _, q := range queries {
			eq := hybridQ(q)
			eq.Vector = &docstore.VectorQuery{Vector: q}
			timed(&exact, func() error { return search(eq, &h.exactStages) })
		}
		h.approx, h.exact = append(h.approx, approx), append(h.exact, exact)
		// The exact scans read every vector: the stages alone run after
		// them, as the next round's approximate queries do, on what they
		// left in the caches.
		for _, q := range queries {
			hq := hybridQ(q)
			timed(&h.count, func() error { _, _, err := s.Count(ctx, "v", hq.Filter); return err })
			ef := docstore.HNSWDefaultEf * 2 // the filter passes half: its walk expands as far as an unfiltered one keeping twice ef
			timed(&h.vector, func() error {
				_, err := s.Search(ctx, "v", docstore.SearchQuery{Vector: &docstore.VectorQuery{Vector: q, Approximate: true, Ef: ef, K: pool}, Limit: vecK, Select: []string{}})
				return err
			})
			if hq.Text != nil {
				timed(&h.text, func() error {
					_, err := s.Search(ctx, "v", docstore.SearchQuery{Text: hq.Text, Limit: pool, Select: []string{}})
					return err
				})
			}
		}
	}
	h.loadAfter = loadAverage()
	// The vector source's recall with the filter: its approximate
	// ranking of the window against the exact one, among the documents
	// that pass.
	found := 0
	for _, q := range queries {
		hq := hybridQ(q)
		ids := func(approx bool) []string {
			res, err := s.Search(ctx, "v", docstore.SearchQuery{Filter: hq.Filter, Vector: &docstore.VectorQuery{Vector: q, Approximate: approx, K: pool}, Limit: pool, Select: []string{}})
			if err != nil {
				b.Fatal(err)
			}
			out := make([]string, len(res.Hits))
			for i, hit := range res.Hits {
				out[i] = fmt.Sprint(hit.Doc.ID)
			}
			return out
		}
		exact := ids(false)
		for _, id := range ids(true) {
			if slices.Contains(exact, id) {
				found++
			}
		}
	}
	h.vectorRecall = float64(found) / float64(pool*len(queries))
	return h
}

// roundsMedian returns the median over rounds of each round's p50 (or
// p95), and every round's, in microseconds, for the log.
func roundsMedian(rounds []respRounds, p95 bool) (time.Duration, string) {
	var each respRounds
	var shown []string
	for _, r := range rounds {
		_, p50, p95v := r.stats(1)
		if p95 {
			p50 = p95v
		}
		each = append(each, p50)
		shown = append(shown, micros(p50))
	}
	_, med, _ := each.stats(1)
	return med, strings.Join(shown, " ")
}

func (h hybridRuns) approxP50() time.Duration { d, _ := roundsMedian(h.approx, false); return d }
func (h hybridRuns) approxP95() time.Duration { d, _ := roundsMedian(h.approx, true); return d }

// report logs the hybrid table — the approximate and exact p50 (the
// median of the rounds' p50s, each round's shown), each stage's median
// from the queries' profiles, the bound — and fails when the approximate
// p50 misses its target.
func (h hybridRuns) report(b *testing.B, what string) {
	apP50, apRounds := roundsMedian(h.approx, false)
	apP95, _ := roundsMedian(h.approx, true)
	exP50, exRounds := roundsMedian(h.exact, false)
	exP95, _ := roundsMedian(h.exact, true)
	_, countP50, _ := h.count.stats(1)
	_, vecP50, _ := h.vector.stats(1)
	textP50 := time.Duration(0)
	if len(h.text) > 0 {
		_, textP50, _ = h.text.stats(1)
	}
	bound := countP50 + max(vecP50, textP50)
	verdict, recallVerdict := "met", "met"
	if apP50 > vecHybridTarget {
		verdict = "MISSED"
	}
	if h.vectorRecall < vecMinRecall {
		recallVerdict = "MISSED"
	}
	stages := func(ps []*docstore.SearchProfile) string {
		med := func(get func(p *docstore.SearchProfile) time.Duration) string {
			var r respRounds
			for _, p := range ps {
				r = append(r, get(p))
			}
			_, p50, _ := r.stats(1)
			return micros(p50)
		}
		return fmt.Sprintf("%6s  %6s  %6s  %7s  %6s  %6s  %6s",
			med(func(p *docstore.SearchProfile) time.Duration { return p.Filter }),
			med(func(p *docstore.SearchProfile) time.Duration { return p.Vector }),
			med(func(p *docstore.SearchProfile) time.Duration { return p.Text }),
			med(func(p *docstore.SearchProfile) time.Duration { return p.Sources }),
			med(func(p *docstore.SearchProfile) time.Duration { return p.Fusion }),
			med(func(p *docstore.SearchProfile) time.Duration { return p.MMR }),
			med(func(p *docstore.SearchProfile) time.Duration { return p.Hits }))
	}
	perRound := len(h.approx[0])
	b.Logf("hybrid search of %d: %s (a filter passing half the documents, through the index on g), RRF, MMR 0.7, top %d; %d rounds of %d queries, each round the approximate queries, the exact ones, then the stages alone; p50 and p95 are the medians of the rounds'; load average %s before, %s at the end\n"+
		"%-44s  %5s  %9s  %9s  %s\n"+
		"%-44s  %5d  %9s  %9s  p50 ≤ %v: %s (%.2f× the bound)\n"+
		"%-44s  %5d  %9s  %9s  reported\n"+
		"%-44s  %5d  %9s  %9s  filter %s + max(vector %s, text %s) µs\n"+
		"rounds' p50s, µs: approximate %s; exact %s\n"+
		"stage medians, µs (vector and text run at once when the vector source reads the graph in memory):\n"+
		"%-44s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n"+
		"%-44s  %s\n"+
		"%-44s  %s\n"+
		"the vector source with the filter, approximate (its top %d, the MMR pool), against exact among the documents that pass: recall %.3f over %d queries (≥ %.2f: %s)",
		vecHNSW, what, vecK, len(h.approx), perRound, h.loadBefore, h.loadAfter,
		"query", "n", "p50 µs", "p95 µs", "target",
		"hybrid, approximate vectors (HNSW, ef=100)", perRound, micros(apP50), micros(apP95), vecHybridTarget, verdict, float64(apP50)/float64(bound),
		"hybrid, exact vectors", perRound, micros(exP50), micros(exP95),
		"bound: the stages alone (filter + slower source)", perRound, micros(bound), "-", micros(countP50), micros(vecP50), micros(textP50),
		apRounds, exRounds,
		"stage", "filter", "vector", "text", "sources", "fusion", "mmr", "hits",
		"approximate", stages(h.approxStages),
		"exact", stages(h.exactStages),
		docstore.MMRPool(vecK), h.vectorRecall, perRound, vecMinRecall, recallVerdict)
	b.ReportMetric(float64(exP50.Microseconds()), "hybrid-exact-p50-µs")
	b.ReportMetric(float64(bound.Microseconds()), "hybrid-bound-µs")
	if h.vectorRecall < vecMinRecall {
		b.Errorf("the hybrid's filtered approximate vector source: recall %.3f is under %.2f", h.vectorRecall, vecMinRecall)
	}
	if apP50 > vecHybridTarget {
		b.Errorf("hybrid p50 %v (approximate vectors, the median of %d rounds' p50s: %s µs) is over the target of %v (%.2f× the bound of %v)", apP50, len(h.approx), apRounds, vecHybridTarget, float64(apP50)/float64(bound), bound)
	}
}
