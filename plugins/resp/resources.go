package resp

import (
	"context"
	"encoding/json"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Capabilities is the content of <scheme>://capabilities: what the plugin
// can reach and do, never a credential.
type Capabilities struct {
	DefaultTarget string       `json:"default_target"`
	Targets       []TargetInfo `json:"targets"`
	Privileges    Privileges   `json:"privileges"`
	// Management and Process detail the privileged surfaces and their
	// limits.
	Management ManagementCapability `json:"management"`
	Process    ProcessCapability    `json:"process"`
	Limits     []mcpcore.LimitInfo  `json:"limits"`
	// Access maps each tool and resource to what it reaches.
	Access map[string]string `json:"access"`
}

// TargetInfo describes a configured target without its credentials.
type TargetInfo struct {
	Name       string `json:"name"`
	Address    string `json:"address"`
	Protocol   int    `json:"protocol"`
	Database   int    `json:"database"`
	TLS        bool   `json:"tls"`
	Management bool   `json:"management"`
}

// Privileges says which privileged surfaces are enabled.
type Privileges struct {
	// Process is process control: off unless process.enabled.
	Process bool `json:"process"`
	// Downloads is management snapshot downloads under file_root.
	Downloads bool `json:"downloads"`
	// Management and Live: some target has a management_url, which the
	// management tools (HTTP routes, and the live WebSocket) reach.
	Management bool `json:"management"`
	Live       bool `json:"live"`
}

// ManagementCapability describes the management surfaces: which targets
// have a management origin (never its token), and their limits.
type ManagementCapability struct {
	// Targets names the targets with a management_url: the only origins
	// the management tools reach.
	Targets []string `json:"targets"`
	// MaxLiveHandles bounds the live (WebSocket) handles open at once,
	// apart from RESP sessions.
	MaxLiveHandles int64 `json:"max_live_handles"`
	// FileRoot is the directory downloads are confined to ("" when
	// downloads are off); MaxDownloadBytes bounds one download.
	FileRoot         string `json:"file_root"`
	MaxDownloadBytes int64  `json:"max_download_bytes"`
}

// ProcessCapability describes process control and its limits.
type ProcessCapability struct {
	Enabled bool `json:"enabled"`
	// Binary is the server executable the process tool runs (resolved
	// from PATH unless process.binary names it); BinaryError says why
	// none was found.
	Binary      string `json:"binary,omitempty"`
	BinaryError string `json:"binary_error,omitempty"`
	// MaxChildren bounds the owned processes (running, or exited and not
	// yet released by stop); LogRetentionBytes the log kept of each.
	MaxChildren       int64 `json:"max_children"`
	LogRetentionBytes int64 `json:"log_retention_bytes"`
}

func (p *Plugin) addResources() error {
	h := p.host
	h.AddResource(&mcp.Resource{URI: h.ResourceURI("capabilities"), Name: h.URIScheme() + "-capabilities", MIMEType: "application/json",
		Description: "Configured target names and addresses (never credentials), enabled privileges, the effective limits, and which tool reaches what."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return jsonResource(req.Params.URI, p.capabilities())
		})
	h.AddResource(&mcp.Resource{URI: h.ResourceURI("commands"), Name: h.URIScheme() + "-commands", MIMEType: "application/json",
		Description: "The first page of the default target's live command registry (as " + h.ToolName("commands") + " returns it); page on with that tool."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			page, err := p.commandsPage(ctx, CommandsArgs{})
			if err != nil {
				return nil, err
			}
			return jsonResource(req.Params.URI, page)
		})
	return nil
}

func (p *Plugin) capabilities() Capabilities {
	h := p.host
	c := Capabilities{DefaultTarget: p.cfg.defaultTarget, Targets: []TargetInfo{},
		Privileges: Privileges{Process: p.cfg.process.Enabled, Downloads: p.cfg.fileRoot != ""},
		Management: ManagementCapability{Targets: []string{}, MaxLiveHandles: h.Limit(LimitMaxLiveHandles),
			FileRoot: p.cfg.fileRoot, MaxDownloadBytes: h.Limit(LimitDownloadBytes)},
		Process: ProcessCapability{Enabled: p.cfg.process.Enabled, MaxChildren: h.Limit(LimitChildProcesses), LogRetentionBytes: h.Limit(LimitChildLogBytes)}}
	for _, name := range p.cfg.names() {
		t := p.cfg.targets[name]
		c.Targets = append(c.Targets, TargetInfo{Name: name, Address: t.Addr, Protocol: t.Protocol, Database: t.Database,
			TLS: t.TLS != nil, Management: t.ManagementURL != ""})
		if t.ManagementURL != "" {
			c.Management.Targets = append(c.Management.Targets, name)
		}
	}
	c.Privileges.Management = len(c.Management.Targets) > 0
	c.Privileges.Live = c.Privileges.Management
	if c.Process.Enabled {
		if bin, err := respengine.ServerBinary(p.cfg.process.Binary); err != nil {
			c.Process.BinaryError = err.Error()
		} else {
			c.Process.Binary = bin
		}
	}
	for _, s := range Limits() {
		c.Limits = append(c.Limits, s.Info(h.Limit(s.Name)))
	}
	c.Limits = append(c.Limits, h.Limits().Report()...)
	c.Access = map[string]string{
		h.ToolName("execute"):         "RESP commands with ordinary replies on the caller's default session or an explicit one, on the configured targets only, under the server's ACLs",
		h.ToolName("session"):         "explicit connections to the configured targets: any RESP command through send/receive (subscriptions, MONITOR, blocking), raw bytes in raw mode",
		h.ToolName("commands"):        "read-only: COMMAND COUNT, LIST, INFO and DOCS on a configured target",
		h.ReadToolName():              "pages of this plugin's large results, for the caller that made them",
		h.ResourceURI("commands"):     "read-only: the first page of the default target's command registry",
		h.ResourceURI("capabilities"): "this description",
	}
	if c.Privileges.Management {
		c.Access[h.ToolName("management")] = "GET and POST on the management API (/api routes, /metrics) of the targets listed under management, with their configured tokens; downloads to new files under file_root"
		c.Access[h.ToolName("management_live")] = "the /api/live WebSocket of the targets listed under management: overview, INFO deltas, keyspace notifications (and MONITOR where the token's role allows)"
	}
	if c.Process.Enabled {
		c.Access[h.ToolName("process")] = "privileged host administration: starts, inspects, stops and reaps server processes of the configured binary that it started itself (never others), and restores RDB files into new directories; not a sandbox"
	}
	return c
}

func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}
