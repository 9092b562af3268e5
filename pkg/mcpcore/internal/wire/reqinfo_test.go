package wire

import "testing"

func TestRequestID(t *testing.T) {
	for _, c := range []struct {
		msg, want string
		ok        bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, "7", true},
		{`{"jsonrpc":"2.0","method":"ping","id":"req-7"}`, "req-7", true},
		{`{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`, `a"b`, true},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, "9007199254740993", true},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "", false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", false},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, "", false},
		{`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, "", false},
		{`not json`, "", false},
	} {
		if got, ok := RequestID([]byte(c.msg)); got != c.want || ok != c.ok {
			t.Errorf("RequestID(%s) = %q, %v; want %q, %v", c.msg, got, ok, c.want, c.ok)
		}
	}
}
