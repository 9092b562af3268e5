package docstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"slices"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// reader is one read transaction on one collection.
type reader struct {
	tx   kv.Tx
	col  *collection
	docs kv.Bucket
	// strs, when set, keeps the texts of the documents load decodes (see
	// stringStore): set by reads that decode many.
	strs *stringStore
	// exhaustiveText, set by tests, scores every document a text query
	// matches (no pruning: bm25.rank), to compare with the pruned ranking.
	exhaustiveText bool
}

// view runs fn in a read transaction on coll, which must exist.
func (s *Store) view(ctx context.Context, coll string, fn func(r *reader) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	return s.withCatalog(s.db.View, func(tx kv.Tx) error {
		col, err := s.collectionOf(coll)
		if err != nil {
			return err
		}
		return fn(&reader{tx: tx, col: col, docs: tx.Bucket(docsBucket(coll))})
	})
}

// Plan says how a query found its documents.
type Plan struct {
	// Index is the secondary index used, or "" for a scan of the
	// collection in id order.
	Index string `json:"index,omitempty"`
	// Ranges is how many key ranges of the index were read.
	Ranges int `json:"ranges,omitempty"`
	// Examined counts the documents read and tested against the filter.
	Examined int `json:"examined"`
}

// Query selects documents of a collection for Page.
type Query struct {
	// Filter selects documents; nil selects all.
	Filter *Filter
	// OrderBy is "" (or "id") for id order, or a field that is the first
	// field of an index, for that field's order (documents without it, or
	// with null, first), then id order.
	OrderBy string
	// Desc reverses the order.
	Desc bool
	// Limit is the page size: 0 means DefaultLimit, more than MaxLimit is
	// clamped to it.
	Limit int
	// Cursor continues after the page that returned it ("" starts).
	Cursor string
	// Select projects each document onto these dotted paths (nil: the
	// whole document; empty: none of it, an empty map).
	Select []string
}

// PageResult is one page of documents.
type PageResult struct {
	Docs []Doc
	// Next is the cursor of the next page, "" after the last.
	Next string
	Plan Plan
}

// clampLimit applies the default and the maximum to a limit.
func clampLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

// keyRange is a range of keys [lo, hi) of an index (hi nil: to the end).
type keyRange struct{ lo, hi []byte }

// prefixEnd returns the first key after every key starting with p (nil:
// none).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// eqBounds returns the smallest and largest values Compare-equal to v for
// a filter's equality: an integral number equals both an int and a float.
func eqBounds(v Value) (lo, hi Value) {
	if i, ok := v.Int(); ok {
		if f := float64(i); f >= -9.223372036854775808e18 && f < 9.223372036854775807e18 && int64(f) == i {
			return v, Float(f)
		}
		return v, v
	}
	if f, ok := v.Float(); ok && f == math.Trunc(f) && f >= -9.223372036854775808e18 && f < 9.223372036854775807e18 {
		return Int(int64(f)), v
	}
	return v, v
}

// inclusiveRange returns the key range of the values in [lo, hi] after
// prefix.
func inclusiveRange(prefix []byte, lo, hi Value) keyRange {
	return keyRange{lo: AppendKey(bytes.Clone(prefix), lo), hi: prefixEnd(AppendKey(bytes.Clone(prefix), hi))}
}

// indexPlan is a way to read an index for a filter.
type indexPlan struct {
	def    IndexDef
	ranges []keyRange
	score  int // fields constrained: 2 per equality, 1 for a range or $in
	fields int // leading fields of the index the ranges constrain
}

