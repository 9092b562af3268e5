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
// The host creates a plugin with its [PluginInfo.New] (or takes an
// embedded [Instance]), decodes the plugin's configuration into it when the
// plugin implements [Configurer], calls Attach once with a [Host] through
// which the plugin adds its tools and resources, and calls Close once at
// shutdown.
type Plugin interface {
	// Attach adds the plugin's tools, resources and prompts through h. It
	// may open connections or files; ctx bounds the startup work only (use
	// [Host.Context] for work that lives as long as the server).
	Attach(ctx context.Context, h *Host) error
	// Close releases everything the plugin opened. It is called once, even
	// when Attach failed, after [Host.Context] has ended, after the tool
	// calls in flight returned or the shutdown deadline (ctx) passed, and
	// after every session's end hooks ran. When the deadline passed, a
	// handler that ignores its context may still be running (the host logs
	// how many): Close must then leave the plugin in a state where such a
	// late handler fails cleanly (closed connections, errors) rather than
	// crashes or leaks.
	Close(ctx context.Context) error
}

// Configurer is implemented by a plugin that takes configuration: the raw
// JSON object under "plugins.<name>.config" in the configuration file. The
// plugin must decode it strictly (see [DecodeConfig]) and validate it.
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
	// NoPrefix serves the plugin's tools and prompts under their own names
	// unless plugins.<name>.prefix sets one: for a plugin whose names are
	// fixed by someone else (the conformance suite's fixtures).
	NoPrefix bool
	// New returns a fresh, unconfigured instance. It must have no side
	// effects: the host may call it only to list or validate.
	New func() Plugin
	// Limits declares the plugin's own limits, set under
	// "plugins.<name>.limits" in the configuration file, read through
	// [Host.Limit] and listed in mcpkit://info under the plugin.
	Limits []LimitSpec
}

// Instance is a plugin given to [NewServer] directly, as sql.OpenDB takes a
// connector: a Go program embeds mcpkit without the registry. The server
// attaches and closes it like a registered plugin.
type Instance struct {
	// Name is the plugin's name and default tool prefix, as in
	// [PluginInfo.Name]; "plugins.<name>" configures it.
	Name string
	// Plugin is the instance to serve. It is configured (when it is a
	// [Configurer]), attached and closed by the server.
	Plugin Plugin
	// Limits declares the plugin's own limits, as [PluginInfo.Limits].
	Limits []LimitSpec
}

var (
	registryMu sync.RWMutex
	registry   = map[string]PluginInfo{}
)

// Register makes a plugin available by name. It is meant to be called from
// the plugin package's init, as database/sql drivers are; it panics on an
// empty or invalid name, a nil New, an invalid limit declaration, or a
// duplicate registration.
func Register(info PluginInfo) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if err := info.check(); err != nil {
		panic("mcpcore: Register: " + err.Error())
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

// check validates a registration or an embedded instance.
func (info PluginInfo) check() error {
	if !validSegment(info.Name) {
		return fmt.Errorf("invalid plugin name %q (want [a-z0-9_-]+)", info.Name)
	}
	if info.New == nil {
		return fmt.Errorf("plugin %q has a nil New", info.Name)
	}
	if err := validateLimitSpecs(info.Limits); err != nil {
		return fmt.Errorf("plugin %q: %w", info.Name, err)
	}
	return nil
}

// selectPlugins returns the plugins a server serves, in order: the
// registered plugins named by opts.Plugins, else by opts.Config.Enable,
// else the default ones unless instances are embedded; then the embedded
// instances. Repeats are dropped; a name served twice is an error.
func selectPlugins(opts Options) ([]PluginInfo, error) {
	names := opts.Plugins
	if len(names) == 0 {
		names = opts.Config.Enable
	}
	if len(names) == 0 && len(opts.Instances) == 0 {
		names = DefaultPluginNames()
	}
	var out []PluginInfo
	for _, n := range names {
		if slices.ContainsFunc(out, func(p PluginInfo) bool { return p.Name == n }) {
			continue
		}
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
	for _, inst := range opts.Instances {
		if inst.Plugin == nil {
			return nil, fmt.Errorf("embedded instance %q: nil Plugin", inst.Name)
		}
		p := PluginInfo{Name: inst.Name, Limits: inst.Limits, New: func() Plugin { return inst.Plugin }}
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("embedded instance: %w", err)
		}
		if slices.ContainsFunc(out, func(o PluginInfo) bool { return o.Name == p.Name }) {
			return nil, &ConfigError{Field: "plugins." + p.Name, Reason: "an embedded instance has the name of another served plugin"}
		}
		out = append(out, p)
	}
	return out, nil
}

// checkPluginConfig checks every "plugins.<name>" entry and the enable
// list against the registered plugins and those served: each must name one,
// and its limits must fit its declarations.
func checkPluginConfig(cfg Config, served []PluginInfo) error {
	lookup := func(name string) (PluginInfo, bool) {
		if i := slices.IndexFunc(served, func(p PluginInfo) bool { return p.Name == name }); i >= 0 {
			return served[i], true
		}
		return LookupPlugin(name)
	}
	for _, name := range sortedKeys(cfg.Plugins) {
		p, ok := lookup(name)
		if !ok {
			return &ConfigError{Field: "plugins." + name, Reason: "no such plugin is registered or embedded"}
		}
		if _, err := resolveLimits("plugins."+name+".limits", p.Limits, cfg.Plugins[name].Limits); err != nil {
			return err
		}
	}
	for _, name := range cfg.Enable {
		if _, ok := lookup(name); !ok {
			return &ConfigError{Field: "enable", Reason: fmt.Sprintf("unknown plugin %q", name)}
		}
	}
	return nil
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
