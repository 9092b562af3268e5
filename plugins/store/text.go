package store

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The argument types of the text tools, with their JSON Schemas (added to
// argTypeSchemas).
type (
	// textLanguage is a text index's language.
	textLanguage string
	// slop is a phrase's slop.
	slop int
)

func init() {
	langs := make([]any, len(docstore.TextLanguages))
	for i, l := range docstore.TextLanguages {
		langs[i] = l
	}
	for t, s := range map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[textLanguage](): {Type: "string", Enum: langs},
		reflect.TypeFor[slop]():         {Type: "integer", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(float64(docstore.MaxSlop))},
	} {
		argTypeSchemas[t] = s
	}
}

// addTextTools adds create_text_index and phrase_search.
func (p *Plugin) addTextTools() {
	addTool(p, &mcp.Tool{Name: "create_text_index", Description: fmt.Sprintf(`Create a full-text index on one or more text fields (dotted paths; text inside arrays is indexed too, each element apart). Text is split into words by Unicode word segmentation, normalized (NFKC) and lowercased; stem reduces words to their Snowball stem ("running" → "run") and stop_words drops the language's stop words ("the", "of"), both in language (default english). Builds it over the existing documents in one transaction (sending progress notifications when the request has a progress token); every later write keeps it exact. Returns {created, index: {name, fields, language, stem, stop_words}}: created is false when an identical index exists; a text index of that name with another definition fails with index_exists. The search tool ranks by it with BM25 (its text source: {"query": "solar panels"}); phrase_search finds exact phrases in it. Example: {"collection": "notes", "name": "body", "fields": ["title", "body"], "stem": true, "stop_words": true}. At most %d fields; words longer than %d bytes are not indexed.`, docstore.MaxTextFields, docstore.MaxTermBytes),
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)}}, p.createTextIndex, mcpcore.ToolOptions{Timeout: buildTimeout})
	addTool(p, &mcp.Tool{Name: "phrase_search", Description: fmt.Sprintf(`Find the documents of a collection whose text (in a text index, see create_text_index) holds a phrase: its words in order, next to each other, in one field (and one element of an array field). The phrase is analyzed like the indexed text (lowercased; stemmed and stop words dropped when the index does, a dropped stop word still counting as a word between the others). slop allows that many extra words in all between the phrase's words (0, the default: the exact phrase; at most %d); the order stays. A filter narrows the documents. Example: {"collection": "notes", "phrase": "solar panel", "slop": 1, "filter": {"lang": "en"}, "select": ["title"]}. Returns {hits: [{id, doc, field, positions, matches}], next_cursor, limit} (no revision: get returns it), in id order: field is the first field where the phrase occurs, positions the word positions of its first occurrence there (words counted from 0, stop words included), matches how many times it occurs in all the fields searched. Pass next_cursor back (same query) for the next page; null after the last. limit defaults to 100 and is clamped to 10000.`, docstore.MaxSlop),
		Annotations: readOnly()}, p.phraseSearch)
}

type createTextIndexArgs struct {
	Collection collectionName `json:"collection"`
	Name       indexName      `json:"name"`
	Fields     indexFields    `json:"fields" jsonschema:"the indexed fields, dotted paths to text values or arrays of texts (\"title\", \"comments.body\")"`
	Language   textLanguage   `json:"language,omitempty" jsonschema:"the language of stemming and stop words (default: english)"`
	Stem       bool           `json:"stem,omitempty" jsonschema:"reduce words to their Snowball stem, so that \"runs\" and \"running\" match \"run\""`
	StopWords  bool           `json:"stop_words,omitempty" jsonschema:"drop the language's stop words (\"the\", \"of\", ...) from the index and from queries"`
}

// textIndexReply is create_text_index's result.
type textIndexReply struct {
	Created bool                  `json:"created"`
	Index   docstore.TextIndexDef `json:"index"`
}

