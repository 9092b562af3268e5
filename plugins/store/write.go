package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LimitWriteOps names the plugin's limit on the operations of one write
// call.
const LimitWriteOps = "write_ops"

// Limits declares the plugin's own limits, for its registration.
func Limits() []mcpcore.LimitSpec {
	return []mcpcore.LimitSpec{
		{Name: LimitWriteOps, Kind: mcpcore.LimitCount, Default: 10_000, Min: 1, Max: docstore.MaxOps, Unit: "operations",
			Meaning: "operations in one write call (one transaction); a larger batch is refused before anything is written"},
	}
}

type (
	// opArg is one operation of write: a JSON object whose op names a
	// single write tool and whose other members are that tool's arguments.
	opArg struct{ jsonArg }
	// opList is write's operations: an array (null is not none).
	opList []opArg
)

func init() {
	kinds := make([]any, 0, len(opKindNames))
	for _, k := range opKindNames {
		kinds = append(kinds, string(k))
	}
	op := &jsonschema.Schema{Type: "object", Required: []string{"op"},
		Properties: map[string]*jsonschema.Schema{"op": {Type: "string", Enum: kinds, Description: "the single write tool whose arguments the other members are"}}}
	argTypeSchemas[reflect.TypeFor[opArg]()] = op
	argTypeSchemas[reflect.TypeFor[opList]()] = &jsonschema.Schema{Type: "array", Items: op}
}

// opKind is what write knows of one kind of operation: the decoder of its
// single tool's arguments, where that tool places the engine's invalid
// argument errors, and that tool's result.
type opKind struct {
	decode func(raw json.RawMessage) (docstore.Op, error)
	place  placer
	reply  func(docstore.OpResult) (any, error)
}

// opKindNames are the operations in the order the tool's doc names them.
var opKindNames = []docstore.OpKind{docstore.OpStore, docstore.OpInsert, docstore.OpPatch, docstore.OpDelete,
	docstore.OpCompareAndSet, docstore.OpLink, docstore.OpUnlink}

// opKinds returns the operations write knows, built once at the first
// call (after every init has added its argument types' schemas).
var opKinds = sync.OnceValue(func() map[docstore.OpKind]opKind {
	return map[docstore.OpKind]opKind{
		docstore.OpStore:         {decodeOp[storeArgs](), placeAt("/doc"), writtenResult},
		docstore.OpInsert:        {decodeOp[insertArgs](), placeAt("/doc"), writtenResult},
		docstore.OpPatch:         {decodeOp[patchArgs](), placeAt("/patch"), func(r docstore.OpResult) (any, error) { return replyOf(r.Doc, docShape{}) }},
		docstore.OpDelete:        {decodeOp[deleteArgs](), placeAt("/id"), func(r docstore.OpResult) (any, error) { return deleteReply{Deleted: r.Done}, nil }},
		docstore.OpCompareAndSet: {decodeOp[casArgs](), placeAt("/doc"), writtenResult},
		docstore.OpLink:          {decodeOp[linkArgs](), fieldAt("/props"), func(r docstore.OpResult) (any, error) { return linkReply{Created: r.Done}, nil }},
		docstore.OpUnlink:        {decodeOp[unlinkArgs](), fieldAt(""), func(r docstore.OpResult) (any, error) { return unlinkReply{Removed: r.Done}, nil }},
	}
})

// writtenResult is store's, insert_auto's and compare_and_set's result.
func writtenResult(r docstore.OpResult) (any, error) { return written(r.Doc) }

// decodeOp returns the decoder of an operation given by a single tool's
// arguments, In: they are validated against that tool's input schema, as
// the core validates the tool's own calls, and converted as the tool
// converts them. A schema that does not derive is a programming error
// that the first test finds.
func decodeOp[In interface{ op() (docstore.Op, error) }]() func(json.RawMessage) (docstore.Op, error) {
	s, err := inputSchema[In]()
	if err != nil {
		panic(fmt.Sprintf("store: write: the input schema of %T: %v", *new(In), err))
	}
	d, err := mcpcore.NewArgDecoder[In](s)
	if err != nil {
		panic(fmt.Sprintf("store: write: %T: %v", *new(In), err))
	}
	return func(raw json.RawMessage) (docstore.Op, error) {
		in, err := d.Decode(raw)
		if err != nil {
			return docstore.Op{}, err
		}
		return in.op()
	}
}

