package resp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// execText is execute's text form, read back (ExecuteReply.AppendText).
type execText struct {
	Labels  map[string][]string // label lines by label: session, outcome, redirect, unknown
	Replies []resp.Value
	Pushes  []resp.Value
}

// labelLine is a labelled line of the text form.
var labelLine = regexp.MustCompile(`^(session|outcome|redirect|unknown|timed_out): (.*)$`)

// parseExecText reads execute's text form back, failing the test on
// anything else: label lines, then the replies (each after its index
// [N], counted from 1, when numbered), then the pushes.
func parseExecText(t *testing.T, text string) execText {
	t.Helper()
	out := execText{Labels: map[string][]string{}}
	b := []byte(text)
	for len(b) > 0 {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		var indent int
		var into *[]resp.Value
		switch m := labelLine.FindSubmatch(line); {
		case m != nil:
			out.Labels[string(m[1])] = append(out.Labels[string(m[1])], string(m[2]))
			b = b[min(len(line)+1, len(b)):]
			continue
		case bytes.HasPrefix(line, []byte("push: ")):
			indent, into = len("push: "), &out.Pushes
		case bytes.HasPrefix(line, []byte("[")):
			label := fmt.Sprintf("[%d] ", len(out.Replies)+1)
			if !bytes.HasPrefix(line, []byte(label)) {
				t.Fatalf("reply %d: line %q in\n%s", len(out.Replies)+1, line, text)
			}
			indent, into = len(label), &out.Replies
		default:
			if len(out.Replies) > 0 || len(out.Labels) > 0 {
				t.Fatalf("an unlabelled reply after others: %q in\n%s", line, text)
			}
			into = &out.Replies // the only command's reply, alone
		}
		v, n, err := resp.ParseTextFormPrefix(b[indent:], indent)
		if err != nil {
			t.Fatalf("%v in\n%s", err, text)
		}
		*into = append(*into, v)
		b = b[indent+n:]
		if len(b) > 0 {
			if b[0] != '\n' {
				t.Fatalf("%q after a reply in\n%s", b, text)
			}
			b = b[1:]
		}
	}
	return out
}

// textOf returns a result's only content, text, and checks that there is
// nothing else (no structuredContent).
func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 || res.StructuredContent != nil {
		b, _ := json.Marshal(res)
		t.Fatalf("want one text content and no structuredContent, got %s", b)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want text", res.Content[0])
	}
	return tc.Text
}

// jsonOf returns the JSON of each value, its members sorted, as a JSON
// reader sees them.
func jsonOf[V any](t *testing.T, vals []V) []string {
	t.Helper()
	var out []string
	for _, v := range vals {
		b, err := json.Marshal(v)
		var tree any
		if err == nil {
			err = json.Unmarshal(b, &tree)
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(mustJSON(t, tree)))
	}
	return out
}

