package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	index "github.com/blevesearch/bleve_index_api"
	"github.com/mcpkit/mcpkit/pkg/docstore"
)

// The workload of BenchmarkStoreText (issue 10).
const (
	textDocs     = 100_000
	textBatch    = 1_000 // documents per transaction (docstore) and per batch (bleve)
	textVocab    = 5_000 // distinct words, drawn by a Zipf law
	textQueries  = 2_000
	textChecks   = 20 // queries whose results are checked on both sides
	textTopK     = 10
	textStopRate = 5 // one word in textStopRate is an English stop word
)

// bleve starts a library-wide pool of analysis goroutines when its
// package initializes; stop it, so that no test of this package finds
// them leaked (TestMain), and let BenchmarkStoreText start its own.
func init() { bleve.Config.Shutdown() }

// textStopWords are stop words of both analyzers' English lists.
var textStopWords = strings.Fields("the of and a to in is it")

// textWorkload is the generated corpus: its vocabulary and documents.
type textWorkload struct {
	vocab []string
	docs  []string
}

// newTextWorkload generates textDocs short documents (6 to 15 words) of
// made-up words drawn by a Zipf law (s = 1.1) over textVocab words, with
// stop words among them, the same on every run.
func newTextWorkload() *textWorkload {
	r := rand.New(rand.NewPCG(10, 1))
	syll := strings.Fields("ba ke lo mu ri sa te vo zi na pe qua do fi gu")
	w := &textWorkload{}
	seen := map[string]bool{}
	for len(w.vocab) < textVocab {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		if s := b.String(); !seen[s] {
			seen[s] = true
			w.vocab = append(w.vocab, s)
		}
	}
	z := rand.NewZipf(r, 1.1, 1, textVocab-1)
	for range textDocs {
		words := make([]string, 6+r.IntN(10))
		for i := range words {
			if r.IntN(textStopRate) == 0 {
				words[i] = textStopWords[r.IntN(len(textStopWords))]
			} else {
				words[i] = w.vocab[z.Uint64()]
			}
		}
		w.docs = append(w.docs, strings.Join(words, " "))
	}
	return w
}

// queries returns n two-word queries of words of middling frequency (Zipf
// ranks 20 to 500).
func (w *textWorkload) queries(n int) []string {
	r := rand.New(rand.NewPCG(10, 2))
	out := make([]string, n)
	for i := range out {
		out[i] = w.vocab[20+r.IntN(480)] + " " + w.vocab[20+r.IntN(480)]
	}
	return out
}

// matches counts the documents holding a word of q.
func (w *textWorkload) matches(q string) int {
	a, b, _ := strings.Cut(q, " ")
	n := 0
	for _, d := range w.docs {
		for _, x := range strings.Fields(d) {
			if x == a || x == b {
				n++
				break
			}
		}
	}
	return n
}

// textSide is one of the two full-text engines compared.
type textSide interface {
	ingest(ctx context.Context, first int, docs []string) error
	// top returns the ids of the best textTopK documents for q and the
	// number of documents that match (-1 when the engine does not say).
	top(ctx context.Context, q string) ([]string, int, error)
	close() error
}

type docstoreText struct{ s *docstore.Store }

func (d docstoreText) ingest(ctx context.Context, first int, docs []string) error {
	batch := make([]docstore.Doc, len(docs))
	for i, t := range docs {
		batch[i] = docstore.Doc{ID: docstore.Int(int64(first + i)), Value: docstore.Map(docstore.Field{Key: "body", Value: docstore.Text(t)})}
	}
	_, err := d.s.PutMany(ctx, "docs", batch)
	return err
}

func (d docstoreText) top(ctx context.Context, q string) ([]string, int, error) {
	res, err := d.s.Search(ctx, "docs", docstore.SearchQuery{Text: &docstore.TextQuery{Query: q}, Limit: textTopK})
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		n, _ := h.Doc.ID.Int()
		ids[i] = fmt.Sprint(n)
	}
	return ids, -1, nil
}

func (d docstoreText) close() error { return d.s.Close() }

type bleveText struct{ idx bleve.Index }

func (b bleveText) ingest(_ context.Context, first int, docs []string) error {
	batch := b.idx.NewBatch()
	for i, t := range docs {
		if err := batch.Index(fmt.Sprint(first+i), map[string]any{"body": t}); err != nil {
			return err
		}
	}
	return b.idx.Batch(batch)
}

func (b bleveText) top(ctx context.Context, q string) ([]string, int, error) {
	mq := bleve.NewMatchQuery(q)
	mq.SetField("body")
	res, err := b.idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(mq, textTopK, 0, false))
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return ids, int(res.Total), nil
}

func (b bleveText) close() error { return b.idx.Close() }

