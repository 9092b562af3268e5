package resp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// batchInputs are execute arguments that decodeBatch takes, or leaves to
// the strict path, beyond executeArgInputs.
var batchInputs = []string{
	` { "commands" : [ [ "SET" , "k" , "v" ] , [ "GET" , "k" ] ] , "session" : "rs_1" } `,
	`{"session":"s","commands":[["PING"]]}`,
	`{"commands":[["SET","k\"q","v\\b\/\u00e9\ud83d\ude00"]]}`,
	`{"commands":[["SET","clé","日本"]]}`,
	"{\"commands\":[[\"SET\",\"k\",\"\xff\xfe\"]]}",
	"{\"commands\":[[\"SET\",\"k\",\"a\x01\"]]}",
	`{"commands":[["SET","k","\ud800"]]}`,
	`{"commands":[["INCRBY","n",0],["INCRBY","n",-0],["INCRBY","n",9007199254740991],["INCRBY","n",-9007199254740991]]}`,
	`{"commands":[["INCRBY","n",9007199254740992]]}`,
	`{"commands":[["INCRBY","n",007]]}`,
	`{"commands":[["INCRBY","n",-]]}`,
	`{"commands":[["INCRBY","n",1e3]]}`,
	`{"commands":[["SET","k",{ "base64" : "AP8=" }]]}`,
	`{"commands":[["SET","k",{"base64":"AP8"}]]}`,
	`{"commands":[["SET","k",{"base64":"AP8=","base64":"AA=="}]]}`,
	`{"commands":[["GET","k"]],"commands":[["GET","j"]]}`,
	`{"commands":[["GET","k"]],"session":"a","session":"b"}`,
	`{"commands":[["GET","k"]],}`,
	`{"commands":[["GET","k"],]}`,
	`{"commands":[["GET","k",]]}`,
	`{"commands":[["GET","k"]]`,
	`{"commands":[["GET","k"]]}}`,
	`{"commands":[["GET","k"]]} x`,
	`{"comm\u0061nds":[["GET","k"]]}`,
	`{"commands":[["GET","k"]],"session":"s\u0031"}`,
	`{"commands":[["GET" "k"]]}`,
	`{"commands":[["GET","k"]"session":"s"}`,
	`{"commands":[["GET","k"]],"format":"text"}`,
	`{"format":"json","commands":[["GET","k"]],"session":"s"}`,
	`{"commands":[["GET","k"]],"format":"xml"}`,
	`{"commands":[["GET","k"]],"format":""}`,
	`{"commands":[["GET","k"]],"format":"json","format":"text"}`,
	`{"commands":[["GET","k"]],"format":1}`,
	`{"commands":[["GET","k"]],"format":"js\u006fn"}`,
}

// TestDecodeBatch: the one-pass decoding gives exactly what the strict
// path gives for what it takes (all the well-formed batches here), and
// leaves to the strict path everything it refuses.
func TestDecodeBatch(t *testing.T) {
	taken := 0
	for _, in := range append(batchInputs, executeArgInputs...) {
		if checkDecodeBatch(t, in) {
			taken++
		}
	}
	for _, in := range []string{batchInputs[0], batchInputs[1], batchInputs[2], batchInputs[3], batchInputs[7], batchInputs[12], executeArgInputs[0], executeArgInputs[1]} {
		if _, _, ok := decodeBatch([]byte(strings.TrimSpace(in)), new(batchBufs)); !ok {
			t.Errorf("decodeBatch left a well-formed batch to the strict path: %s", in)
		}
	}
	if taken == 0 {
		t.Fatal("decodeBatch took nothing")
	}
}

// FuzzDecodeBatch: whatever the input, what decodeBatch takes the strict
// path takes too, with the same commands and session.
func FuzzDecodeBatch(f *testing.F) {
	for _, in := range append(batchInputs, executeArgInputs...) {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) { checkDecodeBatch(t, in) })
}

// checkDecodeBatch compares decodeBatch with the strict path on in, as
// the host hands arguments over (without surrounding space), and reports
// whether decodeBatch took it.
func checkDecodeBatch(t *testing.T, in string) bool {
	t.Helper()
	raw := []byte(strings.TrimSpace(in))
	cmds, opts, ok := decodeBatch(raw, new(batchBufs))
	session := opts.session + " " + opts.format
	// As the host reads it among the params, whatever follows: what
	// decodeBatch takes, ending where raw ends; or an object that raw
	// begins with and that something follows.
	var prefix ExecuteArgs
	end, prefixOK := prefix.DecodeArgumentsPrefix(append(raw[:len(raw):len(raw)], ` ,"_meta":{"k":"}"}}`...))
	same := prefixOK && end == len(raw) && fmt.Sprintf("%q %q", prefix.Commands, prefix.Session+" "+prefix.Format) == fmt.Sprintf("%q %q", cmds, session)
	if ok && !same || !ok && prefixOK && end == len(raw) {
		t.Fatalf("%q: as a prefix %v (end %d of %d) %q %q; alone %v %q %q", in, prefixOK, end, len(raw), prefix.Commands, prefix.Session, ok, cmds, session)
	}
	if !ok {
		return false
	}
	var strict ExecuteArgs
	if err := strict.decodeStrictly(json.RawMessage(raw)); err != nil {
		t.Fatalf("decodeBatch took %q, which the strict path refuses: %v", in, err)
	}
	if got, want := fmt.Sprintf("%q %q", cmds, session), fmt.Sprintf("%q %q", strict.Commands, strict.Session+" "+strict.Format); got != want {
		t.Fatalf("%q decoded as\n%s\nthe strict path gives\n%s", in, got, want)
	}
	return true
}
