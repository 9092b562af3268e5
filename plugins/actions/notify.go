package actions

import (
	"context"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// forwardingPubSub publishes through its PubSub and forwards each message
// to this instance's MCP client sessions as a log notification (logger
// "pubsub", data {channel, message, sender}): to the sessions whose
// principal authorize allows on the channel (nil: all), and only where the
// protocol allows a log message — a legacy session whose client has set a
// log level (the SDK drops the others). A 2026-07-28 client has no session
// that outlives a request, so it gets none: it subscribes over WebSocket.
// With shared state, each instance forwards what is published on it.
type forwardingPubSub struct {
	action.PubSub
	host      *mcpcore.Host
	authorize func(ctx context.Context, c *action.Conn, channel string) error
}

// Publish implements action.PubSub.
func (f *forwardingPubSub) Publish(ctx context.Context, channel string, msg action.Message) error {
	if err := f.PubSub.Publish(ctx, channel, msg); err != nil {
		return err
	}
	data := map[string]any{"channel": channel, "message": msg.Message, "sender": msg.Sender}
	for _, s := range f.host.Sessions() {
		ss := s.ServerSession()
		if ss == nil {
			continue
		}
		if f.authorize != nil && f.authorize(ctx, &action.Conn{Type: "mcp", ID: s.ID(), Principal: s.Principal()}, channel) != nil {
			continue
		}
		// The server's context, not the publisher's request's: that one may
		// carry its own request's log level, which is not this session's.
		if err := ss.Log(f.host.Context(), &mcp.LoggingMessageParams{Level: "info", Logger: "pubsub", Data: data}); err != nil {
			f.host.Logger().Debug("pubsub message not forwarded", "session", s.ID(), "err", err)
		}
	}
	return nil
}
