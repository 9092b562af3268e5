package docstore

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
	"github.com/rivo/uniseg"
)

// ranked runs textRanked on coll.
func ranked(t *testing.T, s *Store, coll string, q TextQuery, allowed func([]byte) bool, n int) ([]Ranked, error) {
	t.Helper()
	var out []Ranked
	err := s.view(ctx, coll, func(r *reader) error {
		var err error
		out, err = r.textRanked(q, allowed, n)
		return err
	})
	return out, err
}

// rankedIDs renders ranked documents as "id:score" with 6 decimals.
func rankedIDs(t *testing.T, rs []Ranked) string {
	t.Helper()
	var parts []string
	for _, r := range rs {
		id, _, err := DecodeKey(r.IDKey)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, fmt.Sprintf("%s:%.6f", js(t, id), r.Score))
	}
	return strings.Join(parts, " ")
}

func mustText(t *testing.T, s *Store, coll string, def TextIndexDef) {
	t.Helper()
	if _, err := s.CreateTextIndex(ctx, coll, def, nil); err != nil {
		t.Fatal(err)
	}
}

func putJSON(t *testing.T, s *Store, coll string, id int64, doc string) {
	t.Helper()
	if _, err := s.Put(ctx, coll, Int(id), j(t, doc)); err != nil {
		t.Fatal(err)
	}
}

// TestTextBM25 checks BM25 scores against a hand-computed example.
func TestTextBM25(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		mustText(t, s, "c", TextIndexDef{Name: "body", Fields: []string{"body"}})
		putJSON(t, s, "c", 1, `{"body":"The quick brown fox"}`) // 4 terms
		putJSON(t, s, "c", 2, `{"body":"quick, quick dog!"}`)   // 3 terms
		putJSON(t, s, "c", 3, `{"body":"lazy dog sleeps"}`)     // 3 terms
		putJSON(t, s, "c", 4, `{"body":"FOX"}`)                 // 1 term
		putJSON(t, s, "c", 5, `{"other":"quick fox"}`)          // not indexed: no terms

		// N = 4 documents with terms, avgdl = (4+3+3+1)/4 = 2.75.
		// quick is in 2 documents, fox in 2: IDF = ln(1 + (4-2+0.5)/(2+0.5)) = ln 2 for both.
		// With k1 = 1.2, b = 0.75, a term's part is IDF·tf·2.2/(tf + 1.2·(0.25 + 0.75·dl/2.75)):
		//   doc 1: quick and fox, tf 1, dl 4: 2·ln2·2.2/(1 + 1.2·1.340909) = 1.168931
		//   doc 4: fox, tf 1, dl 1:             ln2·2.2/(1 + 1.2·0.522727) = 0.937104
		//   doc 2: quick, tf 2, dl 3:           ln2·4.4/(2 + 1.2·1.068182) = 0.929316
		ln2 := math.Log(2)
		want := []float64{
			2 * ln2 * 2.2 / (1 + 1.2*(0.25+0.75*4/2.75)),
			ln2 * 2.2 / (1 + 1.2*(0.25+0.75*1/2.75)),
			ln2 * 4.4 / (2 + 1.2*(0.25+0.75*3/2.75)),
		}
		got, err := ranked(t, s, "c", TextQuery{Query: "quick FOX"}, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		if ids := rankedIDs(t, got); ids != "1:1.168931 4:0.937104 2:0.929316" {
			t.Fatalf("ranked %s", ids)
		}
		for i, r := range got {
			if math.Abs(r.Score-want[i]) > 1e-12 {
				t.Errorf("score %d: %v, want %v", i, r.Score, want[i])
			}
		}
		// b = 0: no length normalization: a term's part is IDF·tf·2.2/(tf + 1.2).
		//   doc 1: 2·ln2·2.2/2.2 = 1.386294; doc 2: ln2·4.4/3.2 = 0.953077; doc 4: ln2 = 0.693147
		b0, k1 := 0.0, 1.2
		got, err = ranked(t, s, "c", TextQuery{Query: "quick fox", B: &b0, K1: &k1}, nil, 10)
		if ids := rankedIDs(t, got); err != nil || ids != "1:1.386294 2:0.953077 4:0.693147" {
			t.Fatalf("b=0: %s %v", ids, err)
		}
		// n limits, allowed filters, equal scores in id order.
		got, _ = ranked(t, s, "c", TextQuery{Query: "quick fox"}, nil, 2)
		if ids := rankedIDs(t, got); ids != "1:1.168931 4:0.937104" {
			t.Errorf("top 2: %s", ids)
		}
		not1 := func(k []byte) bool { return !bytes.Equal(k, AppendKey(nil, Int(1))) }
		got, _ = ranked(t, s, "c", TextQuery{Query: "quick fox"}, not1, 10)
		if ids := rankedIDs(t, got); ids != "4:0.937104 2:0.929316" {
			t.Errorf("allowed: %s", ids)
		}
		got, _ = ranked(t, s, "c", TextQuery{Query: "dog"}, nil, 10)
		if ids := rankedIDs(t, got); !strings.HasPrefix(ids, "2:") || !strings.Contains(ids, " 3:") {
			t.Errorf("dog: %s", ids)
		}
		if got, err := ranked(t, s, "c", TextQuery{Query: "unicorn"}, nil, 10); err != nil || len(got) != 0 {
			t.Errorf("a term no document has: %v %v", got, err)
		}
		// Refused queries name the member at fault.
		nan, neg, big := math.NaN(), -1.0, 1.5
		for _, c := range []struct {
			q     TextQuery
			field string
		}{
			{TextQuery{Query: "  ,, "}, "query"},
			{TextQuery{Query: "fox", Index: "nope"}, "index"},
			{TextQuery{Query: "fox", Fields: []string{"title"}}, "fields"},
			{TextQuery{Query: "fox", K1: &nan}, "k1"},
			{TextQuery{Query: "fox", K1: &neg}, "k1"},
			{TextQuery{Query: "fox", B: &big}, "b"},
			{TextQuery{Query: "fox", B: &nan}, "b"},
			{TextQuery{Query: strings.Repeat("w", 1) + strings.Repeat(" x", 0) + manyWords(MaxQueryTerms+1)}, "query"},
		} {
			_, err := ranked(t, s, "c", c.q, nil, 10)
			if e := wantCode(t, err, CodeInvalid); e.Field != c.field {
				t.Errorf("%+v: field %q, want %q (%v)", c.q, e.Field, c.field, err)
			}
		}
		if _, err := ranked(t, s, "empty", TextQuery{Query: "x"}, nil, 1); ErrorCode(err) != CodeCollectionNotFound {
			t.Errorf("no collection: %v", err)
		}
		putJSON(t, s, "plain", 1, `{"body":"x"}`)
		if _, err := ranked(t, s, "plain", TextQuery{Query: "x"}, nil, 1); wantCode(t, err, CodeInvalid).Field != "index" {
			t.Errorf("no text index: %v", err)
		}
	})
}

