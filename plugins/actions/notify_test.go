package actions

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPubSubReachesMCPClients: a message the example app broadcasts reaches
// a connected MCP client that set a log level, as a log notification with
// its channel, message and sender.
func TestPubSubReachesMCPClients(t *testing.T) {
	p := New(OpenExample)
	_, srv, err := mcptest.Connect(t, mcpcore.Options{Instances: []mcpcore.Instance{{Name: "actions", Plugin: p}}})
	if err != nil {
		t.Fatal(err)
	}
	logs := make(chan *mcp.LoggingMessageParams, 10)
	cs := mcptest.Session(t, srv, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		logs <- r.Params
	}}, nil)
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "actions_message-post",
		Arguments: map[string]any{"channel": "news", "text": "extra", "author": "ann"}})
	if err != nil || res.IsError {
		t.Fatalf("message-post: %v %v", err, res)
	}
	select {
	case l := <-logs:
		b, _ := json.Marshal(l.Data)
		var d struct {
			Channel string
			Message struct{ Text string }
			Sender  string
		}
		if err := json.Unmarshal(b, &d); err != nil || l.Logger != "pubsub" || d.Channel != "news" || d.Message.Text != "extra" {
			t.Fatalf("log notification %+v (%s)", l, b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no log notification for the broadcast")
	}
}
