package store

import (
	"context"
	"encoding/json"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeReply is the result of a write: the document's id and new revision.
type writeReply struct {
	ID       json.RawMessage `json:"id"`
	Revision uint64          `json:"revision"`
}

func (p *Plugin) addDocumentTools() {
	addTool(p, &mcp.Tool{Name: "store", Description: "Store a document under an id, inserting it or replacing the whole document there. Returns {id, revision}: revisions are store-wide and grow with every write. Fails with schema_violation or unique_violation when the collection's schema or a unique index refuses it.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)}}, p.store)
	addTool(p, &mcp.Tool{Name: "insert_auto", Description: "Insert a document under a new integer id, larger than every id insert_auto gave before in the collection (never reused, even after a delete). Returns {id, revision}.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)}}, p.insertAuto)
	addTool(p, &mcp.Tool{Name: "get", Description: "Get one document by id. Returns {id, revision, doc}; fails with not_found when there is none, collection_not_found when the collection does not exist.",
		Annotations: readOnly()}, p.get)
	addTool(p, &mcp.Tool{Name: "patch", Description: `Merge a patch into an existing document, as JSON Merge Patch (RFC 7386): a field set to null is deleted, an object merges into an object field recursively, any other value (arrays, vectors, bytes included) replaces the field. Returns {id, revision, doc} with the merged document; fails with not_found when the document does not exist.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)}}, p.patch)
	addTool(p, &mcp.Tool{Name: "compare_and_set", Description: "Store a document only if the current one is as expected: give exactly one of expect_revision (0: the document must not exist) and expect_value (null: the document must not exist). Returns {id, revision}. Otherwise nothing is written and the call fails with kind revision_mismatch, whose error carries the document's current revision and whether it exists.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)}}, p.compareAndSet)
	addTool(p, &mcp.Tool{Name: "delete", Description: "Delete one document by id. Returns {deleted}: false when there was no such document (or collection).",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(true), OpenWorldHint: new(false)}}, p.delete)
}

// readOnly annotates a tool that changes nothing.
func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
}

type storeArgs struct {
	Collection collectionName `json:"collection"`
	ID         idArg          `json:"id"`
	Doc        docArg         `json:"doc"`
}

// op converts the arguments into the engine's operation (as for write's
// ops: each single write tool's arguments convert alike).
func (in storeArgs) op() (docstore.Op, error) {
	id, err := in.ID.value("/id")
	if err != nil {
		return docstore.Op{}, err
	}
	doc, err := in.Doc.value("/doc")
	return docstore.Op{Kind: docstore.OpStore, Collection: string(in.Collection), ID: id, Doc: doc}, err
}

func (p *Plugin) store(ctx context.Context, _ *mcp.CallToolRequest, in storeArgs) (any, error) {
	op, err := in.op()
	if err != nil {
		return nil, err
	}
	d, err := p.db.Put(ctx, op.Collection, op.ID, op.Doc)
	if err != nil {
		return nil, engineFailure(err, placeAt("/doc"))
	}
	return written(d)
}

// written returns the writeReply of d.
func written(d docstore.Doc) (any, error) {
	r, err := replyOf(d, docShape{idsOnly: true})
	if err != nil {
		return nil, err
	}
	return writeReply{ID: r.ID, Revision: r.Revision}, nil
}

type insertArgs struct {
	Collection collectionName `json:"collection"`
	Doc        docArg         `json:"doc"`
}

func (in insertArgs) op() (docstore.Op, error) {
	doc, err := in.Doc.value("/doc")
	return docstore.Op{Kind: docstore.OpInsert, Collection: string(in.Collection), Doc: doc}, err
}

func (p *Plugin) insertAuto(ctx context.Context, _ *mcp.CallToolRequest, in insertArgs) (any, error) {
	op, err := in.op()
	if err != nil {
		return nil, err
	}
	d, err := p.db.Insert(ctx, op.Collection, op.Doc)
	if err != nil {
		return nil, engineFailure(err, placeAt("/doc"))
	}
	return written(d)
}

type getArgs struct {
	Collection collectionName `json:"collection"`
	ID         idArg          `json:"id"`
	Vectors    vectorsArg     `json:"vectors,omitempty"`
}

func (p *Plugin) get(ctx context.Context, _ *mcp.CallToolRequest, in getArgs) (any, error) {
	id, err := in.ID.value("/id")
	if err != nil {
		return nil, err
	}
	d, err := p.db.Get(ctx, string(in.Collection), id)
	if err != nil {
		return nil, engineFailure(err, placeAt("/id"))
	}
	return replyOf(d, docShape{vectors: bool(in.Vectors)})
}

type patchArgs struct {
	Collection collectionName `json:"collection"`
	ID         idArg          `json:"id"`
	Patch      docArg         `json:"patch" jsonschema:"the merge patch, a JSON object in the store's typed form (see store's doc): a member set to null deletes the field"`
}

func (in patchArgs) op() (docstore.Op, error) {
	id, err := in.ID.value("/id")
	if err != nil {
		return docstore.Op{}, err
	}
	patch, err := in.Patch.value("/patch")
	return docstore.Op{Kind: docstore.OpPatch, Collection: string(in.Collection), ID: id, Doc: patch}, err
}

func (p *Plugin) patch(ctx context.Context, _ *mcp.CallToolRequest, in patchArgs) (any, error) {
	op, err := in.op()
	if err != nil {
		return nil, err
	}
	d, err := p.db.Patch(ctx, op.Collection, op.ID, op.Doc)
	if err != nil {
		return nil, engineFailure(err, placeAt("/patch"))
	}
	return replyOf(d, docShape{})
}

type casArgs struct {
	Collection     collectionName `json:"collection"`
	ID             idArg          `json:"id"`
	ExpectRevision revisionArg    `json:"expect_revision,omitempty" jsonschema:"the revision the document must be at; 0: the document must not exist. Give this or expect_value."`
	ExpectValue    valueArg       `json:"expect_value,omitempty" jsonschema:"the value the document must have (compared as the store compares values, fields in any order); null: the document must not exist. Give this or expect_revision."`
	Doc            docArg         `json:"doc" jsonschema:"the new document, a JSON object in the store's typed form (see store's doc)"`
}

func (in casArgs) op() (docstore.Op, error) {
	id, err := in.ID.value("/id")
	if err != nil {
		return docstore.Op{}, err
	}
	var expect docstore.Expect
	switch {
	case in.ExpectRevision.present() && in.ExpectValue.present():
		return docstore.Op{}, &mcpcore.ParamError{Path: "/expect_value", Reason: "give expect_revision or expect_value, not both"}
	case in.ExpectRevision.present():
		rev, err := in.ExpectRevision.revision("/expect_revision")
		if err != nil {
			return docstore.Op{}, err
		}
		expect.Revision = &rev
	case in.ExpectValue.present():
		v, err := in.ExpectValue.value("/expect_value")
		if err != nil {
			return docstore.Op{}, err
		}
		expect.Value = &v
	default:
		return docstore.Op{}, &mcpcore.ParamError{Reason: "give expect_revision (0: the document must not exist) or expect_value (null: the document must not exist)"}
	}
	doc, err := in.Doc.value("/doc")
	return docstore.Op{Kind: docstore.OpCompareAndSet, Collection: string(in.Collection), ID: id, Expect: expect, Doc: doc}, err
}

func (p *Plugin) compareAndSet(ctx context.Context, _ *mcp.CallToolRequest, in casArgs) (any, error) {
	op, err := in.op()
	if err != nil {
		return nil, err
	}
	d, err := p.db.CompareAndSet(ctx, op.Collection, op.ID, op.Expect, op.Doc)
	if err != nil {
		return nil, engineFailure(err, placeAt("/doc"))
	}
	return written(d)
}

type deleteArgs struct {
	Collection collectionName `json:"collection"`
	ID         idArg          `json:"id"`
}

// deleteReply is delete's result.
type deleteReply struct {
	Deleted bool `json:"deleted"`
}

func (in deleteArgs) op() (docstore.Op, error) {
	id, err := in.ID.value("/id")
	return docstore.Op{Kind: docstore.OpDelete, Collection: string(in.Collection), ID: id}, err
}

func (p *Plugin) delete(ctx context.Context, _ *mcp.CallToolRequest, in deleteArgs) (any, error) {
	op, err := in.op()
	if err != nil {
		return nil, err
	}
	deleted, err := p.db.Delete(ctx, op.Collection, op.ID)
	if err != nil {
		return nil, engineFailure(err, placeAt("/id"))
	}
	return deleteReply{Deleted: deleted}, nil
}