// TestTextBM25ListsEndApart: a term whose postings end before another's
// keeps its own IDF (a regression: the document-at-a-time loop once
// looked IDFs up by position in a list it also shrank).
func TestTextBM25ListsEndApart(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		def := TextIndexDef{Name: "b", Fields: []string{"b"}}
		mustText(t, s, "c", def)
		putJSON(t, s, "c", 1, `{"b":"rare common"}`)
		putJSON(t, s, "c", 2, `{"b":"common filler"}`)
		putJSON(t, s, "c", 3, `{"b":"common common other"}`)
		putJSON(t, s, "c", 4, `{"b":"common"}`)
		putJSON(t, s, "c", 5, `{"b":"unrelated words"}`)
		for _, q := range []string{"rare common", "common rare", "common other", "filler other unrelated"} {
			got, err := ranked(t, s, "c", TextQuery{Query: q}, nil, 10)
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteBM25(t, s, "c", def, q, 10); rankedIDs(t, got) != want {
				t.Errorf("%q: %s\nwant %s", q, rankedIDs(t, got), want)
			}
		}
	})
}

func manyWords(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, " w%d", i)
	}
	return b.String()
}

// TestTextFieldsAndArrays: several fields, text inside arrays and nested
// maps, and a query restricted to some fields.
func TestTextFieldsAndArrays(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		mustText(t, s, "c", TextIndexDef{Name: "t", Fields: []string{"title", "notes.text", "tags"}})
		putJSON(t, s, "c", 1, `{"title":"red apple","notes":[{"text":"green pear"},{"text":"ripe red cherry"}],"tags":["fruit",["red"],7]}`)
		putJSON(t, s, "c", 2, `{"title":"pear","notes":{"text":"apple"}}`)
		got, err := ranked(t, s, "c", TextQuery{Query: "red"}, nil, 10)
		if err != nil || len(got) != 1 {
			t.Fatalf("red: %v %v", rankedIDs(t, got), err)
		}
		got, _ = ranked(t, s, "c", TextQuery{Query: "pear", Fields: []string{"title"}}, nil, 10)
		if ids := rankedIDs(t, got); !strings.HasPrefix(ids, "2:") || strings.Contains(ids, "1:") {
			t.Errorf("pear in titles: %s", ids)
		}
		got, _ = ranked(t, s, "c", TextQuery{Query: "cherry fruit"}, nil, 10)
		if len(got) != 1 {
			t.Errorf("texts in arrays are indexed: %s", rankedIDs(t, got))
		}
		// A phrase never spans two values of an array.
		res, err := s.PhraseSearch(ctx, "c", PhraseQuery{Phrase: "pear ripe", Slop: MaxSlop})
		if err != nil || len(res.Hits) != 0 {
			t.Errorf("a phrase across array values: %+v %v", res.Hits, err)
		}
		res, err = s.PhraseSearch(ctx, "c", PhraseQuery{Phrase: "ripe red"})
		if err != nil || len(res.Hits) != 1 || res.Hits[0].Field != "notes.text" {
			t.Fatalf("ripe red: %+v %v", res.Hits, err)
		}
		// notes.text: "green pear" at 0, 1; the next value starts after the gap.
		if p := res.Hits[0].Positions; !slices.Equal(p, []int{2 + positionGap, 3 + positionGap}) {
			t.Errorf("positions %v", p)
		}
	})
}

