package stdio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// onlySpaceAfterObject reports whether decode hands line to decodeMessage
// (or decodeScanned): line is one JSON object, as the scanner finds it,
// with nothing but whitespace after it.
func onlySpaceAfterObject(line []byte) bool {
	s := wire.Scan(line)
	return onlySpaceAfter(line, &s)
}

// executeLine is the request line of a 128-command resp_execute call, the
// RESP sidecar's batch-128 benchmark round (about 5.4 KB).
func executeLine() []byte {
	cmds := make([]string, 128)
	for i := range cmds {
		cmds[i] = fmt.Sprintf(`["SET","bench:%d","value-%010d"]`, i, i)
	}
	return []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"resp_execute","arguments":{"commands":[` +
		strings.Join(cmds, ",") + `]}}}`)
}

// lineDecoder runs lines through a connection's decode, as its reader
// does with a line in its buffer, one at a time and each as the first line
// of a connection (a new wire.Table). One is reused across lines because
// a new connection's buffers cost more than decoding a small line.
type lineDecoder struct {
	c   *conn
	out *bytes.Buffer
}

func newLineDecoder() lineDecoder {
	var out bytes.Buffer
	return lineDecoder{c: newConn(nil, &out, Options{}), out: &out}
}

// decode returns the message decoded from line and what decode wrote back
// (an error response for a refused line).
func (d lineDecoder) decode(line []byte) (jsonrpc.Message, bool, []byte) {
	d.out.Reset()
	d.c.ids = wire.NewTable()
	d.c.inPlace = true
	msg, ok := d.c.decode(line)
	return msg, ok, d.out.Bytes()
}

// TestDecodeLine: the one scan decode makes of a line lets through what
// the decoder accepts (an id translated on the way, a depth at the SDK's
// limit) and the refusals keep their codes: data after the object, a depth
// over the limit, a malformed value the scan alone would pass.
func TestDecodeLine(t *testing.T) {
	t.Parallel()
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	d := newLineDecoder()
	for _, tt := range []struct {
		name, line string
		method     string // the request decoded; "" when refused
		code       int64  // the error code written when refused
	}{
		{"execute-128", string(executeLine()), "tools/call", 0},
		{"spaces around", " \t" + ping(1) + " \r\n", "ping", 0},
		{"translated id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "ping", 0},
		{"depth 1000", `{"jsonrpc":"2.0","id":1,"method":"x","params":` + nest(999) + `}`, "x", 0},
		{"depth 1001", `{"jsonrpc":"2.0","id":1,"method":"x","params":` + nest(1000) + `}`, "", jsonrpc.CodeInvalidRequest},
		{"translated id, depth 1001", `{"jsonrpc":"2.0","id":1.5,"method":"x","params":` + nest(1000) + `}`, "", jsonrpc.CodeInvalidRequest},
		{"data after", ping(5) + ` trailing`, "", jsonrpc.CodeParseError},
		{"object after", ping(5) + ping(6), "", jsonrpc.CodeParseError},
		{"malformed literal", `{"jsonrpc":"2.0","id":1,"method":"x","params":x"y,"b":1}`, "", jsonrpc.CodeParseError},
		{"unclosed", `{"jsonrpc":"2.0","id":1,"method":"x"`, "", jsonrpc.CodeParseError},
		{"not an object", `[` + ping(1) + `]`, "", jsonrpc.CodeInvalidRequest},
	} {
		msg, ok, out := d.decode([]byte(tt.line))
		if tt.method != "" {
			req, isReq := msg.(*jsonrpc.Request)
			if !ok || !isReq || req.Method != tt.method || len(out) != 0 {
				t.Errorf("%s: decoded %v (ok %v), wrote %s; want a %s request", tt.name, msg, ok, out, tt.method)
			}
			continue
		}
		var resp struct{ Error *jsonrpc.Error }
		if ok || json.Unmarshal(out, &resp) != nil || resp.Error == nil || resp.Error.Code != tt.code {
			t.Errorf("%s: decoded %v (ok %v), wrote %s; want error %d", tt.name, msg, ok, out, tt.code)
		}
	}
}

// isToken reports whether id is one of a wire.Table's tokens.
func isToken(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, "\x00mcpkit:")
}

// tokenPrefix matches the random part of a token written in JSON, which
// differs from table to table.
var tokenPrefix = regexp.MustCompile(`\\u0000mcpkit:[0-9a-f]{16}:`)

// FuzzDecodeLine compares decode with the formulation it replaced, kept
// here as an oracle: a bracket-matching check that the line is one object
// (SkipValue), then Inbound, then the SDK's decoder. Both accept the same
// lines and decode them to the same message (translated ids to a token
// each); a refused line is answered with one error, a parse error exactly
// when it is not valid JSON.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		ping(5) + ` trailing`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":x"y,"b":1}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":x[[[[ ,"b":1}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}`,
	} {
		f.Add([]byte(s))
	}
	d := newLineDecoder()
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok, out := d.decode(bytes.Clone(line))
		trimmed := bytes.TrimSpace(line)
		var want jsonrpc.Message
		wantOK := false
		if len(trimmed) > 0 && trimmed[0] == '{' {
			if end := jsonscan.SkipValue(trimmed, 0); end > 0 && jsonscan.SkipWS(trimmed, end) == len(trimmed) {
				var err error
				want, err = jsonrpc.DecodeMessage(wire.NewTable().Inbound(trimmed))
				wantOK = err == nil
			}
		}
		switch {
		case ok != wantOK:
			t.Fatalf("decode(%q) ok %v, the previous formulation %v", line, ok, wantOK)
		case ok:
			if req, isReq := got.(*jsonrpc.Request); isReq && isToken(req.ID) {
				if w, _ := want.(*jsonrpc.Request); w == nil || !isToken(w.ID) {
					t.Fatalf("decode(%q) translated the id, the previous formulation did not", line)
				}
				req.ID = want.(*jsonrpc.Request).ID
			}
			req, isReq := got.(*jsonrpc.Request)
			if w, isW := want.(*jsonrpc.Request); isReq && isW { // a cancellation's requestId may be a token
				req.Params = tokenPrefix.ReplaceAll(req.Params, []byte("TOKEN:"))
				w.Params = tokenPrefix.ReplaceAll(w.Params, []byte("TOKEN:"))
			}
			if diff := sameMessage(got, want); diff != "" {
				t.Fatalf("decode(%q) differs from the previous formulation: %s", line, diff)
			}
		case len(trimmed) == 0:
			if len(out) != 0 {
				t.Fatalf("decode(%q) answered a blank line: %s", line, out)
			}
		default:
			var resp struct{ Error *jsonrpc.Error }
			if bytes.Count(out, []byte("\n")) != 1 || json.Unmarshal(out, &resp) != nil || resp.Error == nil {
				t.Fatalf("decode(%q) refused it with %q, want one error response", line, out)
			}
			if parseErr := resp.Error.Code == jsonrpc.CodeParseError; parseErr == json.Valid(trimmed) {
				t.Fatalf("decode(%q) answered error %d (valid JSON: %v)", line, resp.Error.Code, json.Valid(trimmed))
			}
		}
	})
}

// BenchmarkDecodeLine measures (*conn).decode, everything the reader does
// with a line between reading it and handing the message on, on the
// 128-command tools/call line.
func BenchmarkDecodeLine(b *testing.B) {
	line := executeLine()
	c := newConn(nil, discardCloser{}, Options{})
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		c.inPlace = true // the line stays in the read buffer: decode copies what it keeps
		if _, ok := c.decode(line); !ok {
			b.Fatal("decode refused the line")
		}
	}
}
