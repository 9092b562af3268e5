package docstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
)

// JoinQuery joins a page of one collection's documents (the local side)
// to documents of another (the foreign side), either by a field — the
// foreign documents whose ForeignField equals the local document's
// LocalField — or by edges of a type. Exactly one of LocalField and
// EdgeType is set.
type JoinQuery struct {
	// Filter, Select, Limit and Cursor page the local side as Page does,
	// in id order.
	Filter *Filter
	Select []string
	Limit  int
	Cursor string

	// Foreign is the foreign collection.
	Foreign string
	// LocalField and ForeignField join by value: a local document joins
	// the foreign documents whose ForeignField equals ($eq: numbers
	// numerically) its LocalField, a scalar (bool, number, text, bytes)
	// or an array of them (each element joins). A foreign index whose
	// first field is ForeignField is used when there is one; otherwise the
	// foreign collection is read once per call.
	LocalField, ForeignField string
	// EdgeType joins by edges: a local document joins the foreign
	// documents its edges of this type lead to (Direction Out, the
	// default) or come from (In).
	EdgeType  string
	Direction Direction

	// ForeignFilter, ForeignSelect and ForeignLimit select, project and
	// bound each local document's joined documents (ForeignLimit: 0 means
	// DefaultLimit, more than MaxLimit is clamped to it).
	ForeignFilter *Filter
	ForeignSelect []string
	ForeignLimit  int
}

// JoinRow is a local document with its joined documents, in the foreign
// collection's id order.
type JoinRow struct {
	Doc    Doc
	Joined []Doc
	// More says that more foreign documents joined than ForeignLimit.
	More bool
}

// JoinPlan says how a join found its documents.
type JoinPlan struct {
	// Local is the plan of the local page.
	Local Plan `json:"local"`
	// Method is "index" (a foreign index, named by ForeignIndex), "scan"
	// (the foreign collection read once) or "edges".
	Method       string `json:"method"`
	ForeignIndex string `json:"foreign_index,omitempty"`
	// ForeignExamined counts the foreign documents read.
	ForeignExamined int `json:"foreign_examined"`
}

// JoinResult is one page of a join.
type JoinResult struct {
	Rows []JoinRow
	// Next is the cursor of the local side's next page, "" after the last.
	Next string
	Plan JoinPlan
}

// Join returns a page of coll's documents that match q.Filter, each with
// the documents of q.Foreign it joins (see JoinQuery).
func (s *Store) Join(ctx context.Context, coll string, q JoinQuery) (JoinResult, error) {
	var out JoinResult
	if err := checkName("collection", q.Foreign); err != nil {
		err.(*Error).Field = "foreign"
		return out, err
	}
	byField := q.LocalField != "" || q.ForeignField != ""
	switch {
	case byField == (q.EdgeType != ""):
		return out, &Error{Code: CodeInvalid, Collection: coll, Field: "local_field", Message: "a join is by field (local_field and foreign_field) or by edges (edge_type), one of the two"}
	case byField && (q.LocalField == "" || q.ForeignField == ""):
		return out, &Error{Code: CodeInvalid, Collection: coll, Field: "foreign_field", Message: "a join by field needs both local_field and foreign_field"}
	case !byField:
		if err := checkEdgeType(q.EdgeType); err != nil {
			err.(*Error).Field = "edge_type"
			return out, err
		}
	}
	dir, err := checkDirection(q.Direction, false)
	if err != nil {
		return out, err
	}
	limit, flimit := clampLimit(q.Limit), clampLimit(q.ForeignLimit)
	err = s.view(ctx, coll, func(r *reader) error {
		out = JoinResult{}
		fcol, err := s.collectionOf(q.Foreign)
		if err != nil {
			return err
		}
		fr := &reader{tx: r.tx, col: fcol, docs: r.tx.Bucket(docsBucket(q.Foreign))}
		after, err := decodeCursor(coll, q.Cursor, cursorID, false, "")
		if err != nil {
			return err
		}
		var local []Doc
		var last []byte
		out.Plan.Local, err = r.matching(q.Filter, after, false, func(k []byte, d Doc) bool {
			if len(local) == limit {
				out.Next = encodeCursor(cursorID, false, "", last)
				return false
			}
			local = append(local, d)
			last = k
			return true
		})
		if err != nil {
			return err
		}
		var join func(d Doc) ([]Doc, error)
		switch {
		case !byField:
			out.Plan.Method = "edges"
			join = func(d Doc) ([]Doc, error) { return fr.joinEdges(d, coll, q.EdgeType, dir, &out.Plan) }
		default:
			i := slices.IndexFunc(fcol.Indexes, func(def IndexDef) bool { return def.Fields[0] == q.ForeignField })
			if i >= 0 {
				def := fcol.Indexes[i]
				out.Plan.Method, out.Plan.ForeignIndex = "index", def.Name
				join = func(d Doc) ([]Doc, error) { return fr.joinIndexed(d, q.LocalField, q.ForeignField, def, &out.Plan) }
			} else {
				out.Plan.Method = "scan"
				byKey, err := fr.joinTable(ctx, q.ForeignField, &out.Plan)
				if err != nil {
					return err
				}
				join = func(d Doc) ([]Doc, error) { return joinHashed(d, q.LocalField, byKey), nil }
			}
		}
		for _, d := range local {
			joined, err := join(d)
			if err != nil {
				return err
			}
			row := JoinRow{Doc: project(d, q.Select), Joined: []Doc{}}
			for _, f := range joined {
				if q.ForeignFilter != nil && !q.ForeignFilter.Match(f.Value) {
					continue
				}
				if len(row.Joined) == flimit {
					row.More = true
					break
				}
				row.Joined = append(row.Joined, project(f, q.ForeignSelect))
			}
			out.Rows = append(out.Rows, row)
		}
		return nil
	})
	return out, err
}

