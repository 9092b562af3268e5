package docstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Graph edges. An edge is typed and directed, from a document of any
// collection to a document of any collection, and carries optional
// properties (a map). Each edge is stored twice, so that both directions
// are key ranges:
//
//	e\x00<from coll>   key(from id) + key(type) + key(to coll) + key(to id)
//	                   → the properties' value encoding (null: none)
//	r\x00<to coll>     key(to id) + key(type) + key(from coll) + key(from id)
//	                   → ""
//
// (type and collections as text keys). Both ends exist while the edge
// does: Link refuses a missing end (not_found), deleting a document
// deletes its edges in both directions (deriveEdges), and dropping a
// collection deletes the edges of its documents (dropEdges).

func outBucket(coll string) []byte { return []byte("e\x00" + coll) }
func inBucket(coll string) []byte  { return []byte("r\x00" + coll) }

// Ref names a document of any collection.
type Ref struct {
	Collection string
	ID         Value
}

// String names r in messages: its id and collection.
func (r Ref) String() string { return fmt.Sprintf("%s in %q", idString(r.ID), r.Collection) }

// Edge is a typed, directed link between two documents.
type Edge struct {
	From Ref
	Type string
	To   Ref
	// Props are the edge's properties: a map, or null when it has none.
	Props Value
}

// MaxEdgeType is the longest edge type, in bytes.
const MaxEdgeType = 256

// checkRef validates a document reference; what names it in errors'
// Field ("from" gives "from.collection" and "from.id"; "" gives
// "collection" and "id").
func checkRef(what string, r Ref) error {
	if what != "" {
		what += "."
	}
	if err := checkName("collection", r.Collection); err != nil {
		err.(*Error).Field = what + "collection"
		return err
	}
	if err := checkID(r.Collection, r.ID); err != nil {
		err.(*Error).Field = what + "id"
		return err
	}
	return nil
}

// checkEdgeType validates an edge type.
func checkEdgeType(t string) error {
	if t == "" || len(t) > MaxEdgeType {
		return &Error{Code: CodeInvalid, Field: "type", Message: fmt.Sprintf("edge type %q: want 1 to %d bytes", t, MaxEdgeType)}
	}
	return nil
}

// edgeKey is the out key of (from, type, to), or the in key with the
// ends swapped.
func edgeKey(self []byte, typ, otherColl string, other []byte) []byte {
	k := make([]byte, 0, len(self)+len(typ)+len(otherColl)+len(other)+8)
	k = append(k, self...)
	k = AppendKey(k, Text(typ))
	k = AppendKey(k, Text(otherColl))
	return append(k, other...)
}

// edgeParts is a stored edge key split: its owner's id key, type, the
// other end's collection and id key.
type edgeParts struct {
	self, other []byte
	typ, coll   string
}

// splitEdgeKey splits an edge key.
func splitEdgeKey(k []byte) (edgeParts, error) {
	var p edgeParts
	_, rest, err := DecodeKey(k)
	if err != nil {
		return p, fmt.Errorf("docstore: corrupt edge key %x: %w", k, err)
	}
	p.self = k[:len(k)-len(rest)]
	t, rest, err := DecodeKey(rest)
	if err != nil {
		return p, fmt.Errorf("docstore: corrupt edge key %x: %w", k, err)
	}
	c, rest, err := DecodeKey(rest)
	if err != nil {
		return p, fmt.Errorf("docstore: corrupt edge key %x: %w", k, err)
	}
	var ok1, ok2 bool
	p.typ, ok1 = t.Text()
	p.coll, ok2 = c.Text()
	if _, tail, err := DecodeKey(rest); err != nil || len(tail) != 0 || !ok1 || !ok2 {
		return p, fmt.Errorf("docstore: corrupt edge key %x", k)
	}
	p.other = rest
	return p, nil
}

// checkEdge validates an edge's ends, type and properties (a map or
// null).
func checkEdge(from Ref, typ string, to Ref, props Value) error {
	if err := checkRef("from", from); err != nil {
		return err
	}
	if err := checkRef("to", to); err != nil {
		return err
	}
	if err := checkEdgeType(typ); err != nil {
		return err
	}
	if k := props.Kind(); k != KindMap && k != KindNull {
		return &Error{Code: CodeInvalid, Field: "props", Message: fmt.Sprintf("edge properties are a map, not %s", k)}
	}
	if depthOver(props, MaxDepth) {
		return &Error{Code: CodeInvalid, Field: "props", Message: fmt.Sprintf("edge properties nest arrays and maps more than %d deep", MaxDepth)}
	}
	return nil
}

