package resp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
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