// planIndex returns how def can narrow the documents that match cons.
func planIndex(def IndexDef, cons map[string]Constraint) indexPlan {
	p := indexPlan{def: def, ranges: []keyRange{{lo: nil, hi: nil}}}
	var prefix []byte
	for _, f := range def.Fields {
		c, ok := cons[f]
		if !ok {
			break
		}
		p.fields++
		if c.Eq != nil {
			lo, hi := eqBounds(*c.Eq)
			if Compare(lo, hi) == 0 && lo.Kind() == hi.Kind() {
				prefix = AppendKey(prefix, lo)
				p.score += 2
				p.ranges = []keyRange{{lo: bytes.Clone(prefix), hi: prefixEnd(prefix)}}
				continue
			}
			p.ranges = []keyRange{inclusiveRange(prefix, lo, hi)}
			p.score += 2
			return p
		}
		if c.In != nil {
			vals := slices.Clone(c.In)
			slices.SortFunc(vals, Compare)
			p.ranges = p.ranges[:0]
			for _, v := range vals {
				lo, hi := eqBounds(v)
				p.ranges = append(p.ranges, inclusiveRange(prefix, lo, hi))
			}
			// 1 and 1.0 give the same range: read it once.
			p.ranges = slices.CompactFunc(p.ranges, func(a, b keyRange) bool { return bytes.Equal(a.lo, b.lo) && bytes.Equal(a.hi, b.hi) })
			p.score++
			return p
		}
		if c.Lower != nil || c.Upper != nil {
			r := keyRange{lo: bytes.Clone(prefix), hi: prefixEnd(prefix)}
			if len(prefix) == 0 {
				r.hi = nil
			}
			// A bound's value has two keys when it is an integral number
			// (the int sorts just before the equal float): an inclusive
			// bound takes both, an exclusive one neither.
			if c.Lower != nil {
				lo, hi := eqBounds(c.Lower.Value)
				if c.Lower.Inclusive {
					r.lo = AppendKey(bytes.Clone(prefix), lo)
				} else {
					r.lo = prefixEnd(AppendKey(bytes.Clone(prefix), hi))
				}
			}
			if c.Upper != nil {
				lo, hi := eqBounds(c.Upper.Value)
				if c.Upper.Inclusive {
					r.hi = prefixEnd(AppendKey(bytes.Clone(prefix), hi))
				} else {
					r.hi = AppendKey(bytes.Clone(prefix), lo)
				}
			}
			p.ranges = []keyRange{r}
			p.score++
			return p
		}
		p.fields-- // the field's constraint says nothing an index can use
		break
	}
	return p
}

// bestIndex returns the index plan that constrains the most fields, if any
// constrains one.
func (r *reader) bestIndex(f *Filter) (indexPlan, bool) {
	if f == nil {
		return indexPlan{}, false
	}
	cons := f.Conjuncts()
	var best indexPlan
	for _, def := range r.col.Indexes {
		if p := planIndex(def, cons); p.score > best.score {
			best = p
		}
	}
	return best, best.score > 0
}

// scanRange calls fn with each key of b in r, in order (reversed when
// desc), from after (exclusive, when set), until fn returns false.
func scanRange(b kv.Bucket, r keyRange, after []byte, desc bool, fn func(k, v []byte) bool) {
	scanCursor(b.Cursor(), r, after, desc, fn)
}

// rangeCursor is what scanCursor walks: a kv.Cursor, or an index's
// entryCursor.
type rangeCursor interface {
	First() (k, v []byte)
	Last() (k, v []byte)
	Seek(seek []byte) (k, v []byte)
	Next() (k, v []byte)
	Prev() (k, v []byte)
}

// scanEntries is scanRange over the entries of an index; it returns the
// error of a corrupt block.
func scanEntries(s entrySet, r keyRange, after []byte, desc bool, fn func(k []byte) bool) error {
	c := s.cursor()
	if !desc {
		c.hi, r.hi = r.hi, nil // the cursor ends the walk, comparing once a block
	}
	scanCursor(c, r, after, desc, func(k, _ []byte) bool { return fn(k) })
	return c.Err()
}

// scanCursor is scanRange with the cursor c.
func scanCursor(c rangeCursor, r keyRange, after []byte, desc bool, fn func(k, v []byte) bool) {
	if !desc {
		lo := r.lo
		if after != nil && (lo == nil || bytes.Compare(after, lo) >= 0) {
			lo = prefixEnd(after) // keys are self-delimiting: nothing sorts between after and this
			if lo == nil {
				return
			}
		}
		var k, v []byte
		if lo == nil {
			k, v = c.First()
		} else {
			k, v = c.Seek(lo)
		}
		for ; k != nil && (r.hi == nil || bytes.Compare(k, r.hi) < 0); k, v = c.Next() {
			if !fn(k, v) {
				return
			}
		}
		return
	}
	hi := r.hi
	if after != nil && (hi == nil || bytes.Compare(after, hi) < 0) {
		hi = after
	}
	var k, v []byte
	if hi == nil {
		k, v = c.Last()
	} else if k, v = c.Seek(hi); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && (r.lo == nil || bytes.Compare(k, r.lo) >= 0); k, v = c.Prev() {
		if !fn(k, v) {
			return
		}
	}
}

