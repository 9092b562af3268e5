package docstore

import (
	"context"
	"errors"
	"testing"
)

// opError fails unless err is an *OpError at index whose cause has code c.
func opError(t *testing.T, err error, index int, c Code) {
	t.Helper()
	var oe *OpError
	if !errors.As(err, &oe) || oe.Index != index {
		t.Fatalf("Apply: %v, want the error of operation %d", err, index)
	}
	wantCode(t, err, c)
}

// TestApplyOrder: operations run in order in one transaction, each seeing
// the ones before (patch after store, delete after patch, insert_auto ids
// in operation order, compare_and_set on a revision written earlier),
// across collections, with the single writes' results.
func TestApplyOrder(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		zero := uint64(0)
		ops := []Op{
			{Kind: OpStore, Collection: "notes", ID: Text("n1"), Doc: j(t, `{"t": "a", "n": 1}`)},
			{Kind: OpPatch, Collection: "notes", ID: Text("n1"), Doc: j(t, `{"n": 2, "x": true}`)},
			{Kind: OpInsert, Collection: "log", Doc: j(t, `{"e": 1}`)},
			{Kind: OpInsert, Collection: "log", Doc: j(t, `{"e": 2}`)},
			{Kind: OpCompareAndSet, Collection: "people", ID: Text("ann"), Expect: Expect{Revision: &zero}, Doc: j(t, `{"name": "ann"}`)},
			{Kind: OpLink, From: Ref{"people", Text("ann")}, Type: "wrote", To: Ref{"notes", Text("n1")}, Props: j(t, `{"w": 1}`)},
			{Kind: OpLink, From: Ref{"people", Text("ann")}, Type: "wrote", To: Ref{"notes", Text("n1")}, Props: Null()},
			{Kind: OpStore, Collection: "notes", ID: Text("n2"), Doc: j(t, `{"t": "b"}`)},
			{Kind: OpDelete, Collection: "notes", ID: Text("n2")},
			{Kind: OpDelete, Collection: "nowhere", ID: Int(1)},
			{Kind: OpUnlink, From: Ref{"people", Text("ann")}, Type: "read", To: Ref{"notes", Text("n1")}},
		}
		out, err := s.Apply(ctx, ops)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(ops) {
			t.Fatalf("%d results for %d operations", len(out), len(ops))
		}
		if got := js(t, out[1].Doc.Value); got != `{"t":"a","n":2,"x":true}` || out[1].Doc.Revision <= out[0].Doc.Revision {
			t.Errorf("patch after store: %s at %d (store at %d)", got, out[1].Doc.Revision, out[0].Doc.Revision)
		}
		if a, b := js(t, out[2].Doc.ID), js(t, out[3].Doc.ID); a != "1" || b != "2" {
			t.Errorf("insert_auto ids %s, %s; want 1, 2", a, b)
		}
		if !out[5].Done || out[6].Done {
			t.Errorf("link results %v, %v: want created, then not", out[5].Done, out[6].Done)
		}
		if !out[8].Done || out[9].Done || out[10].Done {
			t.Errorf("delete, delete, unlink = %v %v %v; want true false false", out[8].Done, out[9].Done, out[10].Done)
		}
		for i := 1; i < 9; i++ {
			if r := out[i].Doc.Revision; r != 0 && r <= out[0].Doc.Revision {
				t.Errorf("operation %d has revision %d, not after the first's %d", i, r, out[0].Doc.Revision)
			}
		}
		d, err := s.Get(ctx, "notes", Text("n1"))
		if err != nil || d.Revision != out[1].Doc.Revision {
			t.Fatalf("n1 after the batch: %+v, %v", d, err)
		}
		if _, err := s.Get(ctx, "notes", Text("n2")); ErrorCode(err) != CodeNotFound {
			t.Errorf("n2 was deleted in the batch: %v", err)
		}
		res, err := s.Neighbors(ctx, Ref{"people", Text("ann")}, NeighborQuery{})
		if err != nil || len(res.Edges) != 1 || !res.Edges[0].Props.IsNull() {
			t.Errorf("ann's edges: %+v, %v; want one, without properties (the second link replaced them)", res.Edges, err)
		}
		if n := collectionNames(t, s); n != "log,notes,people" {
			t.Errorf("collections %s: want those the batch created (not the one delete named)", n)
		}
	})
}

// collectionNames lists the store's collections, comma-separated.
func collectionNames(t *testing.T, s *Store) string {
	t.Helper()
	cols, err := s.Collections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for i, c := range cols {
		if i > 0 {
			out += ","
		}
		out += c.Name
	}
	return out
}

