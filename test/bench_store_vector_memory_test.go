package test

import (
	"context"
	bin "encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore"
)

// vecMemorySteps are the steps of BenchmarkStoreVector's memory children
// (TestStoreMemoryChild): the store file opened, then the first query of
// each kind the benchmark runs. SQLite, holding each vector as a BLOB, has
// no vector query: its children stop after the get (vecMemorySteps[:3]).
var vecMemorySteps = []string{"before open", "open", "first get", "first exact top-10", "first approximate top-10", "first hybrid"}

// vecOwnKB is the vectors' own size in KiB (100,000 × 384 float32), which
// the memory target adds to twice SQLite's for a store holding them.
const vecOwnKB = vecDocs * vecDim * 4 / 1024

// vecMemTable is the header of BenchmarkStoreVector's memory table.
const vecMemTable = "vector memory after (KiB)"

// measureVecMemory closes s (its file at path), writes the same documents
// to SQLite with each vector as a BLOB next to it, and runs each side's
// memory children on the two files (measureStoreMemory); it logs the table
// and fails when the docstore's resident memory after a step exceeds twice
// SQLite's plus the vectors' own size.
func measureVecMemory(b *testing.B, s *docstore.Store, path string, vecs [][]float32) {
	if err := s.Close(); err != nil { // the children open the file
		b.Fatal(err)
	}
	sqPath := filepath.Join(filepath.Dir(path), "vectors.sqlite")
	if err := writeVecSQLite(b.Context(), sqPath, vecs); err != nil {
		b.Fatal(err)
	}
	med := measureStoreMemory(b, [2][2]string{{"docstore-vectors", path}, {"sqlite-vectors", sqPath}})
	table, met := storeMemoryTable(vecMemTable, vecMemorySteps, med, vecOwnKB)
	b.Logf("the vector store's file opened in a process of its own, the first query of each kind on its HNSW collection "+
		"(get, exact, approximate, the hybrid query above; the flat collection is not read), against SQLite holding the same %d documents with each vector as a BLOB "+
		"(no vector query: its figure for the vector steps is its get's); the median of %d processes a side; resident memory after each step "+
		"(KiB, as in BenchmarkStoreSQLite's table) and the step's time (µs); target: at most %.0f× SQLite's plus the vectors' own size "+
		"(%d × %d × 4 bytes = %.1f MB); load average %s\n%s",
		vecDocs, storeMemoryRuns, storeMemoryMaxRatio, vecDocs, vecDim, float64(vecDocs*vecDim*4)/1e6, loadAverage(), table)
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
