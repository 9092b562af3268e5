package mcpcore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
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
	{`{"name":"t","arguments":{"a":"}"} ,"_meta":{}}`, true},
	{`{"arguments":{"a":1},"name":"t"}`, true},
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

// notJSONParams are params that are not JSON, which directParams must not
// take unchecked.
var notJSONParams = []string{
	`{"name":"t","arguments":{"a":[1,}}`,
	`{"name":"t","arguments":{"a":1}} ,"id":2`,
	`{"name":"t","x":tru}`,
	`{"name":"t","x":"a` + "\n" + `b"}`,
	`{"name":"t","arguments":{"s":"\x"}}`,
	`{"n\q":"t"}`,
	`{"name":"t","_meta":{"a":1,}}`,
}

// TestDirectParamsUnchecked: params that are not JSON are never taken
// unchecked.
func TestDirectParamsUnchecked(t *testing.T) {
	for _, params := range notJSONParams {
		if _, _, ok := directParams([]byte(params), nil, false); ok {
			t.Errorf("directParams took %q, not JSON, as unchecked params", params)
		}
	}
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
	for _, params := range notJSONParams {
		f.Add(params)
	}
	f.Fuzz(func(t *testing.T, params string) {
		if json.Valid([]byte(params)) {
			checkDirectParams(t, []byte(params))
		} else if _, _, ok := directParams([]byte(params), nil, false); ok {
			t.Fatalf("directParams took %q, not JSON, as unchecked params", params)
		}
	})
}

// checkDirectParams compares directParams with the SDK's decoding of
// params and reports whether directParams took them; the same with tool
// "t" decoding its arguments as they are read (a test decoder that takes
// an object and keeps its text, and one that takes nothing).
func checkDirectParams(t *testing.T, params []byte) bool {
	t.Helper()
	took := checkDirectParamsWith(t, params, nil)
	keep := func(b []byte) (int, any, bool) {
		if b[0] != '{' {
			return 0, nil, false
		}
		end := jsonscan.SkipValue(b, 0)
		return end, string(b[:end]), end > 0
	}
	refuse := func([]byte) (int, any, bool) { return 0, nil, false }
	for _, prefix := range []decodePrefix{keep, refuse} {
		if checkDirectParamsWith(t, params, func(name string) decodePrefix {
			if name == "t" {
				return prefix
			}
			return nil
		}) != took {
			t.Fatalf("%s: taken %v without decoding the arguments as read, not with", params, took)
		}
	}
	return took
}

// checkDirectParamsWith is checkDirectParams with prefixOf: arguments
// decoded as read are those the SDK's decoder finds. Unchecked, params
// are taken only as they are checked, but those with a key that is not
// plain text, and read alike.
func checkDirectParamsWith(t *testing.T, params []byte, prefixOf func(string) decodePrefix) bool {
	t.Helper()
	got, args, ok := directParams(params, prefixOf, true)
	if got2, args2, ok2 := directParams(params, prefixOf, false); ok2 && (!ok || !reflect.DeepEqual(got2, got) || !reflect.DeepEqual(args2, args)) {
		t.Fatalf("%s: unchecked %v %+v %v, checked %v %+v %v", params, ok2, got2, args2, ok, got, args)
	}
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
	if args != nil && (prefixOf == nil || args.(string) != string(want.Arguments)) {
		t.Fatalf("%s: arguments decoded as read %q, the SDK's decoder %q", params, args, want.Arguments)
	}
	got.Arguments, want.Arguments = nil, nil
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("%s: directParams %+v, the SDK's decoder %+v", params, *got, want)
	}
	return true
}
