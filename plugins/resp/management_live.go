package resp

import (
	"context"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the live tool's receive.
const (
	defaultLiveFrames   = 16
	maxLiveFrames       = 1024
	defaultLiveMaxBytes = 1 * mcpcore.MiB
	maxLiveMaxBytes     = 64 * mcpcore.MiB
)

// LiveArgs are the live tool's arguments; which apply depends on the action.
type LiveArgs struct {
	Action string `json:"action" jsonschema:"open, receive, list or close"`
	Handle string `json:"handle,omitempty" jsonschema:"the handle open returned (receive, close)"`
	// open
	Target string `json:"target,omitempty" jsonschema:"open: a configured target with a management_url (default: the default target)"`
	Query  string `json:"query,omitempty" jsonschema:"open: the query string of /api/live, e.g. interval_ms=500&monitor=true"`
	// receive
	MaxFrames       int   `json:"max_frames,omitempty" jsonschema:"receive: at most this many frames (default 16, at most 1024)"`
	MaxBytes        int64 `json:"max_bytes,omitempty" jsonschema:"receive: at most this many bytes of frames (default and minimum 1048576, at most 67108864)"`
	WaitMS          *int  `json:"wait_ms,omitempty" jsonschema:"receive: how long to wait for the first frame, in milliseconds (default 1000, at most 240000); 0 returns at once"`
	IncludeOverview bool  `json:"include_overview,omitempty" jsonschema:"receive: also return the retained initial overview frame"`
}

// The live tool's results are the engine's.
type (
	LiveInfo         = respengine.LiveInfo
	LiveListReply    = respengine.LiveListReply
	LiveReceiveReply = respengine.LiveReceiveReply
)

func (m *management) addLive() error {
	schema, err := jsonschema.For[LiveArgs](nil)
	if err != nil {
		return fmt.Errorf("management_live schema: %w", err)
	}
	schema.Properties["action"].Enum = []any{ActionOpen, ActionReceive, ActionList, ActionClose}
	mcpcore.AddTool(m.p.host, &mcp.Tool{Name: "management_live", InputSchema: schema,
		Description: "The target's authenticated /api/live WebSocket (mcpkit resp admin: overview, INFO deltas, keyspace notifications, MONITOR for admins). " +
			"open {target?, query?} returns a handle (echo it; never invent one) and the initial overview, which stays retrievable (receive include_overview). " +
			"receive {handle, max_frames?, max_bytes?, wait_ms?} returns bounded frames {encoding: json|text|base64, value} with timed_out, limit_reached and closed; " +
			"cancelling a receive closes its handle. list; close {handle}. Handles are apart from RESP sessions and expire when idle."},
		m.callLive, fastpath.Direct(mcpcore.ToolOptions{Timeout: SessionTimeout}))
	return nil
}

func (m *management) callLive(ctx context.Context, req *mcp.CallToolRequest, in LiveArgs) (any, error) {
	out, err := m.liveAction(ctx, m.p.scopeOf(req), in)
	if err != nil {
		return nil, engineError(err)
	}
	return out, nil
}

// liveAction runs one action of the live tool for sc.
func (m *management) liveAction(ctx context.Context, sc scope, in LiveArgs) (any, error) {
	switch in.Action {
	case ActionOpen:
		t, err := m.endpoint(in.Target)
		if err != nil {
			return nil, err
		}
		return m.live.Open(ctx, sc, t, in.Query)
	case ActionReceive:
		bounds, err := receiveBounds(in)
		if err != nil {
			return nil, err
		}
		return m.live.Receive(ctx, sc, in.Handle, bounds)
	case ActionList:
		return m.live.List(sc), nil
	case ActionClose:
		if err := m.live.CloseHandle(sc, in.Handle); err != nil {
			return nil, err
		}
		return map[string]any{"handle": in.Handle, "closed": true}, nil
	}
	return nil, &mcpcore.ParamError{Path: "/action", Reason: fmt.Sprintf("%q is not open, receive, list or close", in.Action)}
}

// receiveBounds checks a receive's bounds and fills in their defaults.
func receiveBounds(in LiveArgs) (respengine.LiveReceive, error) {
	b := respengine.LiveReceive{MaxFrames: in.MaxFrames, MaxBytes: in.MaxBytes, IncludeOverview: in.IncludeOverview}
	switch {
	case b.MaxFrames == 0:
		b.MaxFrames = defaultLiveFrames
	case b.MaxFrames < 1 || b.MaxFrames > maxLiveFrames:
		return b, &mcpcore.ParamError{Path: "/max_frames", Reason: fmt.Sprintf("%d is outside [1, %d]", in.MaxFrames, maxLiveFrames)}
	}
	switch {
	case b.MaxBytes == 0:
		b.MaxBytes = defaultLiveMaxBytes
	case b.MaxBytes < defaultLiveMaxBytes || b.MaxBytes > maxLiveMaxBytes:
		return b, &mcpcore.ParamError{Path: "/max_bytes", Reason: fmt.Sprintf("%d is outside [%d, %d] (one frame may be %d bytes)", in.MaxBytes, defaultLiveMaxBytes, maxLiveMaxBytes, respengine.LiveFrameBytes)}
	}
	wait := DefaultWaitMS
	if in.WaitMS != nil {
		wait = *in.WaitMS
	}
	if wait < 0 || wait > MaxWaitMS {
		return b, &mcpcore.ParamError{Path: "/wait_ms", Reason: fmt.Sprintf("%d is outside [0, %d]", wait, MaxWaitMS)}
	}
	b.Wait = time.Duration(wait) * time.Millisecond
	return b, nil
}
