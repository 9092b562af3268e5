package docstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// SearchQuery is a hybrid search of one collection: the documents a filter
// selects, ranked by a vector source, a text source or both, fused by
// Reciprocal Rank Fusion and optionally diversified by Maximal Marginal
// Relevance.
type SearchQuery struct {
	// Filter selects the documents ranked (nil: all); it is applied
	// before ranking, through a secondary index when one helps.
	Filter *Filter
	// Vector ranks by similarity to a vector (the collection's vector
	// field).
	Vector *VectorQuery
	// Text ranks by BM25 (the collection's text index).
	Text *TextQuery
	// RRFK is RRF's k: a document's fused score is Σ 1/(RRFK + rank) over
	// the sources that rank it (ranks from 1). 0 means DefaultRRFK.
	RRFK int
	// MMR, when set, is MMR's λ in [0, 1] (the weight of relevance; 1 is
	// plain relevance order): the hits are picked one by one from a pool
	// of the best fused candidates (MMRPool), each maximising
	// λ·cos(d, q) − (1−λ)·max cos(d, picked). It needs a vector source.
	MMR *float64
	// Select projects each document onto these dotted paths (nil: the
	// whole document; empty: none of it, an empty map).
	Select []string
	// Limit is the number of hits: 0 means DefaultSearchLimit, more than
	// MaxLimit is clamped to it.
	Limit int
	// Profile times the search's stages (SearchResult.Profile).
	Profile bool
}

// VectorQuery is the vector source of a search.
type VectorQuery struct {
	// Vector is the query vector, of the field's dimension.
	Vector []float32
	// K is how many nearest documents the source ranks (0: the search's
	// candidate window, at least the limit).
	K int
	// Approximate searches the HNSW index instead of scanning every
	// vector; a filter that leaves less than a tenth of the vectors is
	// answered exactly (SearchResult.VectorMode says which ran).
	Approximate bool
	// Ef is the HNSW search breadth (0: HNSWDefaultEf; never less than K).
	Ef int
}

// Search defaults.
const (
	DefaultSearchLimit = 10
	DefaultRRFK        = 60
)

// Vector search modes.
const (
	VectorExact       = "exact"
	VectorApproximate = "approximate"
)

// SourceRank is a hit's rank (from 1) and score in one source.
type SourceRank struct {
	Rank  int     `json:"rank"`
	Score float64 `json:"score"`
}

// SearchHit is one document a search found.
type SearchHit struct {
	Doc Doc
	// Score is the fused RRF score.
	Score float64
	// MMR is the hit's MMR score when it was picked (nil without MMR).
	MMR *float64
	// Vector and Text are the hit's rank and score in each source (nil
	// when that source did not rank it).
	Vector, Text *SourceRank
}

// SearchResult is a search's hits, best first.
type SearchResult struct {
	Hits []SearchHit
	// VectorMode is how the vector source ran: VectorExact or
	// VectorApproximate ("" without one).
	VectorMode string
	// Plan is how the filter found its documents (zero without a filter).
	Plan Plan
	// Profile is where the search's time went, when SearchQuery.Profile
	// asked.
	Profile *SearchProfile
}

// SearchProfile is the wall time of each stage of a search. The vector
// and text sources run at once, on two goroutines, when the vector
// source reads only memory (an approximate search of the graph's copy);
// Sources is then the time until both were done, less than Vector plus
// Text.
type SearchProfile struct {
	// Filter is finding the documents the filter allows.
	Filter time.Duration
	// Vector and Text are each source's ranking (0 without it), Sources
	// both.
	Vector, Text, Sources time.Duration
	// Fusion is RRF, MMR the re-picking (0 without it), Hits reading and
	// projecting the hits' documents.
	Fusion, MMR, Hits time.Duration
}

// stageClock times a search's stages into its profile, when on (when
// the search asked for a profile).
type stageClock struct {
	on   bool
	p    SearchProfile
	last time.Time
}

// start starts timing the next stage.
func (c *stageClock) start() {
	if c.on {
		c.last = time.Now()
	}
}

// lap sets *d to the time since the last lap (or start).
func (c *stageClock) lap(d *time.Duration) {
	if c.on {
		now := time.Now()
		*d, c.last = now.Sub(c.last), now
	}
}

// timed returns fn timing itself into *d: for a stage that may run on
// another goroutine.
func (c *stageClock) timed(d *time.Duration, fn func()) func() {
	if !c.on {
		return fn
	}
	return func() {
		t0 := time.Now()
		fn()
		*d = time.Since(t0)
	}
}

