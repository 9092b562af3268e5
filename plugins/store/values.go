package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// jsonArg is a tool argument kept as the JSON the client sent, for the
// handler to convert with docstore.FromJSON: ints stay ints and floats
// floats, which a map[string]any (every number a float64) would lose.
type jsonArg struct{ raw json.RawMessage }

// UnmarshalJSON keeps a copy of the argument's JSON (null included, so
// that a present null is told apart from an absent argument).
func (a *jsonArg) UnmarshalJSON(b []byte) error {
	a.raw = bytes.Clone(b)
	return nil
}

// present reports whether the argument was given (null included).
func (a jsonArg) present() bool { return a.raw != nil }

// value converts the argument, at JSON Pointer path, into a Value. A value
// nested too deeply is refused at path, in a few words: the pointer to its
// depth would be hundreds of segments long.
func (a jsonArg) value(path string) (docstore.Value, error) {
	v, err := docstore.FromJSON(a.raw)
	var ve *docstore.ValueError
	switch {
	case errors.Is(err, docstore.ErrTooDeep):
		return docstore.Value{}, &mcpcore.ParamError{Path: path, Reason: fmt.Sprintf("nested more than %d levels deep", docstore.MaxDepth)}
	case errors.As(err, &ve):
		return docstore.Value{}, &mcpcore.ParamError{Path: path + ve.Path, Reason: ve.Err.Error()}
	case err != nil:
		return docstore.Value{}, &mcpcore.ParamError{Path: path, Reason: err.Error()}
	}
	return v, nil
}

// The argument types of the tools. Each has its JSON Schema in
// argTypeSchemas; a field's jsonschema tag gives its description.
type (
	// idArg is a document id: a JSON string or integer.
	idArg struct{ jsonArg }
	// docArg is a document or a patch: a JSON object.
	docArg struct{ jsonArg }
	// filterArg is a filter: a JSON object (see filterHelp).
	filterArg struct{ jsonArg }
	// valueArg is any JSON value.
	valueArg struct{ jsonArg }
	// collectionName names a collection.
	collectionName string
	// indexName names an index.
	indexName string
	// fieldPath is a dotted path of field names, "address.city".
	fieldPath string
	// indexFields are an index's fields, at least one.
	indexFields []fieldPath
	// compoundFields are a compound index's fields, at least two.
	compoundFields []fieldPath
	// pageLimit is a page size, at least 1 (clamped to docstore.MaxLimit).
	pageLimit int
	// cursorArg is the next_cursor of a previous page: never empty (the
	// first page is asked for by leaving cursor out).
	cursorArg string
	// filePathArg is a file under files_dir: never empty.
	filePathArg string
	// fieldList restricts a query to some fields: at least one, since none
	// would select nothing (null, like leaving it out, means all).
	fieldList []fieldPath
	// collectionList names some collections: at least one, since none
	// would select nothing.
	collectionList []collectionName
	// fieldType is a schema field's type.
	fieldType string
	// loadMode is load's mode.
	loadMode string
)

// revisionArg is a document revision: a non-negative integer.
type revisionArg struct{ jsonArg }

// revision reads the revision at JSON Pointer path (the input schema has
// checked that it is a non-negative integer, but 1.0 and 1e3 pass it).
func (a revisionArg) revision(path string) (uint64, error) {
	n, err := strconv.ParseUint(string(a.raw), 10, 64)
	if err != nil {
		return 0, &mcpcore.ParamError{Path: path, Reason: fmt.Sprintf("%s is not a revision (a non-negative integer written without fraction or exponent)", a.raw)}
	}
	return n, nil
}

// docHelp describes a document argument.
const docHelp = `the document, a JSON object in the store's typed form: integers stay ints and numbers with a fraction or exponent are floats (1 vs 1.0); {"$vector": [0.1, 0.2]} is a float32 vector, {"$bytes": "<standard base64>"} is bytes, {"$map": {...}} is a map taken literally`

// filterHelp describes a filter argument.
const filterHelp = `a filter, MongoDB-style: {"status": "open"} is equality; {"age": {"$gte": 18, "$lt": 65}} ANDs the operators of a field; several fields AND; "a.b" reaches into nested objects; {"$or": [{...}, {...}]}, {"$and": [...]}, {"$not": {...}}. Field operators: $eq $ne $gt $gte $lt $lte $in $nin $exists $contains (array element or substring) $not. Comparison is typed: numbers compare across int and float, text never equals a number, a range between different types is false; {"tags": "x"} does not match an array, use $contains. {} matches every document`

