package kv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// The PostgreSQL benchmarks measure the backend beside bare pgx on the same
// server (the test binary's shared one: fsync off), side by side in one
// run, for the targets: a get by id (a View with one Get) against a
// primary-key SELECT of the same row, and an ingest of documents, 1,000 per
// transaction, each a Get that misses and three Puts (the document and two
// index entries, as the document store writes them), against inserting the
// same documents as jsonb into a table with two btree indexes. Each reports
// p50-ns (the median operation) beside ns/op.

// benchDoc is the i-th document.
func benchDoc(i int) []byte {
	doc, _ := json.Marshal(map[string]any{"id": i, "name": fmt.Sprintf("user%07d", i), "n": i % 1000,
		"text": "a document of about two hundred bytes, as the store's benchmarks use, with some words in it"})
	return doc
}

// benchConn is a bare pgx connection to the shared server's database.
func benchConn(b *testing.B) *pgx.Conn {
	conn, err := pgx.Connect(context.Background(), pgtest.Shared(b).URL(pgtest.Database))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// pairP50 calls each op b.N times, in alternating rounds (so that noise
// from the machine hits all alike), timing each call, and reports the
// median call of each ("<name>-p50-ns") and, for each but the last, its
// ratio to the last's ("<name>-p50-ratio").
func pairP50(b *testing.B, names []string, ops []func(i int) error) {
	const round = 20
	times := make([][]time.Duration, len(ops))
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		for side, op := range ops {
			for i := done; i < min(done+round, b.N); i++ {
				start := time.Now()
				if err := op(i); err != nil {
					b.Fatalf("%s: %v", names[side], err)
				}
				times[side] = append(times[side], time.Since(start))
			}
		}
	}
	b.StopTimer()
	med := make([]time.Duration, len(ops))
	for side := range ops {
		slices.Sort(times[side])
		med[side] = times[side][len(times[side])/2]
		b.ReportMetric(float64(med[side].Nanoseconds()), names[side]+"-p50-ns")
	}
	for side := range len(ops) - 1 {
		b.ReportMetric(float64(med[side])/float64(med[len(ops)-1]), names[side]+"-p50-ratio")
	}
}

const benchGetDocs = 10_000

