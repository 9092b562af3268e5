package mcpcore

import (
	"context"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
)

// The SDK's ServerSession.Log sends nothing until the client sets a log
// level. MCP (2025-11-25) lets a server choose what to send a client that
// set none, and some messages (an app's PubSub notifications) are for
// every client. The SDK has no way to send a notification of one's own
// choosing, so LogByDefault goes through the host's sending middleware
// ([sendLogsByDefault]) with a note in the context: a probe, to learn
// whether the SDK would pass a log message at all, and a forced send,
// which turns a progress notification the SDK would send into the log
// message.

// logSend is the context note the sending middleware acts on.
type logSend struct {
	probe   bool // swallow a log message, noting that it reached the middleware
	reached bool
	params  *mcp.LoggingMessageParams // send this log message in place of a progress notification
}

type logSendKey struct{}

// LogByDefault sends the session's client a log message
// (notifications/message) whether or not it set a log level: once it has
// set one, as [mcp.ServerSession.Log] does (only at or above that level);
// on a legacy session (before 2026-07-28) whose client set none, at
// params.Level. The message's _meta carries "io.mcpkit/default-level":
// true. A 2026-07-28 session, whose client asks for log messages per
// request, gets one only as ServerSession.Log sends it (a message not
// asked for is not sent).
func (s *Session) LogByDefault(ctx context.Context, params *mcp.LoggingMessageParams) error {
	p := *params
	p.Meta = maps.Clone(params.Meta)
	if p.Meta == nil {
		p.Meta = mcp.Meta{}
	}
	p.Meta[wire.DefaultLogMeta] = true
	probe := &logSend{probe: true}
	if err := s.ss.Log(context.WithValue(ctx, logSendKey{}, probe), &mcp.LoggingMessageParams{Level: "emergency"}); err != nil {
		return err
	}
	init := s.ss.InitializeParams()
	if probe.reached || init == nil || init.ProtocolVersion >= modernProtocol {
		// The client set a level (the SDK filters by it), or the session
		// is of the 2026-07-28 era (or not yet initialized).
		return s.ss.Log(ctx, &p)
	}
	return s.ss.NotifyProgress(context.WithValue(ctx, logSendKey{}, &logSend{params: &p}), &mcp.ProgressNotificationParams{})
}

// sendLogsByDefault is the host's sending middleware for LogByDefault.
func sendLogsByDefault(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ls, ok := ctx.Value(logSendKey{}).(*logSend)
		switch {
		case !ok:
		case ls.probe && method == "notifications/message":
			ls.reached = true
			return nil, nil
		case ls.params != nil && method == "notifications/progress":
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				return next(ctx, "notifications/message", &mcp.ServerRequest[*mcp.LoggingMessageParams]{Session: ss, Params: ls.params})
			}
		}
		return next(ctx, method, req)
	}
}
