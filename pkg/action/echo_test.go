package action_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpkit/mcpkit/pkg/action"
)

// Note has a bounded text, for the echo test.
type Note struct {
	Text  string `json:"text"`
	Count int    `json:"count,omitempty"`
}

func (*Note) AdjustSchema(s *jsonschema.Schema) error {
	hi := 4000
	s.Properties["text"].MaxLength = &hi
	return nil
}

// wantShortEcho checks that an error message or field quotes at most a
// prefix of the long value it echoes: EchoChars characters and the
// value's length in bytes.
func wantShortEcho(t *testing.T, where, got string, size int) {
	t.Helper()
	if len(got) > 700 || !strings.Contains(got, "…("+strconv.Itoa(size)+" bytes)") || !strings.Contains(got, strings.Repeat("x", action.EchoChars)) ||
		strings.Contains(got, strings.Repeat("x", action.EchoChars+1)) {
		t.Errorf("%s: %d bytes %.300q: want a prefix of %d characters and …(%d bytes)", where, len(got), got, action.EchoChars, size)
	}
}

// TestErrorsEchoAPrefix: a param error quotes at most a short prefix of a
// long bad value, whichever rule refused it and whichever transport
// carried it (App.Run, which MCP uses; HTTP body, query and form; the
// WebSocket; the command line).
func TestErrorsEchoAPrefix(t *testing.T) {
	t.Parallel()
	const size = 200000
	long := strings.Repeat("x", size)
	app, _ := testApp(t)
	app.MustAdd(action.Action{Name: "note", Description: "a note", Inputs: (*Note)(nil), Web: &action.Web{Method: "POST", Route: "/note"},
		Run: func(context.Context, *action.Conn, any) (any, error) { return "ok", nil }})
	for name, params := range map[string]string{
		"maxLength":         `{"text":"` + long + `"}`,
		"type (unquoted)":   `{"text":"a","count":"` + long + `"}`,
		"unknown long name": `{"text":"a","` + long + `":1}`,
	} {
		_, err := app.Run(t.Context(), nil, "note", json.RawMessage(params))
		e := wantErrKind(t, err, action.KindInvalidParam)
		wantShortEcho(t, "Run "+name, e.Field+" "+e.Message, size)
	}
	_, err := app.Run(t.Context(), nil, long, nil)
	wantShortEcho(t, "Run of an unknown action", wantErrKind(t, err, action.KindNotFound).Message, size)

	srv := httptest.NewServer(app.HTTPHandler(action.HTTPOptions{}))
	t.Cleanup(srv.Close)
	base := srv.URL
	r := do(t, "POST", base+"/api/note", "application/json", `{"text":"`+long+`"}`)
	wantShortEcho(t, "HTTP JSON body", r.raw, size)
	r = do(t, "POST", base+"/api/note?count="+long, "application/json", `{"text":"a"}`)
	wantShortEcho(t, "HTTP query", r.raw, size)
	r = do(t, "POST", base+"/api/note", "application/x-www-form-urlencoded", url.Values{"text": {"a"}, "count": {long}}.Encode())
	wantShortEcho(t, "HTTP form", r.raw, size)

	c := wsDial(t, wsServeApp(t, action.NewLocalPubSub(), action.WebSocketOptions{MaxMessageBytes: 1 << 20}, func(a *action.App) {
		a.MustAdd(action.Action{Name: "note", Description: "a note", Inputs: (*Note)(nil),
			Run: func(context.Context, *action.Conn, any) (any, error) { return "ok", nil }})
	}))
	m := wsCall(t, c, `{"messageType":"action","action":"note","params":{"text":"`+long+`"},"messageId":1}`)
	b, _ := json.Marshal(m)
	wantShortEcho(t, "WebSocket", string(b), size)

	var stdout, stderr strings.Builder
	if code := app.RunCLI(t.Context(), []string{"run", "note", "--text", long}, &stdout, &stderr); code != action.ExitAction {
		t.Fatalf("CLI exit %d", code)
	}
	wantShortEcho(t, "CLI", stderr.String(), size)
}

func wantErrKind(t *testing.T, err error, k action.Kind) *action.Error {
	t.Helper()
	e, ok := err.(*action.Error)
	if !ok || e.Kind != k {
		t.Fatalf("error %.300v: want kind %s", err, k)
	}
	return e
}
