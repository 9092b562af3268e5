package docstore_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
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
		cmd := exec.Command(os.Args[0], "-test.run=^TestVectorCrashRecovery$")
		cmd.Env = append(os.Environ(), vecCrashPathEnv+"="+path)
		stdin, err := cmd.StdinPipe() // the child exits when it closes
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
		s, err := docstore.Open(path, docstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Verify(t.Context()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		res, err := s.Page(t.Context(), "v", docstore.Query{Limit: docstore.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		present := map[int64]bool{}
		missed := 0 // documents an approximate search for their own vector misses
		for _, d := range res.Docs {
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
		if missed*20 > len(res.Docs) {
			t.Fatalf("round %d: %d of %d documents are not the first approximate hit of their own vector", round, missed, len(res.Docs))
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