// The names of schema field types and load modes.
var (
	fieldTypes = []any{docstore.TypeAny, "bool", "int", "float", "text", "bytes", "vector", "array", "map"}
	loadModes  = []any{string(docstore.LoadRefuse), string(docstore.LoadReplace), string(docstore.LoadMerge)}
)

// maxNameChars is the most characters nameSchema allows.
const maxNameChars = 256

// nameSchema is a collection's or an index's name: 1 to 256 bytes without
// NUL (the length in characters is checked here, in bytes by the engine).
func nameSchema(description string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(maxNameChars), Description: description}
}

// listSchema is an optional list that restricts a query to its items: null
// (the same as leaving it out) or at least one item.
func listSchema(items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Types: []string{"null", "array"}, MinItems: jsonschema.Ptr(1), Items: items}
}

func fieldsSchema(min int) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", MinItems: jsonschema.Ptr(min), Items: &jsonschema.Schema{Type: "string", MinLength: jsonschema.Ptr(1)}}
}

// argTypeSchemas are the JSON Schemas of the argument types, with the
// description an argument of the type has unless its field's jsonschema
// tag gives another.
var argTypeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[idArg]():          {Types: []string{"string", "integer"}, Description: "the document's id: a JSON string (1 to 1024 bytes) or integer"},
	reflect.TypeFor[docArg]():         {Type: "object", Description: docHelp},
	reflect.TypeFor[filterArg]():      {Type: "object", Description: filterHelp},
	reflect.TypeFor[valueArg]():       {},
	reflect.TypeFor[revisionArg]():    {Type: "integer", Minimum: jsonschema.Ptr(0.0)},
	reflect.TypeFor[collectionName](): nameSchema("the collection: 1 to 256 bytes without NUL (a write creates it)"),
	reflect.TypeFor[indexName]():      nameSchema("the index's name: 1 to 256 bytes without NUL"),
	reflect.TypeFor[fieldPath]():      {Type: "string", MinLength: jsonschema.Ptr(1)},
	reflect.TypeFor[indexFields]():    fieldsSchema(1),
	reflect.TypeFor[compoundFields](): fieldsSchema(2),
	reflect.TypeFor[pageLimit]():      {Type: "integer", Minimum: jsonschema.Ptr(1.0)},
	reflect.TypeFor[cursorArg]():      {Type: "string", MinLength: jsonschema.Ptr(1)},
	reflect.TypeFor[filePathArg]():    {Type: "string", MinLength: jsonschema.Ptr(1)},
	reflect.TypeFor[fieldList]():      listSchema(&jsonschema.Schema{Type: "string", MinLength: jsonschema.Ptr(1)}),
	reflect.TypeFor[collectionList](): listSchema(nameSchema("a collection: 1 to 256 bytes without NUL")),
	reflect.TypeFor[fieldType]():      {Type: "string", Enum: fieldTypes},
	reflect.TypeFor[loadMode]():       {Type: "string", Enum: loadModes},
	reflect.TypeFor[vectorsArg]():     {Type: "boolean", Description: vectorsHelp},
}

// addTool adds a tool whose input schema is derived from In with the
// argument types described by argTypeSchemas. A schema that cannot be
// derived (a programming error) fails Attach.
func addTool[In any](p *Plugin, t *mcp.Tool, fn mcpcore.ToolFunc[In], opts ...mcpcore.ToolOptions) {
	s, err := inputSchema[In]()
	if err != nil {
		p.setupErrs = append(p.setupErrs, fmt.Errorf("tool %s: input schema: %w", t.Name, err))
		return
	}
	tool := *t
	tool.InputSchema = s
	mcpcore.AddTool(p.host, &tool, instrument(p, t.Name, storageKind(fn)), opts...)
}

// inputSchema is the input schema of a tool whose arguments are In.
func inputSchema[In any]() (*jsonschema.Schema, error) {
	return jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: argTypeSchemas})
}

