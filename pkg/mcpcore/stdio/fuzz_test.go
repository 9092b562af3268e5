package stdio

import (
	"bytes"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// fuzzMaxFrame is small so that the fuzzer reaches the oversized path.
const fuzzMaxFrame = 256

// FuzzFrames feeds arbitrary bytes to a connection, answers every call, and
// checks that nothing panics, that every output line is a JSON-RPC response,
// that there is at most one output line per input line, and that the line
// buffer stays bounded by the frame cap.
func FuzzFrames(f *testing.F) {
	seeds := []string{
		"",
		"\n",
		" \t\r\n\r\n",
		ping(1) + "\n",
		ping("a") + "\r\n" + ping(2),
		"{not json\n",
		`{"jsonrpc":"2.0","id":5,"method":"ping"} trailing` + "\n",
		`{"jsonrpc":"1.0","id":7,"method":"ping"}` + "\n",
		`{"id":"abc"}` + "\n",
		`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n",
		"[" + ping(1) + "]\n[]\n",
		"123\nnull\n\"s\"\ntrue\n",
		bigRequest("42", 300, true) + "\n" + ping(43) + "\n",
		bigRequest(`"x\"y"`, 1000, true) + "\r\n",
		bigRequest("9", 1000, false) + "\n",
		strings.Repeat("[", 2000) + "\n",
		strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100) + "\n",
		"\xff\xfe\n" + ping(1),
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":-0.5,"method":"ping"}` + "\n",
		`{"\u0069d":3,"jsonrpc":"2.0"}` + "\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, out, c := runConn(t, data, Options{MaxFrameBytes: fuzzMaxFrame}, true)
		inLines := bytes.Count(data, []byte("\n")) + 1
		outLines := bytes.SplitAfter(out, []byte("\n"))
		if len(outLines[len(outLines)-1]) != 0 {
			t.Fatalf("output does not end with a newline: %q", out)
		}
		outLines = outLines[:len(outLines)-1]
		if len(outLines) > inLines {
			t.Fatalf("%d output lines for %d input lines", len(outLines), inLines)
		}
		var errs, results int
		for _, line := range outLines {
			r, err := parseResponse(line)
			if err != nil {
				t.Fatal(err)
			}
			if r.Error == nil {
				results++
				continue
			}
			errs++
			if r.Error.Code != jsonrpc.CodeParseError && r.Error.Code != jsonrpc.CodeInvalidRequest {
				t.Fatalf("unexpected error code %d in %q", r.Error.Code, line)
			}
		}
		if calls := len(callIDsOfCalls(msgs)); results != calls {
			t.Fatalf("%d results for %d calls", results, calls)
		}
		if len(msgs)+errs > inLines {
			t.Fatalf("%d messages and %d error lines for %d input lines", len(msgs), errs, inLines)
		}
		if bound := 2*fuzzMaxFrame + 64; c.maxAcc > bound {
			t.Fatalf("line buffer grew to %d bytes, want at most %d", c.maxAcc, bound)
		}
	})
}

func callIDsOfCalls(msgs []jsonrpc.Message) []any {
	var ids []any
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			ids = append(ids, req.ID.Raw())
		}
	}
	return ids
}
