package mcpcore

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sameJSON decodes a and b and reports whether they are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// checkEncoded: the result encodes exactly as the SDK encodes it.
func checkEncoded(t *testing.T, r *mcp.CallToolResult) {
	t.Helper()
	if !plainToolResult(r) {
		t.Fatalf("%+v is not plain", r)
	}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, direct := range []bool{false, true} {
		got, err := json.Marshal(&encodedResult{CallToolResult: r, direct: direct})
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(t, got, want) {
			t.Errorf("encoded (direct %v) %s\nthe SDK: %s", direct, got, want)
		}
	}
}

// TestResultTailMembers: a direct call's result takes its closing members
// from plainTails without looking at them, which holds while a plain
// result (plainToolResult) has no exported member that encodes but
// _meta, content, structuredContent and isError. A member the SDK adds
// fails this test, so that resultTail is looked at again.
func TestResultTailMembers(t *testing.T) {
	var names []string
	typ := reflect.TypeFor[mcp.CallToolResult]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			names = append(names, f.Name)
		}
	}
	want := []string{"Meta", "Content", "StructuredContent", "IsError", "InputRequests", "RequestState"} // the last two: not plain
	if !reflect.DeepEqual(names, want) {
		t.Errorf("mcp.CallToolResult's exported members are %v, resultTail knows %v", names, want)
	}
}

// TestEncodedResult: the host's encoding of a tool result is the SDK's,
// with or without metadata, error flag, structured content, any number of
// texts, and text that needs escaping; the members after the content of
// most results are the SDK's encoding of them, kept.
func TestEncodedResult(t *testing.T) {
	for _, r := range []*mcp.CallToolResult{
		{Content: []mcp.Content{}},
		{Content: []mcp.Content{&mcp.TextContent{Text: `{"a":1}`}}, StructuredContent: json.RawMessage(`{"a":1}`)},
		{Content: []mcp.Content{&mcp.TextContent{Text: "line\n\"quoted\" <b>&amp;</b> \u2028 é \x00\x1f"}}, IsError: true},
		{Content: []mcp.Content{&mcp.TextContent{Text: ""}, &mcp.TextContent{Text: "two"}}, Meta: mcp.Meta{"k": []any{1.5, "v"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: json.RawMessage(` { "spaced" : [ 1 , 2 ] } `)},
	} {
		checkEncoded(t, r)
	}
	// The tails of results without members other than isError are encoded
	// once: were the SDK's encoding to change shape, every result would be
	// encoded by the SDK again (correct, but slower), which this catches.
	if !plainTails().known {
		t.Errorf("the SDK's encoding of a bare result does not begin %s: no result tail is reused", contentPrefix)
	}
	for _, r := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: map[string]int{"a": 1}},
		{RequestState: "s"},
	} {
		if plainToolResult(r) {
			t.Errorf("%+v taken as plain: the host would drop what it does not write", r)
		}
	}
}

// FuzzEncodedResult: any text and error flag encode as the SDK encodes them.
func FuzzEncodedResult(f *testing.F) {
	f.Add("plain", false)
	f.Add("\"\\\n\u2028<>&\xff", true)
	f.Fuzz(func(t *testing.T, text string, isError bool) {
		checkEncoded(t, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError})
	})
}

// TestEncodedResultEscapesText: the text member of an encoded tool result
// holds exactly encoding/json's bytes for the text.
func TestEncodedResultEscapesText(t *testing.T) {
	text := "{\"k\":\"<v>&\u2028\xff\t\"} é"
	quoted, err := json.Marshal(text)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(&encodedResult{CallToolResult: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"type":"text","text":` + string(quoted) + `}]}`
	if string(got) != want {
		t.Errorf("encoded %s\n   want %s", got, want)
	}
}
