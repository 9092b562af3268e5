package resp

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Capabilities is the content of <scheme>://capabilities: what the plugin
// can reach and do, never a credential.
type Capabilities struct {
	DefaultTarget string              `json:"default_target"`
	Targets       []TargetInfo        `json:"targets"`
	Privileges    Privileges          `json:"privileges"`
	Limits        []mcpcore.LimitInfo `json:"limits"`
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
	// Process is process control (a later issue): off unless process.enabled.
	Process bool `json:"process"`
	// Downloads is management snapshot downloads under file_root.
	Downloads bool `json:"downloads"`
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
		Privileges: Privileges{Process: p.cfg.process.Enabled, Downloads: p.cfg.fileRoot != ""}}
	for _, name := range p.cfg.names() {
		t := p.cfg.targets[name]
		c.Targets = append(c.Targets, TargetInfo{Name: name, Address: t.addr, Protocol: t.protocol, Database: t.database,
			TLS: t.tls != nil, Management: t.managementURL != ""})
	}
	for _, s := range Limits() {
		c.Limits = append(c.Limits, limitInfo(s, h.Limit(s.Name)))
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
	return c
}

// limitInfo describes one of the plugin's limits as mcpkit://info does.
func limitInfo(s mcpcore.LimitSpec, v int64) mcpcore.LimitInfo {
	format := func(n int64) string {
		if s.Kind == mcpcore.LimitDuration {
			return time.Duration(n).String()
		}
		return strconv.FormatInt(n, 10)
	}
	return mcpcore.LimitInfo{Name: s.Name, Kind: string(s.Kind), Value: format(v), Max: format(s.Max), Unit: s.Unit, Meaning: s.Meaning}
}

func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}