// TestExecuteText: execute's default result is its text form, one text
// content without structuredContent; a call of one command that went as
// usual is its reply alone, and every reply, of every type, over RESP2
// and RESP3, reads back to its JSON form.
func TestExecuteText(t *testing.T) {
	s := redistest.Start(t, redistest.Options{Config: []string{"enable-debug-command yes"}})
	e := connect(t, targetAt(s, ""), "")
	for _, c := range []struct {
		cmds    [][]any
		want    string
		isError bool
	}{
		{[][]any{{"SET", "k", "v"}}, `(status) OK`, false},
		{[][]any{{"GET", "k"}}, `v`, false},
		{[][]any{{"SET", "k2", "(nil)"}, {"GET", "k2"}, {"SET", "k3", "12"}, {"GET", "k3"}}, "[1] (status) OK\n[2] \"(nil)\"\n[3] (status) OK\n[4] \"12\"", false},
		{[][]any{{"GET", "missing"}}, `(nil)`, false},
		{[][]any{{"SET", "bin", map[string]any{"base64": "AP8iCg=="}}, {"GET", "bin"}, {"INCR", "n"}}, "[1] (status) OK\n[2] \"\\x00\\xff\\\"\\n\"\n[3] (integer) 1", false},
		{[][]any{{"RPUSH", "l", "a", "b"}, {"LRANGE", "l", 0, -1}, {"LRANGE", "none", 0, -1}}, "[1] (integer) 2\n[2] 1) a\n    2) b\n[3] (empty array)", false},
		{[][]any{{"INCR", "k"}}, "outcome: error\n[1] (error) ERR value is not an integer or out of range", true},
	} {
		res := e.call(nil, "resp_execute", map[string]any{"commands": c.cmds})
		if got := textOf(t, res); got != c.want || res.IsError != c.isError {
			t.Errorf("execute %v: isError %v, text\n%s\nwant isError %v,\n%s", c.cmds, res.IsError, got, c.isError, c.want)
		}
	}

	// Every reply type a server sends (DEBUG PROTOCOL), on RESP2 and RESP3
	// sessions, in one call and one a call: the text form reads back to
	// the JSON form's replies and pushes.
	var batch [][]any
	for _, typ := range []string{"string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push", "verbatim", "true", "false"} {
		batch = append(batch, []any{"DEBUG", "PROTOCOL", typ})
	}
	e.exec(cmd("HSET", "h", "f", "v", "g", "é\n"))
	batch = append(batch, []any{"HGETALL", "h"}, []any{"CONFIG", "GET", "maxmemory*"}, []any{"NOPE"})
	for _, protocol := range []int{2, 3} {
		h := e.open(nil, map[string]any{"protocol": protocol})
		asJSON := decode[struct {
			Replies, Pushes []json.RawMessage
		}](t, e.execOn(nil, h, batch...))
		res := e.call(nil, "resp_execute", map[string]any{"session": h, "commands": batch})
		text := textOf(t, res)
		got := parseExecText(t, text)
		if !res.IsError || fmt.Sprint(got.Labels) != fmt.Sprintf("map[outcome:[error] session:[%s]]", h) {
			t.Errorf("RESP%d: isError %v, labels %v", protocol, res.IsError, got.Labels)
		}
		if g, w := jsonOf(t, got.Replies), jsonOf(t, asJSON.Replies); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("RESP%d: the text form\n%s\nreads back as\n%s\nwant\n%s", protocol, text, g, w)
		}
		if g, w := jsonOf(t, got.Pushes), jsonOf(t, asJSON.Pushes); fmt.Sprint(g) != fmt.Sprint(w) || (protocol == 3) != (len(w) == 1) {
			t.Errorf("RESP%d: pushes %s, want %s", protocol, g, w)
		}
		for i, c := range batch {
			one := e.call(nil, "resp_execute", map[string]any{"session": h, "commands": [][]any{c}})
			r := parseExecText(t, textOf(t, one))
			if g, w := jsonOf(t, r.Replies), jsonOf(t, asJSON.Replies[i:i+1]); fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("RESP%d %v: %s, want %s", protocol, c, g, w)
			}
		}
	}

	// The format argument: json as before, anything else refused.
	res := e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"GET", "k"}}})
	if r := decode[execReply](t, res); r.Outcome != OutcomeOK || r.Replies[0].Str(t) != "v" || fmt.Sprint(jsonOf(t, []json.RawMessage{json.RawMessage(res.Content[0].(*mcp.TextContent).Text)})) != fmt.Sprint(jsonOf(t, []any{res.StructuredContent})) {
		t.Errorf("format json: %+v", r)
	}
	if f := failure(t, e.call(nil, "resp_execute", map[string]any{"format": "yaml", "commands": [][]any{{"GET", "k"}}}), mcpcore.KindBadParams); f.Error.Path != "/format" {
		t.Errorf("format yaml: %+v", f)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExecuteTextStreamed: in text form too, replies past the inline size
// are written as they arrive and paged (format text): the text is byte
// for byte the one written at once, and the session's state is the same.
func TestExecuteTextStreamed(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	value := strings.Repeat("v", 3000)
	var results [2]string
	for i, inline := range []int64{64 * mcpcore.KiB, 1 * mcpcore.KiB} {
		list := fmt.Sprint("list", i)
		batch := [][]any{{"SELECT", "1"}, {"SET", "k", value}, {"GET", "k"}, {"NOPE"}, {"GET", "missing"}, {"GET", "k"},
			{"SET", "bin", map[string]any{"base64": "AP8="}}, {"GET", "bin"}, {"RPUSH", list, "a", value}, {"LRANGE", list, "0", "-1"}}
		e := connect(t, targetAt(s, ""), "", func(l *mcpcore.Limits) { l.InlineResultBytes = inline })
		res := e.call(nil, "resp_execute", map[string]any{"commands": batch})
		if !res.IsError {
			t.Fatalf("inline %d: a batch with an error reply is not an error", inline)
		}
		if inline < 64*mcpcore.KiB {
			if ref := decode[struct{ Format string }](t, res); ref.Format != "text" {
				t.Fatalf("inline %d: not paged as text: %+v", inline, res.StructuredContent)
			}
		}
		results[i] = string(e.resultJSON(res))
		if l := e.list(nil); len(l) != 1 || l[0].Database != 1 {
			t.Fatalf("inline %d: sessions %+v", inline, l)
		}
		// One large reply alone: no index.
		one := e.call(nil, "resp_execute", map[string]any{"commands": [][]any{{"GET", "k"}}})
		if got := string(e.resultJSON(one)); got != value {
			t.Fatalf("inline %d: GET k = %.100s", inline, got)
		}
	}
	r := parseExecText(t, results[1])
	if fmt.Sprint(r.Labels) != "map[outcome:[error]]" || len(r.Replies) != 10 || string(r.Replies[5].Str) != value {
		t.Fatalf("streamed: %.300s", results[1])
	}
	if results[0] != results[1] {
		t.Fatalf("streamed text differs:\n%.300s\n%.300s", results[0], results[1])
	}
}

// TestReceiveText: the session tool's receive returns its frames in the
// same text form by default (the reply alone for one frame, [N] before
// each of several, a timed_out line when none came), and the JSON form
// with format json.
func TestReceiveText(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	sub := e.open(nil, map[string]any{"protocol": 3})
	receive := func(args map[string]any) string {
		t.Helper()
		args["action"], args["session"] = ActionReceive, sub
		res := e.call(nil, "resp_session", args)
		if res.IsError {
			t.Fatalf("receive: %v", res.Content)
		}
		return textOf(t, res)
	}
	if res := e.call(nil, "resp_session", map[string]any{"action": "send", "session": sub, "commands": [][]any{{"SUBSCRIBE", "news"}}}); res.IsError {
		t.Fatalf("send: %v", res.Content)
	}
	if got, want := receive(map[string]any{"wait_ms": 5000}), "1> subscribe\n2> news\n3> (integer) 1"; got != want {
		t.Errorf("subscribe acknowledgement:\n%s\nwant\n%s", got, want)
	}
	if got, want := receive(map[string]any{"wait_ms": 0}), "timed_out: no frame arrived within wait_ms"; got != want {
		t.Errorf("nothing to receive:\n%s\nwant\n%s", got, want)
	}
	e.exec(cmd("PUBLISH", "news", "one"), cmd("PUBLISH", "news", "two\x00"))
	var frames []string
	for len(frames) < 2 {
		r := parseExecText(t, receive(map[string]any{"wait_ms": 5000, "max_frames": 10}))
		frames = append(frames, jsonOf(t, r.Replies)...)
	}
	want := []string{
		`{"items":[{"encoding":"utf8","type":"bulk_string","value":"message"},{"encoding":"utf8","type":"bulk_string","value":"news"},{"encoding":"utf8","type":"bulk_string","value":"one"}],"type":"push"}`,
		`{"items":[{"encoding":"utf8","type":"bulk_string","value":"message"},{"encoding":"utf8","type":"bulk_string","value":"news"},{"encoding":"utf8","type":"bulk_string","value":"two\u0000"}],"type":"push"}`,
	}
	if fmt.Sprint(frames) != fmt.Sprint(want) {
		t.Errorf("messages read back as\n%s\nwant\n%s", frames, want)
	}
	e.exec(cmd("PUBLISH", "news", "three"))
	r := decode[receiveReply](t, e.call(nil, "resp_session", map[string]any{"action": "receive", "session": sub, "format": "json", "wait_ms": 5000}))
	if len(r.Frames) != 1 || r.Frames[0].Items[2].Str(t) != "three" {
		t.Errorf("format json: %+v", r)
	}
	failure(t, e.call(nil, "resp_session", map[string]any{"action": "receive", "session": sub, "format": "csv"}), mcpcore.KindBadParams)
}
