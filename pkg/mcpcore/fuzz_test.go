package mcpcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// FuzzConfig feeds arbitrary bytes to the configuration decoder: it must
// never panic, and any failure must be a typed configuration error.
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"limits": {"tool_timeout": "30s", "inline_result_bytes": 131072}}`,
		`{"enable": ["x"], "plugins": {"x": {"prefix": "", "config": {"a": 1}}}}`,
		`{"http": {"addr": "127.0.0.1:0", "bearer_tokens_file": "/nonexistent", "allowed_origins": ["https://a"]}}`,
		`{"limits": {"tool_timeout": 5}}`,
		`{"limits": {"result_expiry": "-1s"}}`,
		`{"limits": {"frame_bytes": 1e400}}`,
		`[1,2,3]`, `null`, `{"a":`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := DefaultConfig()
		err := DecodeConfig(data, &cfg)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
	})
}

// FuzzToolArguments feeds arbitrary bytes as a tool's arguments to the
// host's validation and strict decoding: it must never panic, and every
// failure must be a *ParamError whose path points into the arguments.
func FuzzToolArguments(f *testing.F) {
	args, err := newArgSchema(nil, func() (*jsonschema.Schema, error) { return jsonschema.For[itemsArgs](nil) })
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"items":[{"name":"a","count":2}],"mode":"x"}`,
		`{"items":[{"name":"a"},{"name":3}]}`,
		`{"items":[{"name":"a","extra":1}]}`,
		`{"Items":[]}`, `{}`, `null`, ``, `[1]`, `"x"`, `{"items":[{"name":"a","count":1e30}]}`,
		`{"items":[],"a/b~c":1}`, `{"items":{"0":{"name":"a"}}}`, `{"items":[null]}`, "{\"items\":[{\"name\":\"\xff\"}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) && len(bytes.TrimSpace(data)) > 0 {
			return // the SDK decodes the message before the host sees its arguments
		}
		in, err := decodeArgs[itemsArgs](args, data)
		var pe *ParamError
		switch {
		case err == nil:
			if _, merr := json.Marshal(in); merr != nil {
				t.Fatalf("decoded arguments do not marshal: %v", merr)
			}
		case !errors.As(err, &pe):
			t.Fatalf("untyped error %T: %v", err, err)
		case pe.Path != "" && !strings.HasPrefix(pe.Path, "/"):
			t.Fatalf("path %q is not a JSON Pointer", pe.Path)
		}
	})
}
