package docstore_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore"
)

// The vector crash test: a child process (this test binary again) puts,
// replaces and deletes documents with vectors in a durable file store,
// concurrently (so that writes share batches), printing each write it
// acknowledged; the parent kills it with SIGKILL after a random number of
// them and checks the reopened file.
const (
	vecCrashPathEnv = "DOCSTORE_VECTOR_CRASH_CHILD"
	vecCrashDim     = 8
	vecCrashRounds  = 3
)

// TestVectorCrashRecovery kills a process writing vectors at a random
// moment and checks that the reopened store's vectors and HNSW graph
// agree with its documents (Store.Verify), that every document is the
// first hit of an exact search for its own vector and at least 95% of
// them of an approximate one, and that every acknowledged write but the last few (in flight on other
// goroutines when the kill came) left what it wrote.
func TestVectorCrashRecovery(t *testing.T) {
	if path := os.Getenv(vecCrashPathEnv); path != "" {
		vecCrashChild(path)
		return
	}
	for round := range vecCrashRounds {
		path := filepath.Join(t.TempDir(), "vectors.db")
		cmd, stdin, stdout := startVecChild(t, "TestVectorCrashRecovery", vecCrashPathEnv+"="+path)
		watchdog := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
		killAt := 50 + rand.IntN(200)
		acked := map[int64]string{} // id → "put <vector>" or "delete", the last acknowledged
		order := 0
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			id, what, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(id, 10, 64)
			acked[n] = what
			if order++; order == killAt {
				time.Sleep(time.Duration(rand.Int64N(int64(5 * time.Millisecond))))
				cmd.Process.Kill()
			}
		}
		cmd.Wait()
		watchdog.Stop()
		stdin.Close()
		if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || order < killAt {
			t.Fatalf("round %d: the child ended by itself after %d writes", round, order)
		}
		s, docs := reopenVecStore(t, fmt.Sprintf("round %d", round), path, docstore.Options{})
		present := map[int64]bool{}
		missed := 0 // documents an approximate search for their own vector misses
		for _, d := range docs {
			id, _ := d.ID.Int()
			present[id] = true
			v, _ := d.Value.Get("v")
			vec, _ := v.Vector()
			for _, approx := range []bool{false, true} {
				hits, err := s.Search(t.Context(), "v", docstore.SearchQuery{Vector: &docstore.VectorQuery{Vector: vec, Approximate: approx}, Limit: 1})
				if err != nil || len(hits.Hits) != 1 {
					t.Fatalf("round %d: search for document %d: %+v, %v", round, id, hits.Hits, err)
				}
				if !docstore.Equal(hits.Hits[0].Doc.ID, d.ID) {
					if !approx {
						t.Fatalf("round %d: document %d is not the first exact hit of its own vector", round, id)
					}
					missed++
				}
			}
		}
		// HNSW is approximate: under heavy churn (every id rewritten many
		// times) a node can lose its last way in, rarely.
		if missed*20 > len(docs) {
			t.Fatalf("round %d: %d of %d documents are not the first approximate hit of their own vector", round, missed, len(docs))
		}
		// A write in flight may or may not have landed, and an
		// acknowledged one may be unreported (one of each per writer,
		// and the line being printed); the others must have landed.
		disagree := 0
		for id, what := range acked {
			if present[id] != (what != "delete") {
				disagree++
			}
		}
		if disagree > 2*vecCrashWriters+1 {
			t.Fatalf("round %d: %d of %d acknowledged ids disagree with the file", round, disagree, len(acked))
		}
		s.Close()
	}
}

// vecCrashWriters is how many goroutines the child writes from.
const vecCrashWriters = 4