// TestTextAnalyzer: lowercase, Unicode words and normalization, stemming
// and stop words on and off.
func TestTextAnalyzer(t *testing.T) {
	collect := func(def TextIndexDef, text string) string {
		var out []string
		newAnalyzer(def).terms(text, 0, func(term string, p int) { out = append(out, fmt.Sprintf("%s@%d", term, p)) })
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		def        TextIndexDef
		text, want string
	}{
		{TextIndexDef{}, "The Runners' running-dogs, 3.5 km!", "the@0 runners@1 running@2 dogs@3 3.5@4 km@5"},
		{TextIndexDef{Stem: true, Language: "english"}, "The Runners' running-dogs", "the@0 runner@1 run@2 dog@3"},
		{TextIndexDef{StopWords: true, Language: "english"}, "The cat and the hat", "cat@1 hat@4"},
		{TextIndexDef{Stem: true, StopWords: true, Language: "english"}, "The cats of the hats", "cat@1 hat@4"},
		{TextIndexDef{Stem: true, Language: "french"}, "Les chanteuses chantaient", "le@0 chanteux@1 chant@2"},
		{TextIndexDef{}, "ÉCOLE ﬁsh Straße", "école@0 fish@1 straße@2"},
		{TextIndexDef{}, "東京タワー und Zürich", "東@0 京@1 タワー@2 und@3 zürich@4"},
		{TextIndexDef{}, "e\u0301cole", "école@0"},
		{TextIndexDef{}, strings.Repeat("a", MaxTermBytes+1) + " b", "b@1"},
	} {
		if got := collect(c.def, c.text); got != c.want {
			t.Errorf("%+v %q: %s, want %s", c.def, c.text, got, c.want)
		}
	}
	backends(t, func(t *testing.T, s *Store) {
		mustText(t, s, "c", TextIndexDef{Name: "plain", Fields: []string{"b"}})
		mustText(t, s, "c", TextIndexDef{Name: "en", Fields: []string{"b"}, Stem: true, StopWords: true})
		putJSON(t, s, "c", 1, `{"b":"The dogs were running"}`)
		putJSON(t, s, "c", 2, `{"b":"a dog runs"}`)
		got, _ := ranked(t, s, "c", TextQuery{Query: "dog run", Index: "en"}, nil, 10)
		if len(got) != 2 {
			t.Errorf("stemmed: %s", rankedIDs(t, got))
		}
		got, _ = ranked(t, s, "c", TextQuery{Query: "dog run", Index: "plain"}, nil, 10)
		if ids := rankedIDs(t, got); !strings.HasPrefix(ids, "2:") || len(got) != 1 {
			t.Errorf("not stemmed: %s", ids)
		}
		if _, err := ranked(t, s, "c", TextQuery{Query: "the were", Index: "en"}, nil, 10); wantCode(t, err, CodeInvalid).Field != "query" {
			t.Errorf("only stop words: %v", err)
		}
		if got, _ := ranked(t, s, "c", TextQuery{Query: "the", Index: "plain"}, nil, 10); len(got) != 1 {
			t.Errorf("stop words kept: %s", rankedIDs(t, got))
		}
		if _, err := ranked(t, s, "c", TextQuery{Query: "dog"}, nil, 10); wantCode(t, err, CodeInvalid).Field != "index" {
			t.Errorf("two indexes, none named: %v", err)
		}
		// A stop word keeps its place in a phrase.
		res, _ := s.PhraseSearch(ctx, "c", PhraseQuery{Phrase: "dogs of running", Index: "en"})
		if len(res.Hits) != 1 || !slices.Equal(res.Hits[0].Positions, []int{1, 3}) {
			t.Errorf("stop word gap: %+v", res.Hits)
		}
		res, _ = s.PhraseSearch(ctx, "c", PhraseQuery{Phrase: "dogs running", Index: "en"})
		if len(res.Hits) != 1 || !Equal(res.Hits[0].Doc.ID, Int(2)) {
			t.Errorf("a dropped stop word still counts in the document: %+v", res.Hits)
		}
		infos, _ := s.Collections(ctx)
		if d := infos[0].TextIndexes; len(d) != 2 || d[1].Language != "english" {
			t.Errorf("the default language: %+v", d)
		}
	})
}

