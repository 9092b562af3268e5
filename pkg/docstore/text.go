package docstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// TextIndexDef defines a full-text index: the text reached by its fields
// (dotted paths, through arrays too), analyzed as analyze.go describes,
// in an inverted index with positions that every write keeps exact.
type TextIndexDef struct {
	Name string `json:"name"`
	// Fields are dotted paths to text values (or arrays of them); at most
	// MaxTextFields.
	Fields []string `json:"fields"`
	// Language is the language of stemming and stop words, one of
	// TextLanguages; CreateTextIndex sets "english" when either is on and
	// Language is empty.
	Language string `json:"language,omitempty"`
	// Stem reduces words to their Snowball stem ("running" → "run").
	Stem bool `json:"stem,omitempty"`
	// StopWords drops the language's stop words ("the", "of", ...).
	StopWords bool `json:"stop_words,omitempty"`
}

// MaxTextFields is the most fields a text index has.
const MaxTextFields = 64

func (d TextIndexDef) clone() TextIndexDef {
	d.Fields = append([]string(nil), d.Fields...)
	return d
}

func sameTextIndex(a, b TextIndexDef) bool {
	return a.Name == b.Name && slices.Equal(a.Fields, b.Fields) && a.Language == b.Language && a.Stem == b.Stem && a.StopWords == b.StopWords
}

// checkTextDef validates def and sets its default language.
func checkTextDef(coll string, def *TextIndexDef) error {
	if err := checkIndexDef(coll, IndexDef{Name: def.Name, Fields: def.Fields}); err != nil {
		return err
	}
	if len(def.Fields) > MaxTextFields {
		return &Error{Code: CodeInvalid, Collection: coll, Index: def.Name,
			Message: fmt.Sprintf("text index %q has %d fields; at most %d", def.Name, len(def.Fields), MaxTextFields)}
	}
	if def.Language == "" && (def.Stem || def.StopWords) {
		def.Language = "english"
	}
	if _, ok := snowballLanguages[def.Language]; def.Language != "" && !ok {
		return &Error{Code: CodeInvalid, Collection: coll, Index: def.Name,
			Message: fmt.Sprintf("text index %q: language %q is not one of %s", def.Name, def.Language, strings.Join(TextLanguages, ", "))}
	}
	return nil
}

// CreateTextIndex creates the full-text index def on coll (created if
// absent) and builds it over the existing documents, in one transaction;
// it reports false when an identical index exists, and fails with
// index_exists when a text index of that name has another definition.
// From then on every write of the collection keeps the index exact.
func (s *Store) CreateTextIndex(ctx context.Context, coll string, def TextIndexDef, progress Progress) (bool, error) {
	if err := checkTextDef(coll, &def); err != nil {
		return false, err
	}
	return textIndexes.create(s, coll, def, func(tx kv.Tx, col *collection) error {
		return buildText(ctx, tx, col.Name, def, progress)
	})
}

