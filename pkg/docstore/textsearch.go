package docstore

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// BM25's defaults (Lucene's, bleve's, Tantivy's).
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// MaxQueryTerms is the most distinct terms a text query, and the most
// words a phrase, may have after analysis.
const MaxQueryTerms = 64

// MaxSlop is the largest phrase slop.
const MaxSlop = 100

// TextQuery is a full-text query ranked by BM25: the `text` source of a
// hybrid search. A document's score is the sum over the query's distinct
// terms t of
//
//	IDF(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))
//	IDF(t) = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))
//
// where tf is t's frequency in the document, dl the document's number of
// terms and avgdl the average of dl (both over the fields searched), N
// the number of documents with at least one term in the index and n(t)
// the number of documents with t (in the fields searched).
type TextQuery struct {
	// Query is the text to match, analyzed like the indexed text; a
	// document matches when it has any of its terms.
	Query string `json:"query" jsonschema:"the words to search for, analyzed like the indexed text (lowercased, stemmed and stop words dropped when the index does); a document matches when it has any of them"`
	// Index names the text index; it may be omitted when the collection
	// has exactly one.
	Index string `json:"index,omitempty" jsonschema:"the text index to search (default: the collection's only text index)"`
	// Fields restricts matching to these of the index's fields (default:
	// all of them).
	Fields []string `json:"fields,omitempty" jsonschema:"search only these of the index's fields (default: all)"`
	// K1 is BM25's term-frequency saturation, at least 0 (default 1.2).
	K1 *float64 `json:"k1,omitempty" jsonschema:"BM25 term-frequency saturation k1, at least 0 (default 1.2)"`
	// B is BM25's length normalization, in [0, 1] (default 0.75).
	B *float64 `json:"b,omitempty" jsonschema:"BM25 length normalization b, from 0 to 1 (default 0.75)"`
}

// textSource is a resolved text index for a query.
type textSource struct {
	def  TextIndexDef
	an   analyzer
	mask uint64 // the fields searched
}

// textErr is an invalid text query or phrase, at field (the query's
// member, by its JSON name).
func (r *reader) textErr(field, format string, args ...any) error {
	return &Error{Code: CodeInvalid, Collection: r.col.Name, Field: field, Message: fmt.Sprintf(format, args...)}
}

// textSource resolves the index named index (or the only one) and the
// fields searched.
func (r *reader) textSource(index string, fields []string) (textSource, error) {
	defs := r.col.TextIndexes
	var def TextIndexDef
	switch {
	case len(defs) == 0:
		return textSource{}, r.textErr("index", "collection %q has no text index (create one with create_text_index)", r.col.Name)
	case index == "" && len(defs) > 1:
		names := make([]string, len(defs))
		for i, d := range defs {
			names[i] = d.Name
		}
		return textSource{}, r.textErr("index", "collection %q has several text indexes (%s): name one", r.col.Name, strings.Join(names, ", "))
	case index == "":
		def = defs[0]
	default:
		i := slices.IndexFunc(defs, func(d TextIndexDef) bool { return d.Name == index })
		if i < 0 {
			return textSource{}, r.textErr("index", "collection %q has no text index %q", r.col.Name, index)
		}
		def = defs[i]
	}
	src := textSource{def: def, an: newAnalyzer(def)}
	if len(fields) == 0 {
		src.mask = 1<<len(def.Fields) - 1
		return src, nil
	}
	for _, f := range fields {
		i := slices.Index(def.Fields, f)
		if i < 0 {
			return textSource{}, r.textErr("fields", "text index %q has no field %q (its fields: %s)", def.Name, f, strings.Join(def.Fields, ", "))
		}
		src.mask |= 1 << i
	}
	return src, nil
}