// MMRPool returns the number of fused candidates MMR picks limit hits
// from: four times the limit, at least 20, at most MaxLimit.
func MMRPool(limit int) int { return min(max(4*limit, 20), MaxLimit) }

// invalidArg is a search argument the engine refuses; field is its dotted
// place ("vector.k").
func invalidArg(coll, field, format string, args ...any) error {
	return &Error{Code: CodeInvalid, Collection: coll, Field: field, Message: fmt.Sprintf(format, args...)}
}

// check validates q's ranking arguments, and returns its limit and the
// candidate window each source ranks.
func (q *SearchQuery) check(coll string) (limit, window int, err error) {
	if q.Vector == nil && q.Text == nil {
		return 0, 0, invalidArg(coll, "vector", "a search needs a vector source, a text source or both")
	}
	switch {
	case q.Limit < 0:
		return 0, 0, invalidArg(coll, "limit", "limit %d is negative", q.Limit)
	case q.Limit == 0:
		limit = DefaultSearchLimit
	default:
		limit = min(q.Limit, MaxLimit)
	}
	if q.RRFK < 0 {
		return 0, 0, invalidArg(coll, "rrf_k", "rrf_k %d is negative", q.RRFK)
	}
	window = limit
	if q.MMR != nil {
		if l := *q.MMR; math.IsNaN(l) || l < 0 || l > 1 {
			return 0, 0, invalidArg(coll, "mmr", "mmr (λ) %v is not in [0, 1]", l)
		}
		if q.Vector == nil {
			return 0, 0, invalidArg(coll, "mmr", "mmr diversifies by the documents' vectors: it needs a vector source")
		}
		window = MMRPool(limit)
	}
	if v := q.Vector; v != nil {
		if v.K < 0 || v.K > MaxLimit {
			return 0, 0, invalidArg(coll, "vector.k", "vector k %d is not in [1, %d]", v.K, MaxLimit)
		}
		if v.Ef < 0 || v.Ef > MaxLimit {
			return 0, 0, invalidArg(coll, "vector.ef", "vector ef %d is not in [1, %d]", v.Ef, MaxLimit)
		}
	}
	return limit, window, nil
}

// fused is a candidate of the fusion.
type fused struct {
	key          []byte
	score        float64
	vector, text *SourceRank
}

// fuseRRF fuses a vector and a text ranking (either may be empty) by
// Reciprocal Rank Fusion: a document's score is Σ 1/(k + rank) over the
// rankings that hold it (ranks from 1). The result is best first, ties in
// doc key order.
func fuseRRF(k int, vector, text []Ranked) []*fused {
	byKey := map[string]*fused{}
	var order []*fused
	for src, ranked := range [2][]Ranked{vector, text} {
		for i, h := range ranked {
			f := byKey[string(h.IDKey)]
			if f == nil {
				f = &fused{key: h.IDKey}
				byKey[string(h.IDKey)] = f
				order = append(order, f)
			}
			f.score += 1 / float64(k+i+1)
			sr := &SourceRank{Rank: i + 1, Score: h.Score}
			if src == 0 {
				f.vector = sr
			} else {
				f.text = sr
			}
		}
	}
	slices.SortFunc(order, func(a, b *fused) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.key, b.key)
	})
	return order
}

