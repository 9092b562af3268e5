package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func call(id string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo"}}`)
}

func cancelled(id string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"x"}}`)
}

// sdkRequest decodes msg as the SDK does and returns the call.
func sdkRequest(t testing.TB, msg []byte) *jsonrpc.Request {
	t.Helper()
	dec, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		t.Fatalf("SDK decode of %s: %v", msg, err)
	}
	req, ok := dec.(*jsonrpc.Request)
	if !ok {
		t.Fatalf("SDK decoded %s as %T, want a request", msg, dec)
	}
	return req
}

// sdkResponse encodes the SDK's response to req.
func sdkResponse(t testing.TB, id jsonrpc.ID) []byte {
	t.Helper()
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: json.RawMessage(`{"ok":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dropped reports whether Outbound drops the SDK's response to id.
func dropped(t testing.TB, tab *Table, id jsonrpc.ID) bool {
	t.Helper()
	_, drop := tab.Outbound(sdkResponse(t, id))
	return drop
}

// cancelledID returns the id of the request the SDK cancels when it reads
// msg, a notifications/cancelled message.
func cancelledID(t testing.TB, msg []byte) jsonrpc.ID {
	t.Helper()
	var p struct {
		RequestID any `json:"requestId"`
	}
	if err := json.Unmarshal(sdkRequest(t, msg).Params, &p); err != nil {
		t.Fatal(err)
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func intID(n int64) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		panic(err)
	}
	return id
}

// rawID returns the raw text of the "id" member of an encoded message.
func rawID(t testing.TB, msg []byte) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	return string(m["id"])
}

