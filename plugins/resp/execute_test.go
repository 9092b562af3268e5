package resp

import (
	"bytes"
	"encoding/json"
	"testing"

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
