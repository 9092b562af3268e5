package resp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
)

// EnvAuth names the environment variable that supplies the default
// target's RESP password when the configuration gives that target none.
const EnvAuth = "MCPKIT_RESP_AUTH"

// Default target, used when the configuration names none.
const (
	DefaultTargetName = "default"
	DefaultHost       = respengine.DefaultHost
	DefaultPort       = respengine.DefaultPort
	DefaultProtocol   = respengine.DefaultProtocol
)

// Config is the plugin's configuration (targets, file root, process
// control, limits), under "plugins.resp.config" in an `mcpkit serve`
// file, or the whole file of `mcpkit resp --config` (whose "limits" the
// command splits off first: see the command's documentation). It is decoded
// strictly; relative paths are resolved from the working directory.
type Config struct {
	// DefaultTarget names the target of the default session and of calls
	// that name none. It may be omitted when there is at most one target.
	DefaultTarget string `json:"default_target,omitempty"`
	// Targets are the endpoints the plugin may reach, by name; tools name
	// targets, never addresses. Without any, the target "default" is
	// 127.0.0.1:6379 over RESP3.
	Targets map[string]*TargetConfig `json:"targets,omitempty"`
	// FileRoot is the existing directory the management tool's downloads
	// are confined to.
	FileRoot string `json:"file_root,omitempty"`
	// Process configures the process tool (process.go).
	Process ProcessConfig `json:"process"`
}

// TargetConfig is one configured RESP endpoint; TLSConfig makes it
// TLS-only (the engine resolves both).
type (
	TargetConfig = respengine.TargetConfig
	TLSConfig    = respengine.TLSConfig
)

// ProcessConfig enables the process tool, which is not served at all
// unless Enabled: privileged host administration of server processes.
type ProcessConfig struct {
	Enabled bool `json:"enabled,omitempty"`
	// Binary is the server executable the tool runs (default: redis-server
	// from PATH); relative to the working directory.
	Binary string `json:"binary,omitempty"`
}

// target is a validated, resolved target (the engine's).
type target = respengine.Target

// settings is the resolved configuration the plugin runs with.
type settings struct {
	defaultTarget string
	targets       map[string]*target
	fileRoot      string
	process       ProcessConfig
}

// names lists the configured target names, sorted.
func (s *settings) names() []string {
	out := make([]string, 0, len(s.targets))
	for n := range s.targets {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// parseConfig decodes raw strictly and resolves it: credentials are read,
// TLS material is loaded and paths are made absolute, so that every mistake
// stops the start with a [*mcpcore.ConfigError] naming the field, never a
// credential.
func parseConfig(raw []byte) (*settings, error) {
	var probe struct {
		Limits json.RawMessage `json:"limits"`
	}
	if json.Unmarshal(raw, &probe) == nil && probe.Limits != nil {
		return nil, &mcpcore.ConfigError{Field: "limits", Reason: "set the plugin's limits under plugins.resp.limits and the core's under limits (only the file of 'mcpkit resp --config' takes limits here)"}
	}
	var c Config
	if err := mcpcore.DecodeConfig(raw, &c); err != nil {
		return nil, err
	}
	s, err := c.resolve()
	if err != nil {
		return nil, configError(err)
	}
	return s, nil
}

// configError maps the engine's [*respengine.ConfigError] to the core's;
// any other error (the core's secret reader's) is returned as it is.
func configError(err error) error {
	var ce *respengine.ConfigError
	if errors.As(err, &ce) {
		return &mcpcore.ConfigError{Field: ce.Field, Reason: ce.Reason}
	}
	return err
}

func (c Config) resolve() (*settings, error) {
	s := &settings{targets: map[string]*target{}, process: c.Process}
	if len(c.Targets) == 0 {
		c.Targets = map[string]*TargetConfig{DefaultTargetName: {}}
	}
	name, err := defaultTargetName(c.DefaultTarget, c.Targets)
	if err != nil {
		return nil, err
	}
	c.DefaultTarget = name
	s.defaultTarget = c.DefaultTarget
	for name, tc := range c.Targets {
		passwordEnv := ""
		if name == c.DefaultTarget {
			passwordEnv = EnvAuth
		}
		t, err := tc.Resolve(name, passwordEnv, mcpcore.ReadSecret)
		if err != nil {
			return nil, err
		}
		s.targets[name] = t
	}
	if c.FileRoot != "" {
		root, err := respengine.AbsPath("file_root", c.FileRoot)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil, &mcpcore.ConfigError{Field: "file_root", Reason: fmt.Sprintf("%s is not an existing directory", root)}
		}
		s.fileRoot = root
	}
	if c.Process.Binary != "" {
		bin, err := respengine.AbsPath("process.binary", c.Process.Binary)
		if err != nil {
			return nil, err
		}
		s.process.Binary = bin
	}
	return s, nil
}

// defaultTargetName returns the default target: the one named, else the
// only one, else "default" when there is none.
func defaultTargetName(named string, targets map[string]*TargetConfig) (string, error) {
	switch {
	case named != "":
		if _, ok := targets[named]; !ok && len(targets) > 0 {
			return "", &mcpcore.ConfigError{Field: "default_target", Reason: fmt.Sprintf("%q is not one of the targets", named)}
		}
		return named, nil
	case len(targets) == 0:
		return DefaultTargetName, nil
	case len(targets) == 1:
		for name := range targets {
			return name, nil
		}
	}
	return "", &mcpcore.ConfigError{Field: "default_target", Reason: "several targets are configured: name the default one"}
}
