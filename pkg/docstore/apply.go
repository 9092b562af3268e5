package docstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// OpKind names a write operation of Apply: the single write it does.
type OpKind string

// The operations Apply knows, named as the store's tools name them.
const (
	OpStore         OpKind = "store"           // Put
	OpInsert        OpKind = "insert_auto"     // Insert
	OpPatch         OpKind = "patch"           // Patch
	OpDelete        OpKind = "delete"          // Delete
	OpCompareAndSet OpKind = "compare_and_set" // CompareAndSet
	OpLink          OpKind = "link"            // Link
	OpUnlink        OpKind = "unlink"          // Unlink
)

// Op is one write of Apply: Kind and the arguments of the method it
// names, with that method's meaning and validation.
type Op struct {
	Kind       OpKind
	Collection string // store, insert_auto, patch, delete, compare_and_set
	ID         Value  // store, patch, delete, compare_and_set
	// Doc is the document (store, insert_auto, compare_and_set) or the
	// merge patch (patch).
	Doc    Value
	Expect Expect // compare_and_set
	// From, Type, To and Props are the edge (link; unlink has no Props).
	From, To Ref
	Type     string
	Props    Value
}

// OpResult is one operation's result: Doc for store, insert_auto, patch
// and compare_and_set (the document written, with its revision); Done
// for delete (the document existed), link (the edge is new) and unlink
// (the edge existed).
type OpResult struct {
	Doc  Doc
	Done bool
}

// MaxOps is the most operations one Apply takes: a transaction holds
// every write in memory until it commits, so a caller bounds its batches
// (the store plugin's write_ops limit is at most this).
const MaxOps = 100_000

// OpError is Apply's error: the operation at Index (from 0) failed with
// Err (an *Error where the single method would return one), and nothing
// was written.
type OpError struct {
	Index int
	Err   error
}

func (e *OpError) Error() string { return fmt.Sprintf("operation %d: %v", e.Index, e.Err) }

func (e *OpError) Unwrap() error { return e.Err }