// joinKeys returns the join keys of a local document's field: its
// scalar value, or its array's scalar elements, each as joinKey spells
// it.
func joinKeys(doc Value, field string) []Value {
	v, ok := doc.Path(field)
	if !ok {
		return nil
	}
	items := []Value{v}
	if arr, isArr := v.Array(); isArr {
		items = arr
	}
	var out []Value
	for _, x := range items {
		if joinScalar(x) {
			out = append(out, x)
		}
	}
	return out
}

// joinScalar reports whether v can join: a bool, number, text or bytes.
func joinScalar(v Value) bool {
	switch v.Kind() {
	case KindBool, KindInt, KindFloat, KindText, KindBytes:
		return true
	}
	return false
}

// joinKey is v's key in a join table: values $eq holds equal (1 and 1.0,
// every NaN) share it.
func joinKey(v Value) string {
	lo, _ := eqBounds(v)
	return string(AppendKey(nil, lo))
}

// joinTable reads the foreign collection once and returns its documents
// by the join key of field (documents whose field is not a scalar join
// nothing), each list in id order.
func (r *reader) joinTable(ctx context.Context, field string, plan *JoinPlan) (map[string][]Doc, error) {
	out := map[string][]Doc{}
	c := r.docs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		d, err := r.load(k, v)
		if err != nil {
			return nil, err
		}
		if plan.ForeignExamined++; plan.ForeignExamined%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if fv, ok := d.Value.Path(field); ok && joinScalar(fv) {
			key := joinKey(fv)
			out[key] = append(out[key], d)
		}
	}
	return out, nil
}

// joinHashed returns the foreign documents of table that d joins.
func joinHashed(d Doc, localField string, table map[string][]Doc) []Doc {
	keys := joinKeys(d.Value, localField)
	if len(keys) == 1 {
		return table[joinKey(keys[0])]
	}
	var out []Doc
	seen := map[string]bool{}
	for _, k := range keys {
		jk := joinKey(k)
		if seen[jk] {
			continue
		}
		seen[jk] = true
		out = append(out, table[jk]...)
	}
	return sortDocs(out)
}

// sortDocs sorts documents of one collection by id, each once.
func sortDocs(docs []Doc) []Doc {
	slices.SortFunc(docs, func(a, b Doc) int { return Compare(a.ID, b.ID) })
	return slices.CompactFunc(docs, func(a, b Doc) bool { return Compare(a.ID, b.ID) == 0 })
}

// joinIndexed returns the foreign documents d joins, read through the
// foreign index def (led by foreignField).
func (r *reader) joinIndexed(d Doc, localField, foreignField string, def IndexDef, plan *JoinPlan) ([]Doc, error) {
	keys := joinKeys(d.Value, localField)
	if len(keys) == 0 {
		return nil, nil
	}
	lead := IndexDef{Name: def.Name, Fields: def.Fields[:1]}
	var ids [][]byte
	for _, k := range keys {
		p := planIndex(lead, map[string]Constraint{foreignField: {Eq: &k}})
		p.def = def // entries carry every field of def before the id
		got, err := r.candidates(p)
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	if len(keys) > 1 {
		slices.SortFunc(ids, bytes.Compare)
		ids = slices.CompactFunc(ids, bytes.Equal)
	}
	out := make([]Doc, 0, len(ids))
	for _, k := range ids {
		v := r.docs.Get(k)
		if v == nil {
			return nil, fmt.Errorf("docstore: index %q of %q names a missing document", def.Name, r.col.Name)
		}
		f, err := r.load(k, v)
		if err != nil {
			return nil, err
		}
		plan.ForeignExamined++
		out = append(out, f)
	}
	return out, nil
}

// joinEdges returns the documents of r's collection that d (of coll)
// links to by edges of typ (Out) or that link to d (In).
func (r *reader) joinEdges(d Doc, coll, typ string, dir Direction, plan *JoinPlan) ([]Doc, error) {
	g := graphReader{tx: r.tx}
	prefix := AppendKey(AppendKey(nil, d.ID), Text(typ))
	var out []Doc
	err := g.edges(coll, dir, prefix, nil, func(_ []byte, e Edge) (bool, error) {
		other := e.To
		if dir == In {
			other = e.From
		}
		if other.Collection != r.col.Name {
			return true, nil
		}
		f, err := g.doc(other)
		if err != nil {
			return false, err
		}
		plan.ForeignExamined++
		out = append(out, f)
		return true, nil
	})
	return out, err
}