// TestASCIIWords: the ASCII fast path finds the words Unicode word
// segmentation (uniseg) finds.
func TestASCIIWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "aZq09_.':,;\" -\n\t!x"
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(b)
		var fast, ref []string
		asciiWords(s, func(w string) { fast = append(fast, w) })
		state := -1
		for rest := s; len(rest) > 0; {
			var w string
			w, rest, state = uniseg.FirstWordInString(rest, state)
			if isWord(w) {
				ref = append(ref, w)
			}
		}
		if !slices.Equal(fast, ref) {
			t.Fatalf("%q: %q, uniseg finds %q", s, fast, ref)
		}
	}
}

// TestTextPhrase: exact phrases, slop, order, repeats, filters and pages.
func TestTextPhrase(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		mustText(t, s, "c", TextIndexDef{Name: "b", Fields: []string{"b"}})
		putJSON(t, s, "c", 1, `{"b":"new york is new york","n":1}`)
		putJSON(t, s, "c", 2, `{"b":"new and shiny york","n":2}`)
		putJSON(t, s, "c", 3, `{"b":"york new","n":3}`)
		putJSON(t, s, "c", 4, `{"b":"new new york york","n":4}`)
		hits := func(q PhraseQuery) string {
			t.Helper()
			res, err := s.PhraseSearch(ctx, "c", q)
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, h := range res.Hits {
				parts = append(parts, fmt.Sprintf("%s%v×%d", js(t, h.Doc.ID), h.Positions, h.Matches))
			}
			return strings.Join(parts, " ")
		}
		for _, c := range []struct {
			q    PhraseQuery
			want string
		}{
			{PhraseQuery{Phrase: "New York"}, "1[0 1]×2 4[1 2]×1"},
			{PhraseQuery{Phrase: "new york", Slop: 1}, "1[0 1]×2 4[0 2]×2"},
			{PhraseQuery{Phrase: "new york", Slop: 2}, "1[0 1]×2 2[0 3]×1 4[0 2]×2"},
			{PhraseQuery{Phrase: "york new"}, "3[0 1]×1"},
			{PhraseQuery{Phrase: "york new", Slop: 1}, "1[1 3]×1 3[0 1]×1"},
			{PhraseQuery{Phrase: "york is new york"}, "1[1 2 3 4]×1"},
			{PhraseQuery{Phrase: "new york new york"}, ""},
			{PhraseQuery{Phrase: "new york new york", Slop: 1}, "1[0 1 3 4]×1"},
			{PhraseQuery{Phrase: "york"}, "1[1]×2 2[3]×1 3[0]×1 4[2]×2"},
			{PhraseQuery{Phrase: "new york", Slop: 2, Filter: flt(t, `{"n":{"$gte":2}}`)}, "2[0 3]×1 4[0 2]×2"},
			{PhraseQuery{Phrase: "shiny new"}, ""},
		} {
			if got := hits(c.q); got != c.want {
				t.Errorf("%+v: %s, want %s", c.q, got, c.want)
			}
		}
		// Pages in id order with a cursor, and a projection.
		var seen []string
		q := PhraseQuery{Phrase: "york", Limit: 3, Select: []string{"n"}}
		for {
			res, err := s.PhraseSearch(ctx, "c", q)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range res.Hits {
				seen = append(seen, js(t, h.Doc.Value))
			}
			if res.Next == "" {
				break
			}
			q.Cursor = res.Next
		}
		if got := strings.Join(seen, ","); got != `{"n":1},{"n":2},{"n":3},{"n":4}` {
			t.Errorf("pages: %s", got)
		}
		for _, c := range []struct {
			q     PhraseQuery
			field string
		}{
			{PhraseQuery{Phrase: "..."}, "phrase"},
			{PhraseQuery{Phrase: "york", Slop: -1}, "slop"},
			{PhraseQuery{Phrase: "york", Slop: MaxSlop + 1}, "slop"},
			{PhraseQuery{Phrase: "york", Cursor: "bad"}, "cursor"},
			{PhraseQuery{Phrase: "york", Index: "x"}, "index"},
			{PhraseQuery{Phrase: "york", Fields: []string{"x"}}, "fields"},
			{PhraseQuery{Phrase: manyWords(MaxQueryTerms + 1)}, "phrase"},
		} {
			_, err := s.PhraseSearch(ctx, "c", c.q)
			if e := wantCode(t, err, CodeInvalid); e.Field != c.field {
				t.Errorf("%+v: field %q, want %q", c.q, e.Field, c.field)
			}
		}
	})
}