// Apply runs ops, in order, in one write transaction, which commits (and
// is durable, as every write) before Apply returns: all of them or, when
// one fails, none, across collections. Each operation sees the effect of
// those before it (a patch after a store of the same id patches what it
// stored; insert_auto ids grow in operation order) and every derived
// structure (indexes, text, vectors, geo, edges) is kept as by the single
// writes. A collection a write creates (store, insert_auto, and
// compare_and_set expecting no document) exists only if the transaction
// commits. Every argument is checked before anything is written; the
// error of a failed operation is an *OpError naming it. More than MaxOps
// operations are refused (invalid, Field "ops") before anything is done.
func (s *Store) Apply(ctx context.Context, ops []Op) ([]OpResult, error) {
	if len(ops) > MaxOps {
		return nil, &Error{Code: CodeInvalid, Field: "ops", Message: fmt.Sprintf("%d operations in one batch; at most %d", len(ops), MaxOps)}
	}
	for i, op := range ops {
		if err := op.check(); err != nil {
			return nil, &OpError{Index: i, Err: err}
		}
	}
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	var a *applier
	run := func(exclusive bool) func(tx kv.Tx) error {
		return func(tx kv.Tx) error {
			a = &applier{s: s, tx: tx, exclusive: exclusive, writers: map[string]*writer{}, created: map[string]*collection{}}
			return a.run(ctx, ops)
		}
	}
	if !s.createsCollection(ops) {
		err := s.withCatalog(s.db.Update, run(false))
		if !errors.Is(err, errCreatesCollection) {
			if err != nil {
				return nil, err
			}
			a.wantLinks()
			return a.out, nil
		}
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if err := s.catalogUpdate(run(true)); err != nil {
		return nil, err
	}
	for name, col := range a.created {
		s.cat[name] = col
	}
	a.wantLinks()
	return a.out, nil
}

// wantLinks has the linker link the vectors a's committed writes queued.
func (a *applier) wantLinks() {
	for _, w := range a.order {
		if w.queuedLinks() {
			a.s.linker.want(w.col.Name)
		}
	}
}

// creates reports whether op writes a document to a collection it
// creates when absent.
func (op Op) creates() bool {
	switch op.Kind {
	case OpStore, OpInsert:
		return true
	case OpCompareAndSet:
		return op.Expect.absent()
	}
	return false
}

// createsCollection reports whether an operation of ops would create a
// collection the catalog does not have. Apply then runs as a catalog
// change, with every other writer excluded (the catalog changes with the
// transaction); otherwise as a document write, with the catalog held for
// reading.
func (s *Store) createsCollection(ops []Op) bool {
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	for _, op := range ops {
		if op.creates() && s.cat[op.Collection] == nil {
			return true
		}
	}
	return false
}

// errCreatesCollection ends a document-write Apply that finds, once its
// catalog is current, that it creates a collection after all (another
// process dropped it): Apply runs again as a catalog change.
var errCreatesCollection = errors.New("docstore: the batch creates a collection")

// check validates op's arguments as its single method does, before
// anything is written.
func (op Op) check() error {
	switch op.Kind {
	case OpStore:
		if err := checkID(op.Collection, op.ID); err != nil {
			return err
		}
		return checkDoc(op.Collection, op.ID, op.Doc)
	case OpInsert:
		return checkDoc(op.Collection, Null(), op.Doc)
	case OpPatch:
		return checkPatch(op.Collection, op.ID, op.Doc)
	case OpDelete:
		return checkID(op.Collection, op.ID)
	case OpCompareAndSet:
		return checkCAS(op.Collection, op.ID, op.Expect, op.Doc)
	case OpLink:
		return checkEdge(op.From, op.Type, op.To, op.Props)
	case OpUnlink:
		return checkEdge(op.From, op.Type, op.To, Null())
	}
	return &Error{Code: CodeInvalid, Field: "op", Message: fmt.Sprintf("unknown operation %q", op.Kind)}
}

// applier is Apply's transaction: a writer per collection written, each
// finished (its deferred derived work done) before the commit.
type applier struct {
	s  *Store
	tx kv.Tx
	// exclusive: the catalog is held for writing, so operations may create
	// collections.
	exclusive bool
	writers   map[string]*writer
	order     []*writer // the writers in the order they were opened
	created   map[string]*collection
	out       []OpResult
}

// run applies ops in order, then finishes every writer.
func (a *applier) run(ctx context.Context, ops []Op) error {
	a.out = make([]OpResult, len(ops))
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := a.apply(op)
		if err != nil {
			return &OpError{Index: i, Err: err}
		}
		a.out[i] = r
	}
	for _, w := range a.order {
		if err := w.finish(); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one operation, with its single method's semantics.
func (a *applier) apply(op Op) (OpResult, error) {
	var r OpResult
	var err error
	switch op.Kind {
	case OpLink:
		r.Done, err = putEdge(a.tx, op.From, op.Type, op.To, op.Props)
		return r, err
	case OpUnlink:
		r.Done, err = deleteEdge(a.tx, op.From, op.Type, op.To)
		return r, err
	}
	w, err := a.writer(op.Collection, op.creates())
	switch {
	case err != nil:
		return r, err
	case w == nil: // a collection that does not exist
		switch op.Kind {
		case OpPatch:
			return r, noPatchTarget(op.Collection, op.ID)
		case OpCompareAndSet:
			return r, mismatch(op.Collection, op.ID, Doc{}, false)
		}
		return r, nil // delete: nothing to delete
	}
	switch op.Kind {
	case OpStore:
		r.Doc, err = w.store(op.ID, op.Doc)
	case OpInsert:
		r.Doc, err = w.insert(op.Doc)
	case OpPatch:
		r.Doc, err = w.patch(op.ID, op.Doc)
	case OpCompareAndSet:
		r.Doc, err = w.compareAndSet(op.ID, op.Expect, op.Doc)
	case OpDelete:
		r.Done, err = w.delete(op.ID)
	}
	return r, err
}

// writer returns the transaction's writer on coll, creating the
// collection when create is set and it does not exist; nil when it does
// not exist and create is not set.
func (a *applier) writer(coll string, create bool) (*writer, error) {
	if w := a.writers[coll]; w != nil {
		return w, nil
	}
	col := a.s.cat[coll]
	if col == nil {
		col = a.created[coll]
	}
	if col == nil {
		if !create {
			return nil, nil
		}
		if !a.exclusive {
			return nil, errCreatesCollection
		}
		var err error
		if col, err = createCollection(a.tx, coll); err != nil {
			return nil, err
		}
		a.created[coll] = col
	}
	w := &writer{tx: a.tx, col: col, docs: a.tx.Bucket(docsBucket(coll))}
	a.writers[coll] = w
	a.order = append(a.order, w)
	return w, nil
}

// createCollection creates the empty collection coll in tx and returns
// its catalog entry, to publish once tx commits.
func createCollection(tx kv.Tx, coll string) (*collection, error) {
	if err := checkName("collection", coll); err != nil {
		return nil, err
	}
	col := &collection{Name: coll, Indexes: []IndexDef{}}
	if _, err := tx.CreateBucketIfNotExists(docsBucket(coll)); err != nil {
		return nil, err
	}
	return col, putCatalog(tx, col)
}