// vecCrashChild writes until killed (or its stdin closes), printing "<id>
// put" or "<id> delete" for each acknowledged write.
func vecCrashChild(path string) {
	s, err := docstore.Open(path, docstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := s.SetVector(context.Background(), "v", docstore.VectorDef{Field: "v", Dimension: vecCrashDim, Metric: docstore.MetricL2}, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	go func() { // the parent closing stdin (or dying) ends the child
		os.Stdin.Read(make([]byte, 1))
		os.Exit(0)
	}()
	out := make(chan string) // unbuffered: at most one acknowledged write per writer is unreported
	for w := range vecCrashWriters {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for {
				id := rng.Int64N(40)
				if rng.IntN(5) == 0 {
					if _, err := s.Delete(context.Background(), "v", docstore.Int(id)); err == nil {
						out <- fmt.Sprintf("%d delete", id)
					}
					continue
				}
				vec := make([]float32, vecCrashDim)
				for i := range vec {
					vec[i] = rng.Float32()
				}
				doc := docstore.Map(docstore.Field{Key: "v", Value: docstore.Vector(vec)})
				if _, err := s.Put(context.Background(), "v", docstore.Int(id), doc); err == nil {
					out <- fmt.Sprintf("%d put", id)
				}
			}
		}()
	}
	for line := range out {
		fmt.Println(line)
	}
}

// The build crash test: a child process builds an HNSW graph of many
// vectors, in batches large enough to be linked on every core, and is
// killed midway; the reopened file must hold an index exact with respect
// to its documents.
const (
	vecBuildPathEnv = "DOCSTORE_VECTOR_BUILD_CHILD"
	vecBuildDim     = 48
	vecBuildBatch   = 250  // documents a transaction (hnswParallel and more: linked on every core)
	vecBuildDocs    = 4000 // documents SetVector indexes at once
	vecBuildRounds  = 3    // per way of building
)

// startVecChild starts this test binary again to run test as a child,
// with env added to its environment; the child exits when stdin closes.
func startVecChild(t *testing.T, test, env string) (*exec.Cmd, io.WriteCloser, io.Reader) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, stdout
}

