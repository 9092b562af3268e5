package docstore

import (
	"errors"
	"fmt"
)

// Code names an engine error; it is stable, so callers (and agents) can
// branch on it.
type Code string

// The engine's error codes.
const (
	CodeNotFound           Code = "not_found"            // no document with that id
	CodeCollectionNotFound Code = "collection_not_found" // no collection of that name
	CodeUniqueViolation    Code = "unique_violation"     // a unique index or schema field already holds the value
	CodeRevisionMismatch   Code = "revision_mismatch"    // compare_and_set's expectation does not hold
	CodeSchemaViolation    Code = "schema_violation"     // a document breaks the collection's schema
	CodeIndexExists        Code = "index_exists"         // an index of that name exists with another definition
	CodeInvalid            Code = "invalid"              // an argument the engine refuses (name, id, document shape, ...)
	CodeClosed             Code = "closed"               // the store is closed
)

// Error is a typed engine error. Fields beyond Code and Message are set
// where they apply.
type Error struct {
	Code       Code
	Message    string
	Collection string
	ID         *Value // the document's id
	Field      string // the field at fault (schema, unique, invalid)
	Index      string // the index at fault (unique)
	// Revision is the document's current revision on a revision mismatch
	// (0 when the document does not exist).
	Revision uint64
	// Exists says, on a revision mismatch, whether the document exists.
	Exists bool
}

func (e *Error) Error() string { return e.Message }

// errorf returns an *Error of code c.
func errorf(c Code, coll string, format string, args ...any) *Error {
	return &Error{Code: c, Collection: coll, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the engine error in err's chain, or "".
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// ErrClosed is returned by every operation on a closed store.
var ErrClosed = &Error{Code: CodeClosed, Message: "docstore: the store is closed"}
