package mcpcore

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Info is the content of the mcpkit://info resource.
type Info struct {
	Name      string        `json:"name"`
	Version   string        `json:"version"`
	Transport string        `json:"transport"`
	Plugins   []PluginState `json:"plugins"`
	Limits    []LimitInfo   `json:"limits"`
	Results   ResultStats   `json:"results"`
	Calls     CallStats     `json:"calls"`
	// Sessions is the number of live client sessions.
	Sessions int `json:"sessions"`
	// Goroutines is the process's goroutine count, for leak checks.
	Goroutines int `json:"goroutines"`
}

// PluginState describes one served plugin.
type PluginState struct {
	Name      string   `json:"name"`
	Prefix    string   `json:"prefix"`
	Tools     []string `json:"tools"`
	Resources []string `json:"resources"` // URIs and URI templates
	Prompts   []string `json:"prompts"`
	// HTTPRoutes are the patterns of the plugin's own HTTP routes (served
	// over HTTP only).
	HTTPRoutes []string    `json:"http_routes,omitempty"`
	ReadTool   string      `json:"read_tool,omitempty"`
	Limits     []LimitInfo `json:"limits"` // the plugin's own limits
}

// CallStats counts tool calls since the server started.
type CallStats struct {
	Started   int64 `json:"started"`
	InFlight  int64 `json:"in_flight"`
	Failed    int64 `json:"failed"`
	Rejected  int64 `json:"rejected_concurrency_limit"`
	TimedOut  int64 `json:"timed_out"`
	Cancelled int64 `json:"cancelled"`
	Paged     int64 `json:"paged"`
	// Panicked counts panics of plugin code (tool handlers, session end
	// hooks) that the host recovered; each is in the log with its stack.
	Panicked int64 `json:"panicked"`
}

type callStats struct {
	started, inFlight, failed, rejected, timedOut, cancelled, paged, panicked atomic.Int64
	// Exported as metrics only (see observer.meters).
	pagedBytes atomic.Int64
	// refused counts the transports' refusals (see Server.CountRefused),
	// one per row of transportRefusals, and those of an unknown kind.
	refused [len(transportRefusals) + 1]atomic.Int64
}

func (c *callStats) snapshot() CallStats {
	return CallStats{
		Started: c.started.Load(), InFlight: c.inFlight.Load(), Failed: c.failed.Load(),
		Rejected: c.rejected.Load(), TimedOut: c.timedOut.Load(), Cancelled: c.cancelled.Load(), Paged: c.paged.Load(),
		Panicked: c.panicked.Load(),
	}
}

// Info reports the server's plugins, limits and counters. It is safe to
// call at any time, also while the server closes.
func (s *Server) Info() Info {
	info := Info{
		Name: "mcpkit", Version: s.version, Transport: s.transport,
		Plugins:  []PluginState{},
		Limits:   s.limits.Report(),
		Results:  s.results.Stats(),
		Calls:    s.calls.snapshot(),
		Sessions: s.sessions.count(),

		Goroutines: runtime.NumGoroutine(),
	}
	s.regMu.RLock()
	defer s.regMu.RUnlock()
	for _, h := range s.hosts {
		ps := PluginState{Name: h.name, Prefix: h.prefix, Tools: slices.Clone(h.tools), Resources: slices.Clone(h.uris),
			Prompts: slices.Clone(h.prompts), HTTPRoutes: slices.Clone(h.routes), Limits: make([]LimitInfo, 0, len(h.limitSpecs))}
		if ps.Tools == nil {
			ps.Tools = []string{}
		}
		if ps.Resources == nil {
			ps.Resources = []string{}
		}
		if ps.Prompts == nil {
			ps.Prompts = []string{}
		}
		if len(h.tools) > 0 {
			ps.ReadTool = h.ReadToolName()
		}
		for _, spec := range h.limitSpecs {
			ps.Limits = append(ps.Limits, spec.Info(h.limitValues[spec.Name]))
		}
		info.Plugins = append(info.Plugins, ps)
	}
	return info
}

// addInfoResource adds InfoURI (claimed before the plugins attach).
func (s *Server) addInfoResource() {
	s.mcp.AddResource(&mcp.Resource{
		URI:         InfoURI,
		Name:        "mcpkit-info",
		Title:       "mcpkit server information",
		Description: "Version, transport, enabled plugins and their tools, effective limits, retained results and call counters.",
		MIMEType:    "application/json",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		data, err := json.MarshalIndent(s.Info(), "", "  ")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: InfoURI, MIMEType: "application/json", Text: string(data)}}}, nil
	})
}