func TestIDsEchoedExactly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id        string
		translate bool
	}{
		{"9007199254740993", true},
		{"123456789012345678901234567890", true},
		{"1.5", true},
		{"-0", true},
		{"1e3", true},
		{"1E+2", true},
		{"-12.50e-3", true},
		{"1.0", true},
		{"9007199254740992", true}, // 2^53
		{"-9007199254740992", true},
		{"1e400", true}, // the SDK refuses it untranslated
		{"9007199254740991", false},
		{"-9007199254740991", false},
		{"0", false},
		{"42", false},
		{`"abc"`, false},
		{`"1.5"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			tab := NewTable()
			in := call(tt.id)
			orig := bytes.Clone(in)
			out := tab.Inbound(in)
			if !bytes.Equal(in, orig) {
				t.Fatalf("Inbound modified its input: %s", in)
			}
			if translated := !bytes.Equal(out, in); translated != tt.translate {
				t.Fatalf("Inbound(%s) = %s; translated %v, want %v", in, out, translated, tt.translate)
			}
			req := sdkRequest(t, out)
			back, drop := tab.Outbound(sdkResponse(t, req.ID))
			if drop {
				t.Fatal("Outbound dropped an uncancelled response")
			}
			if got := rawID(t, back); got != tt.id {
				t.Fatalf("response id %s, want %s", got, tt.id)
			}
			if n := tab.active.Load(); n != 0 {
				t.Fatalf("%d entries left after the response", n)
			}
		})
	}
}

// TestCoercedIDsDoNotCollide sends two requests in flight whose ids the SDK
// would coerce to the same value.
func TestCoercedIDsDoNotCollide(t *testing.T) {
	t.Parallel()
	tab := NewTable()
	ids := []string{"9007199254740993", "9007199254740992", "1.5", "1"}
	var sdkIDs []jsonrpc.ID
	for _, id := range ids {
		sdkIDs = append(sdkIDs, sdkRequest(t, tab.Inbound(call(id))).ID)
	}
	seen := map[jsonrpc.ID]string{}
	for i, id := range sdkIDs {
		if prev, ok := seen[id]; ok {
			t.Fatalf("ids %s and %s reach the SDK as the same id %v", prev, ids[i], id.Raw())
		}
		seen[id] = ids[i]
	}
	for i := len(ids) - 1; i >= 0; i-- { // answered out of order
		back, drop := tab.Outbound(sdkResponse(t, sdkIDs[i]))
		if drop || rawID(t, back) != ids[i] {
			t.Fatalf("response %d: id %s drop %v, want %s", i, rawID(t, back), drop, ids[i])
		}
	}
}

func TestMembersFoundAsTheSDKFindsThem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, msg string
		wantID    string // the id the response must carry; "" when untouched
		translate bool
	}{
		{"escaped key", `{"jsonrpc":"2.0","\u0069d":1.5,"method":"x"}`, "1.5", true},
		{"last id wins, canonical", `{"jsonrpc":"2.0","id":1.5,"id":2,"method":"x"}`, "2", false},
		{"last id wins, coerced", `{"jsonrpc":"2.0","id":2,"id":1.5,"method":"x"}`, "1.5", true},
		{"upper-case ID is not the id", `{"jsonrpc":"2.0","id":3,"ID":1.5,"method":"x"}`, "3", false},
		{"upper-case Method is not a method", `{"jsonrpc":"2.0","id":1.5,"Method":"x","result":{}}`, "", false},
		{"escaped method key", `{"jsonrpc":"2.0","id":1.5,"m\u0065thod":"x"}`, "1.5", true},
		{"whitespace", " {\n\"jsonrpc\" : \"2.0\" ,\t\"id\" : 1.5 , \"method\" : \"x\" } ", "1.5", true},
		{"trailing data the SDK ignores", `{"jsonrpc":"2.0","id":1.5,"method":"x"} tail`, "1.5", true},
		{"nested ids are not the id", `{"jsonrpc":"2.0","params":{"id":1.5},"id":4,"method":"x"}`, "4", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tab := NewTable()
			out := tab.Inbound([]byte(tt.msg))
			if translated := out != nil && string(out) != tt.msg; translated != tt.translate {
				t.Fatalf("Inbound = %s; translated %v, want %v", out, translated, tt.translate)
			}
			if tt.wantID == "" {
				return
			}
			back, _ := tab.Outbound(sdkResponse(t, sdkRequest(t, out).ID))
			if got := rawID(t, back); got != tt.wantID {
				t.Fatalf("response id %s, want %s", got, tt.wantID)
			}
		})
	}
}

func TestNotTranslatedWhenTheSDKRefuses(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{
		`{"jsonrpc":"1.0","id":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":7}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x","params":`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x","error":"not an object"}`,
		`{"jsonrpc":"2.0","id":01,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1.5,"result":{}}`, // a response: never translated
		`[{"jsonrpc":"2.0","id":1.5,"method":"x"}]`,
		`not json`,
		``,
	} {
		tab := NewTable()
		if out := tab.Inbound([]byte(msg)); string(out) != msg {
			t.Errorf("Inbound(%s) = %s, want it unchanged", msg, out)
		}
		if n := tab.active.Load(); n != 0 {
			t.Errorf("Inbound(%s) left %d entries", msg, n)
		}
	}
}

func TestCancelledResponsesDropped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, id, cancelID string
	}{
		{"translated", "1.5", "1.5"},
		{"big", "123456789012345678901234567890", "123456789012345678901234567890"},
		{"integer", "7", "7"},
		{"string", `"req-1"`, `"req-1"`},
		{"string escaped differently", `"req-\u0031"`, `"req-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tab := NewTable()
			req := sdkRequest(t, tab.Inbound(call(tt.id)))
			other := sdkRequest(t, tab.Inbound(call("8")))
			if sid := cancelledID(t, tab.Inbound(cancelled(tt.cancelID))); sid != req.ID {
				t.Fatalf("the SDK would cancel %v, want %v", sid.Raw(), req.ID.Raw())
			}
			if dropped(t, tab, other.ID) {
				t.Fatal("the response to another request was dropped")
			}
			if !dropped(t, tab, req.ID) {
				t.Fatal("the response to the cancelled request was not dropped")
			}
			if n := tab.active.Load(); n != 0 {
				t.Fatalf("%d entries left after the drop", n)
			}
			// The id is free again: a new request with it is answered.
			req = sdkRequest(t, tab.Inbound(call(tt.id)))
			if dropped(t, tab, req.ID) {
				t.Fatal("a later request with the same id was dropped")
			}
		})
	}
}

func TestCancelOfUnknownCoercedIDNamesNothing(t *testing.T) {
	t.Parallel()
	tab := NewTable()
	req := sdkRequest(t, tab.Inbound(call("1")))
	// The SDK would coerce 1.0 to 1.
	if sid := cancelledID(t, tab.Inbound(cancelled("1.0"))); sid == req.ID {
		t.Fatalf("a cancellation of 1.0 cancels request 1")
	}
	if dropped(t, tab, req.ID) {
		t.Fatal("request 1 was dropped")
	}
}

func TestRefusedCancellationMarksNothing(t *testing.T) {
	t.Parallel()
	tab := NewTable()
	req := sdkRequest(t, tab.Inbound(call("5")))
	tr := sdkRequest(t, tab.Inbound(call("1.5")))
	for _, msg := range []string{
		`{"method":"notifications/cancelled","params":{"requestId":5}}`, // no "jsonrpc": refused
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"_meta":7}}`,
		`{"method":"notifications/cancelled","params":{"requestId":1.5}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"RequestId":5}}`,
		`{"jsonrpc":"2.0","method":"notifications/Cancelled","params":{"requestId":5}}`,
	} {
		tab.Inbound([]byte(msg))
	}
	if dropped(t, tab, req.ID) {
		t.Error("a cancellation the SDK refuses dropped a response")
	}
	if dropped(t, tab, tr.ID) {
		t.Error("a cancellation the SDK refuses dropped a translated response")
	}
}

