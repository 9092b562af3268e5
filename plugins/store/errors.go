package store

import (
	"context"
	"errors"
	"io/fs"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Error kinds of a call that failed in the storage under the store,
// rather than on its arguments or data.
const (
	// kindDamaged: the call met damage in the store file
	// (docstore.ErrDamaged): the file changed underneath the server, or is
	// damaged where the check at start could not see. The call did
	// nothing; the server and the store stay up, and calls that do not
	// meet the damage keep working.
	kindDamaged = "damaged"
	// kindUnavailable: the store's PostgreSQL server could not be reached
	// or the connection was lost (kv.ErrUnavailable). Nothing was written,
	// unless the message says the outcome of the commit is unknown; the
	// server reconnects by itself, so the call may be retried.
	kindUnavailable = "unavailable"
	// kindConflict: a write collided with a concurrent one on a
	// distributed engine (kv.ErrConflict, a serialization failure that
	// could not be retried safely). Nothing was written; retry the call.
	kindConflict = "conflict"
)

// storageKind gives the error of a tool call that failed in the storage
// its kind (see above): "damaged" with the damage found (which names the
// file) as its message, "unavailable" or "conflict" with the cause.
func storageKind[In any](fn mcpcore.ToolFunc[In]) mcpcore.ToolFunc[In] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (any, error) {
		out, err := fn(ctx, req, in)
		if de := (*docstore.DamageError)(nil); errors.As(err, &de) {
			err = &mcpcore.KindError{Kind: kindDamaged, Err: de}
		} else if errors.Is(err, kv.ErrUnavailable) {
			err = &mcpcore.KindError{Kind: kindUnavailable, Err: err}
		} else if errors.Is(err, kv.ErrConflict) {
			err = &mcpcore.KindError{Kind: kindConflict, Err: err}
		}
		return out, err
	}
}

// fileError is a store file that cannot be used as it stands: damaged,
// not a store file, of a layout this version does not read, or missing or
// empty where one must exist. Nothing was done: a server refuses to start
// and a command exits 3, as for an invalid configuration (it matches
// mcpcore.ErrConfig).
type fileError struct{ err error }

// Error is the damage found, which names the file, or the whole error.
func (e *fileError) Error() string {
	var de *docstore.DamageError
	if errors.As(e.err, &de) {
		return de.Error()
	}
	return e.err.Error()
}

func (e *fileError) Unwrap() error { return e.err }

// Is makes errors.Is(err, mcpcore.ErrConfig) true.
func (e *fileError) Is(target error) bool { return target == mcpcore.ErrConfig }

// asFileError returns err as a *fileError when it is about the store file
// itself (see fileError), and unchanged otherwise (a locked file, a failed
// read).
func asFileError(err error) error {
	for _, target := range []error{docstore.ErrDamaged, kv.ErrInvalidFile, docstore.ErrLayout, fs.ErrNotExist} {
		if errors.Is(err, target) {
			return &fileError{err: err}
		}
	}
	return err
}

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