// entryID returns the id key at the end of an index entry of def.
func entryID(def IndexDef, entry []byte) ([]byte, error) {
	vals, _, err := entryValues(def, entry)
	return entry[len(vals):], err
}

// covers reports whether the index plan p answers f exactly: f is
// equalities (Filter.Exact) on the fields p's ranges constrain, and no
// other.
func covers(p indexPlan, f *Filter) bool {
	return f.Exact() && p.fields == len(f.Conjuncts())
}

// candidates returns the id keys, in id order, of the documents an index
// plan selects (each once).
func (r *reader) candidates(p indexPlan) ([][]byte, error) {
	var ids [][]byte
	err := r.eachCandidate(p, func(id []byte) { ids = append(ids, id) })
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ids, bytes.Compare)
	return slices.CompactFunc(ids, bytes.Equal), nil
}

// eachCandidate calls fn with the id key of each entry an index plan
// selects, range by range (an id may come more than once when ranges
// overlap). The keys stay valid until the transaction ends.
//
// Entries of equal values follow one another, and keys are prefix-free
// (keys.go): an entry that starts with the previous entry's values has
// those values, and its id is the rest, found without decoding them.
func (r *reader) eachCandidate(p indexPlan, fn func(id []byte)) error {
	ib := indexEntries(r.tx, r.col.Name, p.def.Name)
	ib.prefetch(p.ranges)
	var err error
	var vals []byte // the previous entry's values
	for _, kr := range p.ranges {
		serr := scanEntries(ib, kr, nil, false, func(k []byte) bool {
			if vals == nil || !bytes.HasPrefix(k, vals) {
				if vals, _, err = entryValues(p.def, k); err != nil {
					return false
				}
			}
			fn(k[len(vals):])
			return true
		})
		if err = cmp.Or(err, serr); err != nil {
			return err
		}
	}
	return nil
}

// fetcher reads the collection's documents by id key through one cursor:
// bbolt's Get starts a new cursor, and allocates its path, on every call,
// while a cursor's Seek reuses it.
type fetcher struct {
	b kv.Bucket
	c kv.Cursor
}

func (r *reader) fetcher() fetcher { return fetcher{b: r.docs, c: r.docs.Cursor()} }

// A fetcher that knows the ids ahead asks the storage for them in runs
// (see kv.Prefetch) of prefetchFirst documents, doubling up to prefetchRun,
// so that a page that stops early fetches little more than it returns.
const (
	prefetchFirst = 16
	prefetchRun   = 256
)

// prefetch announces the id keys about to be read: on PostgreSQL they are
// fetched in one round trip rather than one each.
func (f fetcher) prefetch(keys [][]byte) { kv.Prefetch(f.b, keys) }

// get returns the record stored under the id key k, or nil.
func (f fetcher) get(k []byte) []byte {
	got, v := f.c.Seek(k)
	if !bytes.Equal(got, k) {
		return nil
	}
	return v
}

// load decodes the document stored under the id key k.
func (r *reader) load(k, v []byte) (Doc, error) {
	id, _, err := DecodeKey(k)
	if err != nil {
		return Doc{}, fmt.Errorf("docstore: %q: corrupt id key: %w", r.col.Name, err)
	}
	rev, val, err := decodeRecordTo(r.col.Name, id, v, r.strs)
	return Doc{ID: id, Revision: rev, Value: val}, err
}