func (p *Plugin) addWriteTool() {
	opKinds()
	addTool(p, &mcp.Tool{Name: "write", Description: `Apply a list of write operations in one transaction, in order, all or nothing: {"ops": [{"op": "store", "collection": "notes", "id": "n1", "doc": {...}}, {"op": "patch", "collection": "notes", "id": "n1", "patch": {...}}, {"op": "delete", "collection": "notes", "id": "n0"}, ...]}. op is store, insert_auto, patch, delete, compare_and_set, link or unlink; the other members are that tool's own arguments, validated as it validates them. Operations may span collections, and each sees the effect of those before it (a patch after a store of the same id; insert_auto ids grow in operation order). One durable commit for the whole list: far cheaper than a call per document. Returns {results: [...]}: one per operation, in order, each that tool's own result. When an operation fails, nothing is written and the call fails with the kind that tool would report (bad_params with a path like /ops/3/doc, not_found, unique_violation, schema_violation, revision_mismatch, ...) and op, the failed operation's index (from 0). At most write_ops operations (a limit of the plugin, 10000 by default; see mcpkit://info): more are refused with kind limit before anything is written.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)}}, p.write)
}

type writeArgs struct {
	Ops opList `json:"ops" jsonschema:"the operations, applied in order: each {op, ...the arguments of the tool op names}"`
}

// writeArgsFull is writeArgs without its own decoder: what the host's
// general path (validation against the input schema, strict decoding)
// decodes.
type writeArgsFull writeArgs

// writeArgsDecoder is the host's general path for write's arguments.
var writeArgsDecoder = sync.OnceValue(func() *mcpcore.ArgDecoder[writeArgsFull] {
	s, err := inputSchema[writeArgs]()
	if err != nil {
		panic(fmt.Sprintf("store: write: the input schema: %v", err)) // a programming error, caught by every test
	}
	d, err := mcpcore.NewArgDecoder[writeArgsFull](s)
	if err != nil {
		panic(fmt.Sprintf("store: write: %v", err))
	}
	return d
})

// DecodeArguments implements fastpath.ArgumentsDecoder. Arguments of the
// plain form {"ops": [...]} whose every operation is an object with one
// op member, a plain string naming an operation, are taken apart in one
// scan (the host has checked that raw is valid JSON), each operation kept
// as its JSON for decodeWriteOp, which validates it as its tool's
// arguments: the input schema asks nothing more of them. That spares a
// large batch the general path's tree of every document and its
// validation. Anything else takes the general path, which says what is
// wrong.
func (a *writeArgs) DecodeArguments(raw json.RawMessage) error {
	if ops, ok := plainOps(raw); ok {
		a.Ops = ops
		return nil
	}
	in, err := writeArgsDecoder().Decode(raw)
	a.Ops = in.Ops
	return err
}

// plainOps returns the operations of write's arguments in the plain form
// DecodeArguments describes, as a copy of their JSON.
func plainOps(raw []byte) (opList, bool) {
	var list []byte
	m := jsonscan.NewMembers(raw)
	for m.Next() {
		if !jsonscan.KeyIs(m.Key, "ops") || list != nil {
			return nil, false
		}
		list = m.Value
	}
	if m.End() < 0 || list == nil {
		return nil, false
	}
	list = bytes.Clone(list)
	ops := opList{}
	e := jsonscan.NewElements(list)
	for e.Next() {
		if _, ok := plainOpName(e.Value); !ok {
			return nil, false
		}
		ops = append(ops, opArg{jsonArg{e.Value}})
	}
	return ops, e.End() >= 0
}

// plainOpName returns the op of an operation, the JSON object raw, when
// it has one op member, a plain string naming an operation write knows.
func plainOpName(raw []byte) (docstore.OpKind, bool) {
	var name []byte
	m := jsonscan.NewMembers(raw)
	for m.Next() {
		if jsonscan.KeyIs(m.Key, "op") {
			if name != nil {
				return "", false
			}
			name = m.Value
		}
	}
	s, ok := plainString(name)
	if m.End() < 0 || !ok {
		return "", false
	}
	_, known := opKinds()[docstore.OpKind(s)]
	return docstore.OpKind(s), known
}

// writeResults is write's result: one result per operation, in order.
type writeResults struct {
	Results []any `json:"results"`
}

func (p *Plugin) write(ctx context.Context, _ *mcp.CallToolRequest, in writeArgs) (any, error) {
	if limit := p.host.Limit(LimitWriteOps); int64(len(in.Ops)) > limit {
		return nil, &mcpcore.LimitError{Limit: LimitWriteOps, Max: limit, Actual: int64(len(in.Ops)),
			Detail: "too many operations for one write; nothing was written: split them into several calls"}
	}
	ops := make([]docstore.Op, len(in.Ops))
	for i, raw := range in.Ops {
		op, err := decodeWriteOp(raw.raw)
		if err != nil {
			return nil, opFailed(i, "", err, nil)
		}
		ops[i] = op
	}
	res, err := p.db.Apply(ctx, ops)
	if err != nil {
		var oe *docstore.OpError
		if !errors.As(err, &oe) {
			return nil, engineFailure(err, placeAt("/ops"))
		}
		op := ops[oe.Index]
		return nil, opFailed(oe.Index, op.Kind, oe.Err, opKinds()[op.Kind].place)
	}
	out := writeResults{Results: make([]any, len(res))}
	for i, r := range res {
		if out.Results[i], err = opKinds()[ops[i].Kind].reply(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeWriteOp decodes one operation: its op, then the other members as
// that tool's arguments (bad_params paths relative to the operation). An
// operation in the plain form of a bulk write (plainWrite) is converted
// directly, without the map, the JSON and the validation of the general
// path, which cost more than writing the document does.
func decodeWriteOp(raw json.RawMessage) (docstore.Op, error) {
	if args, ok := plainWrite(raw); ok {
		return args.op()
	}
	return decodeOpFully(raw)
}

// decodeOpFully is decodeWriteOp's general path: the operation's members
// but op, validated and decoded as the arguments of the tool op names.
func decodeOpFully(raw json.RawMessage) (docstore.Op, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return docstore.Op{}, &mcpcore.ParamError{Reason: "an operation is a JSON object"}
	}
	var name string
	if err := json.Unmarshal(members["op"], &name); err != nil {
		return docstore.Op{}, &mcpcore.ParamError{Path: "/op", Reason: "op is one of store, insert_auto, patch, delete, compare_and_set, link, unlink"}
	}
	kind, ok := opKinds()[docstore.OpKind(name)]
	if !ok {
		return docstore.Op{}, &mcpcore.ParamError{Path: "/op", Reason: fmt.Sprintf("%q is not one of store, insert_auto, patch, delete, compare_and_set, link, unlink", name)}
	}
	delete(members, "op")
	args, err := json.Marshal(members)
	if err != nil {
		return docstore.Op{}, err
	}
	return kind.decode(args)
}

// opArgs are a single write tool's arguments, which convert into the
// engine's operation.
type opArgs interface{ op() (docstore.Op, error) }

// maxPlainIDDigits bounds an integer id in plainWrite: longer ones, which
// no int64 holds, take the general path, which says what is wrong.
const maxPlainIDDigits = 19

// plainWrite returns the arguments of an operation in the form an agent
// sends in bulk: a store {op, collection, id, doc} or an insert_auto {op,
// collection, doc}, each member once, op and collection plain strings
// (printable ASCII without escapes, which is what their schemas count),
// collection 1 to 256 characters, id a plain string or an integer
// literal, doc an object. The tool's input schema accepts every such
// operation (raw is valid JSON: the host has checked the call's
// arguments), so it needs no validation, and converting its arguments as
// the tool does gives what the general path gives. ok is false for every
// other form (a repeated member, an escape, another op, ...), which
// decodeWriteOp decodes in full.
func plainWrite(raw []byte) (args opArgs, ok bool) {
	var kind, coll, id, doc []byte
	m := jsonscan.NewMembers(raw)
	for m.Next() {
		var slot *[]byte
		switch {
		case jsonscan.KeyIs(m.Key, "op"):
			slot = &kind
		case jsonscan.KeyIs(m.Key, "collection"):
			slot = &coll
		case jsonscan.KeyIs(m.Key, "id"):
			slot = &id
		case jsonscan.KeyIs(m.Key, "doc"):
			slot = &doc
		default:
			return nil, false
		}
		if *slot != nil {
			return nil, false
		}
		*slot = m.Value
	}
	if m.End() < 0 || kind == nil || doc == nil || doc[0] != '{' {
		return nil, false
	}
	name, okName := plainString(coll)
	op, okOp := plainString(kind)
	if !okName || !okOp || len(name) == 0 || len(name) > maxNameChars {
		return nil, false
	}
	switch docstore.OpKind(op) {
	case docstore.OpStore:
		if !plainID(id) {
			return nil, false
		}
		return storeArgs{Collection: collectionName(name), ID: idArg{jsonArg{id}}, Doc: docArg{jsonArg{doc}}}, true
	case docstore.OpInsert:
		if id != nil {
			return nil, false
		}
		return insertArgs{Collection: collectionName(name), Doc: docArg{jsonArg{doc}}}, true
	}
	return nil, false
}

// plainString returns the content of v, a JSON value, when it is a plain
// string (jsonscan.PlainString).
func plainString(v []byte) (string, bool) {
	s, end := jsonscan.PlainString(v, 0)
	return string(s), end == len(v) && end > 0
}

// plainID reports whether v, a JSON value, is a plain string or an
// integer literal of at most maxPlainIDDigits digits.
func plainID(v []byte) bool {
	if _, ok := plainString(v); ok {
		return true
	}
	digits := strings.TrimPrefix(string(v), "-")
	if len(digits) == 0 || len(digits) > maxPlainIDDigits || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	return strings.Trim(digits, "0123456789") == ""
}

// opFailure is the structuredContent of a write whose operation failed:
// the core's error reply, with the operation's index and, for a
// revision_mismatch, the document's current state (as compare_and_set
// reports it).
type opFailure struct {
	Error opFailureDetail `json:"error"`
}

type opFailureDetail struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Path    string `json:"path,omitempty"`
	// Op is the failed operation's index in ops, from 0.
	Op       int     `json:"op"`
	Revision *uint64 `json:"revision,omitempty"`
	Exists   *bool   `json:"exists,omitempty"`
}

// opFailed is write's error for operation i (of kind op, when known)
// failing with err: the kind the operation's tool reports (an engine
// error placed by place), its path under /ops/i, and i. An error that is
// neither an argument's nor the engine's (a cancelled call) is returned
// as it is.
func opFailed(i int, op docstore.OpKind, err error, place placer) error {
	at := "/ops/" + strconv.Itoa(i)
	d := opFailureDetail{Op: i}
	var pe *mcpcore.ParamError
	var e *docstore.Error
	switch {
	case errors.As(err, &pe):
		d.Kind, d.Path = mcpcore.KindBadParams, at+pe.Path
		d.Message = (&mcpcore.ParamError{Path: d.Path, Reason: pe.Reason}).Error()
		return mcpcore.ErrorResult(opFailure{Error: d})
	case !errors.As(err, &e):
		return err
	case e.Code == docstore.CodeInvalid:
		d.Kind, d.Path = mcpcore.KindBadParams, at+place(e)
		d.Message = (&mcpcore.ParamError{Path: d.Path, Reason: err.Error()}).Error()
		return mcpcore.ErrorResult(opFailure{Error: d})
	case e.Code == docstore.CodeClosed:
		return &mcpcore.KindError{Kind: mcpcore.KindUnavailable, Err: err}
	case e.Code == docstore.CodeRevisionMismatch:
		d.Revision, d.Exists = &e.Revision, &e.Exists
	}
	d.Kind = string(e.Code)
	d.Message = fmt.Sprintf("operation %d (%s): %v", i, op, err)
	return mcpcore.ErrorResult(opFailure{Error: d})
}