// TestStaleMarkCleared: a cancellation that arrives after the response (the
// race MCP allows) must not drop the response to a later request that
// reuses the id.
func TestStaleMarkCleared(t *testing.T) {
	t.Parallel()
	tab := NewTable()
	req := sdkRequest(t, tab.Inbound(call("5")))
	if dropped(t, tab, req.ID) {
		t.Fatal("dropped before any cancellation")
	}
	tab.Inbound(cancelled("5")) // late
	req = sdkRequest(t, tab.Inbound(call("5")))
	if dropped(t, tab, req.ID) {
		t.Fatal("a stale cancellation dropped a later request's response")
	}
	if n := tab.active.Load(); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}

// TestInboundPlain: for a decoded message, InboundPlain says yes exactly
// when Inbound would return it unchanged, and clears a stale mark as
// Inbound does, so that a transport that decodes first may skip the scan.
func TestInboundPlain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id                 string // "" for none
		hasMethod, cancels bool
		plain              bool
	}{
		{"5", true, false, true}, {`"s"`, true, false, true}, {"", true, false, true}, {"null", true, false, true},
		{"5", false, false, true},   // a response
		{"1.5", false, false, true}, // a response's id is not translated
		{"", true, true, false},     // a cancellation
		{"1.5", true, false, false}, {"9007199254740993", true, false, false}, {"-0", true, false, false}, {"1e2", true, false, false},
	} {
		var id []byte
		if tc.id != "" {
			id = []byte(tc.id)
		}
		if got := NewTable().InboundPlain(id, tc.hasMethod, tc.cancels); got != tc.plain {
			t.Errorf("InboundPlain(%s, method %v, cancels %v) = %v, want %v", tc.id, tc.hasMethod, tc.cancels, got, tc.plain)
		}
		if tc.hasMethod && !tc.cancels && tc.id != "" {
			msg := call(tc.id)
			if unchanged := bytes.Equal(NewTable().Inbound(msg), msg); unchanged != tc.plain {
				t.Errorf("Inbound leaves %s unchanged: %v; InboundPlain says %v", msg, unchanged, tc.plain)
			}
		}
	}
	tab := NewTable()
	req := sdkRequest(t, tab.Inbound(call("5")))
	tab.Inbound(cancelled("5")) // late: marks 5
	if !tab.InboundPlain([]byte("5"), true, false) {
		t.Fatal("a request reusing a marked id is not plain")
	}
	if dropped(t, tab, req.ID) {
		t.Fatal("after InboundPlain of a request reusing the id, the stale mark still drops its response")
	}
}

func TestRequestsWithMarkedIDsPass(t *testing.T) {
	t.Parallel()
	tab := NewTable()
	tab.Inbound(call("3"))
	tab.Inbound(cancelled("3"))
	// A server-to-client request that happens to use id 3 is not a response.
	srv := []byte(`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`)
	if out, drop := tab.Outbound(srv); drop || !bytes.Equal(out, srv) {
		t.Fatalf("Outbound(%s) = %s, %v", srv, out, drop)
	}
	if !dropped(t, tab, intID(3)) {
		t.Fatal("the cancelled request's response was not dropped")
	}
}

