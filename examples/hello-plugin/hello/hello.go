// Package hello is a minimal third-party mcpkit plugin: one configurable
// greeting tool. It shows the whole plugin contract: registration at init
// with its own limit, strict configuration, tools added through the host,
// and Close; and, for a Go program that embeds mcpkit without the registry,
// [New] and [Limits] for an [mcpcore.Instance].
package hello

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	mcpcore.Register(mcpcore.PluginInfo{
		Name:        "hello",
		Description: "example third-party plugin: a greeting tool",
		Default:     true,
		New:         func() mcpcore.Plugin { return New("Hello") },
		Limits:      Limits(),
	})
}

// LimitNameBytes is the plugin's own limit: the longest name greet accepts.
// It is set under "plugins.hello.limits" in the configuration file.
const LimitNameBytes = "name_bytes"

// Limits declares the plugin's own limits.
func Limits() []mcpcore.LimitSpec {
	return []mcpcore.LimitSpec{{Name: LimitNameBytes, Kind: mcpcore.LimitBytes, Default: 256, Min: 1, Max: 64 * mcpcore.KiB,
		Meaning: "longest name greet accepts, in bytes; a longer one is refused"}}
}

// Plugin greets. Its configuration is
//
//	{"greeting": "Hello", "users_file": "/etc/hello/users"}
//
// where the optional users_file (or users_env, never both) holds
// "name:token" lines: when set, the plugin authenticates /mcp over HTTP
// with those tokens (beside the core's static bearer tokens), the caller's
// principal is the user's name, and greet greets the caller by default.
type Plugin struct {
	Greeting  string `json:"greeting"`
	UsersFile string `json:"users_file,omitempty"`
	UsersEnv  string `json:"users_env,omitempty"`

	users map[[sha256.Size]byte]string // token digest → user name
}

// New returns a plugin greeting with greeting, for the registry or for a
// program that embeds it as an [mcpcore.Instance] (with [Limits]).
func New(greeting string) *Plugin { return &Plugin{Greeting: greeting} }

var (
	_ mcpcore.Plugin     = (*Plugin)(nil)
	_ mcpcore.Configurer = (*Plugin)(nil)
)

// Configure implements mcpcore.Configurer.
func (p *Plugin) Configure(raw []byte) error {
	if err := mcpcore.DecodeConfig(raw, p); err != nil {
		return err
	}
	if p.Greeting == "" {
		return fmt.Errorf("greeting must not be empty")
	}
	list, ok, err := mcpcore.ReadSecret("plugins.hello.config.users", p.UsersFile, p.UsersEnv)
	if err != nil || !ok {
		return err
	}
	p.users = map[[sha256.Size]byte]string{}
	for i, line := range strings.Split(list, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, token, found := strings.Cut(line, ":")
		if !found || name == "" || len(token) < mcpcore.MinBearerTokenBytes {
			// The line number only: the line holds a credential.
			return &mcpcore.ConfigError{Field: "plugins.hello.config.users", Reason: fmt.Sprintf(
				"line %d: want name:token with a token of at least %d bytes", i+1, mcpcore.MinBearerTokenBytes)}
		}
		p.users[sha256.Sum256([]byte(token))] = name
	}
	return nil
}

// verify is the plugin's token verifier: a token of users_file is accepted
// with the user's name as the caller's principal.
func (p *Plugin) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	got := sha256.Sum256([]byte(token))
	var name string
	for sum, n := range p.users {
		if subtle.ConstantTimeCompare(got[:], sum[:]) == 1 {
			name = n
		}
	}
	if name == "" {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: name}, nil
}

// GreetArgs are greet's arguments.
type GreetArgs struct {
	Name string `json:"name,omitempty" jsonschema:"who to greet (default: the authenticated caller)"`
}

// GreetReply is greet's result.
type GreetReply struct {
	Greeting string `json:"greeting"`
}

// Attach implements mcpcore.Plugin.
func (p *Plugin) Attach(ctx context.Context, h *mcpcore.Host) error {
	if p.users != nil {
		h.SetTokenVerifier(p.verify, "")
	}
	mcpcore.AddTool(h, &mcp.Tool{Name: "greet", Description: "Greet someone by name, or the authenticated caller."},
		func(ctx context.Context, req *mcp.CallToolRequest, in GreetArgs) (any, error) {
			if in.Name == "" {
				in.Name = mcpcore.Principal(req)
			}
			if in.Name == "" {
				return nil, &mcpcore.ParamError{Path: "/name", Reason: "required when the caller is not authenticated"}
			}
			if max := h.Limit(LimitNameBytes); int64(len(in.Name)) > max {
				return nil, &mcpcore.LimitError{Limit: LimitNameBytes, Max: max, Actual: int64(len(in.Name)), Detail: "give a shorter name"}
			}
			return GreetReply{Greeting: fmt.Sprintf("%s, %s!", p.Greeting, in.Name)}, nil
		})
	return nil
}

// Close implements mcpcore.Plugin.
func (p *Plugin) Close(context.Context) error { return nil }