// Search runs a hybrid search on coll: the documents q.Filter selects are
// ranked by each source, the rankings fused by RRF (ties broken by id
// order), optionally re-picked by MMR, and the first q.Limit returned
// with their scores. Arguments it refuses are invalid errors naming the
// argument in Field ("vector.vector", "mmr", "text.query", ...).
func (s *Store) Search(ctx context.Context, coll string, q SearchQuery) (SearchResult, error) {
	limit, window, err := q.check(coll)
	if err != nil {
		return SearchResult{}, err
	}
	k := q.RRFK
	if k == 0 {
		k = DefaultRRFK
	}
	var out SearchResult
	err = s.view(ctx, coll, func(r *reader) error {
		out = SearchResult{}
		clock := &stageClock{on: q.Profile}
		var qvec []float32
		var vecs *vectors
		if q.Text != nil {
			r.announceText(*q.Text)
		}
		if q.Vector != nil {
			if r.col.Vector == nil {
				return invalidArg(coll, "vector", "%q has no vector field (create one with a vector index)", coll)
			}
			var err error
			if qvec, err = r.col.Vector.checkVector(q.Vector.Vector); err != nil {
				return invalidArg(coll, "vector.vector", "the query vector %s", err)
			}
			if q.Vector.Approximate && r.col.Vector.Flat {
				return invalidArg(coll, "vector.approximate", "the vector field of %q is flat (no HNSW index): search it exactly", coll)
			}
			if vecs, err = openVectors(r.tx, r.col); err != nil {
				return err
			}
			kv.KeyNWithNext(vecs.free) // the ranker's count of live vectors, with the filter's read
			if q.Vector.Approximate && vecs.queue != nil {
				kv.PrefetchWithNext(vecs.queue, nil, []kv.Range{queueRange}) // the vectors to measure exactly
			}
		}
		var allowed *keySet // nil: no filter
		if q.Filter != nil {
			clock.start()
			var err error
			if allowed, out.Plan, err = r.allowedSet(q.Filter); err != nil {
				return err
			}
			clock.lap(&clock.p.Filter)
		}
		clock.start()
		vranked, tranked, src, err := r.rankSources(s, q, qvec, vecs, allowed, window, clock, &out)
		if err != nil {
			return err
		}
		clock.lap(&clock.p.Sources)
		order := fuseRRF(k, vranked, tranked)
		clock.lap(&clock.p.Fusion)
		var mmr []float64
		if q.MMR != nil {
			order, mmr = vecs.mmr(qvec, *q.MMR, order[:min(len(order), window)], limit, src)
			clock.lap(&clock.p.MMR)
		}
		order = order[:min(len(order), limit)]
		kv.Prefetch(r.docs, fusedKeys(order))
		out.Hits = make([]SearchHit, 0, len(order))
		for i, f := range order {
			d, err := r.loadKey(f.key)
			if err != nil {
				return err
			}
			h := SearchHit{Doc: project(d, q.Select), Score: f.score, Vector: f.vector, Text: f.text}
			if mmr != nil {
				h.MMR = &mmr[i]
			}
			out.Hits = append(out.Hits, h)
		}
		clock.lap(&clock.p.Hits)
		if clock.on {
			out.Profile = &clock.p
		}
		return nil
	})
	return out, err
}

// rankSources runs the search's vector and text sources (either may be
// absent) over the documents allowed (nil: all), each ranking n; it sets
// out.VectorMode and returns the graph's copy in memory that the vector
// source read, if any. A vector source that reads only memory ranks on
// another core while the text source reads the transaction.
func (r *reader) rankSources(s *Store, q SearchQuery, qvec []float32, vecs *vectors, allowed *keySet, window int, clock *stageClock, out *SearchResult) (vranked, tranked []Ranked, src graphSource, err error) {
	vectorRank, text := func() {}, func() {}
	inMemory := false
	if q.Vector != nil {
		n := window
		if q.Vector.K > 0 {
			n = q.Vector.K
		}
		if q.Vector.Approximate {
			src = s.cachedGraph(r.col.Name, vecs)
		}
		var rank func() []Ranked
		rank, out.VectorMode, inMemory = vecs.ranker(qvec, *q.Vector, allowed, n, src)
		vectorRank = clock.timed(&clock.p.Vector, func() { vranked = rank() })
	}
	if q.Text != nil {
		text = clock.timed(&clock.p.Text, func() {
			if tranked, err = r.textRanked(*q.Text, allowed.pass(), window); err != nil {
				err = textArgError(err)
			}
		})
	}
	if inMemory && q.Text != nil {
		goReading(2, func(w int) {
			if w == 0 {
				vectorRank()
			} else {
				text()
			}
		})
	} else {
		vectorRank()
		text()
	}
	return vranked, tranked, src, err
}

