// Package resptest reads the RESP sidecar's JSON form of a value the way a
// client does, independently of pkg/resp's own types, for the plugin's
// tests and the end-to-end tests. It is for tests only.
package resptest

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// Frame is the JSON form of one RESP value.
type Frame struct {
	Type     string          `json:"type"`
	Encoding string          `json:"encoding,omitempty"`
	Format   string          `json:"format,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
	Items    []Frame         `json:"items,omitempty"`
	Entries  [][2]Frame      `json:"entries,omitempty"`
}

// Str returns a text frame's value, decoded from base64 when so encoded;
// it fails the test for a frame without a string value.
func (f Frame) Str(t testing.TB) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(f.Value, &s); err != nil {
		t.Fatalf("frame %+v has no string value: %v", f, err)
	}
	if f.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("frame %+v: %v", f, err)
		}
		return string(b)
	}
	return s
}
