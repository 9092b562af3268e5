package store

import (
	"context"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressEvery is the least time between two progress notifications of
// one call: at most about ten a second, however fast the work goes.
const progressEvery = 100 * time.Millisecond

// notifier sends one call's progress notifications.
type notifier struct {
	ctx     context.Context
	host    *mcpcore.Host
	session *mcp.ServerSession
	token   any
	what    string // the unit, in the message: "documents dumped"
	sent    bool
	last    time.Time
	done    int64 // the last progress sent
}

// progressOf returns a docstore.Progress that sends notifications/progress
// for the call req, at most one per progressEvery (the last always, and
// never twice the same count), with message what; nil when the request
// carries no progress token.
func progressOf(ctx context.Context, h *mcpcore.Host, req *mcp.CallToolRequest, what string) docstore.Progress {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	n := &notifier{ctx: ctx, host: h, session: req.Session, token: token, what: what}
	return n.report
}

// report sends done of total (0: unknown) when due. Work reports its end
// with done == total, which is always sent.
func (n *notifier) report(done, total int64) {
	now := time.Now()
	final := total > 0 && done >= total
	if n.sent && (done <= n.done || !final && now.Sub(n.last) < progressEvery) {
		return
	}
	n.sent, n.last, n.done = true, now, done
	err := n.session.NotifyProgress(n.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: n.token, Progress: float64(done), Total: float64(total), Message: n.what})
	if err != nil {
		n.host.Logger().Debug("progress notification not sent", "err", err)
	}
}
