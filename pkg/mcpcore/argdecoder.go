package mcpcore

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// ArgDecoder decodes and validates an object of arguments as [AddTool]
// decodes a tool's: against In's input schema (schema, or one derived from
// In when nil), with the same [*ParamError]s. A tool whose arguments
// carry other tools' arguments (a batch of operations) decodes each with
// the other tool's decoder, so that both validate alike; the ParamError's
// Path is relative to the object decoded.
type ArgDecoder[In any] struct{ a *argSchema }

// NewArgDecoder returns the decoder of In's arguments; a schema that is
// not a resolvable object schema is an error.
func NewArgDecoder[In any](schema *jsonschema.Schema) (*ArgDecoder[In], error) {
	var declared any
	if schema != nil {
		declared = schema
	}
	a, err := newArgSchema(declared, func() (*jsonschema.Schema, error) { return jsonschema.For[In](nil) })
	if err != nil {
		return nil, fmt.Errorf("argument decoder: %w", err)
	}
	return &ArgDecoder[In]{a: a}, nil
}

// Decode decodes raw, a JSON object, into In.
func (d *ArgDecoder[In]) Decode(raw json.RawMessage) (In, error) {
	return decodeArgs[In](d.a, raw)
}