// TestApplyAllOrNothing: an operation that fails in the middle leaves
// nothing of the batch: no document, no collection, no index entry, no
// text posting, vector or edge (openStore's Verify checks every derived
// structure when the test ends), and a later batch works.
func TestApplyAllOrNothing(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.CreateIndex(ctx, "notes", IndexDef{Name: "by_email", Fields: []string{"email"}, Unique: true}, nil); err != nil {
			t.Fatal(err)
		}
		mustText(t, s, "notes", TextIndexDef{Name: "body", Fields: []string{"t"}})
		if _, err := s.SetVector(ctx, "notes", VectorDef{Field: "v", Dimension: 2}, nil); err != nil {
			t.Fatal(err)
		}
		before, err := s.Put(ctx, "notes", Text("a"), j(t, `{"email": "a@x", "t": "old words", "v": {"$vector": [1, 0]}}`))
		if err != nil {
			t.Fatal(err)
		}
		fails := map[Code][]Op{
			CodeUniqueViolation: {{Kind: OpStore, Collection: "notes", ID: Text("c"), Doc: j(t, `{"email": "a@x"}`)}},
			CodeNotFound:        {{Kind: OpPatch, Collection: "notes", ID: Text("zz"), Doc: j(t, `{}`)}},
			CodeRevisionMismatch: {{Kind: OpCompareAndSet, Collection: "notes", ID: Text("a"),
				Expect: Expect{Revision: &before.Revision}, Doc: j(t, `{}`)}}, // "a" was rewritten earlier in the batch
		}
		for code, fail := range fails {
			ops := []Op{
				{Kind: OpStore, Collection: "notes", ID: Text("b"), Doc: j(t, `{"email": "b@x", "t": "new words", "v": {"$vector": [0, 1]}}`)},
				{Kind: OpPatch, Collection: "notes", ID: Text("a"), Doc: j(t, `{"email": "a2@x", "t": "changed"}`)},
				{Kind: OpStore, Collection: "fresh", ID: Int(1), Doc: j(t, `{}`)},
				{Kind: OpLink, From: Ref{"fresh", Int(1)}, Type: "t", To: Ref{"notes", Text("b")}},
				{Kind: OpStore, Collection: "notes", ID: Text("c2"), Doc: j(t, `{"email": "a@x"}`)}, // the value "a" had
			}
			ops = append(ops, fail...)
			_, err := s.Apply(ctx, ops)
			opError(t, err, len(ops)-1, code)
			d, err := s.Get(ctx, "notes", Text("a"))
			if err != nil || d.Revision != before.Revision {
				t.Fatalf("%s: a after the failed batch: %+v, %v; want it untouched", code, d, err)
			}
			for _, id := range []string{"b", "c2"} {
				if _, err := s.Get(ctx, "notes", Text(id)); ErrorCode(err) != CodeNotFound {
					t.Errorf("%s: %s was stored by the failed batch: %v", code, id, err)
				}
			}
			if n := collectionNames(t, s); n != "notes" {
				t.Errorf("%s: collections %s after the failed batch; want notes alone", code, n)
			}
			if n, _, err := s.Count(ctx, "notes", flt(t, `{"email": "a@x"}`)); err != nil || n != 1 {
				t.Errorf("%s: the unique index finds %d documents of a@x (%v); want a", code, n, err)
			}
			if err := s.Verify(ctx); err != nil {
				t.Fatalf("%s: %v", code, err)
			}
		}
		// The collection the failed batches named is created by a good
		// one, whose text and vectors Verify checks.
		if _, err := s.Apply(ctx, []Op{
			{Kind: OpStore, Collection: "fresh", ID: Int(1), Doc: j(t, `{}`)},
			{Kind: OpStore, Collection: "notes", ID: Text("b"), Doc: j(t, `{"email": "b@x", "t": "new words", "v": {"$vector": [0, 1]}}`)},
			{Kind: OpPatch, Collection: "notes", ID: Text("a"), Doc: j(t, `{"t": "changed", "v": {"$vector": [1, 1]}}`)},
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		if n := collectionNames(t, s); n != "fresh,notes" {
			t.Errorf("collections %s", n)
		}
	})
}

// TestApplyChecks: every operation's arguments are checked before
// anything is written, with the single methods' errors, and the error
// names the operation.
func TestApplyChecks(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		good := Op{Kind: OpStore, Collection: "c", ID: Int(1), Doc: j(t, `{}`)}
		for i, bad := range []Op{
			{Kind: OpStore, Collection: "c", ID: Int(2), Doc: j(t, `[1]`)},
			{Kind: OpPatch, Collection: "c", ID: Text(""), Doc: j(t, `{}`)},
			{Kind: OpCompareAndSet, Collection: "c", ID: Int(1), Doc: j(t, `{}`)},
			{Kind: OpLink, From: Ref{"c", Int(1)}, Type: "", To: Ref{"c", Int(1)}},
			{Kind: "upsert", Collection: "c"},
		} {
			_, err := s.Apply(ctx, []Op{good, bad})
			opError(t, err, 1, CodeInvalid)
			if n := collectionNames(t, s); n != "" {
				t.Fatalf("case %d: collections %q after a refused batch", i, n)
			}
		}
		if out, err := s.Apply(ctx, nil); err != nil || len(out) != 0 {
			t.Errorf("no operations: %v, %v", out, err)
		}
	})
}

// TestApplyLimit: more than MaxOps operations are refused before any is
// checked or written; MaxOps are applied.
func TestApplyLimit(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		ops := make([]Op, MaxOps+1)
		for i := range ops {
			ops[i] = Op{Kind: OpInsert, Collection: "c", Doc: Map()}
		}
		_, err := s.Apply(ctx, ops)
		if e := wantCode(t, err, CodeInvalid); e.Field != "ops" {
			t.Fatalf("%d operations: %v, want invalid ops", len(ops), err)
		}
		if n := collectionNames(t, s); n != "" {
			t.Fatalf("collections %q after a refused batch", n)
		}
		out, err := s.Apply(ctx, ops[:MaxOps])
		if err != nil || len(out) != MaxOps {
			t.Fatalf("%d operations: %d results, %v", MaxOps, len(out), err)
		}
		if n, _, err := s.Count(ctx, "c", nil); err != nil || n != MaxOps {
			t.Fatalf("%d documents (%v), want %d", n, err, MaxOps)
		}
	})
}
