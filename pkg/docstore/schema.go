package docstore

import (
	"fmt"
	"strings"
)

// Schema declares a collection's fields. A collection without one accepts
// any map document; a declared empty schema (no fields) accepts any too,
// but is declared (Store.Schema tells them apart).
type Schema struct {
	Fields []FieldDef `json:"fields"`
}

// FieldDef declares one top-level field of the documents.
type FieldDef struct {
	Name string `json:"name"`
	// Type is a Kind's name or "any".
	Type string `json:"type"`
	// Required fields must be present and not null.
	Required bool `json:"required,omitempty"`
	// Unique fields hold distinct values across the collection (missing and
	// null values are not compared); the engine keeps a unique index for
	// each, named "$unique:<field>".
	Unique bool `json:"unique,omitempty"`
}

// TypeAny is the FieldDef type that accepts every kind.
const TypeAny = "any"

// uniqueIndexName is the name of the index behind a unique schema field.
func uniqueIndexName(field string) string { return uniquePrefix + field }

// uniquePrefix starts the name of every index a schema's unique field
// implies.
const uniquePrefix = "$unique:"

// schemaIndex reports whether the index named name is a schema's (kept by
// SetSchema, not by the user).
func schemaIndex(name string) bool { return strings.HasPrefix(name, uniquePrefix) }

// check validates the schema itself.
func (s *Schema) check(coll string) error {
	seen := map[string]bool{}
	for i, f := range s.Fields {
		switch {
		case f.Name == "" || strings.HasPrefix(f.Name, "$") || strings.Contains(f.Name, "."):
			return &Error{Code: CodeInvalid, Collection: coll, Field: f.Name,
				Message: fmt.Sprintf("schema field %d: name %q must be non-empty, without '.' and not start with '$'", i, f.Name)}
		case seen[f.Name]:
			return &Error{Code: CodeInvalid, Collection: coll, Field: f.Name, Message: fmt.Sprintf("schema field %q is declared twice", f.Name)}
		}
		seen[f.Name] = true
		if _, ok := ParseKind(f.Type); !ok && f.Type != TypeAny || f.Type == "null" {
			return &Error{Code: CodeInvalid, Collection: coll, Field: f.Name,
				Message: fmt.Sprintf("schema field %q: unknown type %q (want any, bool, int, float, text, bytes, vector, array or map)", f.Name, f.Type)}
		}
	}
	return nil
}

// validate checks doc against the schema (nil: no schema).
func (s *Schema) validate(coll string, id Value, doc Value) error {
	if s == nil {
		return nil
	}
	for _, f := range s.Fields {
		v, ok := doc.Get(f.Name)
		if !ok || v.IsNull() {
			if f.Required {
				return &Error{Code: CodeSchemaViolation, Collection: coll, ID: &id, Field: f.Name,
					Message: fmt.Sprintf("document %s in %q: required field %q is missing", idString(id), coll, f.Name)}
			}
			continue
		}
		if f.Type != TypeAny && v.Kind().String() != f.Type {
			return &Error{Code: CodeSchemaViolation, Collection: coll, ID: &id, Field: f.Name,
				Message: fmt.Sprintf("document %s in %q: field %q is %s, the schema wants %s", idString(id), coll, f.Name, v.Kind(), f.Type)}
		}
	}
	return nil
}