// bruteBM25 ranks the documents of coll by BM25 from their values, as a
// reference for the index.
func bruteBM25(t *testing.T, s *Store, coll string, def TextIndexDef, query string, n int) string {
	t.Helper()
	return rankedIDs(t, bruteBM25Among(t, s, coll, def, query, n, nil))
}

// bruteBM25Among is bruteBM25's ranking of the documents keep allows (nil:
// all), whose statistics stay the collection's.
func bruteBM25Among(t *testing.T, s *Store, coll string, def TextIndexDef, query string, n int, keep func(idKey []byte) bool) []Ranked {
	t.Helper()
	an := newAnalyzer(def)
	res, err := s.Page(ctx, coll, Query{Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	type doc struct {
		key []byte
		tf  map[string]int
		dl  int
	}
	var docs []doc
	total := 0
	for _, d := range res.Docs {
		x := doc{key: AppendKey(nil, d.ID), tf: map[string]int{}}
		for _, f := range def.Fields {
			textValues(d.Value, f, func(text string) {
				an.terms(text, 0, func(term string, _ int) { x.tf[term]++; x.dl++ })
			})
		}
		if x.dl > 0 {
			docs = append(docs, x)
			total += x.dl
		}
	}
	top := topRanked{n: n}
	avgdl := float64(total) / float64(len(docs))
	for _, d := range docs {
		score := 0.0
		for _, term := range an.queryTerms(query) {
			df := 0
			for _, o := range docs {
				if o.tf[term] > 0 {
					df++
				}
			}
			if tf := float64(d.tf[term]); tf > 0 {
				idf := math.Log(1 + (float64(len(docs))-float64(df)+0.5)/(float64(df)+0.5))
				score += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(d.dl)/avgdl))
			}
		}
		if score > 0 && (keep == nil || keep(d.key)) {
			top.offer(d.key, score)
		}
	}
	return top.sorted()
}