// BenchmarkStoreText measures, in one run (`make bench-store`, b.N is not
// used), the document store's full-text index against bleve v2 (scorch,
// on disk) on the same 100,000 generated short documents: indexing in
// batches of 1,000 (documents/s; each side alone, the docstore first)
// and BM25 top-10 of a two-word query (p50; the sides alternating every
// 100 queries). Both sides are on disk in the same temporary directory, each
// batch durable before it returns (bbolt fsyncs every commit; scorch's
// Batch waits for its segment to be persisted), and both analyze alike:
// Unicode word segmentation, lowercase, English stop words (bleve's
// "standard" analyzer; the docstore's index with stop_words on), no
// stemming; both keep positions (bleve's term vectors) and the stored
// text, and both score by BM25 (k1 1.2, b 0.75; bleve's scoring_model
// "bm25"). The docstore's query is a whole search call (the search
// tool's path: it also loads the 10 documents), bleve's returns ids and
// scores. It fails when the docstore indexes fewer documents per second
// than bleve, or its query p50 is slower.
func BenchmarkStoreText(b *testing.B) {
	ctx := b.Context()
	dir := b.TempDir()
	w := newTextWorkload()
	queries := w.queries(textQueries)

	s, err := docstore.Open(filepath.Join(dir, "docstore.db"), docstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.CreateTextIndex(ctx, "docs", docstore.TextIndexDef{Name: "body", Fields: []string{"body"}, StopWords: true, Language: "english"}, nil); err != nil {
		b.Fatal(err)
	}
	// bleve analyzes on a library-wide pool of goroutines: started here
	// (with its default size), stopped at the end.
	bleve.Config.SetAnalysisQueueSize(4)
	im := bleve.NewIndexMapping()
	im.ScoringModel = index.BM25Scoring
	fm := bleve.NewTextFieldMapping()
	fm.Analyzer = standard.Name
	fm.IncludeInAll = false
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("body", fm)
	im.DefaultMapping = dm
	bi, err := bleve.New(filepath.Join(dir, "bleve"), im)
	if err != nil {
		b.Fatal(err)
	}
	sides := [2]textSide{docstoreText{s}, bleveText{bi}}
	b.Cleanup(func() {
		for _, sd := range sides {
			sd.close()
		}
		bleve.Config.Shutdown()
	})
	b.ResetTimer()

	// Each side indexes alone, one after the other: bleve goes on merging
	// its segments in the background after its batches return, which
	// would land on the other side's timings if they alternated.
	var ingest [2]respRounds
	for i, sd := range sides {
		for first := 0; first < textDocs; first += textBatch {
			start := time.Now()
			if err := sd.ingest(ctx, first, w.docs[first:first+textBatch]); err != nil {
				b.Fatalf("side %d: ingest %d..: %v", i, first, err)
			}
			ingest[i] = append(ingest[i], time.Since(start))
		}
	}

	// Both sides do the work: bleve counts every matching document, and
	// the two top-10s hold matching documents and mostly agree.
	overlap := 0
	for _, q := range queries[:textChecks] {
		var tops [2][]string
		for i, sd := range sides {
			ids, total, err := sd.top(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			if len(ids) != textTopK {
				b.Fatalf("side %d: %q: %d hits", i, q, len(ids))
			}
			if want := w.matches(q); total >= 0 && total != want {
				b.Fatalf("side %d: %q matches %d documents, want %d", i, q, total, want)
			}
			for _, id := range ids {
				var n int
				fmt.Sscan(id, &n)
				a, c, _ := strings.Cut(q, " ")
				if d := " " + w.docs[n] + " "; !strings.Contains(d, " "+a+" ") && !strings.Contains(d, " "+c+" ") {
					b.Fatalf("side %d: %q: document %s does not match", i, q, id)
				}
			}
			tops[i] = ids
		}
		for _, id := range tops[0] {
			if strings.Contains(" "+strings.Join(tops[1], " ")+" ", " "+id+" ") {
				overlap++
			}
		}
	}

	var search [2]respRounds
	for lo := 0; lo < textQueries; lo += 100 {
		for j := range 2 {
			i := (j + lo/100) % 2
			for k := lo; k < lo+100; k++ {
				start := time.Now()
				if _, _, err := sides[i].top(ctx, queries[k]); err != nil {
					b.Fatal(err)
				}
				search[i] = append(search[i], time.Since(start))
			}
		}
	}
	b.StopTimer()

	dsRate, dsP50, dsP95 := ingest[0].stats(textBatch)
	blRate, blP50, blP95 := ingest[1].stats(textBatch)
	dsQ, dsQ50, dsQ95 := search[0].stats(1)
	blQ, blQ50, blQ95 := search[1].stats(1)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	b.Logf("docstore text index (bbolt file, fsync per commit) vs bleve v2.6.3 (scorch on disk), %d documents of 6-15 words (%d-word Zipf vocabulary, English stop words),\n"+
		"same analysis (Unicode words, lowercase, English stop words), BM25; top-10 overlap of the two sides on %d checked queries: %d/%d\n"+
		"%-34s  %6s  %11s  %11s  %5s  %9s  %9s  %9s  %9s  %s\n"+
		"%-34s  %6d  %11.0f  %11.0f  %5.2f  %9s  %9s  %9s  %9s  %s\n"+
		"%-34s  %6d  %11.0f  %11.0f  %5.2f  %9s  %9s  %9s  %9s  %s",
		textDocs, textVocab, textChecks, overlap, textChecks*textTopK,
		"operation", "n", "docstore/s", "bleve/s", "ratio", "ds p50", "bl p50", "ds p95", "bl p95", "target",
		"index, batches of 1,000 (docs/s)", textDocs, dsRate, blRate, dsRate/blRate, micros(dsP50), micros(blP50), micros(dsP95), micros(blP95), verdict(dsRate >= blRate)+" (≥ bleve docs/s)",
		"BM25 top-10, two-word query", textQueries, dsQ, blQ, dsQ/blQ, micros(dsQ50), micros(blQ50), micros(dsQ95), micros(blQ95), verdict(dsQ50 <= blQ50)+" (p50 ≤ bleve)")
	b.ReportMetric(dsRate, "ds-index-docs/s")
	b.ReportMetric(dsRate/blRate, "index-ratio")
	b.ReportMetric(float64(dsQ50.Microseconds()), "ds-query-p50-µs")
	b.ReportMetric(float64(dsQ50)/float64(blQ50), "query-p50-ratio")
	if dsRate < blRate {
		b.Errorf("indexing: docstore %.0f docs/s is slower than bleve's %.0f", dsRate, blRate)
	}
	if dsQ50 > blQ50 {
		b.Errorf("BM25 top-10: docstore p50 %s is slower than bleve's %s", dsQ50, blQ50)
	}
}
