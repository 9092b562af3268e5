package mcpcore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// Plugin is one system served by the host: the RESP sidecar, the document
// store, the action framework, or a third party's.
//
// The host creates a plugin with its [PluginInfo.New], decodes the plugin's
// configuration into it when the plugin implements [Configurer], calls
// Attach once with a [Host] through which the plugin adds its tools and
// resources, and calls Close once at shutdown.
type Plugin interface {
	// Attach adds the plugin's tools, resources and prompts through h. It
	// may open connections or files; ctx bounds the startup work only.
	Attach(ctx context.Context, h *Host) error
	// Close releases everything the plugin opened. It is called once, even
	// when Attach failed.
	Close(ctx context.Context) error
}

// Configurer is implemented by a plugin that takes configuration: the raw
// JSON object under "plugins.<name>.config" in the configuration file. The
// plugin must decode it strictly (see [DecodeStrict]) and validate it.
type Configurer interface {
	Configure(raw []byte) error
}

// PluginInfo registers a plugin.
type PluginInfo struct {
	// Name selects the plugin ("resp", "store", "actions") and is its default
	// tool prefix. It must be a valid tool-name segment: [a-z0-9_-].
	Name string
	// Description is one line for `mcpkit plugins`.
	Description string
	// Default plugins are served when no --plugins selection is given.
	Default bool
	// New returns a fresh, unconfigured instance. It must have no side
	// effects: the host may call it only to list or validate.
	New func() Plugin
}

var (
	registryMu sync.RWMutex
	registry   = map[string]PluginInfo{}
)

// Register makes a plugin available by name. It is meant to be called from
// the plugin package's init, as database/sql drivers are; it panics on an
// empty or invalid name, a nil New, or a duplicate registration.
func Register(info PluginInfo) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if !validSegment(info.Name) {
		panic(fmt.Sprintf("mcpcore: Register: invalid plugin name %q (want [a-z0-9_-]+)", info.Name))
	}
	if info.New == nil {
		panic(fmt.Sprintf("mcpcore: Register: plugin %q has a nil New", info.Name))
	}
	if _, dup := registry[info.Name]; dup {
		panic(fmt.Sprintf("mcpcore: Register: plugin %q registered twice", info.Name))
	}
	registry[info.Name] = info
}

// Plugins lists the registered plugins sorted by name.
func Plugins() []PluginInfo {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]PluginInfo, 0, len(registry))
	for _, p := range registry {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupPlugin returns the registration for name.
func LookupPlugin(name string) (PluginInfo, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	p, ok := registry[name]
	return p, ok
}

// DefaultPluginNames lists the plugins registered with Default set.
func DefaultPluginNames() []string {
	var names []string
	for _, p := range Plugins() {
		if p.Default {
			names = append(names, p.Name)
		}
	}
	return names
}

// resolvePlugins checks a selection against the registry, keeping its order
// and dropping repeats.
func resolvePlugins(names []string) ([]PluginInfo, error) {
	var out []PluginInfo
	var seen []string
	for _, n := range names {
		if slices.Contains(seen, n) {
			continue
		}
		seen = append(seen, n)
		p, ok := LookupPlugin(n)
		if !ok {
			var known []string
			for _, k := range Plugins() {
				known = append(known, k.Name)
			}
			return nil, &ConfigError{Field: "plugins", Reason: fmt.Sprintf("unknown plugin %q (registered: %v)", n, known)}
		}
		out = append(out, p)
	}
	return out, nil
}

func validSegment(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
