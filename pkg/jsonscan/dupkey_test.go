package jsonscan

import "testing"

func TestDuplicateKey(t *testing.T) {
	tests := []struct {
		in, path string
		found    bool
	}{
		{`{"a":1,"b":2}`, "", false},
		{`{"targets":{"x":{}},"targets":{"y":{}}}`, "targets", true},
		{`{"a":{"b":1,"c":{"d":1,"d":2}}}`, "a.c.d", true},
		{`{"a":1,"\u0061":2}`, "a", true},
		{`{"a":1,"A":2}`, "", false}, // keys are compared exactly
		{`{"l":[{"x":1},{"x":1,"y":2,"y":3}]}`, "l[1].y", true},
		{`[[{"k":1,"k":1}]]`, "[0][0].k", true},
		{`{"a":{"k":1},"b":{"k":1}}`, "", false}, // the same key in two objects
		{`{"s":"{\"k\":1,\"k\":2}"}`, "", false}, // inside a string
		{`{}`, "", false},
		{`"x"`, "", false},
		{``, "", false},
	}
	for _, tt := range tests {
		path, found := DuplicateKey([]byte(tt.in))
		if path != tt.path || found != tt.found {
			t.Errorf("DuplicateKey(%s) = %q, %v; want %q, %v", tt.in, path, found, tt.path, tt.found)
		}
	}
}
