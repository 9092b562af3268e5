package actions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayChannel is the one channel of the relay PubSub: every message
// published on the app's PubSub is published there too, so that each
// instance forwards it to its own MCP sessions.
const relayChannel = "notify"

// forwardingPubSub is the PubSub the app publishes on: each message goes
// to its channel's subscribers (WebSocket clients) and, through the relay
// PubSub that every instance sharing the state subscribes to, to the MCP
// sessions of every instance ([notifier]).
type forwardingPubSub struct {
	action.PubSub
	relay action.PubSub
}

// relayed is a message as the relay delivers it.
type relayed struct {
	Channel string          `json:"channel"`
	Message json.RawMessage `json:"message"`
	Sender  string          `json:"sender"`
}

// Publish implements action.PubSub: it publishes msg on channel, then on
// the relay; a relay failure is an error, after the channel's
// subscribers got the message.
func (f *forwardingPubSub) Publish(ctx context.Context, channel string, msg action.Message) error {
	if err := f.PubSub.Publish(ctx, channel, msg); err != nil {
		return err
	}
	out := map[string]any{"channel": channel, "message": msg.Message, "sender": msg.Sender}
	if err := f.relay.Publish(ctx, relayChannel, action.Message{Message: out}); err != nil {
		return fmt.Errorf("relay to MCP sessions: %w", err)
	}
	return nil
}

// notifier forwards the relay's messages to this instance's MCP client
// sessions as log notifications (logger "pubsub", level info, data
// {channel, message, sender}): to each session whose identity (its
// principal) the app's channel authorizer allows on the message's
// channel. Every legacy session gets them: one whose client set a log
// level above info does not, one whose client set none gets them at info
// (mcpcore's Session.LogByDefault). A 2026-07-28 client has no session
// that outlives a request, so it gets none: it subscribes over WebSocket.
// One goroutine, started by startNotifier and ended by stop.
type notifier struct {
	host *mcpcore.Host
	app  *action.App
	sub  action.Subscription
	done chan struct{}
}

// startNotifier subscribes to the relay and starts forwarding.
func startNotifier(ctx context.Context, h *mcpcore.Host, app *action.App, relay action.PubSub) (*notifier, error) {
	sub, err := relay.Subscribe(ctx, relayChannel)
	if err != nil {
		return nil, fmt.Errorf("subscribe to the MCP notification relay: %w", err)
	}
	n := &notifier{host: h, app: app, sub: sub, done: make(chan struct{})}
	go n.run()
	return n, nil
}

func (n *notifier) run() {
	defer close(n.done)
	for msg := range n.sub.C() {
		if d := n.sub.Dropped(); d > 0 {
			n.host.Logger().Warn("pubsub messages not forwarded to MCP sessions: the forwarder fell behind", "dropped", d)
		}
		var r relayed
		if err := json.Unmarshal(msg.Message.(json.RawMessage), &r); err != nil {
			n.host.Logger().Error("a relayed pubsub message is not valid", "err", err)
			continue
		}
		n.forward(r)
	}
}

// forward sends r to the sessions allowed its channel.
func (n *notifier) forward(r relayed) {
	// The server's context, not a request's: that one may carry its own
	// request's log level, which is not this session's.
	ctx := n.host.Context()
	data := map[string]any{"channel": r.Channel, "message": r.Message, "sender": r.Sender}
	for _, s := range n.host.Sessions() {
		if s.ServerSession() == nil {
			continue
		}
		if n.app.AuthorizeChannel(ctx, &action.Conn{Type: "mcp", ID: s.ID(), Principal: s.Principal()}, r.Channel) != nil {
			continue
		}
		if err := s.LogByDefault(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "pubsub", Data: data}); err != nil {
			n.host.Logger().Debug("pubsub message not forwarded", "session", s.ID(), "err", err)
		}
	}
}

// stop ends the subscription and waits for the forwarder.
func (n *notifier) stop() error {
	err := n.sub.Close()
	<-n.done
	return err
}
