package mcpcore

import (
	"errors"
	"testing"
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
		err := DecodeStrict(data, &cfg)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
	})
}