// buildText indexes every document of coll in def's new bucket, a
// chunk of textChunk documents at a time.
func buildText(ctx context.Context, tx kv.Tx, coll string, def TextIndexDef, progress Progress) error {
	b, err := tx.CreateBucketIfNotExists(textBucket(coll, def.Name))
	if err != nil {
		return err
	}
	var chunk []docChange
	flush := func() error {
		if err := applyText(b, def, chunk); err != nil {
			return fmt.Errorf("docstore: text index %q of %q: %w", def.Name, coll, err)
		}
		chunk = chunk[:0]
		return nil
	}
	err = scanDocs(ctx, tx, coll, progress, func(k []byte, d Doc) error {
		chunk = append(chunk, docChange{ID: d.ID, IDKey: bytes.Clone(k), New: d.Value, HasNew: true})
		if len(chunk) == textChunk {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// textChunk is the most document changes applied to a text index at
// once: a chunk's analyses and postings are held in memory together.
const textChunk = 4096

// docText is what a document gives a text index: its terms' payloads, in
// term order, and its number of terms in each field.
type docText struct {
	terms    []string
	payloads [][]byte
	lens     []int
	has      bool // at least one term
}

// occurrence is one word of a document as the index holds it.
type occurrence struct {
	term       string
	field, pos int
}

// indexDoc analyzes doc for def.
func indexDoc(def TextIndexDef, an analyzer, doc Value) docText {
	var a textAnalysis
	return a.index(def, an, doc)
}

// textAnalysis analyzes documents one after another, reusing the memory
// of their words: a batch's analysis allocates only what it returns.
type textAnalysis struct{ occ []occurrence }

// index analyzes doc for def, as indexDoc does.
func (a *textAnalysis) index(def TextIndexDef, an analyzer, doc Value) docText {
	out := docText{lens: make([]int, len(def.Fields))}
	occ := a.occ[:0]
	defer func() { a.occ = occ[:0] }()
	for f, path := range def.Fields {
		pos, n0 := 0, len(occ)
		textValues(doc, path, func(text string) {
			next := an.terms(text, pos, func(t string, p int) {
				occ = append(occ, occurrence{t, f, p})
			})
			if next > pos {
				pos = next + positionGap
			}
		})
		out.lens[f] = len(occ) - n0
	}
	// Fields in order, positions increasing within each: a stable sort by
	// term keeps them so.
	slices.SortStableFunc(occ, func(a, b occurrence) int { return strings.Compare(a.term, b.term) })
	out.has = len(occ) > 0
	out.terms, out.payloads = make([]string, 0, len(occ)), make([][]byte, 0, len(occ))
	var head []byte
	for _, l := range out.lens {
		head = binary.AppendUvarint(head, uint64(l))
	}
	// One buffer holds every payload (putPosting copies them).
	buf := make([]byte, 0, len(occ)*(len(head)+8))
	var ps []byte
	for i := 0; i < len(occ); {
		t := occ[i].term
		start := len(buf)
		buf = append(buf, head...)
		for i < len(occ) && occ[i].term == t {
			f, n, prev := occ[i].field, 0, 0
			ps = ps[:0]
			for ; i < len(occ) && occ[i].term == t && occ[i].field == f; i++ {
				ps = binary.AppendUvarint(ps, uint64(occ[i].pos-prev))
				prev = occ[i].pos
				n++
			}
			buf = binary.AppendUvarint(buf, uint64(f))
			buf = binary.AppendUvarint(buf, uint64(n))
			buf = binary.AppendUvarint(buf, uint64(len(ps)))
			buf = append(buf, ps...)
		}
		out.terms = append(out.terms, t)
		out.payloads = append(out.payloads, buf[start:len(buf):len(buf)])
	}
	return out
}

// deriveText queues c for the collection's text indexes: finish applies
// a writer's changes together (flushText).
func (w *writer) deriveText(c docChange) error {
	if len(w.col.TextIndexes) > 0 {
		w.d.text = append(w.d.text, c)
	}
	return nil
}

// flushText applies the writer's queued changes to each text index of
// its collection, textChunk documents at a time.
func (w *writer) flushText() error {
	changes := netChanges(w.d.text)
	w.d.text = nil
	for _, def := range w.col.TextIndexes {
		b := w.tx.Bucket(textBucket(w.col.Name, def.Name))
		if b == nil {
			return fmt.Errorf("docstore: text index %q of %q has no bucket", def.Name, w.col.Name)
		}
		for lo := 0; lo < len(changes); lo += textChunk {
			if err := applyText(b, def, changes[lo:min(lo+textChunk, len(changes))]); err != nil {
				return fmt.Errorf("docstore: text index %q of %q: %w", def.Name, w.col.Name, err)
			}
		}
	}
	return nil
}

// netChanges folds the changes of each document into one, from its first
// old value to its last new value, in the order of their first change.
func netChanges(cs []docChange) []docChange {
	at := make(map[string]int, len(cs))
	out := make([]docChange, 0, len(cs))
	for _, c := range cs {
		if i, ok := at[string(c.IDKey)]; ok {
			out[i].New, out[i].HasNew = c.New, c.HasNew
			continue
		}
		at[string(c.IDKey)] = len(out)
		out = append(out, c)
	}
	return out
}

// termOp sets a document's posting of a term: payload is its new
// payload, nil to delete it.
type termOp struct{ key, payload []byte }

// applyText applies changes (at most one per document) to the text index
// def in b: every document is analyzed first, on every core, then each
// term's postings are changed once for all of them (appended to its tail
// in one write when the documents come after its last posting, the
// common case of new documents) and the statistics are written once.
func applyText(b kv.Bucket, def TextIndexDef, changes []docChange) error {
	an := newAnalyzer(def)
	olds, news := make([]docText, len(changes)), make([]docText, len(changes))
	inParallel(len(changes), 64, 64, func(lo, hi int) {
		var a textAnalysis
		for i, c := range changes[lo:hi] {
			if c.HadOld {
				olds[lo+i] = a.index(def, an, c.Old)
			}
			if c.HasNew {
				news[lo+i] = a.index(def, an, c.New)
			}
		}
	})
	ops := termOps(changes, olds, news)
	dDocs, dTotal := int64(0), make([]int64, len(def.Fields))
	for i := range changes {
		old, cur := olds[i], news[i]
		for _, d := range [...]struct {
			dt   docText
			sign int64
		}{{old, -1}, {cur, 1}} {
			if d.dt.has {
				dDocs += d.sign
				for f, l := range d.dt.lens {
					dTotal[f] += d.sign * int64(l)
				}
			}
		}
	}
	terms := make([]string, 0, len(ops))
	for t := range ops {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	for _, t := range terms {
		if err := applyTermOps(b, t, ops[t]); err != nil {
			return err
		}
	}
	if dDocs == 0 && !slices.ContainsFunc(dTotal, func(d int64) bool { return d != 0 }) {
		return nil
	}
	st, err := readTextStats(b, len(def.Fields))
	if err != nil {
		return err
	}
	st.docs = uint64(int64(st.docs) + dDocs)
	for f, d := range dTotal {
		st.total[f] = uint64(int64(st.total[f]) + d)
	}
	return b.Put([]byte(textStatsKey), st.encode())
}

// termOps returns, per term, the changes of its postings that changes
// make (olds and news are their documents' old and new analyses): a
// posting set where a document gains the term or its payload changes,
// deleted where it loses the term. The ops of all the terms share one
// array, sized by a first pass, rather than each growing its own.
func termOps(changes []docChange, olds, news []docText) map[string][]termOp {
	// each calls fn with every term op of the changes, in order.
	each := func(fn func(term string, op termOp)) {
		for n, c := range changes {
			old, cur := olds[n], news[n]
			for i, j := 0, 0; i < len(old.terms) || j < len(cur.terms); {
				switch {
				case j == len(cur.terms) || (i < len(old.terms) && old.terms[i] < cur.terms[j]):
					fn(old.terms[i], termOp{c.IDKey, nil})
					i++
				case i == len(old.terms) || cur.terms[j] < old.terms[i]:
					fn(cur.terms[j], termOp{c.IDKey, cur.payloads[j]})
					j++
				default:
					if !bytes.Equal(old.payloads[i], cur.payloads[j]) {
						fn(cur.terms[j], termOp{c.IDKey, cur.payloads[j]})
					}
					i++
					j++
				}
			}
		}
	}
	counts, total := map[string]int{}, 0
	each(func(term string, _ termOp) {
		counts[term]++
		total++
	})
	all := make([]termOp, 0, total)
	ops := make(map[string][]termOp, len(counts))
	for t, n := range counts {
		ops[t] = all[len(all) : len(all) : len(all)+n]
		all = all[:len(all)+n]
	}
	each(func(term string, op termOp) { ops[term] = append(ops[term], op) })
	return ops
}

// dropText deletes col's text indexes.
func dropText(tx kv.Tx, col *collection) error { return textIndexes.drop(tx, col) }

// verifyText checks that each text index of col holds exactly the
// postings and statistics its documents give, in well-formed blocks.
func verifyText(ctx context.Context, tx kv.Tx, col *collection) error {
	for _, def := range col.TextIndexes {
		if err := verifyTextIndex(ctx, tx, col, def); err != nil {
			return fmt.Errorf("docstore: verify: text index %q of %q: %w", def.Name, col.Name, err)
		}
	}
	return nil
}

func verifyTextIndex(ctx context.Context, tx kv.Tx, col *collection, def TextIndexDef) error {
	b := tx.Bucket(textBucket(col.Name, def.Name))
	if b == nil {
		return fmt.Errorf("no bucket")
	}
	an := newAnalyzer(def)
	want := map[string][]byte{} // term NUL id key → payload
	st := textStats{total: make([]uint64, len(def.Fields))}
	err := scanDocs(ctx, tx, col.Name, nil, func(k []byte, d Doc) error {
		dt := indexDoc(def, an, d.Value)
		for i, t := range dt.terms {
			want[t+"\x00"+string(k)] = dt.payloads[i]
		}
		if dt.has {
			st.docs++
			for f, l := range dt.lens {
				st.total[f] += uint64(l)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Frozen blocks ("p") come first, in term then id-key order, then
	// the tails ("q") in term order.
	lastFrozen := map[string][]byte{} // term → its frozen blocks' last key
	var prevTerm string
	var prevLast []byte
	bc := b.Cursor()
	for k, v := bc.First(); k != nil; k, v = bc.Next() {
		if string(k) == textStatsKey {
			if !bytes.Equal(v, st.encode()) {
				return fmt.Errorf("statistics %x, but the documents give %x", v, st.encode())
			}
			continue
		}
		var term, first []byte
		tail := k[0] == tailKind
		switch {
		case tail:
			term = k[1:]
		case k[0] == frozenKind && bytes.IndexByte(k, 0) > 0:
			term, first, _ = bytes.Cut(k[1:], []byte{0})
		default:
			return fmt.Errorf("unexpected key %q", k)
		}
		ps, err := decodeBlock(v)
		if err != nil {
			return fmt.Errorf("block %q: %w", k, err)
		}
		if !tail && !bytes.Equal(ps[0].key, first) {
			return fmt.Errorf("block %q starts at another document", k)
		}
		before := prevLast
		if string(term) != prevTerm || tail {
			before = lastFrozen[string(term)]
		}
		if before != nil && bytes.Compare(before, ps[0].key) >= 0 {
			return fmt.Errorf("blocks of term %q overlap", term)
		}
		for i, p := range ps {
			if i > 0 && bytes.Compare(ps[i-1].key, p.key) >= 0 {
				return fmt.Errorf("block %q is out of order", k)
			}
			wk := string(term) + "\x00" + string(p.key)
			payload, ok := want[wk]
			if !ok {
				return fmt.Errorf("term %q has a posting %x that no document gives", term, p.key)
			}
			if !bytes.Equal(payload, p.payload) {
				return fmt.Errorf("term %q: posting %x is %x, but the document gives %x", term, p.key, p.payload, payload)
			}
			delete(want, wk)
		}
		if tail {
			delete(lastFrozen, string(term))
		} else {
			lastFrozen[string(term)] = ps[len(ps)-1].key
		}
		prevTerm, prevLast = string(term), ps[len(ps)-1].key
	}
	for term := range lastFrozen {
		return fmt.Errorf("term %q has no tail block", term)
	}
	if b.Get([]byte(textStatsKey)) == nil && st.docs > 0 {
		return fmt.Errorf("no statistics for %d documents", st.docs)
	}
	for wk := range want {
		term, key, _ := strings.Cut(wk, "\x00")
		return fmt.Errorf("term %q lacks the posting of document %x", term, key)
	}
	return nil
}
