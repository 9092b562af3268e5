package test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// rawHTTP is a client of bin/mcpkit's /mcp that writes JSON-RPC by hand.
type rawHTTP struct {
	hp      *httpProc
	session string // Mcp-Session-Id, once a legacy initialize returned one
	era     string // the MCP-Protocol-Version header, if set
	token   string // a bearer token, if set
}

// post sends body and returns the response and the JSON-RPC messages in it
// (the data of each SSE event, or the JSON body); hdr holds more headers, as
// name, value pairs.
func (c *rawHTTP) post(t testing.TB, body string, hdr ...string) (*http.Response, []string) {
	t.Helper()
	resp, msgs, err := c.send(t.Context(), body, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return resp, msgs
}

// send is post for goroutines: it returns its error.
func (c *rawHTTP) send(ctx context.Context, body string, hdr ...string) (*http.Response, []string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.hp.base+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range map[string]string{"Mcp-Session-Id": c.session, "MCP-Protocol-Version": c.era} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, []string{string(b)}, nil
	}
	var msgs []string
	for line := range strings.Lines(string(b)) {
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			msgs = append(msgs, data)
		}
	}
	return resp, msgs, nil
}

// initialize opens a legacy session.
func (c *rawHTTP) initialize(t testing.TB, id string) []string {
	t.Helper()
	resp, msgs := c.post(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: HTTP %d %v", resp.StatusCode, msgs)
	}
	c.session, c.era = resp.Header.Get("Mcp-Session-Id"), legacyEra
	if resp, _ := c.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return msgs
}

// member returns the raw text of a message's top-level member key ("" when
// it has none).
func member(t testing.TB, msg, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		t.Fatalf("not a JSON object: %.200q", msg)
	}
	return string(m[key])
}

// TestHTTPIDsEchoedExactly: request ids come back byte for byte over HTTP,
// in both eras, including those the SDK decodes through float64 (before,
// 9007199254740993 came back as 9007199254740992, 1.5 as 1).
func TestHTTPIDsEchoedExactly(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, "--plugins", "diag")
	ids := []string{"9007199254740993", "1.5", "123456789012345678901234567890", "-0", "2e3", "42", `"forty-two"`}
	check := func(what, id string, resp *http.Response, msgs []string) {
		t.Helper()
		if resp.StatusCode != http.StatusOK || len(msgs) != 1 || member(t, msgs[0], "id") != id || member(t, msgs[0], "error") != "" {
			t.Errorf("%s, id %s: HTTP %d %.300q", what, id, resp.StatusCode, msgs)
		}
	}
	legacy := &rawHTTP{hp: hp}
	if msgs := legacy.initialize(t, "9007199254740993"); len(msgs) != 1 || member(t, msgs[0], "id") != "9007199254740993" {
		t.Errorf("initialize: %.300q", msgs)
	}
	modern := &rawHTTP{hp: hp, era: modernEra}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, id := range ids {
		resp, msgs := legacy.post(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"diag_echo","arguments":{"message":"hi"}}}`)
		check("legacy tools/call", id, resp, msgs)
		resp, msgs = modern.post(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list","params":{`+meta+`}}`, "Mcp-Method", "tools/list")
		check("2026-07-28 tools/list", id, resp, msgs)
	}
}

// TestHTTPCancelledCallNotAnswered: a call the client cancels gets no
// response (MCP: the receiver of notifications/cancelled should not send
// one), and its POST stream ends.
func TestHTTPCancelledCallNotAnswered(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, "--plugins", "diag")
	c := &rawHTTP{hp: hp}
	c.initialize(t, "0")
	for _, id := range []string{"7", "7.5", `"seven"`} {
		type reply struct {
			resp *http.Response
			msgs []string
			err  error
		}
		replies := make(chan reply, 1)
		go func() {
			resp, msgs, err := c.send(t.Context(), `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"diag_sleep","arguments":{"ms":10000}}}`)
			replies <- reply{resp, msgs, err}
		}()
		time.Sleep(300 * time.Millisecond) // let the call start
		if resp, msgs := c.post(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`}}`); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("id %s: cancel: HTTP %d %v", id, resp.StatusCode, msgs)
		}
		select {
		case r := <-replies:
			if r.err != nil {
				t.Fatalf("id %s: %v", id, r.err)
			}
			if r.resp.StatusCode != http.StatusOK || len(r.msgs) != 0 {
				t.Errorf("id %s: the cancelled call's stream: HTTP %d %.300q, want no message", id, r.resp.StatusCode, r.msgs)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("id %s: the cancelled call's stream did not end", id)
		}
	}
	if resp, msgs := c.post(t, `{"jsonrpc":"2.0","id":"after","method":"ping"}`); resp.StatusCode != http.StatusOK || len(msgs) != 1 || member(t, msgs[0], "id") != `"after"` {
		t.Fatalf("ping after the cancellations: HTTP %d %v", resp.StatusCode, msgs)
	}
}

// TestToolResultWireInBothEras: a tool result the host serializes itself
// carries what the SDK would write in each era: content and
// structuredContent, plus resultType "complete" and the server's identity
// in _meta for 2026-07-28 requests, and neither for legacy ones.
func TestToolResultWireInBothEras(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, "--plugins", "diag")
	legacy := &rawHTTP{hp: hp}
	legacy.initialize(t, "0")
	modern := &rawHTTP{hp: hp, era: modernEra}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	call := `"name":"diag_echo","arguments":{"message":"<hi> & \"bye\""}`
	for _, tc := range []struct {
		era        string
		c          *rawHTTP
		params     string
		resultType string
		serverMeta bool
	}{
		{"legacy", legacy, "{" + call + "}", "", false},
		{modernEra, modern, "{" + call + "," + meta + "}", `"complete"`, true},
	} {
		_, msgs := tc.c.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+tc.params+`}`, "Mcp-Method", "tools/call", "Mcp-Name", "diag_echo")
		if len(msgs) != 1 {
			t.Fatalf("%s: %q", tc.era, msgs)
		}
		result := member(t, msgs[0], "result")
		var r struct {
			Content []struct {
				Type, Text string
			} `json:"content"`
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
			Meta              map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal([]byte(result), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Content) != 1 || r.Content[0].Type != "text" || r.IsError || r.StructuredContent["message"] != `<hi> & "bye"` {
			t.Errorf("%s: %s", tc.era, result)
		}
		var again map[string]any
		if err := json.Unmarshal([]byte(r.Content[0].Text), &again); err != nil || !reflect.DeepEqual(again, r.StructuredContent) {
			t.Errorf("%s: the text is not the structured content's JSON: %s", tc.era, result)
		}
		if got := member(t, result, "resultType"); got != tc.resultType {
			t.Errorf("%s: resultType %s, want %q", tc.era, got, tc.resultType)
		}
		if _, ok := r.Meta["io.modelcontextprotocol/serverInfo"]; ok != tc.serverMeta {
			t.Errorf("%s: _meta %v, server identity wanted: %v", tc.era, r.Meta, tc.serverMeta)
		}
	}
}