// fusedKeys returns the doc keys of fs, in order.
func fusedKeys(fs []*fused) [][]byte {
	keys := make([][]byte, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	return keys
}

// textArgError places a text source's invalid error under "text".
func textArgError(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalid {
		return err
	}
	c := *e
	switch {
	case c.Field == "":
		c.Field = "text"
	case c.Field != "text" && !bytes.HasPrefix([]byte(c.Field), []byte("text.")):
		c.Field = "text." + c.Field
	}
	return &c
}

// loadKey loads the document stored under the id key k.
func (r *reader) loadKey(k []byte) (Doc, error) {
	v := r.docs.Get(k)
	if v == nil {
		return Doc{}, fmt.Errorf("docstore: %q: a search structure names a missing document", r.col.Name)
	}
	return r.load(k, v)
}

// allowedSet returns the documents f selects, found as Page finds them
// (through the best secondary index, if one helps; from the index's
// entries alone when they answer f), and the plan used.
func (r *reader) allowedSet(f *Filter) (*keySet, Plan, error) {
	var b keySetBuilder
	if p, ok := r.bestIndex(f); ok && covers(p, f) {
		err := r.eachCandidate(p, b.add)
		return b.set(), Plan{Index: p.def.Name, Ranges: len(p.ranges)}, err
	}
	plan, err := r.matching(f, nil, false, func(k []byte, _ Doc) bool {
		b.add(k)
		return true
	})
	return b.set(), plan, err
}

// ranker returns how to rank the n documents whose vectors are closest
// to q (stored form) among those allowed (nil: all), and the mode it
// uses; an approximate search reads the graph from src when it is not
// nil. Everything rank reads of the transaction is read here, but for an
// exact scan: when inMemory is true, rank reads only src and allowed, and
// may run on another goroutine while the transaction is used.
func (v *vectors) ranker(q []float32, vq VectorQuery, allowed *keySet, n int, src graphSource) (rank func() []Ranked, mode string, inMemory bool) {
	pass, filtered := allowed.pass(), allowed != nil
	live := int(v.slots()) - v.free.KeyN()
	g := v.graph()
	if src != nil {
		g.src = src
	}
	ranked := func(cs []cand) []Ranked {
		out := make([]Ranked, len(cs))
		for i, c := range cs {
			out[i] = Ranked{IDKey: g.docKey(c.slot), Score: vectorScore(v.def.Metric, c.d)}
		}
		return out
	}
	switch {
	case filtered && allowed.len()*10 < live:
		// Few documents pass: score them alone, exactly.
		return func() []Ranked { return ranked(v.exactAmong(q, n, allowed.sortedKeys())) }, VectorExact, false
	case vq.Approximate:
		ef := vq.Ef
		if ef == 0 {
			ef = HNSWDefaultEf
		}
		var accept func(uint32) bool
		if filtered {
			// The walk keeps the ef closest documents that pass, expanding
			// as far as it must to meet them: ef is not widened by the
			// filter's selectivity, which took up to five times the time
			// for at most 0.004 of recall (docs/design/store-performance.md).
			accept = func(s uint32) bool { return pass(g.docKey(s)) }
		}
		queued := v.queuedSlots()
		return func() []Ranked { return ranked(g.searchQueued(q, n, max(ef, n), accept, queued)) }, VectorApproximate, src != nil
	}
	return func() []Ranked { return ranked(v.exact(q, n, pass)) }, VectorExact, false
}

// mmr picks up to limit of pool (in fused order) by Maximal Marginal
// Relevance with weight lambda, using cosine similarities between the
// documents' vectors and q (a document without a vector is similar to
// nothing); ties go to the earlier candidate. It returns the picks and
// their MMR scores.
func (v *vectors) mmr(q []float32, lambda float64, pool []*fused, limit int, src graphSource) ([]*fused, []float64) {
	unit := func(x []float32) []float32 {
		if x == nil || v.def.Metric == MetricCosine {
			return x // stored normalised
		}
		var n float64
		for _, c := range x {
			n += float64(c) * float64(c)
		}
		if n == 0 {
			return nil
		}
		out := make([]float32, len(x))
		for i, c := range x {
			out[i] = float32(float64(c) / math.Sqrt(n))
		}
		return out
	}
	qu := unit(q)
	vecs := v.vectorsOf(fusedKeys(pool), src)
	rel := make([]float64, len(pool))
	for i := range pool {
		vecs[i] = unit(vecs[i])
		if vecs[i] != nil && qu != nil {
			rel[i] = float64(dot(qu, vecs[i]))
		}
	}
	// maxSim[i] is candidate i's largest similarity to a pick so far.
	maxSim := make([]float64, len(pool))
	picked := make([]bool, len(pool))
	var out []*fused
	var scores []float64
	for len(out) < min(limit, len(pool)) {
		best, bestScore := -1, math.Inf(-1)
		for i := range pool {
			if picked[i] {
				continue
			}
			if s := lambda*rel[i] - (1-lambda)*maxSim[i]; s > bestScore {
				best, bestScore = i, s
			}
		}
		picked[best] = true
		out = append(out, pool[best])
		scores = append(scores, bestScore)
		for i := range pool {
			if !picked[i] && vecs[i] != nil && vecs[best] != nil {
				if s := float64(dot(vecs[i], vecs[best])); len(out) == 1 || s > maxSim[i] {
					maxSim[i] = s
				}
			}
		}
	}
	return out, scores
}
