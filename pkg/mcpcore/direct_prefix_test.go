package mcpcore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/stdio"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// prefixArgs is an ArgumentsPrefixDecoder that records which way it was
// decoded.
type prefixArgs struct {
	S      string `json:"s"`
	asRead bool   // by DecodeArgumentsPrefix
}

func (a *prefixArgs) DecodeArguments(raw json.RawMessage) error {
	var w struct {
		S string `json:"s"`
	}
	if err := StrictDecode(raw, &w); err != nil {
		return err
	}
	a.S = w.S
	return nil
}

func (a *prefixArgs) DecodeArgumentsPrefix(b []byte) (int, bool) {
	end := jsonscan.SkipValue(b, 0)
	if end < 0 || b[0] != '{' || a.DecodeArguments(b[:end]) != nil {
		return 0, false
	}
	a.asRead = true
	return end, true
}

// TestDirectArgumentsDecodedAsRead: a direct tool whose argument type is
// an ArgumentsPrefixDecoder gets its arguments decoded as the params are
// read when they follow the name on a server without middleware, and
// decoded the usual way otherwise (arguments before the name, arguments
// the prefix decoder refuses, a server with middleware), with the same
// values and the same errors.
func TestDirectArgumentsDecodedAsRead(t *testing.T) {
	for _, mw := range []bool{false, true} {
		attach := func(h *Host) {
			AddTool(h, &mcp.Tool{Name: "p"}, func(_ context.Context, _ *mcp.CallToolRequest, in prefixArgs) (any, error) {
				return Text(fmt.Sprintf("%s %v", in.S, in.asRead)), nil
			}, ToolOptions{Direct: true})
		}
		opts := Options{Instances: []Instance{instance("px", attach)}}
		if mw {
			opts.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler { return next }}
		}
		srv, err := NewServer(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- srv.Run(context.Background(), stdio.NewTransport(inR, outW, stdio.Options{})) }()
		lines := bufio.NewReader(outR)
		exchange := func(line string) string {
			if _, err := io.WriteString(inW, line+"\n"); err != nil {
				t.Fatal(err)
			}
			got, err := lines.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + legacyEra + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
		io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		for _, c := range []struct{ params, want string }{
			{`{"name":"px_p","arguments":{"s":"a"}}`, `"a ` + fmt.Sprint(!mw) + `"`},
			{`{"name":"px_p","arguments": {"s":"b"} ,"_meta":{"k":1}}`, `"b ` + fmt.Sprint(!mw) + `"`},
			{`{"arguments":{"s":"c"},"name":"px_p"}`, `"c false"`},
			{`{"name":"px_p","arguments":{"s":5}}`, `bad_params`},
			{`{"name":"px_p","arguments":{"s":"d","x":1}}`, `bad_params`},
		} {
			got := exchange(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + c.params + `}`)
			if !strings.Contains(got, c.want) {
				t.Errorf("middleware %v, params %s: %s, want %s in it", mw, c.params, got, c.want)
			}
		}
		inW.Close()
		<-done
		outW.Close()
		srv.Close(context.Background())
	}
}
