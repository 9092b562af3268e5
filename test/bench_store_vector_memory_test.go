package test

import (
	"context"
	bin "encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	bolt "go.etcd.io/bbolt"
)

// vecMemorySteps are the steps of BenchmarkStoreVector's memory children
// (TestStoreMemoryChild): the store file opened, then the first query of
// each kind the benchmark runs. SQLite, holding each vector as a BLOB, has
// no vector query: its children stop after the get (vecMemorySteps[:3]).
var vecMemorySteps = []string{"before open", "open", "first get", "first exact top-10", "first approximate top-10", "first hybrid"}

// vecOwnKB is the vectors' own size in KiB (100,000 × 384 float32), which
// the memory target adds to twice SQLite's for a store holding them.
const vecOwnKB = vecDocs * vecDim * 4 / 1024

// vecMemPages are the buckets of the store's file (collection "v", as
// docstore names them) whose pages each step needs beyond the vectors'
// own size: the approximate top-10 the HNSW graph's, the hybrid query
// the graph's, the text index's and the index on g's. Each step's bound
// (measureVecMemory) counts them.
var vecMemPages = map[string][]string{
	"first approximate top-10": {vecGraphBucket},
	"first hybrid":             {vecGraphBucket, vecTextBucket, vecIndexBucket},
}

// The buckets of collection "v" the vector queries read besides its
// vector blocks, by docstore's names (store.go, vector.go, textpost.go).
const (
	vecGraphBucket = "v\x00v\x00g" // the HNSW graph
	vecTextBucket  = "t\x00v\x00t" // the text index on t
	vecIndexBucket = "i\x00v\x00g" // the index on g
)

// bucketPagesKB opens the bbolt file at path read-only and returns the
// bytes of each top-level bucket's pages in KiB (its branch and leaf
// pages allocated, nested buckets' included: what reading all of it maps).
func bucketPagesKB(path string) (map[string]int64, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("bucket pages of %s: %w", path, err)
	}
	defer db.Close()
	kb := map[string]int64{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			st := b.Stats()
			kb[string(name)] = int64(st.BranchAlloc+st.LeafAlloc) / 1024
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("bucket pages of %s: %w", path, err)
	}
	return kb, nil
}

// kbMB is n KiB in MB.
func kbMB(n int64) float64 { return float64(n) * 1024 / 1e6 }

// vecMemTable is the header of BenchmarkStoreVector's memory table.
const vecMemTable = "vector memory after (KiB)"

// measureVecMemory closes s (its file at path), writes the same documents
// to SQLite with each vector as a BLOB next to it, and runs each side's
// memory children on the two files (measureStoreMemory); it logs the table
// and fails when the docstore's resident memory after a step exceeds twice
// SQLite's plus the vectors' own size. Each row also reports the step's
// bound, twice SQLite's plus the store's pages the step needs (the
// vectors' own size and vecMemPages' buckets), and the docstore's ratio
// to it.
func measureVecMemory(b *testing.B, s *docstore.Store, path string, vecs [][]float32) {
	if err := s.Close(); err != nil { // the children open the file
		b.Fatal(err)
	}
	sqPath := filepath.Join(filepath.Dir(path), "vectors.sqlite")
	if err := writeVecSQLite(b.Context(), sqPath, vecs); err != nil {
		b.Fatal(err)
	}
	bucketKB, err := bucketPagesKB(path)
	if err != nil {
		b.Fatal(err)
	}
	needKB := make([]int64, len(vecMemorySteps))
	for i, step := range vecMemorySteps[3:] { // the vector queries
		needKB[3+i] = vecOwnKB
		for _, name := range vecMemPages[step] {
			kb, ok := bucketKB[name]
			if !ok {
				b.Fatalf("the store's file has no bucket %q (docstore's layout changed?)", name)
			}
			needKB[3+i] += kb
		}
	}
	med := measureStoreMemory(b, [2][2]string{{"docstore-vectors", path}, {"sqlite-vectors", sqPath}})
	table, met := storeMemoryTable(vecMemTable, vecMemorySteps, med, vecOwnKB, needKB)
	b.Logf("the vector store's file opened in a process of its own, the first query of each kind on its HNSW collection "+
		"(get, exact, approximate, the hybrid query above; the flat collection is not read), against SQLite holding the same %d documents with each vector as a BLOB "+
		"(no vector query: its figure for the vector steps is its get's); the median of %d processes a side; resident memory after each step "+
		"(KiB, as in BenchmarkStoreSQLite's table) and the step's time (µs); target: at most %.0f× SQLite's plus the vectors' own size "+
		"(%d × %d × 4 bytes = %.1f MB); the bound: %.0f× SQLite's plus the pages the step needs at least, the vectors' own size "+
		"for a vector query, and the pages of the buckets it reads (bbolt's statistics: the graph %.1f MB for the approximate and hybrid queries, "+
		"the text index %.1f MB and the index on g %.1f MB for the hybrid query), and the store's total over it; load average %s\n%s",
		vecDocs, storeMemoryRuns, storeMemoryMaxRatio, vecDocs, vecDim, float64(vecDocs*vecDim*4)/1e6, storeMemoryMaxRatio,
		kbMB(bucketKB[vecGraphBucket]), kbMB(bucketKB[vecTextBucket]), kbMB(bucketKB[vecIndexBucket]),
		loadAverage(), table)
	if !met {
		b.Errorf("resident memory: the vector store's is more than %.0f× SQLite's plus the vectors' size after a step (see the table)", storeMemoryMaxRatio)
	}
}

