package resp

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the live tool's receive. max_bytes may be as small as
// minLiveMaxBytes: a frame larger than a receive's max_bytes is never cut;
// it stays queued and that receive fails with kind limit naming its size.
const (
	defaultLiveFrames   = 16
	maxLiveFrames       = 1024
	minLiveMaxBytes     = 1 * mcpcore.KiB
	defaultLiveMaxBytes = 1 * mcpcore.MiB
	maxLiveMaxBytes     = 64 * mcpcore.MiB
)

// LiveArgs are the live tool's arguments; which apply depends on the action.
type LiveArgs struct {
	Action string `json:"action" jsonschema:"open, receive, list or close"`
	Handle string `json:"handle,omitempty" jsonschema:"the handle open returned (receive, close)"`
	// open
	Target string `json:"target,omitempty" jsonschema:"open: a configured target with a management_url (default: the default target)"`
	Query  string `json:"query,omitempty" jsonschema:"open: the query string of /api/live, e.g. interval_ms=500&monitor=true (deltas=entries: changed INFO entries whole rather than their moved pairs)"`
	// Sections narrows the feed's INFO to some sections.
	Sections []string `json:"sections,omitempty" jsonschema:"open: the INFO sections the overview and the deltas carry, e.g. [\"commandstats\", \"clients\"] (default: all; a section the target has not is refused)"`
	// receive
	MaxFrames       int   `json:"max_frames,omitempty" jsonschema:"receive: at most this many frames (default 16, at most 1024)"`
	MaxBytes        int64 `json:"max_bytes,omitempty" jsonschema:"receive: at most this many bytes of frames (default 1048576, from 1024 to 67108864); a frame larger than it is never cut: it stays queued and the receive fails with kind limit naming its size"`
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
			"open {target?, query?, sections?} returns a handle (echo it; never invent one) and the initial overview, which receive does not repeat (include_overview returns it again). " +
			"receive {handle, max_frames?, max_bytes?, wait_ms?} returns bounded frames {encoding: json|text|base64, value} with timed_out, limit_reached and closed; " +
			"info_delta frames carry only what changed (of an entry such as cmdstat_get, the moved counters). " +
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
		query, err := liveQuery(in)
		if err != nil {
			return nil, err
		}
		return m.live.Open(ctx, sc, t, query)
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

// liveQuery is the /api/live query string open asks for: in.Query, the
// sections named, and deltas=fields unless the query says which deltas.
// A section's name is checked here for its form and by the gateway for
// its existence on the target.
func liveQuery(in LiveArgs) (string, error) {
	q, err := url.ParseQuery(strings.TrimPrefix(in.Query, "?"))
	if err != nil {
		return "", &mcpcore.ParamError{Path: "/query", Reason: fmt.Sprintf("not a query string: %v", err)}
	}
	if len(in.Sections) > 0 {
		if q.Has("sections") {
			return "", &mcpcore.ParamError{Path: "/sections", Reason: "give sections as this argument or in query, not both"}
		}
		for i, name := range in.Sections {
			if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
				return "", &mcpcore.ParamError{Path: fmt.Sprintf("/sections/%d", i), Reason: fmt.Sprintf("%q is not an INFO section name (letters, digits, _)", name)}
			}
		}
		q.Set("sections", strings.Join(in.Sections, ","))
	}
	if !q.Has("deltas") {
		q.Set("deltas", "fields")
	}
	return q.Encode(), nil
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
	case b.MaxBytes < minLiveMaxBytes || b.MaxBytes > maxLiveMaxBytes:
		return b, &mcpcore.ParamError{Path: "/max_bytes", Reason: fmt.Sprintf("%d is outside [%d, %d]", in.MaxBytes, minLiveMaxBytes, maxLiveMaxBytes)}
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
