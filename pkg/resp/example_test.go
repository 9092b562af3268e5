package resp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// Dial a server, run a pipeline and print each reply in its JSON form.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := resp.Dial(ctx, resp.DialOptions{Addr: "127.0.0.1:6380", Password: "secret"})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	var cmds [][][]byte
	for _, raw := range []string{`["SET", "n", 41]`, `["INCR", "n"]`, `["GET", {"base64": "bg=="}]`} {
		var args []json.RawMessage
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			log.Fatal(err)
		}
		cmd, err := resp.ParseArgs(args)
		if err != nil {
			log.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	res, err := conn.Pipeline(ctx, cmds, resp.PipelineOptions{MaxReplyBytes: 64 << 20})
	if err != nil {
		log.Fatalf("%d replies received: %v", len(res.Replies), err)
	}
	for _, v := range res.Replies {
		js, _ := json.Marshal(v)
		fmt.Println(string(js))
	}
}

// Decode RESP3 frames as a server sends them and print their lossless JSON
// form: the map keeps its order and its duplicate key, the double its text,
// the integer beyond JSON's safe range its digits.
func ExampleReader() {
	wire := "%2\r\n+k\r\n:1\r\n+k\r\n,inf\r\n" + ":9007199254740993\r\n" + "$3\r\n\xff\x00A\r\n"
	r := resp.NewReader(strings.NewReader(wire), resp.ReaderOptions{})
	for {
		v, _, err := r.ReadValue()
		if err != nil {
			break // io.EOF after the last frame
		}
		js, err := resp.AppendJSON(nil, &v)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(js))
	}
	// Output:
	// {"type":"map","entries":[[{"type":"simple_string","encoding":"utf8","value":"k"},{"type":"integer","value":"1"}],[{"type":"simple_string","encoding":"utf8","value":"k"},{"type":"double","value":"inf"}]]}
	// {"type":"integer","value":"9007199254740993"}
	// {"type":"bulk_string","encoding":"base64","value":"/wBB"}
}

// Frame a command from JSON arguments: strings, safe integers and
// {"base64": ...} for arbitrary bytes.
func ExampleParseArgs() {
	var args []json.RawMessage
	if err := json.Unmarshal([]byte(`["SET", "n", 41, {"base64": "AP8="}]`), &args); err != nil {
		log.Fatal(err)
	}
	cmd, err := resp.ParseArgs(args)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", resp.AppendCommand(nil, cmd))
	// Output:
	// "*4\r\n$3\r\nSET\r\n$1\r\nn\r\n$2\r\n41\r\n$2\r\n\x00\xff\r\n"
}