// textRanked returns the BM25 top n documents for q among those allowed
// (nil allows all), best first (equal scores in id-key order). An
// invalid query fails with an invalid *Error whose Field is the
// TextQuery member at fault, by its JSON name.
func (r *reader) textRanked(q TextQuery, allowed func(idKey []byte) bool, n int) ([]Ranked, error) {
	k1, b := DefaultK1, DefaultB
	if q.K1 != nil {
		if k1 = *q.K1; !(k1 >= 0) || math.IsInf(k1, 1) {
			return nil, r.textErr("k1", "k1 must be a finite number of at least 0, not %v", k1)
		}
	}
	if q.B != nil {
		if b = *q.B; !(b >= 0 && b <= 1) {
			return nil, r.textErr("b", "b must be a number from 0 to 1, not %v", b)
		}
	}
	src, err := r.textSource(q.Index, q.Fields)
	if err != nil {
		return nil, err
	}
	terms := src.an.queryTerms(q.Query)
	switch {
	case len(terms) == 0:
		return nil, r.textErr("query", "the query %q has no word the index would hold (after lowercasing, stop words and stemming)", q.Query)
	case len(terms) > MaxQueryTerms:
		return nil, r.textErr("query", "the query has %d distinct terms; at most %d", len(terms), MaxQueryTerms)
	}
	if n <= 0 {
		return nil, nil
	}
	bk := r.tx.Bucket(textBucket(r.col.Name, src.def.Name))
	prefetchPostings(bk, terms)
	nf := len(src.def.Fields)
	st, err := readTextStats(bk, nf)
	if err != nil {
		return nil, r.corrupt(src.def, err)
	}
	var total uint64
	for f, t := range st.total {
		if src.mask&(1<<f) != 0 {
			total += t
		}
	}
	if st.docs == 0 || total == 0 {
		return nil, nil
	}
	m := bm25{k1: k1, b: b, avgdl: float64(total) / float64(st.docs), nf: nf, mask: src.mask, lens: make([]int, 0, nf)}
	all := src.mask == 1<<nf-1
	// The terms' IDFs, from their document counts.
	live := make([]termSource, 0, len(terms))
	for _, t := range terms {
		it := newTermIter(bk, t)
		var df int
		if all {
			df, err = it.count()
		} else {
			df, err = countIn(it, nf, src.mask, m.lens)
		}
		if err != nil {
			return nil, r.corrupt(src.def, err)
		}
		if df == 0 {
			continue
		}
		it = newTermIter(bk, t)
		if !it.next() {
			return nil, r.corrupt(src.def, fmt.Errorf("term %q: %d postings counted, none read (%v)", t, df, it.err))
		}
		idf := math.Log(1 + (float64(st.docs)-float64(df)+0.5)/(float64(df)+0.5))
		live = append(live, termSource{it: it, idf: idf, most: m.most(idf)})
	}
	top := topRanked{n: n}
	if err := m.rank(live, allowed, &top, !r.exhaustiveText); err != nil {
		return nil, r.corrupt(src.def, err)
	}
	return top.sorted(), nil
}

// termSource is a query term's postings being read, its IDF and the most
// it can add to a document's score.
type termSource struct {
	it        *termIter
	idf, most float64
}

// bm25 scores the documents of one text query.
type bm25 struct {
	k1, b, avgdl float64
	nf           int
	mask         uint64 // the fields searched
	lens         []int  // reused by termFreq
}

// most returns the most a term of IDF idf adds to a document's score.
// The term's part, idf·tf·(k1+1)/(tf + k1·(1−b+b·dl/avgdl)), grows with
// its frequency tf and shrinks with the document's length dl, which
// counts the term's occurrences (dl ≥ tf): it is at most its limit as tf
// grows with dl = tf, idf·(k1+1)/(1 + k1·b/avgdl) (reached, for b = 1,
// by a document of one word repeated). A millionth of a millionth more
// keeps it above any score's rounding.
func (m *bm25) most(idf float64) float64 {
	return idf * (m.k1 + 1) / (1 + m.k1*m.b/m.avgdl) * (1 + 1e-12)
}

// rank offers top the documents of the postings live (in id-key order)
// that allowed allows (nil: all), scored document at a time. With prune,
// a document is not scored once top is full when the most its terms can
// add up to is no more than the worst score top keeps: it could not
// enter (documents come in id-key order, and a score equal to the worst
// loses to its earlier key). Its postings' payloads are then not read,
// which is most of what scoring costs. The scores are the same, summed in
// the same order, either way.
func (m *bm25) rank(live []termSource, allowed func(idKey []byte) bool, top *topRanked, prune bool) error {
	at := make([]int, 0, len(live)) // the terms at key
	for len(live) > 0 {
		// The least key of the terms', and the terms at it, in one pass.
		key := live[0].it.key
		at = append(at[:0], 0)
		for i := 1; i < len(live); i++ {
			switch c := bytes.Compare(live[i].it.key, key); {
			case c < 0:
				key, at = live[i].it.key, append(at[:0], i)
			case c == 0:
				at = append(at, i)
			}
		}
		pass := allowed == nil || allowed(key)
		if pass && prune && len(top.items) == top.n {
			bound := 0.0
			for _, i := range at {
				bound += live[i].most
			}
			pass = bound > top.items[0].Score
		}
		if pass {
			score := 0.0
			for _, i := range at {
				s := live[i]
				tf, dl, err := termFreq(s.it.payload, m.nf, m.mask, m.lens)
				if err != nil {
					return err
				}
				if tf > 0 {
					score += s.idf * float64(tf) * (m.k1 + 1) / (float64(tf) + m.k1*(1-m.b+m.b*float64(dl)/m.avgdl))
				}
			}
			if score > 0 {
				top.offer(key, score) // copies key, which the terms' advance reuses
			}
		}
		// Advance the terms at key, the last first so that the indexes of
		// those before stay right when a term's postings end.
		for j := len(at) - 1; j >= 0; j-- {
			if it := live[at[j]].it; !it.next() {
				if it.err != nil {
					return it.err
				}
				live = slices.Delete(live, at[j], at[j]+1)
			}
		}
	}
	return nil
}

