package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// lastID returns the raw text of the last top-level "id" member of msg,
// found with encoding/json's tokenizer (an oracle independent of the
// scanner), and whether msg is one JSON object with such a member.
func lastID(msg []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var id []byte
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if tok == "id" {
			id = v
		}
	}
	return id, id != nil
}

// FuzzRoundTrip passes arbitrary messages through Inbound, the SDK's
// decoder, the SDK's encoding of a response and Outbound, and checks that
// nothing panics, that Inbound never modifies its input, that the response
// carries the request's id exactly as sent (numbers byte for byte, strings
// as the same string), and that the table is empty afterwards.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{
		string(call("1")),
		string(call("1.5")),
		string(call("9007199254740993")),
		string(call("123456789012345678901234567890")),
		string(call("-0")),
		string(call("1e400")),
		string(call(`"a\"b"`)),
		string(cancelled("1.5")),
		string(cancelled("2")),
		`{"jsonrpc":"2.0","\u0069d":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":2,"id":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1.5,"Method":"x"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"notifications/cancelled","params":{"requestId":1.5}}`,
		`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"} tail`,
		`[1.5]`,
		`{"id":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		tab := NewTable()
		orig := bytes.Clone(msg)
		out := tab.Inbound(msg)
		if !bytes.Equal(msg, orig) {
			t.Fatalf("Inbound modified its input")
		}
		dec, err := jsonrpc.DecodeMessage(out)
		if err != nil {
			if tab.active.Load() != 0 {
				t.Fatalf("a message the SDK refuses left %d entries: %s", tab.active.Load(), out)
			}
			return
		}
		req, ok := dec.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			return
		}
		resp, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		back, drop := tab.Outbound(resp)
		if drop {
			if req.Method == "notifications/cancelled" {
				return // a call that cancels itself
			}
			t.Fatalf("the response to %s was dropped", msg)
		}
		if n := tab.active.Load(); n != 0 && req.Method != "notifications/cancelled" {
			t.Fatalf("%d entries left after the response to %s", n, msg)
		}
		want, ok := lastID(msg)
		if !ok {
			return // not an object encoding/json reads (the SDK is laxer)
		}
		got, ok := lastID(back)
		if !ok {
			t.Fatalf("Outbound produced %s", back)
		}
		if want[0] == '"' {
			var ws, gs string
			if json.Unmarshal(want, &ws) != nil || json.Unmarshal(got, &gs) != nil || ws != gs {
				t.Fatalf("response id %s, want the string %s", got, want)
			}
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("response id %s, want %s (request %s, to the SDK %s)", got, want, msg, out)
		}
	})
}
