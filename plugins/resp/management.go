package resp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ManagementArgs are the management tool's arguments.
type ManagementArgs struct {
	Target string `json:"target,omitempty" jsonschema:"a configured target with a management_url (default: the default target)"`
	Method string `json:"method,omitempty" jsonschema:"GET (the default) or POST"`
	Path   string `json:"path" jsonschema:"a relative /api/... or /metrics path on the target's management origin, with its query string if any, e.g. /api/keys?count=20"`
	Body   any    `json:"body,omitempty" jsonschema:"POST: the JSON body, e.g. {\"action\": \"bgsave\"}"`
	// downloads
	DownloadPath     string `json:"download_path,omitempty" jsonschema:"GET: stream the response body to this new file under file_root (relative, or absolute beneath the root) instead of returning it"`
	MaxDownloadBytes int64  `json:"max_download_bytes,omitempty" jsonschema:"with download_path: the most bytes to accept (default and maximum: the download_bytes limit, 1 GiB)"`
}

// The management tools' results are the engine's.
type (
	ManagementReply = respengine.ManagementReply
	Body            = respengine.Body
	DownloadInfo    = respengine.DownloadInfo
)

// KindUnknownEffect: a POST failed after it was sent; it may or may not
// have taken effect. Inspect state before sending it again.
const KindUnknownEffect = "unknown_effect"

// management is the state of the management tools: the engine's client of
// the management APIs and its live handles.
type management struct {
	p    *Plugin
	eng  *respengine.Management
	live *respengine.Live
}

// addManagement adds the management and management_live tools when some
// target has a management_url (without one they could reach nothing).
func (p *Plugin) addManagement() error {
	if !slices.ContainsFunc(p.cfg.names(), func(n string) bool { return p.cfg.targets[n].ManagementURL != "" }) {
		return nil
	}
	eng := respengine.NewManagement(respengine.ManagementOptions{FileRoot: p.cfg.fileRoot,
		MaxBodyBytes: p.host.Limit(LimitReplyBytes), MaxDownloadBytes: p.host.Limit(LimitDownloadBytes)})
	m := &management{p: p, eng: eng}
	schema, err := jsonschema.For[ManagementArgs](nil)
	if err != nil {
		return fmt.Errorf("management schema: %w", err)
	}
	schema.Properties["method"].Enum = []any{http.MethodGet, http.MethodPost}
	mcpcore.AddTool(p.host, &mcp.Tool{Name: "management", InputSchema: schema,
		Description: "The target's management HTTP API (e.g. mcpkit resp admin): every GET/POST route under /api and /metrics, on the target's configured management_url with its configured token (never from arguments). " +
			"{path: \"/api/keys?count=20\"}; {method: \"POST\", path: \"/api/storage/action\", body: {\"action\": \"flushdb\", \"confirmed\": true}}. " +
			"Returns status, content_type and body {encoding: json|text|base64, value}; a 4xx/5xx is a real response (isError, http_error). " +
			"Redirects, other origins, traversal and fragments are refused before sending. A POST that fails after sending has an unknown effect (kind unknown_effect). " +
			"{path: \"/api/replication/snapshot\", download_path: \"snap.rdb\"} streams to a new file under file_root and returns bytes and sha256."},
		m.call, fastpath.Direct(mcpcore.ToolOptions{Timeout: mcpcore.MaxToolTimeout}))
	if err := m.addLive(); err != nil {
		return err
	}
	m.live = respengine.NewLive(p.host.Context(), eng, respengine.LiveOptions{
		MaxHandles: int(p.host.Limit(LimitMaxLiveHandles)), Idle: time.Duration(p.host.Limit(LimitSessionIdle))})
	p.mgmt = m
	p.host.OnSessionEnd(func(cs *mcpcore.Session) { m.live.CloseOwner(cs.Principal(), cs.ID()) })
	return nil
}

// endpoint returns the management target a call names.
func (m *management) endpoint(name string) (*target, error) {
	if name == "" {
		name = m.p.cfg.defaultTarget
	}
	t := m.p.cfg.targets[name]
	if t == nil {
		return nil, &mcpcore.ParamError{Path: "/target", Reason: fmt.Sprintf("%q is not a configured target (configured: %v)", name, m.p.cfg.names())}
	}
	if t.ManagementURL == "" {
		return nil, &mcpcore.ParamError{Path: "/target", Reason: fmt.Sprintf("target %q has no management_url in the configuration", name)}
	}
	return t, nil
}

func (m *management) call(ctx context.Context, _ *mcp.CallToolRequest, in ManagementArgs) (any, error) {
	t, err := m.endpoint(in.Target)
	if err != nil {
		return nil, err
	}
	reply, err := m.eng.Do(ctx, t, respengine.ManagementRequest{Method: in.Method, Path: in.Path, Body: in.Body,
		DownloadPath: in.DownloadPath, MaxDownloadBytes: in.MaxDownloadBytes})
	if err != nil {
		return nil, managementError(err)
	}
	if reply.HTTPError {
		return nil, mcpcore.ErrorResult(reply)
	}
	return reply, nil
}

// managementError maps an error of the management client: a POST sent
// before the call ended is an error result that warns of its unknown
// effect (the host reports the timeout or cancellation); the rest as
// [engineError] maps them.
func managementError(err error) error {
	ended := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if ended && errors.Is(err, respengine.ErrUnknownEffect) {
		return mcpcore.ErrorResult(map[string]any{"warning": "the POST was sent before the call ended: its effect is unknown; inspect state before sending it again"})
	}
	return engineError(err)
}