// TestTextWritesKeepPostingsExact: puts, replacements, patches, deletes,
// delete_where and PutMany over enough documents to split and empty
// blocks; Verify (at the end of every test) checks the postings and
// statistics exactly, and ranking agrees with a brute-force BM25.
func TestTextWritesKeepPostingsExact(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		def := TextIndexDef{Name: "b", Fields: []string{"b", "t"}, Stem: true, Language: "english"}
		mustText(t, s, "c", def)
		rng := rand.New(rand.NewPCG(1, 2))
		words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "running", "runs"}
		text := func() string {
			var b strings.Builder
			for range 1 + rng.IntN(8) {
				b.WriteString(words[rng.IntN(len(words))] + " ")
			}
			return b.String()
		}
		var batch []Doc
		for i := range 400 {
			batch = append(batch, Doc{ID: Int(int64(rng.IntN(1000))), Value: Map(Field{"b", Text(text())}, Field{"k", Int(int64(i % 7))})})
		}
		if _, err := s.PutMany(ctx, "c", batch); err != nil {
			t.Fatal(err)
		}
		for i := range 600 {
			id := Int(int64(rng.IntN(1000)))
			var err error
			switch rng.IntN(5) {
			case 0, 1:
				_, err = s.Put(ctx, "c", id, Map(Field{"b", Text(text())}, Field{"t", Array(Text(text()), Int(1))}, Field{"k", Int(int64(i % 7))}))
			case 2:
				_, err = s.Patch(ctx, "c", id, Map(Field{"t", Text(text())}))
				if ErrorCode(err) == CodeNotFound {
					err = nil
				}
			case 3:
				_, err = s.Delete(ctx, "c", id)
			case 4:
				_, err = s.Put(ctx, "c", id, Map(Field{"k", Int(1)})) // no text
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"alpha beta", "run", "zeta eta theta"} {
			got, err := ranked(t, s, "c", TextQuery{Query: q}, nil, 10)
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteBM25(t, s, "c", def, q, 10); rankedIDs(t, got) != want {
				t.Errorf("%q: %s\nwant %s", q, rankedIDs(t, got), want)
			}
		}
		// The workload froze blocks (and split and emptied some).
		frozen := 0
		err := s.db.View(func(tx kv.Tx) error {
			c := tx.Bucket(textBucket("c", "b")).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if k[0] == frozenKind {
					frozen++
				}
			}
			return nil
		})
		if err != nil || frozen < 10 {
			t.Fatalf("%d frozen blocks (%v)", frozen, err)
		}
		if _, _, err := s.DeleteWhere(ctx, "c", flt(t, `{"k":3}`)); err != nil {
			t.Fatal(err)
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.DeleteWhere(ctx, "c", nil); err != nil {
			t.Fatal(err)
		}
		if got, err := ranked(t, s, "c", TextQuery{Query: "alpha"}, nil, 10); err != nil || len(got) != 0 {
			t.Errorf("after deleting everything: %v %v", got, err)
		}
		// Every block was emptied and deleted.
		err = s.db.View(func(tx kv.Tx) error {
			k, _ := tx.Bucket(textBucket("c", "b")).Cursor().First()
			if string(k) != textStatsKey {
				t.Errorf("left in the index: %q", k)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestTextConcurrentWritesWithFailures: concurrent writers share batched
// transactions, some of whose writes fail (a unique index refuses them),
// so that the batch rolls back and runs its functions again; the text
// index keeps exactly the writes that succeeded.
func TestTextConcurrentWritesWithFailures(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		mustText(t, s, "c", TextIndexDef{Name: "b", Fields: []string{"b"}})
		if _, err := s.CreateIndex(ctx, "c", IndexDef{Name: "u", Fields: []string{"u"}, Unique: true}, nil); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var refused atomic.Int64
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				for n := range 40 {
					// Every fourth write reuses a unique value and is refused.
					u := int64(w*1000 + n)
					if n%4 == 3 {
						u = int64(w * 1000)
					}
					_, err := s.Put(ctx, "c", Int(int64(w*100+n%10)), Map(Field{"b", Text(fmt.Sprintf("writer%d round%d shared", w, n))}, Field{"u", Int(u)}))
					switch {
					case ErrorCode(err) == CodeUniqueViolation:
						refused.Add(1)
					case err != nil:
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if refused.Load() == 0 {
			t.Fatal("no write was refused")
		}
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := ranked(t, s, "c", TextQuery{Query: "shared"}, nil, 1000)
		if err != nil || len(got) != 80 {
			t.Errorf("%d documents hold the shared word, want 80 (%v)", len(got), err)
		}
	})
}

// TestTextVerifyFindsCorruption: Verify is not vacuous.
func TestTextVerifyFindsCorruption(t *testing.T) {
	for _, tamper := range []func(b kv.Bucket) error{
		func(b kv.Bucket) error { return b.Delete(keysOf("fox").tail) },
		func(b kv.Bucket) error { // the block right, but not at the tail
			v := bytes.Clone(b.Get(keysOf("fox").tail))
			if err := b.Delete(keysOf("fox").tail); err != nil {
				return err
			}
			return b.Put(keysOf("fox").frozenKey(AppendKey(nil, Int(1))), v)
		},
		func(b kv.Bucket) error {
			return b.Put(keysOf("wolf").tail, encodeBlock([]posting{{AppendKey(nil, Int(1)), []byte{1}}}))
		},
		func(b kv.Bucket) error {
			return b.Put([]byte(textStatsKey), textStats{docs: 2, total: []uint64{1}}.encode())
		},
		func(b kv.Bucket) error { return b.Put(keysOf("fox").tail, []byte{9}) },
	} {
		s, err := Open("", Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustText(t, s, "c", TextIndexDef{Name: "b", Fields: []string{"b"}})
		putJSON(t, s, "c", 1, `{"b":"fox"}`)
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.db.Update(func(tx kv.Tx) error { return tamper(tx.Bucket(textBucket("c", "b"))) }); err != nil {
			t.Fatal(err)
		}
		if err := s.Verify(ctx); err == nil || !strings.Contains(err.Error(), `text index "b"`) {
			t.Errorf("tampered index verified: %v", err)
		}
		s.Close()
	}
}

// TestTextCreateReopenDumpLoad: building over existing documents,
// idempotence, refused definitions, reopening a file, dump → load and
// backup.
func TestTextCreateReopenDumpLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		putJSON(t, s, "c", int64(i), fmt.Sprintf(`{"b":"doc number %d of the fox %s"}`, i, strings.Repeat("tail ", i%5)))
	}
	def := TextIndexDef{Name: "b", Fields: []string{"b"}, StopWords: true}
	var last int64
	created, err := s.CreateTextIndex(ctx, "c", def, func(done, _ int64) { last = done })
	if err != nil || !created || last != 300 {
		t.Fatalf("create: %v %v, progress %d", created, err, last)
	}
	if created, err := s.CreateTextIndex(ctx, "c", def, nil); err != nil || created {
		t.Errorf("again: %v %v", created, err)
	}
	if _, err := s.CreateTextIndex(ctx, "c", TextIndexDef{Name: "b", Fields: []string{"x"}}, nil); ErrorCode(err) != CodeIndexExists {
		t.Errorf("another definition: %v", err)
	}
	for _, bad := range []TextIndexDef{
		{Name: "", Fields: []string{"b"}},
		{Name: "x"},
		{Name: "x", Fields: []string{"a..b"}},
		{Name: "x", Fields: []string{"b"}, Language: "klingon", Stem: true},
		{Name: "x", Fields: strings.Fields(manyWords(MaxTextFields + 1))},
	} {
		if _, err := s.CreateTextIndex(ctx, "c", bad, nil); ErrorCode(err) != CodeInvalid {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	want, err := ranked(t, s, "c", TextQuery{Query: "fox tail 7"}, nil, 5)
	if err != nil || len(want) != 5 {
		t.Fatal(want, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := ranked(t, s, "c", TextQuery{Query: "fox tail 7"}, nil, 5)
	if err != nil || rankedIDs(t, got) != rankedIDs(t, want) {
		t.Errorf("after reopening: %s, want %s (%v)", rankedIDs(t, got), rankedIDs(t, want), err)
	}
	putJSON(t, s, "c", 7, `{"b":"replaced"}`)
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	want, _ = ranked(t, s, "c", TextQuery{Query: "fox tail 7 replaced"}, nil, 5)
	// Dump → load rebuilds the index (from the definition in the dump).
	m := memoryCopy(t, s)
	got, err = ranked(t, m, "c", TextQuery{Query: "fox tail 7 replaced"}, nil, 5)
	if err != nil || rankedIDs(t, got) != rankedIDs(t, want) {
		t.Errorf("after dump and load: %s, want %s (%v)", rankedIDs(t, got), rankedIDs(t, want), err)
	}
	if infos, _ := m.Collections(ctx); len(infos) != 1 || len(infos[0].TextIndexes) != 1 || !sameTextIndex(infos[0].TextIndexes[0], TextIndexDef{Name: "b", Fields: []string{"b"}, StopWords: true, Language: "english"}) {
		t.Errorf("loaded definitions: %+v", infos)
	}
	// Load replacing the collection drops its index and rebuilds it.
	var buf bytes.Buffer
	if _, err := s.Dump(ctx, &buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Load(ctx, &buf, LoadReplace, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	// A backup holds the index.
	bpath := filepath.Join(t.TempDir(), "b.db")
	if _, err := s.BackupFile(ctx, bpath); err != nil {
		t.Fatal(err)
	}
	b, err := Open(bpath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, _ = ranked(t, b, "c", TextQuery{Query: "fox tail 7 replaced"}, nil, 5)
	if rankedIDs(t, got) != rankedIDs(t, want) {
		t.Errorf("backup: %s", rankedIDs(t, got))
	}
	if err := b.Verify(ctx); err != nil {
		t.Error(err)
	}
}

// TestTextBatchedWrites: a batch's postings are applied per term, in one
// append to a term's tail when its documents come after the tail's last
// posting (freezing several full blocks at once), one by one otherwise;
// a document written twice in a batch counts once. Either way, and when
// an index is built over the documents in chunks, the index is exact.
func TestTextBatchedWrites(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		def := TextIndexDef{Name: "b", Fields: []string{"b"}}
		mustText(t, s, "c", def)
		doc := func(i int) Value {
			return Map(Field{"b", Text(fmt.Sprintf("common w%d w%d", i%7, i%13))})
		}
		var even, odd []Doc
		for i := range 2 * (3*maxBlock + 5) {
			if i%2 == 0 {
				even = append(even, Doc{ID: Int(int64(i)), Value: doc(i)})
			} else {
				odd = append(odd, Doc{ID: Int(int64(i)), Value: doc(i)})
			}
		}
		// Appends, then documents between the appended ones, then one
		// written twice in a batch (the second time without "common").
		twice := []Doc{{ID: Int(1), Value: doc(2)}, {ID: Int(1), Value: Map(Field{"b", Text("alone")})}}
		for _, batch := range [][]Doc{even, odd, twice} {
			if _, err := s.PutMany(ctx, "c", batch); err != nil {
				t.Fatal(err)
			}
			if err := s.Verify(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// A second index of the same definition, built over the documents
		// in chunks, ranks alike.
		n := textChunk + 100
		var more []Doc
		for i := len(even) + len(odd); i < n; i++ {
			more = append(more, Doc{ID: Int(int64(i)), Value: doc(i)})
		}
		if _, err := s.PutMany(ctx, "c", more); err != nil {
			t.Fatal(err)
		}
		mustText(t, s, "c", TextIndexDef{Name: "b2", Fields: []string{"b"}})
		if err := s.Verify(ctx); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"common", "w3 w5", "alone"} {
			want := bruteBM25(t, s, "c", def, q, 10)
			for _, idx := range []string{"b", "b2"} {
				got, err := ranked(t, s, "c", TextQuery{Query: q, Index: idx}, nil, 10)
				if err != nil {
					t.Fatal(err)
				}
				if rankedIDs(t, got) != want {
					t.Errorf("%s: %q: %s\nwant %s", idx, q, rankedIDs(t, got), want)
				}
			}
		}
	})
}

// TestTextPruningKeepsTopK: ranking with pruning (documents that cannot
// enter the top n are not scored) returns exactly what scoring every
// document returns — the same documents, scores and tie order — over
// randomized corpora (short documents of a few words with many equal
// scores, long ones, one word repeated, two fields searched together or
// apart), queries of one to four terms, BM25 parameters at their
// extremes, filters passing all, half or a tenth of the documents, and n
// from 1 to 40; and with the default parameters what a brute-force BM25
// returns.
func TestTextPruningKeepsTopK(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		rng := rand.New(rand.NewPCG(21, 22))
		vocab := strings.Fields("ash birch cedar dune elm fir gorse heath")
		def := TextIndexDef{Name: "t", Fields: []string{"a", "b"}}
		for c := range 4 {
			coll := fmt.Sprintf("c%d", c)
			mustText(t, s, coll, def)
			var docs []Doc
			for i := range 400 {
				words := func() string {
					var n int
					switch c {
					case 0:
						n = 1 + rng.IntN(4) // short: ties everywhere
					case 1:
						n = 5 + rng.IntN(40)
					case 2:
						w := vocab[rng.IntN(len(vocab))] // one word repeated (dl = tf)
						return strings.TrimSpace(strings.Repeat(w+" ", 1+rng.IntN(6)))
					default:
						n = rng.IntN(8)
					}
					ws := make([]string, n)
					for j := range ws {
						ws[j] = vocab[min(rng.IntN(len(vocab)), rng.IntN(len(vocab)))]
					}
					return strings.Join(ws, " ")
				}
				fields := []Field{{"a", Text(words())}}
				if c == 3 {
					fields = append(fields, Field{"b", Text(words())})
				}
				docs = append(docs, Doc{ID: Int(int64(i)), Value: Map(fields...)})
			}
			if _, err := s.PutMany(ctx, coll, docs); err != nil {
				t.Fatal(err)
			}
			k1s, bs := []float64{DefaultK1, 0, 2.5}, []float64{DefaultB, 0, 1}
			for qi := range 60 {
				terms := make([]string, 1+rng.IntN(4))
				for j := range terms {
					terms[j] = vocab[rng.IntN(len(vocab))]
				}
				if qi%10 == 0 {
					terms = append(terms, "nowhere")
				}
				q := TextQuery{Query: strings.Join(terms, " "), K1: &k1s[qi%3], B: &bs[(qi/3)%3]}
				if c == 3 && qi%2 == 1 {
					q.Fields = []string{"b"}
				}
				share := []int{1, 2, 10}[qi%3]
				var allowed func([]byte) bool
				if share > 1 {
					pass := map[string]bool{}
					for i := range 400 {
						if rng.IntN(share) == 0 {
							pass[string(AppendKey(nil, Int(int64(i))))] = true
						}
					}
					allowed = func(k []byte) bool { return pass[string(k)] }
				}
				n := []int{1, 3, 10, 40}[rng.IntN(4)]
				what := fmt.Sprintf("%s: %+v k1 %v b %v, 1/%d allowed, n %d", coll, q.Query, *q.K1, *q.B, share, n)
				var pruned, all []Ranked
				err := s.view(ctx, coll, func(r *reader) error {
					var err error
					if pruned, err = r.textRanked(q, allowed, n); err != nil {
						return err
					}
					r.exhaustiveText = true
					all, err = r.textRanked(q, allowed, n)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.EqualFunc(pruned, all, func(a, b Ranked) bool { return bytes.Equal(a.IDKey, b.IDKey) && a.Score == b.Score }) {
					t.Fatalf("%s: pruned\n%s\nwant\n%s", what, rankedIDs(t, pruned), rankedIDs(t, all))
				}
				if *q.K1 == DefaultK1 && *q.B == DefaultB && q.Fields == nil {
					if want := rankedIDs(t, bruteBM25Among(t, s, coll, def, q.Query, n, allowed)); rankedIDs(t, all) != want {
						t.Fatalf("%s: %s\nbrute force %s", what, rankedIDs(t, all), want)
					}
				}
			}
		}
	})
}
