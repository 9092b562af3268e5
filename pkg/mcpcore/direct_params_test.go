package mcpcore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// directParamsInputs are tools/call params, valid JSON, that directParams
// takes (take) or leaves to the SDK.
var directParamsInputs = []struct {
	params string
	take   bool
}{
	{`{"name":"t","arguments":{"a":[1,"x"]}}`, true},
	{` { "arguments" : null , "name" : "t" } `, true},
	{`{"name":"t"}`, true},
	{`{"name":"t\u0031","arguments":{}}`, true},
	{`{"name":"tö"}`, true},
	{`{"n\u0061me":"t"}`, true},
	{`{"Name":"t","name":"u"}`, true},
	{`{"name":"t","_meta":{"progressToken":7}}`, true},
	{`{"name":"t","_meta":null}`, true},
	{`{"name":"t","requestState":"","inputResponses":null}`, true},
	{`{"name":"t","requestState":"abc"}`, true},
	{`{"name":"t","other":{"deep":[1,2,{"x":"]"}]}}`, true},
	{`{}`, true},
	{`{"name":"t","name":"u"}`, false},
	{`{"name":"t","arguments":{},"arguments":{}}`, false},
	{`{"name":5}`, false},
	{`{"name":"t","_meta":[]}`, false},
	{`{"name":"t","requestState":1}`, false},
	{`[]`, false},
	{`"x"`, false},
}

// TestDirectParams: what directParams takes, it reads exactly as the SDK's
// decoder (segmentio's, with the SDK's flags) does.
func TestDirectParams(t *testing.T) {
	for _, in := range directParamsInputs {
		if took := checkDirectParams(t, []byte(in.params)); took != in.take {
			t.Errorf("directParams(%s) took it: %v, want %v", in.params, took, in.take)
		}
	}
}

// FuzzDirectParams: whatever valid JSON params are, what directParams
// takes it reads as the SDK's decoder does.
func FuzzDirectParams(f *testing.F) {
	for _, in := range directParamsInputs {
		f.Add(in.params)
	}
	f.Fuzz(func(t *testing.T, params string) {
		if json.Valid([]byte(params)) {
			checkDirectParams(t, []byte(params))
		}
	})
}

// checkDirectParams compares directParams with the SDK's decoding of
// params and reports whether directParams took them.
func checkDirectParams(t *testing.T, params []byte) bool {
	t.Helper()
	got, ok := directParams(params)
	if !ok {
		return false
	}
	var want mcp.CallToolParamsRaw
	rest, err := segjson.Parse(params, &want, segjson.DontMatchCaseInsensitiveStructFields)
	if err != nil || len(bytes.TrimSpace(rest)) > 0 {
		t.Fatalf("directParams took %s, which the SDK's decoder refuses: %v", params, err)
	}
	if !bytes.Equal(got.Arguments, want.Arguments) {
		t.Fatalf("%s: arguments %q, the SDK's decoder %q", params, got.Arguments, want.Arguments)
	}
	got.Arguments, want.Arguments = nil, nil
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("%s: directParams %+v, the SDK's decoder %+v", params, *got, want)
	}
	return true
}
