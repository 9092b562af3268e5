package resp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/internal/fastpath/fastpathtest"
	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/resp"
)

// TestExecuteReplyJSON: the hand-written JSON of a reply is exactly what
// encoding/json writes for its fields, for empty and full replies.
func TestExecuteReplyJSON(t *testing.T) {
	type plain ExecuteReply // the same fields without the MarshalJSON method
	str := resp.Value{Kind: resp.KindBulkString, Str: []byte("a\"\x00\xff")}
	push := resp.Value{Kind: resp.KindPush, Elems: []resp.Value{str, {Kind: resp.KindInteger, Int: -7}}}
	for _, r := range []ExecuteReply{
		{Session: DefaultSession, Outcome: OutcomeOK, Replies: []resp.Value{}, Pushes: []resp.Value{}},
		{Session: "rs_0123456789abcdef0123456789abcdef", Outcome: OutcomeUnknown, Replies: []resp.Value{str, {Kind: resp.KindNull}}, Pushes: []resp.Value{push}, Unknown: 3},
	} {
		got, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(plain(r))
		if !bytes.Equal(got, want) {
			t.Fatalf("MarshalJSON:\n%s\nencoding/json:\n%s", got, want)
		}
	}
}

// executeArgInputs are execute arguments on both sides of the schema.
var executeArgInputs = []string{
	`{"commands":[["SET","k","v"],["GET","k"]]}`,
	`{"commands":[["SET","k",{"base64":"AP8="}],["INCRBY","n",-5]],"session":"s1"}`,
	`{}`,
	`{"commands":null}`,
	`{"commands":{}}`,
	`{"commands":"GET k"}`,
	`{"commands":[]}`,
	`{"commands":[[]]}`,
	`{"commands":["GET"]}`,
	`{"commands":[null]}`,
	`{"commands":[["GET",null]]}`,
	`{"commands":[["GET",true]]}`,
	`{"commands":[["GET",["k"]]]}`,
	`{"commands":[["GET",{}]]}`,
	`{"commands":[["GET",{"base64":1}]]}`,
	`{"commands":[["GET",{"base64":"","x":1}]]}`,
	`{"commands":[["GET",1.5]]}`,
	`{"commands":[["GET",1.0]]}`,
	`{"commands":[["GET","k"]],"session":null}`,
	`{"commands":[["GET","k"]],"session":7}`,
	`{"commands":[["GET","k"]],"Session":"s"}`,
	`{"commands":[["GET","k"]],"extra":1}`,
	`{"Commands":[["GET","k"]]}`,
	`{"commands":[["GET","k"]],"format":"json"}`,
	`{"commands":[["GET","k"]],"format":"text","session":"s1"}`,
	`{"commands":[["GET","k"]],"format":"xml"}`,
	`{"commands":[["GET","k"]],"format":"JSON"}`,
	`{"commands":[["GET","k"]],"format":null}`,
	`{"commands":[["GET","k"]],"format":1}`,
}

// TestExecuteArgsDecoder: execute's own decoder refuses what its schema
// refuses, and decodes good arguments to the bytes sent.
func TestExecuteArgsDecoder(t *testing.T) {
	schema, err := executeSchema()
	if err != nil {
		t.Fatal(err)
	}
	newArgs := func() fastpath.ArgumentsDecoder { return new(ExecuteArgs) }
	fastpathtest.RefusesAsSchema(t, schema, newArgs, executeArgInputs...)
	var a ExecuteArgs
	if err := a.DecodeArguments(json.RawMessage(executeArgInputs[1])); err != nil {
		t.Fatal(err)
	}
	want := Commands{{[]byte("SET"), []byte("k"), {0, 0xff}}, {[]byte("INCRBY"), []byte("n"), []byte("-5")}}
	if a.Session != "s1" || fmt.Sprint(a.Commands) != fmt.Sprint(want) {
		t.Errorf("decoded %q %v, want s1 %v", a.Session, a.Commands, want)
	}
	for in, path := range map[string]string{
		`{"commands":{}}`:            "/commands",
		`{}`:                         "/commands",
		`{"commands":[["GET"],"x"]}`: "/commands/1",
		`{"commands":[["GET",{"base64":"","x":1}]]}`: "/commands/0/1/x",
		`{"commands":[["GET","k"]],"session":7}`:     "/session",
		`{"commands":[["GET","k"]],"extra":1}`:       "/extra",
	} {
		var pe *mcpcore.ParamError
		if err := new(ExecuteArgs).DecodeArguments(json.RawMessage(in)); !errors.As(err, &pe) || pe.Path != path {
			t.Errorf("%s: %v, want a ParamError at %s", in, err, path)
		}
	}
}

// FuzzExecuteArgs: whatever the input, execute's decoder refuses what the
// schema refuses.
func FuzzExecuteArgs(f *testing.F) {
	schema, err := executeSchema()
	if err != nil {
		f.Fatal(err)
	}
	for _, in := range executeArgInputs {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		fastpathtest.RefusesAsSchema(t, schema, func() fastpath.ArgumentsDecoder { return new(ExecuteArgs) }, in)
	})
}

// TestSessionFollowsHelloAndSelect: a HELLO or SELECT run through execute
// changes what the session tool lists; a SELECT queued in MULTI does not
// (it answers QUEUED), nor does a refused one.
func TestSessionFollowsHelloAndSelect(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), "")
	e.cs = e.session(legacyVersion)
	e.exec(cmd("HELLO", "2"), cmd("SELECT", "4"))
	if l := e.list(nil); len(l) != 1 || l[0].Protocol != 2 || l[0].Database != 4 {
		t.Fatalf("after HELLO 2 and SELECT 4: %+v", l)
	}
	e.execOn(nil, "", cmd("MULTI"), cmd("SELECT", "5"), cmd("DISCARD"), cmd("SELECT", "99999"), cmd("HELLO", "3")) // outcome error: the refused SELECT
	if l := e.list(nil); l[0].Protocol != 3 || l[0].Database != 4 {
		t.Fatalf("after a queued and a refused SELECT, and HELLO 3: %+v", l)
	}
}

// TestExecuteArgsReuse: a batch decoded into memory released by an
// earlier one (larger or smaller) is decoded exactly, and decoding a batch
// into released memory allocates almost nothing.
func TestExecuteArgsReuse(t *testing.T) {
	decode := func(raw string) *ExecuteArgs {
		t.Helper()
		a := new(ExecuteArgs)
		if err := a.DecodeArguments(json.RawMessage(raw)); err != nil {
			t.Fatal(err)
		}
		return a
	}
	big := `{"commands":[["SET","key-one","a long value here"],["GET","key-one"],["DEL","a","b","c"]]}`
	small := `{"commands":[["INCR",{"base64":"AP8="}],["PING"]]}`
	want := map[string]string{
		big:   `[["SET" "key-one" "a long value here"] ["GET" "key-one"] ["DEL" "a" "b" "c"]]`,
		small: `[["INCR" "\x00\xff"] ["PING"]]`,
	}
	for _, raw := range []string{big, small, big, small} {
		a := decode(raw)
		if got := fmt.Sprintf("%q", a.Commands); got != want[raw] {
			t.Fatalf("%s decoded as %s, want %s", raw, got, want[raw])
		}
		a.release()
	}
	if raceEnabled {
		return // sync.Pool drops released memory at random under the race detector
	}
	if n := testing.AllocsPerRun(100, func() { decode(big).release() }); n > 4 {
		t.Errorf("decoding into released memory allocates %v times", n)
	}
}