// BenchmarkPostgresGet: a View that asks the epoch then gets a random
// document (as the document store's get by id does), ordinary and
// optimistic (Options.ViewsMayRerun) without the read cache (every get
// reads its row on the server), and optimistic with it (the documents
// read once at the store's revision, a get reads the meta row alone),
// against a bare SELECT by primary key of the same row.
func BenchmarkPostgresGet(b *testing.B) {
	ids := benchKeyOrder(benchGetDocs)
	docs := make([][]byte, benchGetDocs)
	for i := range docs {
		docs[i] = benchDoc(i)
	}
	url := pgtest.Shared(b).StoreURL()
	db := openURL(b, url+"&mcpkit_read_cache=0", kv.Options{NoSync: true})
	optimistic := openURL(b, url+"&mcpkit_read_cache=0", kv.Options{NoSync: true, ViewsMayRerun: true})
	cached := openURL(b, url, kv.Options{NoSync: true, ViewsMayRerun: true})
	for start := 0; start < benchGetDocs; start += benchBatch {
		update(b, db, func(tx kv.Tx) error {
			bk := mustBucket(b, tx, "docs")
			for i := start; i < start+benchBatch; i++ {
				if err := bk.Put(ids[i], docs[i]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	conn := benchConn(b)
	ctx := context.Background()
	table := fmt.Sprintf("bench_get_%d", time.Now().UnixNano())
	for _, s := range []string{
		"CREATE TABLE " + table + " (id bytea PRIMARY KEY, doc bytea NOT NULL)",
		"INSERT INTO " + table + " SELECT * FROM unnest($1::bytea[], $2::bytea[])",
	} {
		args := []any{}
		if strings.HasPrefix(s, "INSERT") {
			args = []any{ids, docs}
		}
		if _, err := conn.Exec(ctx, s, args...); err != nil {
			b.Fatal(err)
		}
	}
	query := "SELECT doc FROM " + table + " WHERE id = $1"
	get := func(db kv.DB) func(int) error {
		return func(i int) error {
			return db.View(func(tx kv.Tx) error {
				if tx.Epoch() != 0 || tx.Bucket([]byte("docs")).Get(ids[i%benchGetDocs]) == nil {
					return fmt.Errorf("document %s missing", ids[i%benchGetDocs])
				}
				return nil
			})
		}
	}
	pairP50(b, []string{"kv", "kv-optimistic", "kv-cached", "pgx"}, []func(int) error{
		get(db), get(optimistic), get(cached),
		func(i int) error {
			var doc []byte
			return conn.QueryRow(ctx, query, ids[i%benchGetDocs]).Scan(&doc)
		},
	})
}

// BenchmarkPostgresIngest: b.N transactions of 1,000 documents each, with
// growing ids, on each side (the p50s are per transaction).
func BenchmarkPostgresIngest(b *testing.B) {
	db := openURL(b, pgtest.Shared(b).StoreURL(), kv.Options{NoSync: true})
	update(b, db, func(tx kv.Tx) error {
		for _, name := range []string{"docs", "by_name", "by_n"} {
			mustBucket(b, tx, name)
		}
		return nil
	})
	conn := benchConn(b)
	ctx := context.Background()
	table := fmt.Sprintf("bench_ingest_%d", time.Now().UnixNano())
	for _, s := range []string{
		"CREATE TABLE " + table + " (id text PRIMARY KEY, doc jsonb NOT NULL)",
		"CREATE INDEX ON " + table + " ((doc->>'name'))",
		"CREATE INDEX ON " + table + " (((doc->>'n')::int))",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	insert := "INSERT INTO " + table + " SELECT * FROM unnest($1::text[], $2::jsonb[])"
	pairP50(b, []string{"kv", "pgx"}, []func(int) error{
		func(n int) error {
			return db.Update(func(tx kv.Tx) error {
				docs, byName, byN := tx.Bucket([]byte("docs")), tx.Bucket([]byte("by_name")), tx.Bucket([]byte("by_n"))
				for i := n * benchBatch; i < (n+1)*benchBatch; i++ {
					id := fmt.Appendf(nil, "doc%010d", i)
					if docs.Get(id) != nil {
						return fmt.Errorf("document %s exists", id)
					}
					if err := docs.Put(id, benchDoc(i)); err != nil {
						return err
					}
					if err := byName.Put(fmt.Appendf(nil, "user%07d\x00%s", i, id), nil); err != nil {
						return err
					}
					if err := byN.Put(fmt.Appendf(nil, "%04d\x00%s", i%1000, id), nil); err != nil {
						return err
					}
				}
				return nil
			})
		},
		func(n int) error {
			ids := make([]string, 0, benchBatch)
			docs := make([]string, 0, benchBatch)
			for i := n * benchBatch; i < (n+1)*benchBatch; i++ {
				ids = append(ids, fmt.Sprintf("doc%010d", i))
				docs = append(docs, string(benchDoc(i)))
			}
			tx, err := conn.Begin(ctx)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, insert, ids, docs); err != nil {
				_ = tx.Rollback(ctx)
				return err
			}
			return tx.Commit(ctx)
		},
	})
}

// BenchmarkPostgresIngestTwo: two DBs on one store (two processes, in
// effect) ingesting at once, against one DB alone: b.N transactions of
// 1,000 documents in all, each a Get that misses and a Put of the
// document. Writers queue on the store's lock, so two cannot write faster
// than one; this measures what the queue costs ("docs/s" for each).
func BenchmarkPostgresIngestTwo(b *testing.B) {
	ingest := func(db kv.DB, prefix string, n int) error {
		return db.Update(func(tx kv.Tx) error {
			docs := tx.Bucket([]byte("docs"))
			for i := n * benchBatch; i < (n+1)*benchBatch; i++ {
				id := fmt.Appendf(nil, "%s%010d", prefix, i)
				if docs.Get(id) != nil {
					return fmt.Errorf("document %s exists", id)
				}
				if err := docs.Put(id, benchDoc(i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, instances := range []int{1, 2} {
		b.Run(fmt.Sprintf("instances=%d", instances), func(b *testing.B) {
			url := pgtest.Shared(b).StoreURL()
			dbs := make([]kv.DB, instances)
			for i := range dbs {
				dbs[i] = openURL(b, url, kv.Options{NoSync: true})
			}
			update(b, dbs[0], func(tx kv.Tx) error { mustBucket(b, tx, "docs"); return nil })
			b.ResetTimer()
			start := time.Now()
			errs := make(chan error, instances)
			for w, db := range dbs {
				go func() {
					for n := w; n < b.N; n += instances {
						if err := ingest(db, fmt.Sprintf("w%d-", w), n); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range dbs {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*benchBatch)/time.Since(start).Seconds(), "docs/s")
		})
	}
}