// reopenVecStore opens the store a killed child left at path with opts,
// checks it with Verify and returns it with the documents of its
// collection "v".
func reopenVecStore(t *testing.T, name, path string, opts docstore.Options) (*docstore.Store, []docstore.Doc) {
	s, err := docstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(t.Context()); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	res, err := s.Page(t.Context(), "v", docstore.Query{Limit: docstore.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return s, res.Docs
}

// vecBuildVector is document id's vector, the same in the child and the
// parent.
func vecBuildVector(id int64) []float32 {
	rng := rand.New(rand.NewPCG(uint64(id), 0xb1d))
	v := make([]float32, vecBuildDim)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// TestVectorBuildCrash kills a process midway through building an HNSW
// index, both ways an index is built: documents written in batches to a
// field that has one ("ingest", killed after a random number of batches,
// mostly inside one), and SetVector indexing the documents already there
// ("setvector", killed while it runs). The reopened store must pass
// Verify; hold every batch acknowledged, the batch in flight whole or not
// at all, and nothing else (no lost or phantom vector); answer exact
// searches exactly as a scan of its documents does; and find at least
// 95% of the exact top 10 approximately, first as the child left it (read
// only: vectors still queued measured exactly), then once a read-write
// open's linker has linked the queue. At least one SetVector must have
// been killed before it returned, and at least one child killed with its
// linker midway (vectors linked and vectors queued), or the test proves
// nothing.
func TestVectorBuildCrash(t *testing.T) {
	if env := os.Getenv(vecBuildPathEnv); env != "" {
		mode, path, _ := strings.Cut(env, ":")
		vecBuildChild(mode, path)
		return
	}
	if testing.Short() {
		t.Skip("builds indexes in child processes")
	}
	interrupted, midway := 0, 0
	for _, mode := range []string{"ingest", "setvector"} {
		for round := range vecBuildRounds {
			name := fmt.Sprintf("%s round %d", mode, round)
			path := filepath.Join(t.TempDir(), "build.db")
			lines, killedEarly := vecBuildRun(t, mode, path, round)
			if mode == "setvector" && killedEarly {
				interrupted++
			}
			if vecBuildCheck(t, name, mode, path, lines) {
				midway++
			}
		}
	}
	if interrupted == 0 {
		t.Fatal("no SetVector was killed before it returned")
	}
	if midway == 0 {
		t.Fatal("no child was killed with its vectors partly linked")
	}
}

// vecBuildRun runs the child on path and kills it midway, returning what
// it printed before it died and whether it was killed before it said it
// was done building. An ingest is killed within 20 ms of a random number
// of batches acknowledged, once the child has seen some of its vectors
// linked. SetVector is killed within 10 ms of its start in round 0,
// within 150 ms in round 1, and once done in round 2.
func vecBuildRun(t *testing.T, mode, path string, round int) ([]string, bool) {
	cmd, stdin, stdout := startVecChild(t, "TestVectorBuildCrash", vecBuildPathEnv+"="+mode+":"+path)
	defer stdin.Close()
	watchdog := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	kill := func(after time.Duration) {
		time.Sleep(after)
		cmd.Process.Kill()
	}
	killAt := 2 + rand.IntN(8) // ingest: batches acknowledged, once some are linked
	killed := false
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		var written, queued int
		fmt.Sscan(line, &written, &queued)
		switch {
		case mode == "ingest" && !killed && len(lines) >= killAt && queued < written:
			killed = true
			go kill(time.Duration(rand.Int64N(int64(20 * time.Millisecond))))
		case mode == "setvector" && line == "building" && round < 2:
			go kill(time.Duration(rand.Int64N(int64([]time.Duration{10, 150}[round] * time.Millisecond))))
		case line == "built":
			go kill(0)
		}
	}
	cmd.Wait()
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() {
		t.Fatalf("%s: the child ended by itself: %v", mode, lines)
	}
	return lines, !slices.Contains(lines, "built")
}

// vecBuildCheck checks the store the child left at path against what it
// printed (lines), then lets a read-write open link its queue and checks
// it again. It reports whether the child left vectors both linked and
// queued.
func vecBuildCheck(t *testing.T, name, mode, path string, lines []string) bool {
	s, docs := reopenVecStore(t, name, path, docstore.Options{ReadOnly: true}) // its linker does not run
	defer func() { s.Close() }()
	ids := map[int64]bool{}
	for _, d := range docs {
		id, _ := d.ID.Int()
		ids[id] = true
		v, _ := d.Value.Get("v")
		if vec, ok := v.Vector(); !ok || !slices.Equal(vec, vecBuildVector(id)) {
			t.Fatalf("%s: document %d holds %v", name, id, v)
		}
	}
	acked := 0
	if mode == "ingest" {
		acked = (len(lines) - 1) * vecBuildBatch // after "ready", a line per batch
	} else if slices.Contains(lines, "ready") {
		acked = vecBuildDocs
	}
	n := len(ids)
	if n != acked && !(mode == "ingest" && n == acked+vecBuildBatch) {
		t.Fatalf("%s: %d documents for %d acknowledged (a batch of %d may have landed)", name, n, acked, vecBuildBatch)
	}
	for id := range int64(n) {
		if !ids[id] {
			t.Fatalf("%s: document %d of %d is missing", name, id, n)
		}
	}
	infos, err := s.Collections(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Vector == nil {
		if mode == "setvector" && len(infos) == 1 && !slices.Contains(lines, "built") {
			t.Logf("%s: killed before SetVector committed: no vector field (%d documents)", name, n)
			return false
		}
		t.Fatalf("%s: collections %+v", name, infos)
	}
	queued := infos[0].VectorsQueued
	t.Logf("%s: %d documents for %d acknowledged, %d of them queued", name, n, acked, queued)
	vecBuildSearches(t, name, s, n)
	s.Close()

	s, _ = reopenVecStore(t, name, path, docstore.Options{})
	if err := s.WaitLinked(t.Context(), "v"); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := s.Verify(t.Context()); err != nil {
		t.Fatalf("%s: once linked: %v", name, err)
	}
	vecBuildSearches(t, name+", once linked", s, n)
	return queued > 0 && queued < n
}

// vecBuildSearches checks searches of the n documents 0..n-1 of s: every
// document is the first exact hit of its own vector, exact top 10s are
// those of a scan, and approximate ones find at least 95% of them.
func vecBuildSearches(t *testing.T, name string, s *docstore.Store, n int) {
	search := func(q []float32, k int, approx bool) []int64 {
		res, err := s.Search(t.Context(), "v", docstore.SearchQuery{Vector: &docstore.VectorQuery{Vector: q, Approximate: approx}, Limit: k})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, h := range res.Hits {
			id, _ := h.Doc.ID.Int()
			out = append(out, id)
		}
		return out
	}
	for id := range int64(n) {
		if hits := search(vecBuildVector(id), 1, false); len(hits) != 1 || hits[0] != id {
			t.Fatalf("%s: document %d is not the first exact hit of its own vector: %v", name, id, hits)
		}
	}
	found, queries := 0, 50
	for i := range queries {
		q := vecBuildVector(int64(1_000_000 + i))
		want := vecBuildScan(q, n, 10)
		if got := search(q, 10, false); !slices.Equal(got, want) {
			t.Fatalf("%s: exact top 10 %v, a scan's %v", name, got, want)
		}
		for _, id := range search(q, 10, true) {
			if slices.Contains(want, id) {
				found++
			}
		}
	}
	if recall := float64(found) / float64(10*queries); recall < 0.95 {
		t.Fatalf("%s: approximate recall@10 %.3f < 0.95", name, recall)
	}
}

// vecBuildScan returns the ids of the k documents of 0..n-1 closest to q
// by cosine, computed in float64.
func vecBuildScan(q []float32, n, k int) []int64 {
	type scored struct {
		id  int64
		cos float64
	}
	all := make([]scored, n)
	for id := range int64(n) {
		v := vecBuildVector(id)
		var d, qq, vv float64
		for j := range q {
			d += float64(q[j]) * float64(v[j])
			qq += float64(q[j]) * float64(q[j])
			vv += float64(v[j]) * float64(v[j])
		}
		all[id] = scored{id, d / math.Sqrt(qq*vv)}
	}
	slices.SortStableFunc(all, func(a, b scored) int { return cmp.Compare(b.cos, a.cos) })
	out := make([]int64, k)
	for i := range out {
		out[i] = all[i].id
	}
	return out
}

// vecBuildChild builds until killed (or its stdin closes). ingest: declares
// the vector field, prints "ready", then writes batches of vecBuildBatch
// documents, printing after each the count written and how many of them
// are still queued for the linker. setvector: writes
// vecBuildDocs documents, prints "ready", then "building", SetVector,
// "built".
func vecBuildChild(mode, path string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s, err := docstore.Open(path, docstore.Options{})
	if err != nil {
		fail(err)
	}
	go func() { // the parent closing stdin (or dying) ends the child
		os.Stdin.Read(make([]byte, 1))
		os.Exit(0)
	}()
	ctx := context.Background()
	def := docstore.VectorDef{Field: "v", Dimension: vecBuildDim}
	put := func(lo, hi int) {
		docs := make([]docstore.Doc, 0, hi-lo)
		for id := lo; id < hi; id++ {
			docs = append(docs, docstore.Doc{ID: docstore.Int(int64(id)),
				Value: docstore.Map(docstore.Field{Key: "v", Value: docstore.Vector(vecBuildVector(int64(id)))})})
		}
		if _, err := s.PutMany(ctx, "v", docs); err != nil {
			fail(err)
		}
	}
	if mode == "setvector" {
		for lo := 0; lo < vecBuildDocs; lo += 1000 {
			put(lo, lo+1000)
		}
		fmt.Println("ready")
		fmt.Println("building")
		if _, err := s.SetVector(ctx, "v", def, nil); err != nil {
			fail(err)
		}
		fmt.Println("built")
		select {}
	}
	if _, err := s.SetVector(ctx, "v", def, nil); err != nil {
		fail(err)
	}
	fmt.Println("ready")
	for lo := 0; ; lo += vecBuildBatch {
		put(lo, lo+vecBuildBatch)
		infos, err := s.Collections(ctx)
		if err != nil {
			fail(err)
		}
		fmt.Println(lo+vecBuildBatch, infos[0].VectorsQueued) // written, and of them still queued
	}
}
