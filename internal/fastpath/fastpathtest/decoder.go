// Package fastpathtest tests the fast path's hooks (package
// internal/fastpath) in the bundled plugins' tests.
package fastpathtest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// RefusesAsSchema checks a [fastpath.ArgumentsDecoder] against the input
// schema it stands in for: every input (a JSON object's text) that the
// schema refuses, a fresh decoder from newDecoder refuses too, with a
// [*mcpcore.ParamError]. A decoder may refuse more, as a tool may refuse
// arguments its schema allows. Inputs that are not valid JSON are skipped
// (the host refuses them before any decoder), so fuzz inputs can be passed
// as they come.
func RefusesAsSchema(t testing.TB, schema *jsonschema.Schema, newDecoder func() fastpath.ArgumentsDecoder, inputs ...string) {
	t.Helper()
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("input schema: %v", err)
	}
	for _, in := range inputs {
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			continue
		}
		if _, isObject := v.(map[string]any); !isObject {
			continue // the host refuses arguments that are not an object
		}
		schemaErr := resolved.Validate(v)
		decodeErr := newDecoder().DecodeArguments(json.RawMessage(in))
		var pe *mcpcore.ParamError
		switch {
		case schemaErr != nil && decodeErr == nil:
			t.Errorf("%s: the decoder accepts what the schema refuses (%v)", in, schemaErr)
		case decodeErr != nil && !errors.As(decodeErr, &pe):
			t.Errorf("%s: the decoder's error is a %T, not a *mcpcore.ParamError: %v", in, decodeErr, decodeErr)
		}
	}
}
