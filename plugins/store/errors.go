package store

import (
	"errors"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// placer says which argument (a JSON Pointer) an engine error of code
// invalid is about.
type placer func(e *docstore.Error) string

// placeAt places every invalid-argument error at path, except a document
// id the engine refuses (at "/id") and a collection name it refuses (at
// "/collection").
func placeAt(path string) placer {
	return func(e *docstore.Error) string {
		switch {
		case e.Field == "id":
			return "/id"
		case isNameError(e):
			return "/collection"
		}
		return path
	}
}

// placeAll places every invalid-argument error at path: for load, whose
// errors are about its input, not about names.
func placeAll(path string) placer {
	return func(*docstore.Error) string { return path }
}

// isNameError reports whether e is the engine refusing a collection or
// index name, the only invalid-argument errors that name no collection.
func isNameError(e *docstore.Error) bool {
	return e.Code == docstore.CodeInvalid && e.Collection == "" && e.Index == "" && e.ID == nil
}

// engineFailure turns an engine error into the tool's error, so that an
// agent can act on its kind:
//
//   - invalid (an argument the engine refuses) becomes bad_params, at the
//     argument place names;
//   - closed (the server is shutting down: the store is closed) becomes
//     unavailable;
//   - revision_mismatch keeps its kind and carries, besides the message,
//     the document's current revision and whether it exists
//     ([revisionMismatch]), for the agent's next compare_and_set;
//   - every other engine error (not_found, collection_not_found,
//     unique_violation, schema_violation, index_exists) keeps the engine's
//     code as its kind.
//
// Any other error (a cancelled context, a failed write) is returned as it
// is, for the core to classify.
func engineFailure(err error, place placer) error {
	var e *docstore.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Code {
	case docstore.CodeInvalid:
		return &mcpcore.ParamError{Path: place(e), Reason: err.Error()}
	case docstore.CodeClosed:
		return &mcpcore.KindError{Kind: mcpcore.KindUnavailable, Err: err}
	case docstore.CodeRevisionMismatch:
		return mcpcore.ErrorResult(revisionMismatch{Error: mismatchDetail{
			Kind: string(e.Code), Message: err.Error(), Revision: e.Revision, Exists: e.Exists}})
	}
	return &mcpcore.KindError{Kind: string(e.Code), Err: err}
}

// revisionMismatch is the structuredContent of a compare_and_set whose
// expectation did not hold: the core's error reply with the document's
// current state.
type revisionMismatch struct {
	Error mismatchDetail `json:"error"`
}

// mismatchDetail is a revision_mismatch error.
type mismatchDetail struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Revision is the document's current revision (0 when it does not
	// exist).
	Revision uint64 `json:"revision"`
	// Exists says whether the document exists.
	Exists bool `json:"exists"`
}