// prefetchPostings announces that the index's statistics and the postings
// of terms are about to be read whole (kv.PrefetchWithNext,
// kv.PrefetchRanges): on PostgreSQL they come in one round trip rather
// than a walk of growing pages per term, the postings alone when the
// statistics came before (see announceText).
func prefetchPostings(b kv.Bucket, terms []string) {
	keys, ranges := textReads(terms)
	kv.PrefetchWithNext(b, keys, nil)
	kv.PrefetchRanges(b, ranges)
}

// textReads returns what a text query of terms reads whole: the index's
// statistics and the terms' tails (keys), and their frozen postings
// (ranges).
func textReads(terms []string) ([][]byte, []kv.Range) {
	ranges := make([]kv.Range, 0, len(terms))
	keys := [][]byte{[]byte(textStatsKey)}
	for _, t := range terms {
		k := keysOf(t)
		ranges = append(ranges, kv.Range{Lo: k.frozen, Hi: prefixEnd(k.frozen)})
		keys = append(keys, k.tail)
	}
	return keys, ranges
}

// announceText announces the index's statistics and the terms' tails
// that the text source of q will read (kv.PrefetchWithNext) when q is
// valid, so that on PostgreSQL they come with the search's first read
// (the filter's) rather than in a round trip of their own. The postings,
// most of what the source reads, are left to it: it reads them while the
// vector source ranks in memory, the server's work overlapping the
// ranking (measured: announcing them too made the filter's round trip
// longer by as much as the text source saved). An invalid q is reported
// by textRanked.
func (r *reader) announceText(q TextQuery) {
	src, err := r.textSource(q.Index, q.Fields)
	if err != nil {
		return
	}
	terms := src.an.queryTerms(q.Query)
	if len(terms) == 0 || len(terms) > MaxQueryTerms {
		return
	}
	if bk := r.tx.Bucket(textBucket(r.col.Name, src.def.Name)); bk != nil {
		keys, _ := textReads(terms)
		kv.PrefetchWithNext(bk, keys, nil)
	}
}

// corrupt wraps a text index's decoding error.
func (r *reader) corrupt(def TextIndexDef, err error) error {
	return fmt.Errorf("docstore: text index %q of %q: %w", def.Name, r.col.Name, err)
}

// countIn counts the postings of it with the term in a field of mask.
func countIn(it *termIter, nf int, mask uint64, lens []int) (int, error) {
	n := 0
	for it.next() {
		tf, _, err := termFreq(it.payload, nf, mask, lens)
		if err != nil {
			return 0, err
		}
		if tf > 0 {
			n++
		}
	}
	return n, it.err
}

// termFreq returns a posting's term frequency and its document's length,
// over the fields of mask.
func termFreq(payload []byte, nf int, mask uint64, lens []int) (tf, dl int, err error) {
	pv, err := readPayload(payload, nf, lens)
	if err != nil {
		return 0, 0, err
	}
	for f, l := range pv.lens {
		if mask&(1<<f) != 0 {
			dl += l
		}
	}
	for g := pv.groups; len(g) > 0; {
		var f, t int
		if f, t, _, g, err = nextGroup(g); err != nil {
			return 0, 0, err
		}
		if f < 64 && mask&(1<<f) != 0 {
			tf += t
		}
	}
	return tf, dl, nil
}

// topRanked keeps the n best of the documents offered: a min-heap whose
// root is the worst kept.
type topRanked struct {
	n     int
	items []Ranked
}

// worse orders by score, then by id key (the later key is worse).
func worse(a, b Ranked) bool {
	return a.Score < b.Score || (a.Score == b.Score && bytes.Compare(a.IDKey, b.IDKey) > 0)
}

