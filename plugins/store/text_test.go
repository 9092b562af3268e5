package store

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// phraseOut is phrase_search's result.
type phraseOut struct {
	Hits []struct {
		ID        json.RawMessage `json:"id"`
		Revision  uint64          `json:"revision"`
		Doc       json.RawMessage `json:"doc"`
		Field     string          `json:"field"`
		Positions []int           `json:"positions"`
		Matches   int             `json:"matches"`
	} `json:"hits"`
	NextCursor *string `json:"next_cursor"`
	Limit      int     `json:"limit"`
}

func (p phraseOut) String() string {
	var parts []string
	for _, h := range p.Hits {
		parts = append(parts, fmt.Sprintf("%s:%s%v×%d", h.ID, h.Field, h.Positions, h.Matches))
	}
	return strings.Join(parts, " ")
}

func TestCreateTextIndex(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("store", `{"collection": "notes", "id": 1, "doc": {"title": "Solar panels", "body": "The panels were running hot"}}`)
		got := e.ok("create_text_index", `{"collection": "notes", "name": "t", "fields": ["title", "body"], "stem": true, "stop_words": true}`)
		if want := `{"created":true,"index":{"name":"t","fields":["title","body"],"language":"english","stem":true,"stop_words":true}}`; got != want {
			t.Fatalf("create_text_index = %s, want %s", got, want)
		}
		if got := e.ok("create_text_index", `{"collection": "notes", "name": "t", "fields": ["title", "body"], "language": "english", "stem": true, "stop_words": true}`); !strings.HasPrefix(got, `{"created":false`) {
			t.Errorf("again: %s", got)
		}
		e.fail("create_text_index", `{"collection": "notes", "name": "t", "fields": ["title"]}`, "index_exists")
		cols := e.ok("list_collections", `{}`)
		if !strings.Contains(cols, `"text_indexes":[{"name":"t","fields":["title","body"],"language":"english","stem":true,"stop_words":true}]`) {
			t.Errorf("list_collections: %s", cols)
		}
		// The index was built over the document already there, and stems.
		if got := okAs[phraseOut](e, "phrase_search", `{"collection": "notes", "phrase": "panel were runs"}`); got.String() != `1:body[1 3]×1` {
			t.Errorf("phrase after building: %s", got)
		}
		for _, c := range []struct{ args, path string }{
			{`{"collection": "notes", "name": "u", "fields": ["title", "a..b"]}`, "/fields/1"},
			{`{"collection": "notes", "name": "u", "fields": ["title", "title"]}`, "/fields/1"},
			{`{"collection": "notes", "name": "u", "fields": []}`, "/fields"},
			{`{"collection": "notes", "name": "u", "fields": ["x"], "language": "klingon"}`, "/language"},
			{`{"collection": "notes", "name": "", "fields": ["x"]}`, "/name"},
			{`{"collection": "no\u0000", "name": "u", "fields": ["x"]}`, "/collection"},
			{`{"collection": "notes", "name": "u", "fields": ["x"], "stemming": true}`, ""},
		} {
			t.Run(c.args, func(t *testing.T) {
				r := e.in(t).fail("create_text_index", c.args, mcpcore.KindBadParams)
				if c.path != "" && r.Error.Path != c.path {
					t.Errorf("bad_params at %q (%s), want %q", r.Error.Path, r.Error.Message, c.path)
				}
			})
		}
	})
}

