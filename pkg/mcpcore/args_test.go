package mcpcore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// rangedArgs has arguments with every rule the validation messages
// describe.
type rangedArgs struct {
	Ratio float64        `json:"ratio,omitempty"`
	Above float64        `json:"above,omitempty"`
	Name  string         `json:"name,omitempty"`
	Mode  string         `json:"mode,omitempty"`
	Tags  []string       `json:"tags,omitempty"`
	Count int            `json:"count,omitempty"`
	Doc   map[string]any `json:"doc,omitempty"`
	Kind  kind           `json:"kind,omitempty"`
	Small uint8          `json:"small,omitempty"`
}

// kind is a named string type, whose schema's enum holds its values.
type kind string

func rangedSchema(t *testing.T) *argSchema {
	t.Helper()
	s, err := jsonschema.For[rangedArgs](nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Properties["ratio"].Minimum, s.Properties["ratio"].Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(1.0)
	s.Properties["above"].ExclusiveMinimum = jsonschema.Ptr(0.0)
	s.Properties["name"].MinLength, s.Properties["name"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(8)
	s.Properties["mode"].Enum = []any{"a", "b"}
	s.Properties["kind"].Enum = []any{kind("x"), kind("y")}
	s.Properties["tags"].MinItems, s.Properties["tags"].MaxItems = jsonschema.Ptr(1), jsonschema.Ptr(2)
	a, err := newArgSchema(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestArgumentMessages: an argument that breaks its schema's rule, or a
// number beyond what its argument holds, is reported with its path, the
// rule and the value, briefly and in JSON's words: no fraction for a
// decimal, no Go type, no path of hundreds of segments.
func TestArgumentMessages(t *testing.T) {
	a := rangedSchema(t)
	deep := `{"doc":` + strings.Repeat(`{"a":`, 600) + `1e400` + strings.Repeat(`}`, 600) + `}`
	for _, tc := range []struct{ args, path, msg string }{
		{`{"ratio": -0.1}`, "/ratio", "invalid argument /ratio: -0.1 is below 0"},
		{`{"ratio": 1.5}`, "/ratio", "invalid argument /ratio: 1.5 is above 1"},
		{`{"above": 0}`, "/above", "invalid argument /above: 0 is not above 0"},
		{`{"ratio": 1e400}`, "/ratio", "invalid argument /ratio: 1e400 is out of range: a number's magnitude is at most 1.7976931348623157e+308"},
		{`{"doc": {"h": -1e400}}`, "/doc/h", "invalid argument /doc/h: -1e400 is out of range: a number's magnitude is at most 1.7976931348623157e+308"},
		{`{"count": 1e30}`, "/count", "invalid argument /count: 1e30 is out of range: an integer from -9223372036854775808 to 9223372036854775807"},
		{`{"count": 1.5}`, "/count", "invalid argument /count: got number 1.5, want integer"},
		{`{"name": ""}`, "/name", `invalid argument /name: "" is empty`},
		{`{"name": "` + strings.Repeat("x", 100) + `"}`, "/name", `invalid argument /name: "` + strings.Repeat("x", 40) + `…" (100 characters) is longer than 8`},
		{`{"mode": "c"}`, "/mode", `invalid argument /mode: "c" is not one of "a", "b"`},
		{`{"small": 256}`, "/small", "invalid argument /small: 256 is above 255"},
		{`{"small": 2.5}`, "/small", "invalid argument /small: got number 2.5, want integer"},
		{`{"name": true}`, "/name", "invalid argument /name: got boolean true, want string"},
		{`{"kind": "z"}`, "/kind", `invalid argument /kind: "z" is not one of "x", "y"`},
		{`{"tags": []}`, "/tags", "invalid argument /tags: [] is empty: at least 1 item(s)"},
		{`{"tags": ["a", "b", "c"]}`, "/tags", "invalid argument /tags: 3 items are more than 2"},
		{`{"doc": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {"j": {"k": {"l": {"m": {"n": {"o": 1e400}}}}}}}}}}}}}}}}`, "/doc/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o",
			"invalid argument /doc/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o: 1e400 is out of range: a number's magnitude is at most 1.7976931348623157e+308"},
		{deep, "/doc" + strings.Repeat("/a", 600), "invalid argument /doc/a/a/a/…(593 levels)…/a/a/a/a: 1e400 is out of range: a number's magnitude is at most 1.7976931348623157e+308"},
	} {
		_, err := decodeArgs[rangedArgs](a, json.RawMessage(tc.args))
		var pe *ParamError
		if !errors.As(err, &pe) {
			t.Fatalf("%.60s: error %v, want a *ParamError", tc.args, err)
		}
		if pe.Path != tc.path || pe.Error() != tc.msg {
			t.Errorf("%.60s:\n got %.200q at %.60q\nwant %q at %.60q", tc.args, pe.Error(), pe.Path, tc.msg, tc.path)
		}
	}
}

// TestStrictDecodeMessages: what decodeArguments (an ArgumentsDecoder's
// decoding, with no schema before it) cannot store is described in JSON's
// words, never by Go type.
func TestStrictDecodeMessages(t *testing.T) {
	type args struct {
		Small uint8   `json:"small"`
		N     int32   `json:"n"`
		F     float64 `json:"f"`
		S     string  `json:"s"`
	}
	for _, tc := range []struct{ args, msg string }{
		{`{"small": 256}`, "invalid argument /small: 256 is out of range: an integer from 0 to 255"},
		{`{"small": -1}`, "invalid argument /small: -1 is out of range: an integer from 0 to 255"},
		{`{"small": 2.5}`, "invalid argument /small: 2.5 is not an integer"},
		{`{"n": 3e9}`, "invalid argument /n: 3e9 is out of range: an integer from -2147483648 to 2147483647"},
		{`{"f": 1e400}`, "invalid argument /f: 1e400 is out of range: a number's magnitude is at most 1.7976931348623157e+308"},
		{`{"n": "1"}`, "invalid argument /n: got string, want integer"},
		{`{"s": 1}`, "invalid argument /s: got number, want string"},
		{`{"s": [1]}`, "invalid argument /s: got array, want string"},
	} {
		var a args
		if err := decodeArguments(json.RawMessage(tc.args), &a); err == nil || err.Error() != tc.msg {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.msg)
		}
	}
}