func TestMarksBounded(t *testing.T) {
	t.Parallel()
	tab := NewTable()
	for i := range maxMarks + 100 {
		tab.Inbound(cancelled(fmt.Sprint(i)))
	}
	if n := tab.active.Load(); n != maxMarks {
		t.Fatalf("%d marks, want %d", n, maxMarks)
	}
	// The oldest were forgotten, the newest kept.
	if dropped(t, tab, intID(0)) {
		t.Error("the oldest mark was kept")
	}
	if !dropped(t, tab, intID(maxMarks+99)) {
		t.Error("the newest mark was forgotten")
	}
}

func TestFastPathsDoNotAllocate(t *testing.T) {
	tab := NewTable()
	in := call("12345")
	str := []byte(`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 4096) + `"}}}`)
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1.5}}`)
	resp := sdkResponse(t, intID(12345))
	if n := testing.AllocsPerRun(100, func() { tab.Inbound(in); tab.Inbound(str); tab.Inbound(note) }); n != 0 {
		t.Errorf("Inbound allocates %v times per call on the fast path", n)
	}
	if n := testing.AllocsPerRun(100, func() { tab.Outbound(resp) }); n != 0 {
		t.Errorf("Outbound allocates %v times with an empty table", n)
	}
	tab.Inbound(call("1.5")) // a token in flight: Outbound now looks at ids
	if n := testing.AllocsPerRun(100, func() { tab.Outbound(resp) }); n != 0 {
		t.Errorf("Outbound allocates %v times for an untranslated response", n)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	tab := NewTable()
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				id := fmt.Sprintf("%d.5", g*1000+i)
				req := sdkRequest(t, tab.Inbound(call(id)))
				if i%3 == 0 {
					tab.Inbound(cancelled(id))
				}
				back, drop := tab.Outbound(sdkResponse(t, req.ID))
				if drop != (i%3 == 0) || (!drop && rawID(t, back) != id) {
					t.Errorf("id %s: drop %v", id, drop)
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	if n := tab.active.Load(); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}

// BenchmarkRoundTrip measures Inbound on a request and Outbound on its
// response, as a transport calls them.
func BenchmarkRoundTrip(b *testing.B) {
	msgs := []struct{ name, msg string }{
		{"ping", `{"jsonrpc":"2.0","id":12345,"method":"ping"}`},
		{"call-64KiB", `{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 64<<10) + `"}}}`},
		{"translated-ping", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`},
	}
	for _, m := range msgs {
		b.Run(m.name, func(b *testing.B) {
			tab := NewTable()
			msg := []byte(m.msg)
			var resp []byte
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				out := tab.Inbound(msg)
				sc, _ := scanMessage(out)
				resp = append(append(append(resp[:0], `{"jsonrpc":"2.0","id":`...), out[sc.idAt:sc.idEnd]...), `,"result":{}}`...)
				if _, drop := tab.Outbound(resp); drop {
					b.Fatal("dropped")
				}
			}
			if n := tab.active.Load(); n != 0 {
				b.Fatalf("%d entries left", n)
			}
		})
	}
}

// TestAbandon: a request that will never be answered gives its token back;
// other messages leave the table alone.
func TestAbandon(t *testing.T) {
	t.Parallel()
	tab := NewTable()
	kept := tab.Inbound(call("1.5"))
	lost := tab.Inbound(call("2.5"))
	tab.Abandon(call("3"))   // untranslated: nothing to forget
	tab.Abandon(call("2.5")) // not a token of this table
	if n := tab.active.Load(); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
	tab.Abandon(lost)
	if n := tab.active.Load(); n != 1 {
		t.Fatalf("%d entries after Abandon, want 1", n)
	}
	back, drop := tab.Outbound(sdkResponse(t, sdkRequest(t, kept).ID))
	if drop || rawID(t, back) != "1.5" {
		t.Fatalf("the kept request's reply: %s (drop %v)", back, drop)
	}
	if n := tab.active.Load(); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}