// matching calls fn with each document matching f, in id order (reversed
// when desc) after the id key after, until fn returns false; it returns
// the plan it used.
func (r *reader) matching(f *Filter, after []byte, desc bool, fn func(k []byte, d Doc) bool) (Plan, error) {
	var plan Plan
	var err error
	p, indexed := r.bestIndex(f)
	// Equalities the index covers need no second look at the document.
	check := f != nil && !(indexed && covers(p, f))
	visit := func(k, v []byte) bool {
		var d Doc
		if d, err = r.load(k, v); err != nil {
			return false
		}
		plan.Examined++
		if check && !f.Match(d.Value) {
			return true
		}
		return fn(k, d)
	}
	if indexed {
		plan.Index, plan.Ranges = p.def.Name, len(p.ranges)
		ids, cerr := r.candidates(p)
		if cerr != nil {
			return plan, cerr
		}
		if desc {
			slices.Reverse(ids)
		}
		docs := r.fetcher()
		next, run := 0, prefetchFirst
		for i, k := range ids {
			if i == next {
				docs.prefetch(ids[i:min(i+run, len(ids))])
				next, run = i+run, min(2*run, prefetchRun)
			}
			if after != nil && (bytes.Compare(k, after) <= 0) != desc {
				continue
			}
			v := docs.get(k)
			if v == nil {
				return plan, fmt.Errorf("docstore: index %q of %q names a missing document", p.def.Name, r.col.Name)
			}
			if !visit(k, v) {
				break
			}
		}
		return plan, err
	}
	scanRange(r.docs, keyRange{}, after, desc, visit)
	return plan, err
}

// Cursor layouts: 'd' continues id order after an id key; 'x' continues an
// index's order after one of its entries.
const (
	cursorID    = 'd'
	cursorIndex = 'x'
)

