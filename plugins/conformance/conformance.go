// Package conformance is the plugin that serves the fixtures of the
// official MCP conformance suite (@modelcontextprotocol/conformance): the
// tools, resources, resource templates, prompts, completions and
// subscriptions its server scenarios call by name, with the behaviour they
// check. It exists so that the suite runs against mcpkit's own host — its
// result encoding, paging, error mapping, progress and log forwarding,
// era router — rather than only against the SDK's example server, and it
// is written through the same mcpcore seams as every other plugin, so that
// a gap in a seam shows here first.
//
// It is linked into the binary but never served by default, and serves
// its names without a prefix (the suite expects them exactly):
//
//	mcpkit serve --http 127.0.0.1:8080 --plugins conformance
package conformance

import (
	"context"
	"encoding/base64"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	mcpcore.Register(mcpcore.PluginInfo{
		Name:        "conformance",
		Description: "the MCP conformance suite's fixtures (tools, resources, prompts, completion, subscriptions), for running the suite against mcpkit",
		NoPrefix:    true,
		New:         func() mcpcore.Plugin { return new(plugin) },
	})
}

type plugin struct {
	h *mcpcore.Host
	// announcing is closed when announce has returned.
	announcing chan struct{}
}

// watchedURI is the resource the plugin announces as updated every
// watchedEvery, for the subscription scenarios.
const (
	watchedURI   = "test://watched-resource"
	watchedEvery = 3 * time.Second
)

func (p *plugin) Attach(ctx context.Context, h *mcpcore.Host) error {
	p.h = h
	addContentTools(h)
	addClientRequestTools(h)
	addSchemaTools(h)
	addStatelessTools(h)
	addInputRequiredTools(h)
	addResources(h)
	addPrompts(h)
	h.SetCompleter(complete)
	h.SetSubscriber(func(ctx context.Context, uri string, subscribe bool) error { return nil })
	p.announcing = make(chan struct{})
	go func() {
		defer close(p.announcing)
		p.announce(h.Context())
	}()
	return nil
}

// announce tells the subscribers of watchedURI that it changed, every
// watchedEvery, until the server closes.
func (p *plugin) announce(ctx context.Context) {
	t := time.NewTicker(watchedEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := p.h.ResourceUpdated(ctx, watchedURI); err != nil {
				p.h.Logger().Warn("announce the watched resource", "err", err)
			}
		}
	}
}

// Close waits for announce, which ends with the server's lifetime (before
// Close is called).
func (p *plugin) Close(ctx context.Context) error {
	if p.announcing == nil {
		return nil // Attach did not run
	}
	select {
	case <-p.announcing:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// complete answers every completion request with no values: the suite
// checks the capability and the response's shape.
func complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
}

// The suite's media fixtures: a 1×1 PNG and a silent WAV.
var (
	pngData = mustBase64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	wavData = mustBase64("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
)

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// text is a result of one text block.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