// writeVecSQLite writes the documents of vecs (vecDoc's group and text,
// the vector as little-endian float32s) to a SQLite table at path, with
// the settings of BenchmarkStoreSQLite's side, in transactions of vecBatch.
func writeVecSQLite(ctx context.Context, path string, vecs [][]float32) error {
	s := &sqliteSide{path: path}
	if err := s.open(ctx); err != nil {
		return err
	}
	defer s.close()
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE vecs (id INTEGER PRIMARY KEY, g INTEGER NOT NULL, t TEXT NOT NULL, v BLOB NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite vectors schema: %w", err)
	}
	blob := make([]byte, 4*vecDim)
	for lo := 0; lo < len(vecs); lo += vecBatch {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("sqlite vectors: %w", err)
		}
		for i := lo; i < min(lo+vecBatch, len(vecs)); i++ {
			for j, x := range vecs[i] {
				bin.LittleEndian.PutUint32(blob[4*j:], math.Float32bits(x))
			}
			doc := vecDoc(i, vecs[i])
			gv, _ := doc.Get("g")
			tv, _ := doc.Get("t")
			g, _ := gv.Int()
			t, _ := tv.Text()
			if _, err := tx.ExecContext(ctx, `INSERT INTO vecs (id, g, t, v) VALUES (?, ?, ?, ?)`, i, g, t, blob); err != nil {
				tx.Rollback()
				return fmt.Errorf("sqlite vectors: document %d: %w", i, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlite vectors: %w", err)
		}
	}
	return nil
}

// openVecDocstore opens BenchmarkStoreVector's store file and returns its
// first query of each kind (vecMemorySteps) on the HNSW collection: a get,
// then the benchmark's first query vector, exact (the scan the benchmark's
// recall is checked against), approximate, and in the benchmark's hybrid
// query. All read the one collection, so that the store's figures count
// one copy of the vectors, as SQLite's file holds (the flat collection
// holds a second).
func openVecDocstore(tb testing.TB, path string) ([]func(context.Context) error, func() error, error) {
	s, err := docstore.Open(path, docstore.Options{})
	if err != nil {
		return nil, nil, err
	}
	q := vecSet(2, 1)[0]
	hybridQ, _ := hybridQuery(tb, nil)
	search := func(coll string, sq docstore.SearchQuery) func(context.Context) error {
		return func(ctx context.Context) error {
			res, err := s.Search(ctx, coll, sq)
			if err == nil && len(res.Hits) != vecK {
				err = fmt.Errorf("%s: %d hits, want %d", coll, len(res.Hits), vecK)
			}
			return err
		}
	}
	return []func(context.Context) error{
		func(ctx context.Context) error { _, err := s.Get(ctx, "v", docstore.Int(4242)); return err },
		search("v", docstore.SearchQuery{Vector: &docstore.VectorQuery{Vector: q}, Limit: vecK}),
		search("v", docstore.SearchQuery{Vector: &docstore.VectorQuery{Vector: q, Approximate: true}, Limit: vecK}),
		search("v", hybridQ(q)),
	}, s.Close, nil
}

// openVecSQLite opens writeVecSQLite's file as BenchmarkStoreSQLite's side
// opens its own and returns its get (the vector, group and text of one
// document).
func openVecSQLite(tb testing.TB, path string) ([]func(context.Context) error, func() error, error) {
	s := &sqliteSide{path: path}
	if err := s.open(tb.Context()); err != nil {
		return nil, nil, err
	}
	return []func(context.Context) error{
		func(ctx context.Context) error {
			var g int64
			var t string
			var v []byte
			err := s.db.QueryRowContext(ctx, `SELECT g, t, v FROM vecs WHERE id = ?`, 4242).Scan(&g, &t, &v)
			if err == nil && len(v) != 4*vecDim {
				err = fmt.Errorf("sqlite vectors: a vector of %d bytes", len(v))
			}
			return err
		},
	}, s.close, nil
}
