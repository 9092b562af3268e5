package docstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// The engine side of test/BenchmarkAgent's ingest: 2,000 short notes
// stored by 20 durable Apply calls of 100 store operations each, into a
// collection with a text index on the notes' text (one b.Loop iteration
// is the whole ingest into a new file).
const (
	agentNotes = 2000
	agentBatch = 100
)

// agentNoteOps returns the store operations of notes [from, to), as the
// agent benchmark writes them.
func agentNoteOps(from, to int) []Op {
	ops := make([]Op, 0, to-from)
	for i := from; i < to; i++ {
		text := fmt.Sprintf("note %d is about topic%03d and a short observation on item %d kept for later", i, i%200, i)
		ops = append(ops, Op{Kind: OpStore, Collection: "notes", ID: Text(fmt.Sprintf("note-%04d", i)),
			Doc: Map(Field{Key: "text", Value: Text(text)}, Field{Key: "type", Value: Text("note")})})
	}
	return ops
}

// BenchmarkAgentIngest measures the ingest with the text index ("text"),
// without it ("plain"), and the physical bound beneath both ("commits":
// 20 durable bbolt commits of the notes' records under their keys, what
// the documents alone cost the file).
func BenchmarkAgentIngest(b *testing.B) {
	batches := make([][]Op, 0, agentNotes/agentBatch)
	for lo := 0; lo < agentNotes; lo += agentBatch {
		batches = append(batches, agentNoteOps(lo, lo+agentBatch))
	}
	ingest := func(b *testing.B, text bool) {
		for b.Loop() {
			b.StopTimer()
			s, err := Open(filepath.Join(b.TempDir(), "notes.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			if text {
				if _, err := s.CreateTextIndex(context.Background(), "notes", TextIndexDef{Name: "text", Fields: []string{"text"}}, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			for _, ops := range batches {
				if _, err := s.Apply(context.Background(), ops); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(agentNotes*b.N)/b.Elapsed().Seconds(), "docs/s")
	}
	b.Run("text", func(b *testing.B) { ingest(b, true) })
	b.Run("plain", func(b *testing.B) { ingest(b, false) })
	b.Run("commits", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			db, err := kv.Open(filepath.Join(b.TempDir(), "bound.db"), kv.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for _, ops := range batches {
				err := db.Update(func(tx kv.Tx) error {
					bk, err := tx.CreateBucketIfNotExists([]byte("notes"))
					if err != nil {
						return err
					}
					for n, op := range ops {
						if err := bk.Put(AppendKey(nil, op.ID), record(uint64(n+1), op.Doc)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(agentNotes*b.N)/b.Elapsed().Seconds(), "docs/s")
	})
}
