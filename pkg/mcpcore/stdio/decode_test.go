package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sameMessage reports how a and b, decoded messages, differ ("" if not).
func sameMessage(a, b jsonrpc.Message) string {
	switch a := a.(type) {
	case *jsonrpc.Request:
		b, ok := b.(*jsonrpc.Request)
		if !ok || a.ID != b.ID || a.Method != b.Method || !bytes.Equal(a.Params, b.Params) {
			return fmt.Sprintf("%+v != %+v", a, b)
		}
	case *jsonrpc.Response:
		b, ok := b.(*jsonrpc.Response)
		if !ok || a.ID != b.ID || !bytes.Equal(a.Result, b.Result) || fmt.Sprint(a.Error) != fmt.Sprint(b.Error) {
			return fmt.Sprintf("%+v != %+v", a, b)
		}
	default:
		return fmt.Sprintf("%T", a)
	}
	return ""
}

var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"abc"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":[1, 2 ,{"a" : "b"}] }`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":"str"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1},"params":{"b":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\u00zz"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"` + "\x01" + `"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"` + "\xff" + `"}}`,
	`{"jsonrpc":"1.0","id":1,"method":"x","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"a":1},"error":{"code":1,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"a":1},"error":"bad"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","result":{"a":1,},"params":{}}`,
	`{"jsonrpc":"2.0","id":1,"m\u0065thod":"x","params":{"a":1}}`,
	`{"jsonrpc":"2.0","id":1,"Method":"x","params":{"a":1},"result":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":1e400}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":-01}}`,
}

// FuzzDecodeMessage checks decodeMessage against the SDK's decoder, owned
// or not: both accept the same messages, decoded to the same id, method,
// params, result and error.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if !onlySpaceAfterObject(msg) {
			return // decode does not call it
		}
		want, err := jsonrpc.DecodeMessage(msg)
		for _, owned := range []bool{false, true} {
			got, ok := decodeMessage(bytes.Clone(msg), owned)
			switch {
			case ok && err != nil:
				t.Fatalf("decodeMessage(owned %v) accepted %q, which the SDK refuses: %v", owned, msg, err)
			case !ok && err == nil:
				t.Fatalf("decodeMessage(owned %v) refused %q, which the SDK accepts", owned, msg)
			case ok:
				if diff := sameMessage(got, want); diff != "" {
					t.Fatalf("decodeMessage(%q, owned %v) differs from the SDK: %s", msg, owned, diff)
				}
			}
		}
	})
}

// TestDecodeMessageAllocations: an owned frame's params alias it, so a
// large frame is not copied; a small call costs a few hundred bytes, where
// the SDK's decoder allocates 64 KiB (two 32 KiB stream buffers).
func TestDecodeMessageAllocations(t *testing.T) { // not parallel: it counts allocations
	line := []byte(bigRequest("1", 1<<20, true))
	msg, ok := decodeMessage(line, true)
	if !ok {
		t.Fatal("a request with 1 MiB of params was not decoded")
	}
	params := msg.(*jsonrpc.Request).Params
	if i := bytes.Index(line, []byte(`"params":`)) + len(`"params":`); &line[i] != &params[0] {
		t.Error("params do not alias the owned line")
	}
	// The least of five decodes: TotalAlloc also counts what other
	// goroutines of the process (a test's server shutting down) allocate
	// meanwhile.
	allocated := func(line []byte, owned bool) uint64 {
		least := uint64(math.MaxUint64)
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			decodeMessage(line, owned)
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		return least
	}
	if n := allocated(line, true); n > 4<<10 { // the SDK decoder: about 5 MiB
		t.Errorf("decoding 1 MiB of owned params allocated %d bytes", n)
	}
	small := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"resp_session","arguments":{"action":"list"}}}`)
	if n := allocated(small, false); n > 1<<10 {
		t.Errorf("decoding a small call allocated %d bytes", n)
	}
}

// TestLargeFrameAllocations: reading a large frame costs about twice its
// size in allocations (its chunks, then the line assembled once, which the
// message keeps), where growing one buffer and the SDK's decoder cost eight
// times its size.
func TestLargeFrameAllocations(t *testing.T) { // not parallel: it counts allocations
	const size = 8 << 20
	line := []byte(bigRequest("1", size, true) + "\n")
	mc, err := NewTransport(bytes.NewReader(line), io.Discard, Options{}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msg, err := mc.Read(context.Background())
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.(*jsonrpc.Request).Params) < size {
		t.Fatal("params lost")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 5*size/2 {
		t.Errorf("reading a %d MiB frame allocated %.1f times its size", size>>20, float64(n)/size)
	}
}

// FuzzEncodeMessage: appendMessage writes what jsonrpc.EncodeMessage
// writes, byte for byte, for responses with results as the SDK encodes
// them (string and integer ids alike), errors and requests.
func FuzzEncodeMessage(f *testing.F) {
	f.Add(int64(1), "", `{"content":[]}`, false)
	f.Add(int64(-7), "<a&b>\u2028\"", `{"s":"<\u003e"}`, false)
	f.Add(int64(0), "x", `[1,2]`, true)
	f.Fuzz(func(t *testing.T, n int64, s, result string, failed bool) {
		var v any
		if json.Unmarshal([]byte(result), &v) != nil {
			return
		}
		raw, err := json.Marshal(v) // results are the SDK's encoding: valid and compact
		if err != nil {
			return
		}
		num, _ := jsonrpc.MakeID(float64(n))
		str, _ := jsonrpc.MakeID(s)
		for _, id := range []jsonrpc.ID{num, str} {
			msgs := []jsonrpc.Message{&jsonrpc.Response{ID: id, Result: raw}, &jsonrpc.Request{ID: id, Method: "m", Params: raw}}
			if failed {
				msgs[0] = &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: 1, Message: s}}
			}
			for _, msg := range msgs {
				got, err := appendMessage([]byte("kept"), msg)
				got, _ = bytes.CutPrefix(got, []byte("kept"))
				want, werr := jsonrpc.EncodeMessage(msg)
				if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
					t.Fatalf("appendMessage(%+v) = %s, %v; the SDK: %s, %v", msg, got, err, want, werr)
				}
			}
		}
	})
}