func encodeCursor(kind byte, desc bool, index string, key []byte) string {
	b := []byte{kind, 0}
	if desc {
		b[1] = 1
	}
	b = append(append(append(b, index...), 0), key...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor returns the key a cursor continues after, checking that it
// belongs to the same order.
func decodeCursor(coll, cursor string, kind byte, desc bool, index string) ([]byte, error) {
	if cursor == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	bad := &Error{Code: CodeInvalid, Collection: coll, Field: "cursor", Message: "the cursor is not one this query returned (other order, direction or collection state); start again without it"}
	if err != nil || len(b) < 3 || b[0] != kind || (b[1] == 1) != desc {
		return nil, bad
	}
	name, key, ok := bytes.Cut(b[2:], []byte{0})
	if !ok || string(name) != index || len(key) == 0 {
		return nil, bad
	}
	return key, nil
}

// Page returns one page of the documents of coll that match q.
func (s *Store) Page(ctx context.Context, coll string, q Query) (PageResult, error) {
	var out PageResult
	limit := clampLimit(q.Limit)
	err := s.view(ctx, coll, func(r *reader) error {
		out = PageResult{Docs: make([]Doc, 0, min(limit, 128))}
		r.strs = newStringStore()
		if q.OrderBy != "" && q.OrderBy != "id" {
			return r.pageByIndex(q, limit, &out)
		}
		after, err := decodeCursor(coll, q.Cursor, cursorID, q.Desc, "")
		if err != nil {
			return err
		}
		var last []byte
		out.Plan, err = r.matching(q.Filter, after, q.Desc, func(k []byte, d Doc) bool {
			if len(out.Docs) == limit {
				out.Next = encodeCursor(cursorID, q.Desc, "", last)
				return false
			}
			out.Docs = append(out.Docs, project(d, q.Select))
			last = k // valid until the transaction ends; encodeCursor copies it
			return true
		})
		return err
	})
	return out, err
}

// pageByIndex pages in the order of the index led by q.OrderBy.
func (r *reader) pageByIndex(q Query, limit int, out *PageResult) error {
	coll := r.col.Name
	i := slices.IndexFunc(r.col.Indexes, func(d IndexDef) bool { return d.Fields[0] == q.OrderBy })
	if i < 0 {
		return &Error{Code: CodeInvalid, Collection: coll, Field: q.OrderBy,
			Message: fmt.Sprintf("cannot order %q by %q: no index starts with that field (create one, or order by id)", coll, q.OrderBy)}
	}
	def := r.col.Indexes[i]
	after, err := decodeCursor(coll, q.Cursor, cursorIndex, q.Desc, def.Name)
	if err != nil {
		return err
	}
	kr := keyRange{}
	if q.Filter != nil {
		if p := planIndex(IndexDef{Name: def.Name, Fields: def.Fields[:1]}, q.Filter.Conjuncts()); p.score > 0 && len(p.ranges) == 1 {
			kr = p.ranges[0]
			out.Plan.Ranges = 1
		}
	}
	out.Plan.Index = def.Name
	var last []byte
	docs := r.fetcher()
	serr := scanEntries(indexEntries(r.tx, coll, def.Name), kr, after, q.Desc, func(k []byte) bool {
		var id []byte
		if id, err = entryID(def, k); err != nil {
			return false
		}
		v := docs.get(id)
		if v == nil {
			err = fmt.Errorf("docstore: index %q of %q names a missing document", def.Name, coll)
			return false
		}
		var d Doc
		if d, err = r.load(id, v); err != nil {
			return false
		}
		out.Plan.Examined++
		if q.Filter != nil && !q.Filter.Match(d.Value) {
			return true
		}
		if len(out.Docs) == limit {
			out.Next = encodeCursor(cursorIndex, q.Desc, def.Name, last)
			return false
		}
		out.Docs = append(out.Docs, project(d, q.Select))
		last = k // valid until the transaction ends; encodeCursor copies it
		return true
	})
	return cmp.Or(err, serr)
}

// project keeps only the selected dotted paths of d's value: none of it
// for an empty selection, all of it for none (nil).
func project(d Doc, paths []string) Doc {
	if paths == nil {
		return d
	}
	out := Map()
	for _, p := range paths {
		if v, ok := d.Value.Path(p); ok {
			out = setDotted(out, p, v)
		}
	}
	d.Value = out
	return d
}

// setDotted sets the dotted path p of map m to v, creating maps on the way.
func setDotted(m Value, p string, v Value) Value {
	key, rest, more := cutPath(p)
	if !more {
		return m.With(key, v)
	}
	cur, ok := m.Get(key)
	if !ok || cur.Kind() != KindMap {
		cur = Map()
	}
	return m.With(key, setDotted(cur, rest, v))
}

func cutPath(p string) (string, string, bool) {
	i := bytes.IndexByte([]byte(p), '.')
	if i < 0 {
		return p, "", false
	}
	return p[:i], p[i+1:], true
}

// Count counts the documents of coll that match f (nil: all).
func (s *Store) Count(ctx context.Context, coll string, f *Filter) (int, Plan, error) {
	var n int
	var plan Plan
	err := s.view(ctx, coll, func(r *reader) error {
		n = 0
		if f == nil {
			n = r.docs.KeyN()
			return nil
		}
		if p, ok := r.bestIndex(f); ok && covers(p, f) {
			// The index's entries answer the filter: count them.
			plan = Plan{Index: p.def.Name, Ranges: len(p.ranges)}
			ib := indexEntries(r.tx, r.col.Name, p.def.Name)
			for _, kr := range p.ranges {
				if err := scanEntries(ib, kr, nil, false, func([]byte) bool { n++; return true }); err != nil {
					return err
				}
			}
			return nil
		}
		var err error
		plan, err = r.matching(f, nil, false, func([]byte, Doc) bool { n++; return true })
		return err
	})
	return n, plan, err
}

// DeleteWhere deletes the documents of coll that match f (nil: all) in one
// transaction and returns how many it deleted.
func (s *Store) DeleteWhere(ctx context.Context, coll string, f *Filter) (int, Plan, error) {
	if err := s.usable(ctx); err != nil {
		return 0, Plan{}, err
	}
	if !s.exists(coll) {
		return 0, Plan{}, nil
	}
	var n int
	var plan Plan
	err := s.update(ctx, coll, func(w *writer) error {
		r := &reader{tx: w.tx, col: w.col, docs: w.docs}
		var victims []Doc
		var err error
		plan, err = r.matching(f, nil, false, func(_ []byte, d Doc) bool { victims = append(victims, d); return true })
		if err != nil {
			return err
		}
		for _, d := range victims {
			if err := w.remove(d); err != nil {
				return err
			}
		}
		n = len(victims)
		return nil
	})
	return n, plan, err
}