func (h *topRanked) offer(key []byte, score float64) {
	r := Ranked{IDKey: key, Score: score}
	if len(h.items) == h.n {
		if !worse(h.items[0], r) {
			return
		}
		r.IDKey = bytes.Clone(key)
		h.items[0] = r
		h.down(0)
		return
	}
	r.IDKey = bytes.Clone(key)
	h.items = append(h.items, r)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !worse(h.items[i], h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *topRanked) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h.items) && worse(h.items[l], h.items[m]) {
			m = l
		}
		if l+1 < len(h.items) && worse(h.items[l+1], h.items[m]) {
			m = l + 1
		}
		if m == i {
			return
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
}

// sorted returns the documents kept, best first.
func (h *topRanked) sorted() []Ranked {
	slices.SortFunc(h.items, func(a, b Ranked) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	return h.items
}

// PhraseQuery finds the documents where a phrase's words appear in
// order, in one field (and one value of an array field).
type PhraseQuery struct {
	// Phrase is the words to find, analyzed like the indexed text: a stop
	// word dropped from it still counts as a word between the others.
	Phrase string
	// Index names the text index (default: the collection's only one).
	Index string
	// Fields restricts matching to these of the index's fields.
	Fields []string
	// Slop is how many extra words may stand between the phrase's words
	// in all (0: exactly the phrase; at most MaxSlop). The words must
	// still appear in the phrase's order.
	Slop int
	// Filter selects among the matching documents; nil selects all.
	Filter *Filter
	// Limit is the page size: 0 means DefaultLimit, more than MaxLimit is
	// clamped to it.
	Limit int
	// Cursor continues after the page that returned it ("" starts).
	Cursor string
	// Select projects each document onto these dotted paths (nil: the
	// whole document; empty: none of it, an empty map).
	Select []string
}

// PhraseHit is a document where the phrase occurs.
type PhraseHit struct {
	Doc Doc
	// Field is the first field (in the index's order) where the phrase
	// occurs, and Positions the positions of the phrase's words in its
	// first occurrence there (a word's position is its number among the
	// field's words, from 0, stop words included).
	Field     string
	Positions []int
	// Matches counts the occurrences in every field searched (one per
	// position of the phrase's first word).
	Matches int
}

// PhraseResult is one page of phrase hits, in id order.
type PhraseResult struct {
	Hits []PhraseHit
	// Next is the cursor of the next page, "" after the last.
	Next string
}

// cursorPhrase is the cursor layout of phrase search pages: after an id
// key, in id order.
const cursorPhrase = 'p'

// PhraseSearch returns the documents of coll where q's phrase occurs, in
// id order, one page at a time. An invalid query fails with an invalid
// *Error whose Field is the member at fault ("phrase", "index", "fields",
// "slop", "cursor").
func (s *Store) PhraseSearch(ctx context.Context, coll string, q PhraseQuery) (PhraseResult, error) {
	var out PhraseResult
	limit := clampLimit(q.Limit)
	err := s.view(ctx, coll, func(r *reader) error {
		out = PhraseResult{}
		if q.Slop < 0 || q.Slop > MaxSlop {
			return r.textErr("slop", "slop must be from 0 to %d, not %d", MaxSlop, q.Slop)
		}
		src, err := r.textSource(q.Index, q.Fields)
		if err != nil {
			return err
		}
		var words []string
		var qpos []int
		src.an.terms(q.Phrase, 0, func(t string, p int) {
			words = append(words, t)
			qpos = append(qpos, p)
		})
		switch {
		case len(words) == 0:
			return r.textErr("phrase", "the phrase %q has no word the index would hold (after lowercasing, stop words and stemming)", q.Phrase)
		case len(words) > MaxQueryTerms:
			return r.textErr("phrase", "the phrase has %d words; at most %d", len(words), MaxQueryTerms)
		}
		after, err := decodeCursor(coll, q.Cursor, cursorPhrase, false, src.def.Name)
		if err != nil {
			return err
		}
		m := phraseMatcher{words: words, qpos: qpos, slop: q.Slop, nf: len(src.def.Fields), mask: src.mask}
		bk := r.tx.Bucket(textBucket(coll, src.def.Name))
		var last []byte
		err = m.each(bk, after, func(key []byte, field int, positions []int, matches int) (bool, error) {
			v := r.docs.Get(key)
			if v == nil {
				return false, fmt.Errorf("docstore: text index %q of %q names a missing document", src.def.Name, coll)
			}
			d, err := r.load(key, v)
			if err != nil {
				return false, err
			}
			if q.Filter != nil && !q.Filter.Match(d.Value) {
				return true, nil
			}
			if len(out.Hits) == limit {
				out.Next = encodeCursor(cursorPhrase, false, src.def.Name, last)
				return false, nil
			}
			out.Hits = append(out.Hits, PhraseHit{Doc: project(d, q.Select), Field: src.def.Fields[field], Positions: positions, Matches: matches})
			last = append(last[:0], key...)
			return true, nil
		})
		if err != nil && ErrorCode(err) == "" {
			return r.corrupt(src.def, err)
		}
		return err
	})
	return out, err
}

// phraseMatcher finds a phrase in postings.
type phraseMatcher struct {
	words []string // the phrase's terms, in order (repeats kept)
	qpos  []int    // their positions in the phrase
	slop  int
	nf    int
	mask  uint64
}

// each calls fn, in id-key order after after, with every document where
// the phrase occurs: the first field where it does, the positions of its
// first occurrence there and the number of occurrences; until fn returns
// false or an error.
func (m *phraseMatcher) each(bk kv.Bucket, after []byte, fn func(key []byte, field int, positions []int, matches int) (bool, error)) error {
	var distinct []string
	which := make([]int, len(m.words)) // words[i] is distinct[which[i]]
	for i, w := range m.words {
		j := slices.Index(distinct, w)
		if j < 0 {
			j = len(distinct)
			distinct = append(distinct, w)
		}
		which[i] = j
	}
	its := make([]*termIter, len(distinct))
	for i, t := range distinct {
		it := newTermIter(bk, t)
		for {
			if !it.next() {
				return it.err
			}
			if after == nil || bytes.Compare(it.key, after) > 0 {
				break
			}
		}
		its[i] = it
	}
	// positions[t][f] are distinct[t]'s positions in field f.
	positions := make([][][]int, len(distinct))
	for i := range positions {
		positions[i] = make([][]int, m.nf)
	}
	lens := make([]int, 0, m.nf)
	lists := make([][]int, len(m.words))
	var key []byte
	for {
		key = append(key[:0], its[0].key...)
		for _, it := range its[1:] {
			if bytes.Compare(it.key, key) > 0 {
				key = append(key[:0], it.key...)
			}
		}
		aligned := true
		for _, it := range its {
			for bytes.Compare(it.key, key) < 0 {
				if !it.next() {
					return it.err
				}
			}
			aligned = aligned && bytes.Equal(it.key, key)
		}
		if !aligned {
			continue
		}
		for t, it := range its {
			if err := m.positionsOf(it.payload, lens, positions[t]); err != nil {
				return err
			}
		}
		field, total := -1, 0
		var first []int
		for f := range m.nf {
			if m.mask&(1<<f) == 0 {
				continue
			}
			for i := range m.words {
				lists[i] = positions[which[i]][f]
			}
			n, at := m.match(lists)
			if n > 0 && field < 0 {
				field, first = f, at
			}
			total += n
		}
		if total > 0 {
			if ok, err := fn(key, field, first, total); !ok || err != nil {
				return err
			}
		}
		for _, it := range its {
			if !it.next() {
				return it.err
			}
		}
	}
}

// positionsOf decodes a posting's positions, per field, into dst.
func (m *phraseMatcher) positionsOf(payload []byte, lens []int, dst [][]int) error {
	for f := range dst {
		dst[f] = dst[f][:0]
	}
	pv, err := readPayload(payload, m.nf, lens)
	if err != nil {
		return err
	}
	for g := pv.groups; len(g) > 0; {
		var f int
		var enc []byte
		if f, _, enc, g, err = nextGroup(g); err != nil {
			return err
		}
		if f >= m.nf {
			return errCorruptText
		}
		if dst[f], err = decodePositions(dst[f], enc); err != nil {
			return err
		}
	}
	return nil
}

// match finds the phrase in one field, lists[i] being the positions of
// its word i there: an occurrence starts at a position p0 of the first
// word and takes, for each next word, its first position at least the
// phrase's distance after the previous word's; it counts when the extra
// distance in all is at most the slop. It returns the number of
// occurrences and the positions of the first.
func (m *phraseMatcher) match(lists [][]int) (int, []int) {
	for _, l := range lists {
		if len(l) == 0 {
			return 0, nil
		}
	}
	n := 0
	var first []int
	at := make([]int, len(lists))
	span := m.qpos[len(m.qpos)-1] - m.qpos[0]
	for _, p0 := range lists[0] {
		at[0] = p0
		ok := true
		for i := 1; i < len(lists); i++ {
			need := at[i-1] + m.qpos[i] - m.qpos[i-1]
			j := sort.SearchInts(lists[i], need)
			if j == len(lists[i]) {
				ok = false
				break
			}
			at[i] = lists[i][j]
		}
		if !ok {
			break // later starts find no more
		}
		if at[len(at)-1]-p0-span <= m.slop {
			n++
			if first == nil {
				first = slices.Clone(at)
			}
		}
	}
	return n, first
}