// filter parses the filter argument at path; an absent filter (or null)
// is nil, which selects every document.
func (a filterArg) filter(path string) (*docstore.Filter, error) {
	if !a.present() {
		return nil, nil
	}
	v, err := a.value(path)
	if err != nil {
		return nil, err
	}
	f, err := docstore.ParseFilter(v)
	var fe *docstore.FilterError
	if errors.As(err, &fe) {
		reason := fe.Reason
		if fe.Op != "" {
			reason = fe.Op + ": " + reason
		}
		return nil, &mcpcore.ParamError{Path: path + fe.Path, Reason: reason}
	}
	return f, err
}

// docReply is a stored document as the tools return it: its id, its
// revision and, where the tool returns it, its value, in the engine's JSON
// form.
type docReply struct {
	ID       json.RawMessage `json:"id"`
	Revision uint64          `json:"revision"`
	Doc      json.RawMessage `json:"doc,omitempty"`
}

// hitDoc is a document as a hit of a search returns it (search,
// phrase_search, geo): its id and, unless select is [], its value. A hit
// carries no revision, which a tool that reads documents by key or in
// order (get, page, join, with_docs) returns: an agent reads hits to
// choose among them, and one that goes on to compare_and_set reads the
// document it chose (as in Elasticsearch, whose hits carry no version
// unless asked). On short documents the revision is a tenth of a hit.
type hitDoc struct {
	ID  json.RawMessage `json:"id"`
	Doc json.RawMessage `json:"doc,omitempty"`
}

// hit returns d as a hit returns it.
func (d docReply) hit() hitDoc { return hitDoc{ID: d.ID, Doc: d.Doc} }

// score is a score as search returns it (fused, MMR, or a source's): in
// the shortest form that reads back as the same float32, within float32's
// normal range. Scores only order hits (the order of the hits is the
// ranking), and float32's seven digits tell apart every two ranks' RRF
// scores up to the 10,000th at the default k; MMR and vector scores are
// float32 arithmetic, whose float64 form (0.4000000059604645) is noise. An RRF score 1/61 is 0.016393442, not 0.01639344262295082.
type score float64

// MarshalJSON writes s as float32 (float64 beyond float32's normal range).
func (s score) MarshalJSON() ([]byte, error) {
	if a := math.Abs(float64(s)); a == 0 || (a >= 0x1p-126 && a <= math.MaxFloat32) {
		return json.Marshal(float32(s))
	}
	return json.Marshal(float64(s))
}

// docShape is how a tool returns documents. By default a document comes
// whole but for its vectors: an embedding is hundreds of numbers that an
// agent pays for on every hit and rarely reads, so each is left in place as
// an omitted-vector marker.
type docShape struct {
	// vectors returns vector values in full (the vectors argument, or a
	// select, which returns exactly the paths it names).
	vectors bool
	// idsOnly leaves the document out: its id and revision only, a hit's
	// id only (select [], and the single writes' replies).
	idsOnly bool
}

// shapeOf is the shape a tool's select and vectors arguments ask for.
func shapeOf(sel []fieldPath, vectors vectorsArg) docShape {
	return docShape{vectors: bool(vectors) || sel != nil, idsOnly: sel != nil && len(sel) == 0}
}

// replyOf returns d as a docReply in shape.
func replyOf(d docstore.Doc, shape docShape) (docReply, error) {
	id, err := docstore.ToJSON(d.ID)
	if err != nil {
		return docReply{}, fmt.Errorf("write a document id as JSON: %w", err)
	}
	r := docReply{ID: id, Revision: d.Revision}
	if shape.idsOnly {
		return r, nil
	}
	v := d.Value
	if !shape.vectors {
		v, _ = omitVectors(v)
	}
	if r.Doc, err = docstore.ToJSON(v); err != nil {
		return docReply{}, fmt.Errorf("write document %s as JSON: %w", id, err)
	}
	return r, nil
}

// The omitted-vector marker, {"$omitted": "vector", "dims": 384}: what a
// returned document holds in place of a vector that was left out. A write
// refuses a document holding one (refuseOmitted), so that a document read
// and stored back cannot erase the vector it stood for.
const (
	omittedKey  = "$omitted"
	omittedDims = "dims"
)

// vectorsArg is the vectors argument of the tools that return documents.
type vectorsArg bool

// vectorsHelp describes the vectors argument.
const vectorsHelp = `return vectors in full (default: each left out, in place, as {"$omitted": "vector", "dims": n}, which writes refuse)`