func (p *Plugin) createTextIndex(ctx context.Context, req *mcp.CallToolRequest, in createTextIndexArgs) (any, error) {
	def := docstore.TextIndexDef{Name: string(in.Name), Fields: paths(in.Fields), Language: string(in.Language), Stem: in.Stem, StopWords: in.StopWords}
	created, err := p.db.CreateTextIndex(ctx, string(in.Collection), def, progressOf(ctx, p.host, req, "documents indexed"))
	if err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			switch {
			case isNameError(e) && e.Field == "index":
				return "/name"
			case isNameError(e):
				return "/collection"
			case lastIndex(def.Fields, e.Field) >= 0:
				return fmt.Sprintf("/fields/%d", lastIndex(def.Fields, e.Field)) // a field named twice is at fault where repeated
			}
			return "/fields" // too many (an unknown language is refused by the input schema)
		})
	}
	if def.Language == "" && (def.Stem || def.StopWords) {
		def.Language = "english"
	}
	return textIndexReply{Created: created, Index: def}, nil
}

type phraseSearchArgs struct {
	Collection collectionName `json:"collection"`
	Phrase     string         `json:"phrase" jsonschema:"the words to find, in this order"`
	Index      indexName      `json:"index,omitempty" jsonschema:"the text index (default: the collection's only text index)"`
	Fields     fieldList      `json:"fields,omitempty" jsonschema:"search only these of the index's fields (default: all)"`
	Slop       slop           `json:"slop,omitempty" jsonschema:"how many extra words may stand between the phrase's words, in all (default 0: the exact phrase)"`
	Filter     filterArg      `json:"filter,omitempty"`
	Select     []fieldPath    `json:"select,omitempty" jsonschema:"dotted paths to keep in each document, vectors included (default: the whole document, vectors left out; []: no document, the ids only)"`
	Vectors    vectorsArg     `json:"vectors,omitempty"`
	Limit      pageLimit      `json:"limit,omitempty" jsonschema:"the page size: default 100; larger than 10000 is clamped to 10000"`
	Cursor     cursorArg      `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page, to continue after it"`
}

// phraseHit is one document of phrase_search's result.
type phraseHit struct {
	hitDoc
	// Field is the first field where the phrase occurs.
	Field string `json:"field"`
	// Positions are the word positions of its first occurrence there.
	Positions []int `json:"positions"`
	// Matches counts its occurrences in the fields searched.
	Matches int `json:"matches"`
}

// phraseReply is phrase_search's result.
type phraseReply struct {
	Hits []phraseHit `json:"hits"`
	// NextCursor continues after this page; null after the last.
	NextCursor *string `json:"next_cursor"`
	// Limit is the page size used (the default, or the request clamped).
	Limit int `json:"limit"`
}

func (p *Plugin) phraseSearch(ctx context.Context, _ *mcp.CallToolRequest, in phraseSearchArgs) (any, error) {
	f, err := in.Filter.filter("/filter")
	if err != nil {
		return nil, err
	}
	limit := min(int(in.Limit), docstore.MaxLimit)
	if limit == 0 {
		limit = docstore.DefaultLimit
	}
	q := docstore.PhraseQuery{Phrase: in.Phrase, Index: string(in.Index), Fields: paths(in.Fields), Slop: int(in.Slop),
		Filter: f, Limit: limit, Cursor: string(in.Cursor), Select: paths(in.Select)}
	res, err := p.db.PhraseSearch(ctx, string(in.Collection), q)
	if err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			switch e.Field {
			case "phrase", "index", "fields", "slop", "cursor":
				return "/" + e.Field
			}
			return "/collection"
		})
	}
	out := phraseReply{Hits: make([]phraseHit, 0, len(res.Hits)), Limit: limit}
	shape := shapeOf(in.Select, in.Vectors)
	for _, h := range res.Hits {
		r, err := replyOf(h.Doc, shape)
		if err != nil {
			return nil, err
		}
		out.Hits = append(out.Hits, phraseHit{hitDoc: r.hit(), Field: h.Field, Positions: h.Positions, Matches: h.Matches})
	}
	if res.Next != "" {
		out.NextCursor = &res.Next
	}
	return out, nil
}