// Link creates the edge from → to of type typ, or replaces the
// properties of that edge when it exists, and reports whether it created
// it. props is a map or null (no properties). Both documents must exist:
// a missing collection fails with collection_not_found, a missing
// document with not_found (its Field says "from" or "to").
func (s *Store) Link(ctx context.Context, from Ref, typ string, to Ref, props Value) (bool, error) {
	if err := checkEdge(from, typ, to, props); err != nil {
		return false, err
	}
	created := false
	err := s.edgeWrite(ctx, func(tx kv.Tx) error {
		var err error
		created, err = putEdge(tx, from, typ, to, props)
		return err
	})
	return created, err
}

// putEdge writes an edge checked by checkEdge in tx, and reports whether
// it is new.
func putEdge(tx kv.Tx, from Ref, typ string, to Ref, props Value) (bool, error) {
	fromKey, toKey := AppendKey(nil, from.ID), AppendKey(nil, to.ID)
	for _, end := range []struct {
		what string
		ref  Ref
		key  []byte
	}{{"from", from, fromKey}, {"to", to, toKey}} {
		docs := tx.Bucket(docsBucket(end.ref.Collection))
		if docs == nil {
			return false, &Error{Code: CodeCollectionNotFound, Collection: end.ref.Collection, Field: end.what,
				Message: fmt.Sprintf("cannot link: no collection %q (the edge's %s end)", end.ref.Collection, end.what)}
		}
		if docs.Get(end.key) == nil {
			id := end.ref.ID
			return false, &Error{Code: CodeNotFound, Collection: end.ref.Collection, ID: &id, Field: end.what,
				Message: fmt.Sprintf("cannot link: no document %s (the edge's %s end)", end.ref, end.what)}
		}
	}
	ob, err := tx.CreateBucketIfNotExists(outBucket(from.Collection))
	if err != nil {
		return false, err
	}
	ib, err := tx.CreateBucketIfNotExists(inBucket(to.Collection))
	if err != nil {
		return false, err
	}
	ok := edgeKey(fromKey, typ, to.Collection, toKey)
	created := ob.Get(ok) == nil
	if err := ob.Put(ok, AppendValue(nil, props)); err != nil {
		return false, err
	}
	return created, ib.Put(edgeKey(toKey, typ, from.Collection, fromKey), nil)
}

// Unlink deletes the edge from → to of type typ and reports whether it
// existed.
func (s *Store) Unlink(ctx context.Context, from Ref, typ string, to Ref) (bool, error) {
	if err := checkEdge(from, typ, to, Null()); err != nil {
		return false, err
	}
	removed := false
	err := s.edgeWrite(ctx, func(tx kv.Tx) error {
		var err error
		removed, err = deleteEdge(tx, from, typ, to)
		return err
	})
	return removed, err
}

// deleteEdge deletes an edge checked by checkEdge in tx, and reports
// whether it existed.
func deleteEdge(tx kv.Tx, from Ref, typ string, to Ref) (bool, error) {
	fromKey, toKey := AppendKey(nil, from.ID), AppendKey(nil, to.ID)
	ob, ib := tx.Bucket(outBucket(from.Collection)), tx.Bucket(inBucket(to.Collection))
	ok := edgeKey(fromKey, typ, to.Collection, toKey)
	if ob == nil || ib == nil || ob.Get(ok) == nil {
		return false, nil
	}
	if err := ob.Delete(ok); err != nil {
		return false, err
	}
	return true, ib.Delete(edgeKey(toKey, typ, from.Collection, fromKey))
}

// edgeWrite runs fn in a (batched) write transaction with the catalog
// held for reading, so that no collection is dropped meanwhile.
func (s *Store) edgeWrite(ctx context.Context, fn func(tx kv.Tx) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	return s.withCatalog(s.db.Batch, fn)
}

// deriveEdges deletes a deleted document's edges, both ways.
func (w *writer) deriveEdges(c docChange) error {
	if c.HasNew {
		return nil
	}
	return removeEdges(w.tx, w.col.Name, c.IDKey)
}