// omitVectors returns v with each vector, at any depth, replaced by its
// marker, and whether there was one; the maps and arrays that hold none
// are shared, not copied.
func omitVectors(v docstore.Value) (docstore.Value, bool) {
	switch v.Kind() {
	case docstore.KindVector:
		x, _ := v.Vector()
		return docstore.Map(docstore.Field{Key: omittedKey, Value: docstore.Text("vector")},
			docstore.Field{Key: omittedDims, Value: docstore.Int(int64(len(x)))}), true
	case docstore.KindArray:
		items, _ := v.Array()
		var out []docstore.Value // a copy of items from the first change
		for i, item := range items {
			if w, changed := omitVectors(item); changed {
				if out == nil {
					out = slices.Clone(items)
				}
				out[i] = w
			}
		}
		if out == nil {
			return v, false
		}
		return docstore.Array(out...), true
	case docstore.KindMap:
		fields, _ := v.Fields()
		var out []docstore.Field
		for i, f := range fields {
			if w, changed := omitVectors(f.Value); changed {
				if out == nil {
					out = slices.Clone(fields)
				}
				out[i].Value = w
			}
		}
		if out == nil {
			return v, false
		}
		return docstore.Map(out...), true
	}
	return v, false
}

// refuseOmitted fails with bad_params at the JSON Pointer of the first
// omitted-vector marker in v, the argument at path: storing it would
// replace the stored vector with the marker. Any map with a "$omitted"
// member counts, so that a marker an agent has edited is caught too.
func refuseOmitted(v docstore.Value, path, effect string) error {
	at, found := omittedAt(v)
	if !found {
		return nil
	}
	return &mcpcore.ParamError{Path: path + at, Reason: `holds {"$omitted": ...}, the marker of a vector left out of a returned document, not the vector: ` + effect +
		`. Read the document again with "vectors": true (or a select naming this field) and use that, or leave the field out (a patch keeps the fields it does not name)`}
}

// omittedAt returns the JSON Pointer, relative to v, of the first map in v
// with a "$omitted" member.
func omittedAt(v docstore.Value) (string, bool) {
	switch v.Kind() {
	case docstore.KindArray:
		items, _ := v.Array()
		for i, item := range items {
			if at, found := omittedAt(item); found {
				return "/" + strconv.Itoa(i) + at, true
			}
		}
	case docstore.KindMap:
		fields, _ := v.Fields()
		for _, f := range fields {
			if f.Key == omittedKey {
				return "", true
			}
		}
		for _, f := range fields {
			if at, found := omittedAt(f.Value); found {
				return "/" + pointerToken.Replace(f.Key) + at, true
			}
		}
	}
	return "", false
}

// pointerToken escapes a JSON Pointer reference token (RFC 6901).
var pointerToken = strings.NewReplacer("~", "~0", "/", "~1")

// value converts a document or a patch, refusing an omitted-vector marker.
func (a docArg) value(path string) (docstore.Value, error) {
	return a.refusingOmitted(path, "writing it would erase the stored vector")
}

// value converts a value to compare with (compare_and_set's
// expect_value), refusing an omitted-vector marker: it would never equal
// the stored vector.
func (a valueArg) value(path string) (docstore.Value, error) {
	return a.refusingOmitted(path, "it never equals the stored vector")
}

// refusingOmitted converts the argument at path and refuses an
// omitted-vector marker in it, saying what the marker would do.
func (a jsonArg) refusingOmitted(path, effect string) (docstore.Value, error) {
	v, err := a.value(path)
	if err != nil {
		return v, err
	}
	return v, refuseOmitted(v, path, effect)
}

// planReply is how a query found its documents, returned with explain.
type planReply struct {
	// Index is the secondary index used; null for a scan in id order.
	Index *string `json:"index"`
	// Ranges is how many key ranges of the index were read.
	Ranges int `json:"ranges"`
	// Examined counts the documents read and tested against the filter.
	Examined int `json:"examined"`
}

// planOf returns p as a planReply when explain is set, nil otherwise.
func planOf(p docstore.Plan, explain bool) *planReply {
	if !explain {
		return nil
	}
	r := &planReply{Ranges: p.Ranges, Examined: p.Examined}
	if p.Index != "" {
		r.Index = &p.Index
	}
	return r
}
