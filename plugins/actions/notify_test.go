package actions

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
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

// TestPubSubReachesClientsWithoutALevel: a PubSub message reaches every
// connected legacy client, one that never set a log level too (at info,
// marked as sent by default); a client that set a level above info gets
// none, and so does a 2026-07-28 client, which asks for log messages per
// request.
func TestPubSubReachesClientsWithoutALevel(t *testing.T) {
	p := New(OpenExample)
	_, srv, err := mcptest.Connect(t, mcpcore.Options{Instances: []mcpcore.Instance{{Name: "actions", Plugin: p}}})
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string]chan *mcp.LoggingMessageParams{}
	var sessions []*mcp.ClientSession
	for _, level := range []mcp.LoggingLevel{"", "error", "debug"} {
		ch := make(chan *mcp.LoggingMessageParams, 10)
		logs[string(level)] = ch
		cs := mcptest.Session(t, srv, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			ch <- r.Params
		}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if level != "" {
			if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: level}); err != nil {
				t.Fatal(err)
			}
		}
		sessions = append(sessions, cs)
	}
	modern := make(chan *mcp.LoggingMessageParams, 10)
	mcs := mcptest.Session(t, srv, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		modern <- r.Params
	}}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if _, err := mcs.ListTools(t.Context(), nil); err != nil { // the host tracks the session from its first request
		t.Fatal(err)
	}
	res, err := sessions[0].CallTool(t.Context(), &mcp.CallToolParams{Name: "actions_message-post",
		Arguments: map[string]any{"channel": "news", "text": "for all", "author": "ann"}})
	if err != nil || res.IsError {
		t.Fatalf("message-post: %v %v", err, res)
	}
	for _, level := range []string{"", "debug"} {
		select {
		case l := <-logs[level]:
			b, _ := json.Marshal(l.Data)
			if l.Level != "info" || l.Logger != "pubsub" || !strings.Contains(string(b), `"text":"for all"`) ||
				level == "" && l.Meta["io.mcpkit/default-level"] != true {
				t.Fatalf("client with level %q: %+v (%s)", level, l, b)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the client with level %q got no notification", level)
		}
	}
	select {
	case l := <-logs["error"]:
		t.Fatalf("the client with level error got %+v", l)
	case l := <-modern:
		t.Fatalf("the 2026-07-28 client got %+v", l)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestPubSubReachesOtherInstancesMCPClients: with two instances on one
// Redis (and one PostgreSQL store), a message posted on one reaches an
// MCP client of the other; an inbox's message is not forwarded to a
// session it is not the inbox of.
func TestPubSubReachesOtherInstancesMCPClients(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	cfg := json.RawMessage(`{"redis": {"addr": "` + srv.Addr + `", "prefix": "n:"}, ` + sharedData(t) + `}`)
	var clients []*mcp.ClientSession
	logs := make(chan *mcp.LoggingMessageParams, 10)
	for i := range 2 {
		c := mcpcore.DefaultConfig()
		c.Plugins = map[string]mcpcore.PluginConfig{"actions": {Config: cfg}}
		_, s, err := mcptest.Connect(t, mcpcore.Options{Config: c, Instances: []mcpcore.Instance{{Name: "actions", Plugin: New(OpenExample)}}})
		if err != nil {
			t.Fatal(err)
		}
		var opts *mcp.ClientOptions
		if i == 1 {
			opts = &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params }}
		}
		clients = append(clients, mcptest.Session(t, s, opts, nil))
	}
	if err := clients[1].SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	for _, channel := range []string{"inbox:someone", "open"} {
		res, err := clients[0].CallTool(t.Context(), &mcp.CallToolParams{Name: "actions_message-post",
			Arguments: map[string]any{"channel": channel, "text": "to " + channel, "author": "ann"}})
		if err != nil || res.IsError {
			t.Fatalf("message-post on %s: %v %v", channel, err, res)
		}
	}
	select {
	case l := <-logs:
		b, _ := json.Marshal(l.Data)
		if !strings.Contains(string(b), `"channel":"open"`) || !strings.Contains(string(b), `"text":"to open"`) {
			t.Fatalf("the other instance's client got %s first; want the open channel's message (the inbox's is not its)", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no log notification on the other instance")
	}
}