func TestPhraseSearch(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("create_text_index", `{"collection": "c", "name": "b", "fields": ["b", "tags"]}`)
		e.fill("c", 6, func(i int) string {
			return []string{
				`{"b": "new york is new york", "n": 1}`,
				`{"b": "new and shiny york", "n": 2}`,
				`{"b": "york new", "tags": ["new", "york"], "n": 3}`,
				`{"b": "nothing here", "tags": ["new york"], "n": 4}`,
				`{"b": "New-York", "n": 5}`,
				`{"n": 6}`,
			}[i-1]
		})
		for _, c := range []struct{ args, want string }{
			{`{"collection": "c", "phrase": "new york"}`, `1:b[0 1]×2 4:tags[0 1]×1 5:b[0 1]×1`},
			{`{"collection": "c", "phrase": "NEW YORK", "slop": 2}`, `1:b[0 1]×2 2:b[0 3]×1 4:tags[0 1]×1 5:b[0 1]×1`},
			{`{"collection": "c", "phrase": "new york", "fields": ["b"]}`, `1:b[0 1]×2 5:b[0 1]×1`},
			{`{"collection": "c", "phrase": "new york", "filter": {"n": {"$gt": 1}}}`, `4:tags[0 1]×1 5:b[0 1]×1`},
			{`{"collection": "c", "phrase": "york new", "index": "b"}`, `3:b[0 1]×1`},
			{`{"collection": "c", "phrase": "zebra"}`, ``},
		} {
			if got := okAs[phraseOut](e, "phrase_search", c.args); got.String() != c.want {
				t.Errorf("%s: %s, want %s", c.args, got, c.want)
			}
		}
		// Pages, and a projection.
		var ids []string
		args := `{"collection": "c", "phrase": "york", "limit": 2, "select": ["n"]}`
		for {
			got := okAs[phraseOut](e, "phrase_search", args)
			if got.Limit != 2 {
				t.Fatalf("limit %d", got.Limit)
			}
			for _, h := range got.Hits {
				ids = append(ids, string(h.Doc))
			}
			if got.NextCursor == nil {
				break
			}
			args = fmt.Sprintf(`{"collection": "c", "phrase": "york", "limit": 2, "select": ["n"], "cursor": %q}`, *got.NextCursor)
		}
		if got := strings.Join(ids, ","); got != `{"n":1},{"n":2},{"n":3},{"n":4},{"n":5}` {
			t.Errorf("pages: %s", got)
		}
		if got := okAs[phraseOut](e, "phrase_search", `{"collection": "c", "phrase": "york", "limit": 100000}`); got.Limit != 10000 || len(got.Hits) != 5 {
			t.Errorf("clamped limit: %d, %d hits", got.Limit, len(got.Hits))
		}
		for _, c := range []struct{ args, path string }{
			{`{"collection": "c", "phrase": " ... "}`, "/phrase"},
			{`{"collection": "c", "phrase": "york", "slop": 101}`, "/slop"},
			{`{"collection": "c", "phrase": "york", "slop": -1}`, "/slop"},
			{`{"collection": "c", "phrase": "york", "index": "nope"}`, "/index"},
			{`{"collection": "c", "phrase": "york", "fields": ["nope"]}`, "/fields"},
			{`{"collection": "c", "phrase": "york", "cursor": "xyz"}`, "/cursor"},
			{`{"collection": "c", "phrase": "york", "filter": {"n": {"$bad": 1}}}`, "/filter/n"},
			{`{"collection": "c", "phrase": "york", "limit": 0}`, "/limit"},
			{`{"collection": "c"}`, ""},
		} {
			t.Run(c.args, func(t *testing.T) {
				r := e.in(t).fail("phrase_search", c.args, mcpcore.KindBadParams)
				if c.path != "" && !strings.HasPrefix(r.Error.Path, c.path) {
					t.Errorf("bad_params at %q (%s), want %q", r.Error.Path, r.Error.Message, c.path)
				}
			})
		}
		e.fail("phrase_search", `{"collection": "none", "phrase": "york"}`, "collection_not_found")
		e.ok("store", `{"collection": "plain", "id": 1, "doc": {"b": "york"}}`)
		e.badParams("phrase_search", `{"collection": "plain", "phrase": "york"}`, "/index")
	})
}

// TestTextSearchSource: the search tool's text source ranks by BM25 (the
// hand-computed example of the engine's TestTextBM25, as float32), and its refusals
// name the text argument's member.
func TestTextSearchSource(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.ok("create_text_index", `{"collection": "c", "name": "body", "fields": ["body"]}`)
		for i, b := range []string{"The quick brown fox", "quick, quick dog!", "lazy dog sleeps", "FOX"} {
			e.ok("store", fmt.Sprintf(`{"collection": "c", "id": %d, "doc": {"body": %q}}`, i+1, b))
		}
		var out struct {
			Hits []struct {
				ID      int `json:"id"`
				Sources struct {
					Text struct {
						Rank  int     `json:"rank"`
						Score float64 `json:"score"`
					} `json:"text"`
				} `json:"sources"`
			} `json:"hits"`
		}
		if err := json.Unmarshal([]byte(e.ok("search", `{"collection": "c", "text": {"query": "quick fox"}, "explain": true}`)), &out); err != nil {
			t.Fatal(err)
		}
		// N = 4, avgdl = 11/4, IDF = ln 2 for both terms (see TestTextBM25).
		ln2 := math.Log(2)
		want := []struct {
			id    int
			score float64
		}{
			{1, 2 * ln2 * 2.2 / (1 + 1.2*(0.25+0.75*4/2.75))},
			{4, ln2 * 2.2 / (1 + 1.2*(0.25+0.75*1/2.75))},
			{2, ln2 * 4.4 / (2 + 1.2*(0.25+0.75*3/2.75))},
		}
		if len(out.Hits) != len(want) {
			t.Fatalf("hits %+v", out.Hits)
		}
		for i, w := range want {
			h := out.Hits[i]
			if h.ID != w.id || h.Sources.Text.Rank != i+1 || float32(h.Sources.Text.Score) != float32(w.score) {
				t.Errorf("hit %d: %+v, want id %d, score %v", i, h, w.id, w.score)
			}
		}
		for _, c := range []struct{ args, path string }{
			{`{"collection": "c", "text": {"query": "!!"}}`, "/text/query"},
			{`{"collection": "c", "text": {"query": "fox", "b": 2}}`, "/text/b"},
			{`{"collection": "c", "text": {"query": "fox", "k1": -1}}`, "/text/k1"},
			{`{"collection": "c", "text": {"query": "fox", "index": "x"}}`, "/text/index"},
			{`{"collection": "c", "text": {"query": "fox", "fields": ["x"]}}`, "/text/fields"},
			{`{"collection": "c", "text": {"query": "fox", "bogus": 1}}`, "/text"},
		} {
			t.Run(c.args, func(t *testing.T) {
				r := e.in(t).fail("search", c.args, mcpcore.KindBadParams)
				if !strings.HasPrefix(r.Error.Path, c.path) {
					t.Errorf("bad_params at %q (%s), want %q", r.Error.Path, r.Error.Message, c.path)
				}
			})
		}
	})
}