// removeEdges deletes the edges out of and into the document idKey of
// coll, with their mirrors.
func removeEdges(tx kv.Tx, coll string, idKey []byte) error {
	for _, dir := range []struct {
		own, mirror func(string) []byte
	}{{outBucket, inBucket}, {inBucket, outBucket}} {
		b := tx.Bucket(dir.own(coll))
		if b == nil {
			continue
		}
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.Seek(idKey); k != nil && bytes.HasPrefix(k, idKey); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			p, err := splitEdgeKey(k)
			if err != nil {
				return err
			}
			if m := tx.Bucket(dir.mirror(p.coll)); m != nil {
				if err := m.Delete(edgeKey(p.other, p.typ, coll, p.self)); err != nil {
					return err
				}
			}
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropEdges deletes the edges of col's documents, both ways, as col is
// dropped.
func dropEdges(tx kv.Tx, col *collection) error {
	for _, dir := range []struct {
		own, mirror func(string) []byte
	}{{outBucket, inBucket}, {inBucket, outBucket}} {
		b := tx.Bucket(dir.own(col.Name))
		if b == nil {
			continue
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			p, err := splitEdgeKey(k)
			if err != nil {
				return err
			}
			if p.coll == col.Name {
				continue // its mirror goes with this collection's buckets
			}
			if m := tx.Bucket(dir.mirror(p.coll)); m != nil {
				if err := m.Delete(edgeKey(p.other, p.typ, col.Name, p.self)); err != nil {
					return err
				}
			}
		}
		if err := tx.DeleteBucket(dir.own(col.Name)); err != nil {
			return fmt.Errorf("docstore: drop the edges of %q: %w", col.Name, err)
		}
	}
	return nil
}

// verifyEdges checks the edges of col's documents: each end exists, each
// edge is stored both ways, and each edge's properties decode to a map or
// null. (Over every collection, this checks every edge both ways.)
func verifyEdges(ctx context.Context, tx kv.Tx, col *collection) error {
	for _, dir := range []struct {
		name        string
		own, mirror func(string) []byte
	}{{"outgoing", outBucket, inBucket}, {"incoming", inBucket, outBucket}} {
		b := tx.Bucket(dir.own(col.Name))
		if b == nil {
			continue
		}
		docs := tx.Bucket(docsBucket(col.Name))
		n := 0
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			p, err := splitEdgeKey(k)
			if err != nil {
				return fmt.Errorf("docstore: verify: %w", err)
			}
			fail := func(what string) error {
				return fmt.Errorf("docstore: verify: %s edge %x of %q (type %q, other end in %q): %s", dir.name, k, col.Name, p.typ, p.coll, what)
			}
			if docs.Get(p.self) == nil {
				return fail("its document does not exist")
			}
			if od := tx.Bucket(docsBucket(p.coll)); od == nil || od.Get(p.other) == nil {
				return fail("its other end does not exist")
			}
			m := tx.Bucket(dir.mirror(p.coll))
			if m == nil {
				return fail("it is not stored the other way")
			}
			mv := m.Get(edgeKey(p.other, p.typ, col.Name, p.self))
			if mv == nil {
				return fail("it is not stored the other way")
			}
			props := v
			if dir.name == "incoming" {
				props = mv
			}
			if pv, err := DecodeValue(props); err != nil || (pv.Kind() != KindMap && !pv.IsNull()) {
				return fail("its properties are not a map")
			}
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Direction is the way edges are followed.
type Direction string

// The directions.
const (
	Out  Direction = "out"  // from the document to the edges' targets
	In   Direction = "in"   // from the document to the edges' sources
	Both Direction = "both" // both ways
)

// checkDirection validates a direction ("" is Out); both says whether
// Both is allowed.
func checkDirection(d Direction, both bool) (Direction, error) {
	switch d {
	case "":
		return Out, nil
	case Out, In:
		return d, nil
	case Both:
		if both {
			return d, nil
		}
	}
	want := "out or in"
	if both {
		want = "out, in or both"
	}
	return "", &Error{Code: CodeInvalid, Field: "direction", Message: fmt.Sprintf("direction %q: want %s", d, want)}
}

// NeighborQuery selects a page of a document's edges.
type NeighborQuery struct {
	// Type restricts the edges to one type ("": every type).
	Type string
	// Limit is the page size: 0 means DefaultLimit, more than MaxLimit is
	// clamped to it.
	Limit int
	// Cursor continues after the page that returned it.
	Cursor string
	// WithDocs adds each neighbour's document, projected by Select.
	WithDocs bool
	Select   []string
}

// Neighbor is one edge of a neighbours page, with the neighbour's
// document when asked.
type Neighbor struct {
	Edge
	// Doc is the document at the edge's other end (WithDocs).
	Doc *Doc
}

// NeighborResult is one page of a document's edges, in the order of
// (type, neighbour's collection, neighbour's id).
type NeighborResult struct {
	Edges []Neighbor
	// Next is the cursor of the next page, "" after the last.
	Next string
}

// Neighbors returns a page of the edges out of the document ref (to its
// neighbours). The document must exist (not_found otherwise).
func (s *Store) Neighbors(ctx context.Context, ref Ref, q NeighborQuery) (NeighborResult, error) {
	return s.neighbors(ctx, ref, Out, q)
}

// InNeighbors returns a page of the edges into the document ref (from
// the documents that link to it). The document must exist.
func (s *Store) InNeighbors(ctx context.Context, ref Ref, q NeighborQuery) (NeighborResult, error) {
	return s.neighbors(ctx, ref, In, q)
}

func (s *Store) neighbors(ctx context.Context, ref Ref, dir Direction, q NeighborQuery) (NeighborResult, error) {
	var out NeighborResult
	if err := checkRef("", ref); err != nil {
		return out, err
	}
	if q.Type != "" {
		if err := checkEdgeType(q.Type); err != nil {
			return out, err
		}
	}
	limit := clampLimit(q.Limit)
	kind := byte('o')
	if dir == In {
		kind = 'i'
	}
	err := s.view(ctx, ref.Collection, func(r *reader) error {
		out = NeighborResult{}
		g := graphReader{tx: r.tx}
		selfKey := AppendKey(nil, ref.ID)
		if err := r.mustHave(ref, selfKey, "id"); err != nil {
			return err
		}
		prefix := selfKey
		if q.Type != "" {
			prefix = AppendKey(bytes.Clone(selfKey), Text(q.Type))
		}
		after, err := decodeCursor(ref.Collection, q.Cursor, kind, false, "")
		if err != nil {
			return err
		}
		if after != nil && !bytes.HasPrefix(after, prefix) {
			return &Error{Code: CodeInvalid, Collection: ref.Collection, Field: "cursor", Message: "the cursor is not one this query returned (other document, type or direction); start again without it"}
		}
		var last []byte
		err = g.edges(ref.Collection, dir, prefix, after, func(k []byte, e Edge) (bool, error) {
			if len(out.Edges) == limit {
				out.Next = encodeCursor(kind, false, "", last)
				return false, nil
			}
			n := Neighbor{Edge: e}
			if q.WithDocs {
				other := e.To
				if dir == In {
					other = e.From
				}
				var err error
				if n.Doc, err = g.projected(other, q.Select); err != nil {
					return false, err
				}
			}
			out.Edges = append(out.Edges, n)
			last = k
			return true, nil
		})
		return err
	})
	return out, err
}

// graphReader reads edges and documents of any collection in one read
// transaction (the catalog held).
type graphReader struct {
	tx kv.Tx
}

// edges calls fn with each edge of coll's documents in direction dir
// (Out or In) whose stored key starts with prefix, in key order, after the
// key after (when set), until fn returns false or an error.
func (g graphReader) edges(coll string, dir Direction, prefix, after []byte, fn func(k []byte, e Edge) (bool, error)) error {
	own := outBucket
	if dir == In {
		own = inBucket
	}
	b := g.tx.Bucket(own(coll))
	if b == nil {
		return nil
	}
	var err error
	scanRange(b, keyRange{lo: prefix, hi: prefixEnd(prefix)}, after, false, func(k, v []byte) bool {
		var p edgeParts
		if p, err = splitEdgeKey(k); err != nil {
			return false
		}
		var self, other Value
		if self, _, err = DecodeKey(p.self); err != nil {
			return false
		}
		if other, _, err = DecodeKey(p.other); err != nil {
			return false
		}
		e := Edge{From: Ref{coll, self}, Type: p.typ, To: Ref{p.coll, other}}
		if dir == In {
			e.From, e.To = e.To, e.From
			v = g.tx.Bucket(outBucket(p.coll)).Get(edgeKey(p.other, p.typ, coll, p.self))
		}
		if e.Props, err = DecodeValue(v); err != nil {
			err = fmt.Errorf("docstore: edge %x of %q: properties: %w", k, coll, err)
			return false
		}
		var more bool
		more, err = fn(k, e)
		return more && err == nil
	})
	return err
}

// doc reads the document ref, which an edge names.
func (g graphReader) doc(ref Ref) (Doc, error) {
	d, ok, err := getDoc(g.tx.Bucket(docsBucket(ref.Collection)), ref.Collection, ref.ID)
	if err == nil && !ok {
		err = fmt.Errorf("docstore: an edge names document %s, which does not exist", ref)
	}
	return d, err
}

// projected reads the document ref, which an edge names, projected onto
// paths.
func (g graphReader) projected(ref Ref, paths []string) (*Doc, error) {
	d, err := g.doc(ref)
	if err != nil {
		return nil, err
	}
	d = project(d, paths)
	return &d, nil
}

// mustHave fails with not_found (at field) when r's collection has no
// document ref (whose id key is idKey).
func (r *reader) mustHave(ref Ref, idKey []byte, field string) error {
	if r.docs.Get(idKey) != nil {
		return nil
	}
	id := ref.ID
	return &Error{Code: CodeNotFound, Collection: ref.Collection, ID: &id, Field: field, Message: fmt.Sprintf("no document %s", ref)}
}

// MaxTraverseDepth is the deepest Traverse goes.
const MaxTraverseDepth = 64

// TraverseQuery says how Traverse walks the graph.
type TraverseQuery struct {
	// Types restricts the edges followed to these types (none: every
	// type).
	Types []string
	// Direction is the way edges are followed: Out (the default), In or
	// Both.
	Direction Direction
	// MaxDepth is how many edges away from the start Traverse goes, 1 to
	// MaxTraverseDepth.
	MaxDepth int
	// Limit is the most nodes returned besides the start: 0 means
	// DefaultLimit, more than MaxLimit is clamped to it.
	Limit int
	// WithDocs adds each node's document, projected by Select.
	WithDocs bool
	Select   []string
}

// Node is one document a traversal reached.
type Node struct {
	Ref   Ref
	Depth int // edges from the start (0: the start)
	// Via is the edge by which the traversal first reached the node (nil
	// for the start): its From is the node's parent for an outgoing edge,
	// its To for an incoming one.
	Via *Edge
	Doc *Doc
}

// TraverseResult is a breadth-first traversal: the nodes in the order
// reached (each once, however many paths lead to it).
type TraverseResult struct {
	Nodes []Node
	// Truncated says that the node limit stopped the traversal: more
	// nodes within MaxDepth are reachable than were returned. The nodes
	// returned are then the first Limit+1 (with the start) in
	// breadth-first order: every node nearer than the last one's depth is
	// there.
	Truncated bool
	// EdgesRead counts the edges examined.
	EdgesRead int
}

// Traverse walks the graph breadth-first from the document start, along
// edges of the given types and direction, to q.MaxDepth edges away, and
// returns the nodes reached, each once (cycles are followed no further
// than their first visit). It stops at q.Limit nodes besides the start
// and then says so (Truncated). The start must exist (not_found).
func (s *Store) Traverse(ctx context.Context, start Ref, q TraverseQuery) (TraverseResult, error) {
	var out TraverseResult
	if err := checkRef("start", start); err != nil {
		return out, err
	}
	dir, err := checkDirection(q.Direction, true)
	if err != nil {
		return out, err
	}
	if q.MaxDepth < 1 || q.MaxDepth > MaxTraverseDepth {
		return out, &Error{Code: CodeInvalid, Field: "max_depth", Message: fmt.Sprintf("max_depth %d: want 1 to %d", q.MaxDepth, MaxTraverseDepth)}
	}
	for _, t := range q.Types {
		if err := checkEdgeType(t); err != nil {
			err.(*Error).Field = "types"
			return out, err
		}
	}
	limit := clampLimit(q.Limit)
	dirs := []Direction{dir}
	if dir == Both {
		dirs = []Direction{Out, In}
	}
	err = s.view(ctx, start.Collection, func(r *reader) error {
		out = TraverseResult{}
		g := graphReader{tx: r.tx}
		startKey := AppendKey(nil, start.ID)
		if err := r.mustHave(start, startKey, "start"); err != nil {
			return err
		}
		seen := map[string]bool{nodeKey(start.Collection, startKey): true}
		add := func(n Node) error {
			if q.WithDocs {
				var err error
				if n.Doc, err = g.projected(n.Ref, q.Select); err != nil {
					return err
				}
			}
			out.Nodes = append(out.Nodes, n)
			return nil
		}
		if err := add(Node{Ref: start}); err != nil {
			return err
		}
		for level, depth := 0, 1; depth <= q.MaxDepth && level < len(out.Nodes); depth++ {
			end := len(out.Nodes)
			for ; level < end; level++ {
				from := out.Nodes[level].Ref
				selfKey := AppendKey(nil, from.ID)
				for _, d := range dirs {
					for _, prefix := range typePrefixes(selfKey, q.Types) {
						err := g.edges(from.Collection, d, prefix, nil, func(_ []byte, e Edge) (bool, error) {
							out.EdgesRead++
							if out.EdgesRead%4096 == 0 {
								if err := ctx.Err(); err != nil {
									return false, err
								}
							}
							next := e.To
							if d == In {
								next = e.From
							}
							nk := nodeKey(next.Collection, AppendKey(nil, next.ID))
							if seen[nk] {
								return true, nil
							}
							if len(out.Nodes) == limit+1 {
								out.Truncated = true
								return false, nil
							}
							seen[nk] = true
							via := e
							return true, add(Node{Ref: next, Depth: depth, Via: &via})
						})
						if err != nil || out.Truncated {
							return err
						}
					}
				}
			}
		}
		return nil
	})
	return out, err
}

// typePrefixes returns the key prefixes of a document's edges of the
// given types (all types: its id key alone).
func typePrefixes(selfKey []byte, types []string) [][]byte {
	if len(types) == 0 {
		return [][]byte{selfKey}
	}
	out := make([][]byte, 0, len(types))
	for _, t := range types {
		out = append(out, AppendKey(bytes.Clone(selfKey), Text(t)))
	}
	return out
}

func nodeKey(coll string, idKey []byte) string {
	return string(AppendKey(nil, Text(coll))) + string(idKey)
}

// edgeLine is an edge as a dump carries it: its ends (ids in the JSON
// form of ToJSON), type and properties.
type edgeLine struct {
	From  refLine         `json:"from"`
	Type  string          `json:"type"`
	To    refLine         `json:"to"`
	Props json.RawMessage `json:"props,omitempty"`
}

// refLine is a document reference in a dump.
type refLine struct {
	Collection string          `json:"collection"`
	ID         json.RawMessage `json:"id"`
}

// dumpEdges calls emit with every edge out of the collections colls whose
// target is in colls too, in key order, in tx: a dump carries the edges
// among the collections it dumps (after their documents).
func dumpEdges(tx kv.Tx, colls []string, emit func(edgeLine) error) error {
	in := map[string]bool{}
	for _, c := range colls {
		in[c] = true
	}
	g := graphReader{tx: tx}
	for _, c := range colls {
		err := g.edges(c, Out, nil, nil, func(_ []byte, e Edge) (bool, error) {
			if !in[e.To.Collection] {
				return true, nil
			}
			l := edgeLine{Type: e.Type, From: refLine{Collection: e.From.Collection}, To: refLine{Collection: e.To.Collection}}
			var err error
			if l.From.ID, err = ToJSON(e.From.ID); err != nil {
				return false, err
			}
			if l.To.ID, err = ToJSON(e.To.ID); err != nil {
				return false, err
			}
			if !e.Props.IsNull() {
				if l.Props, err = ToJSON(e.Props); err != nil {
					return false, fmt.Errorf("docstore: dump edge %s → %s: %w", e.From, e.To, err)
				}
			}
			return true, emit(l)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// loadEdges links the edges of a dump (Link: both ends must exist by
// then), in one transaction per call.
func (s *Store) loadEdges(ctx context.Context, lines []edgeLine) error {
	if len(lines) == 0 {
		return nil
	}
	type edge struct {
		from, to Ref
		typ      string
		props    Value
	}
	edges := make([]edge, 0, len(lines))
	for i, l := range lines {
		var e edge
		var err error
		e.typ = l.Type
		e.from.Collection, e.to.Collection = l.From.Collection, l.To.Collection
		if e.from.ID, err = FromJSON(l.From.ID); err == nil {
			e.to.ID, err = FromJSON(l.To.ID)
		}
		if err == nil && l.Props != nil {
			e.props, err = FromJSON(l.Props)
		}
		if err != nil {
			return &Error{Code: CodeInvalid, Message: fmt.Sprintf("edge %d: %v", i+1, err)}
		}
		edges = append(edges, e)
	}
	for _, e := range edges {
		if err := checkEdge(e.from, e.typ, e.to, e.props); err != nil {
			return err
		}
	}
	// One transaction for them all, not one commit per edge.
	return s.edgeWrite(ctx, func(tx kv.Tx) error {
		for _, e := range edges {
			if _, err := putEdge(tx, e.from, e.typ, e.to, e.props); err != nil {
				return err
			}
		}
		return nil
	})
}
