package docstore

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Derived structures are kept beside the documents they derive from, by
// the transaction that writes the document: a collection's text postings
// (text.go), vectors (vector.go) and geo cells (geo.go), and the store's
// edges (graph.go). Every document write — put, replace, patch, delete,
// delete_where, load — passes through writer.derive with the document's
// old and new value; a collection's drop passes through dropDerived;
// Verify checks each structure against the documents (verifyDerived);
// dumps carry their definitions and Load rebuilds them (createDerived).

// derivedDefs are a collection's derived-structure definitions, as its
// catalog entry and a dump's collection line hold them.
type derivedDefs struct {
	TextIndexes []TextIndexDef `json:"text_indexes,omitempty"`
	Vector      *VectorDef     `json:"vector,omitempty"`
	GeoIndexes  []GeoIndexDef  `json:"geo_indexes,omitempty"`
}

// clone returns a copy that shares nothing mutable with d.
func (d derivedDefs) clone() derivedDefs {
	out := derivedDefs{TextIndexes: cloneDefs(d.TextIndexes), GeoIndexes: cloneDefs(d.GeoIndexes)}
	if d.Vector != nil {
		v := *d.Vector
		out.Vector = &v
	}
	return out
}

func cloneDefs[T interface{ clone() T }](defs []T) []T {
	if defs == nil {
		return nil
	}
	out := make([]T, len(defs))
	for i, d := range defs {
		out[i] = d.clone()
	}
	return out
}

// docChange is one document write as the derived structures see it.
type docChange struct {
	ID    Value
	IDKey []byte // AppendKey(nil, ID)
	// Old is the value replaced or deleted; HadOld is false on an insert.
	Old    Value
	HadOld bool
	// New is the value written; HasNew is false on a delete.
	New    Value
	HasNew bool
}

// derivedWrites is a writer's derived-structure work that waits for the
// end of its function (finish), so that a batch of writes pays for it
// once and on every core: the text changes to apply to the text indexes,
// and the collection's vectors with the slots to link into the graph.
type derivedWrites struct {
	text []docChange
	vec  *vectors
}

// finish applies the work w deferred (finish must run before w's
// transaction commits, and does, through Store.update); after it, every
// derived structure agrees with the documents w wrote, and so does every
// index (whose changes wait in their entry sets).
func (w *writer) finish() error {
	for i := range w.sets {
		if err := w.sets[i].flush(); err != nil {
			return err
		}
	}
	if err := w.flushText(); err != nil {
		return err
	}
	if w.d.vec != nil {
		return w.d.vec.flush()
	}
	return nil
}

// derive updates every derived structure of w's collection (and the
// store's edges) for c, in w's transaction; some of the work waits for
// finish.
func (w *writer) derive(c docChange) error {
	for _, f := range [...]func(*writer, docChange) error{
		(*writer).deriveText, (*writer).deriveVector, (*writer).deriveGeo, (*writer).deriveEdges,
	} {
		if err := f(w, c); err != nil {
			return err
		}
	}
	return nil
}

// dropDerived deletes col's derived structures (and the edges of its
// documents) in tx, as its collection is dropped.
func dropDerived(tx kv.Tx, col *collection) error {
	for _, f := range [...]func(kv.Tx, *collection) error{dropText, dropVector, dropGeo, dropEdges} {
		if err := f(tx, col); err != nil {
			return err
		}
	}
	return nil
}

// verifyDerived checks col's derived structures against its documents
// (and the store's edges against every collection) in tx.
func verifyDerived(ctx context.Context, tx kv.Tx, col *collection) error {
	for _, f := range [...]func(context.Context, kv.Tx, *collection) error{verifyText, verifyVector, verifyGeo, verifyEdges} {
		if err := f(ctx, tx, col); err != nil {
			return err
		}
	}
	return nil
}

// createDerived creates the derived structures defs describes on coll
// (Load's collection line), building each from the documents present.
func (s *Store) createDerived(ctx context.Context, coll string, defs derivedDefs) error {
	for _, d := range defs.TextIndexes {
		if _, err := s.CreateTextIndex(ctx, coll, d, nil); err != nil {
			return err
		}
	}
	if defs.Vector != nil {
		if _, err := s.SetVector(ctx, coll, *defs.Vector, nil); err != nil {
			return err
		}
	}
	for _, d := range defs.GeoIndexes {
		if _, err := s.CreateGeoIndex(ctx, coll, d, nil); err != nil {
			return err
		}
	}
	return nil
}

// Ranked is one document of a ranked list a search source returns (text
// by BM25, vectors by similarity), best first; hybrid search fuses such
// lists.
type Ranked struct {
	IDKey []byte  // the document's key, AppendKey(nil, id)
	Score float64 // the source's score: larger is better
}

// inParallel calls fn on contiguous runs of [0, n) that cover it, of at
// most run items each, on as many cores as n holds minRun items for (so a
// small n runs on the calling goroutine alone), and returns when every
// call has returned. Each core takes the next run as it finishes one, so
// that a core the machine's other work holds back delays the others by a
// run at most (halves fixed in advance made them wait for it). fn must
// not touch a transaction: only what was read before.
func inParallel(n, minRun, run int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/max(minRun, 1))
	if workers <= 1 {
		fn(0, n)
		return
	}
	var next atomic.Int64
	goReading(workers, func(int) {
		for lo := int(next.Add(int64(run))) - run; lo < n; lo = int(next.Add(int64(run))) - run {
			fn(lo, min(lo+run, n))
		}
	})
}

// goReading runs fn(0) ... fn(workers-1) on goroutines of their own and
// returns when all have returned. What they read of the store's file (a
// transaction's values) faults if the file was cut short underneath: the
// fault is raised again here, on the transaction's goroutine, where the
// transaction turns it into ErrDamaged (see kv.CatchFault).
func goReading(workers int, fn func(w int)) {
	faults := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			if f := kv.CatchFault(func() { fn(w) }); f != nil {
				faults[w] = f
			}
		})
	}
	wg.Wait()
	for _, f := range faults {
		if f != nil {
			panic(f)
		}
	}
}
