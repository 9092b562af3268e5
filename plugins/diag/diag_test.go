package diag

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestBlobIsDeterministic(t *testing.T) {
	a, b, c := Blob(1, 1000), Blob(1, 1000), Blob(2, 1000)
	if !bytes.Equal(a, b) || bytes.Equal(a, c) || len(a) != 1000 {
		t.Fatal("Blob is not a deterministic function of its seed")
	}
	if !bytes.Equal(Blob(1, 10), a[:10]) {
		t.Fatal("a shorter blob is not a prefix of a longer one with the same seed")
	}
}

func TestTools(t *testing.T) {
	cs, _, err := mcptest.Connect(t, mcpcore.Options{Plugins: []string{"diag"}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, args any) (string, bool) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if out, isErr := call("diag_echo", EchoArgs{Message: "hi"}); isErr || out != `{"message":"hi"}` {
		t.Fatalf("echo = %s", out)
	}
	out, isErr := call("diag_blob", BlobArgs{Bytes: 16, Seed: 3})
	var blob BlobReply
	if isErr || json.Unmarshal([]byte(out), &blob) != nil || blob.Bytes != 16 || len(blob.SHA256) != 64 {
		t.Fatalf("blob = %s", out)
	}
	if out, isErr := call("diag_blob", BlobArgs{Bytes: MaxBlobBytes + 1}); !isErr || !strings.Contains(out, "outside") {
		t.Fatalf("oversized blob = %s", out)
	}
	if out, isErr := call("diag_sleep", SleepArgs{Milliseconds: 1}); isErr || !strings.Contains(out, "slept_ms") {
		t.Fatalf("sleep = %s", out)
	}
}
