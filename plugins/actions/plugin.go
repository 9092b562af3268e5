// Package actions is mcpkit's action framework plugin: the MCP surface of
// an action app (package pkg/action), after Keryx's MCP server.
// Every action of the app is served, through the one run path of
// [action.App.Run], as:
//
//   - a tool (unless its MCP.Tool is false), named after the action with
//     ':' as '-' ("message:post" → "message-post", behind the plugin's
//     prefix beside other plugins: "actions_message-post"), described by
//     the action and taking its derived input schema; the result is JSON,
//     or markdown when the action's response format says so
//     ([RenderMarkdown]); errors are always JSON (tools.go);
//   - a resource or resource template (MCP.Resource), whose template
//     variables become params and whose action returns {text, mimeType}
//     or {blob (base64), mimeType} (resources.go);
//   - a prompt (MCP.Prompt), whose inputs are the prompt's arguments and
//     whose action returns {description, messages} (resources.go).
//
// Every message the app publishes on its PubSub reaches, besides its
// WebSocket subscribers, the legacy MCP sessions of every instance that
// shares the state as a log notification, each session only the channels
// the app's channel authorizer allows its principal (notify.go).
//
// Over HTTP the app's own transports are mounted at /api (its routes and
// /api/swagger) and /ws beside /mcp, with web sessions (a cookie) shared by
// both. `mcpkit actions` (command.go) serves the plugin alone, lists the
// actions and runs one from the command line.
//
// The plugin serves the app an [Opener] gives it: the registered plugin
// serves the example app (package exampleapp); a program serves its own
// app by embedding [New] as an mcpcore.Instance. The plugin holds no
// action logic: validation, middleware, timeouts and errors are the
// framework's.
package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/action/oauth"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/plugins/actions/exampleapp"
)

func init() {
	mcpcore.Register(mcpcore.PluginInfo{
		Name:        "actions",
		Description: "an action app's actions as MCP tools, resources and prompts, and its HTTP API at /api (the example app by default)",
		New:         func() mcpcore.Plugin { return newExample() },
	})
}

// Environment variables of Keryx that the plugin reads when its
// configuration does not set the same thing.
const (
	EnvEnabled       = "MCP_SERVER_ENABLED"
	EnvRoute         = "MCP_SERVER_ROUTE"
	EnvInstructions  = "MCP_SERVER_INSTRUCTIONS"
	EnvMarkdownDepth = "MCP_MARKDOWN_DEPTH_LIMIT"
)

// MCPRoute is the path of the MCP endpoint, which the core serves.
const MCPRoute = "/mcp"

// Config is the plugin's configuration, under "plugins.actions.config" in
// an `mcpkit serve` file, decoded strictly.
type Config struct {
	// MCPEnabled serves the app's actions over MCP (tools, resources,
	// prompts, notifications); false serves only its HTTP API and
	// WebSocket. Default $MCP_SERVER_ENABLED (true or false), else true:
	// unlike Keryx, whose MCP server is off by default, serving MCP is
	// what the plugin is for.
	MCPEnabled *bool `json:"mcp_enabled,omitempty"`
	// MCPRoute is the MCP endpoint's path; default $MCP_SERVER_ROUTE, else
	// "/mcp". The core serves MCP at /mcp only, so another path is
	// refused rather than ignored.
	MCPRoute string `json:"mcp_route,omitempty"`
	// DataPath is the app's data (the example app's document store): a
	// file, created when absent; "" keeps the data in memory, lost at
	// exit; a postgres:// (or postgresql://) URL keeps it in PostgreSQL,
	// where every instance of the app shares it. With Redis set it must be
	// such a URL: Configure refuses memory or a file beside Redis.
	DataPath string `json:"data_path,omitempty"`
	// Instructions are the server instructions shown to MCP clients;
	// default $MCP_SERVER_INSTRUCTIONS, else the app's description (see
	// [Plugin.Instructions]).
	Instructions string `json:"instructions,omitempty"`
	// MarkdownDepthLimit is how many levels of nesting a markdown result
	// renders before falling back to a JSON code block (1 to 32); default
	// $MCP_MARKDOWN_DEPTH_LIMIT, else 5.
	MarkdownDepthLimit int `json:"markdown_depth_limit,omitempty"`
	// RateLimit limits the HTTP API's calls per client in a sliding window
	// (see action.RateLimit); unset: Keryx's 20 a minute per IP
	// unauthenticated and 200 a minute per principal authenticated. A limit
	// of 0 leaves that class unlimited.
	RateLimit *RateLimitConfig `json:"rate_limit,omitempty"`
	// SignInLimit bounds the failed sign-ins (runs of the app's login
	// action refused as unauthorized) of each account and each client
	// address, counted together whichever way they come: PUT /api/session,
	// the OAuth sign-in page, WebSocket or MCP (see action.SignInLimit);
	// kept with the rate-limit counts (in Redis when it is set). Unset: 10
	// per account and 20 per address in 15 minutes. A limit of 0 leaves
	// that count unlimited.
	SignInLimit *SignInLimitConfig `json:"sign_in_limit,omitempty"`
	// Redis, when set, holds the state that several instances of the app
	// share: PubSub channels, rate-limit counts and task queues (package
	// pkg/action/redisstate), and the server's legacy streamable-HTTP
	// sessions (sessionstore.Redis), so that any instance serves a session
	// another opened. Unset: all of it in process.
	Redis *RedisConfig `json:"redis,omitempty"`
	// Session configures the web sessions of the HTTP API and the
	// WebSocket (a cookie naming a session kept with the shared state).
	Session *SessionConfig `json:"session,omitempty"`
	// OAuth, when an object (or true), makes the plugin the OAuth 2.1
	// authorization server of /mcp (oauth.go): MCP clients then need a
	// token it issued to a user who signed in or up with the app's login
	// or signup action, and the app's actions see that user as the
	// caller. It needs MCPEnabled. false turns it off. Absent: off beside
	// other plugins (`mcpkit serve`, whose /mcp the core's bearer tokens
	// guard), on under `mcpkit actions start` when MCP is enabled, as in
	// Keryx, where an MCP client meets a 401 first.
	OAuth *OAuthConfig `json:"oauth,omitempty"`
}

// SessionConfig configures the web session cookie.
type SessionConfig struct {
	// CookieName is the cookie's name; default "mcpkit_session".
	CookieName string `json:"cookie_name,omitempty"`
	// TTLSeconds is how long an unused session lives (each request
	// extends it); default 86400.
	TTLSeconds int `json:"ttl_seconds,omitempty"`
}

// RedisConfig is where an app's shared state lives. The password is read
// from a file or the environment, never written in the configuration.
type RedisConfig struct {
	Addr string `json:"addr"`
	// Username and PasswordFile (or $MCPKIT_ACTIONS_REDIS_PASSWORD)
	// authenticate; empty: none.
	Username     string `json:"username,omitempty"`
	PasswordFile string `json:"password_file,omitempty"`
	DB           int    `json:"db,omitempty"`
	// Prefix starts every key and channel; the same on every instance of
	// one app. Default "mcpkit:actions:".
	Prefix string `json:"prefix,omitempty"`
}

// EnvRedisPassword is the environment variable with the Redis password,
// when the configuration names no password_file.
const EnvRedisPassword = "MCPKIT_ACTIONS_REDIS_PASSWORD"

// RateLimitConfig is the HTTP API's rate limit.
type RateLimitConfig struct {
	Unauthenticated int `json:"unauthenticated"`
	Authenticated   int `json:"authenticated"`
	// WindowSeconds is the window's length; default 60.
	WindowSeconds int `json:"window_seconds,omitempty"`
	// TrustForwardedFor takes the client's address from X-Forwarded-For
	// (its last entry: set it only behind a proxy that writes it).
	TrustForwardedFor bool `json:"trust_forwarded_for,omitempty"`
}

// resolve fills what the configuration leaves unset from the environment
// and the defaults, and checks it.
func (c Config) resolve(getenv func(string) string) (Config, error) {
	if c.MCPEnabled == nil {
		on := true
		if s := getenv(EnvEnabled); s != "" {
			var err error
			if on, err = strconv.ParseBool(s); err != nil {
				return c, &mcpcore.ConfigError{Field: EnvEnabled, Reason: fmt.Sprintf("%q is not true or false", s)}
			}
		}
		c.MCPEnabled = &on
	}
	field := "mcp_route"
	if c.MCPRoute == "" {
		c.MCPRoute, field = getenv(EnvRoute), EnvRoute
	}
	if c.MCPRoute != "" && c.MCPRoute != MCPRoute {
		return c, &mcpcore.ConfigError{Field: field, Reason: fmt.Sprintf("%q: mcpkit serves MCP at %s only", c.MCPRoute, MCPRoute)}
	}
	c.MCPRoute = MCPRoute
	if c.Instructions == "" {
		c.Instructions = getenv(EnvInstructions)
	}
	if c.MarkdownDepthLimit == 0 {
		c.MarkdownDepthLimit = DefaultMarkdownDepth
		if s := getenv(EnvMarkdownDepth); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > maxMarkdownDepth {
				return c, &mcpcore.ConfigError{Field: EnvMarkdownDepth, Reason: fmt.Sprintf("%q is not an integer from 1 to %d", s, maxMarkdownDepth)}
			}
			c.MarkdownDepthLimit = n
		}
	}
	if c.MarkdownDepthLimit < 1 || c.MarkdownDepthLimit > maxMarkdownDepth {
		return c, &mcpcore.ConfigError{Field: "markdown_depth_limit", Reason: fmt.Sprintf("%d is not from 1 to %d", c.MarkdownDepthLimit, maxMarkdownDepth)}
	}
	if c.RateLimit == nil {
		c.RateLimit = &RateLimitConfig{Unauthenticated: 20, Authenticated: 200}
	}
	if c.SignInLimit == nil {
		c.SignInLimit = &SignInLimitConfig{PerAccount: 10, PerAddress: 20}
	}
	if l := c.SignInLimit; l.PerAccount < 0 || l.PerAddress < 0 || l.WindowSeconds < 0 {
		return c, &mcpcore.ConfigError{Field: "sign_in_limit", Reason: fmt.Sprintf("limits and window must not be negative (%d per account, %d per address, %d s)", l.PerAccount, l.PerAddress, l.WindowSeconds)}
	}
	if c.Session == nil {
		c.Session = &SessionConfig{}
	}
	if c.Session.TTLSeconds < 0 {
		return c, &mcpcore.ConfigError{Field: "session.ttl_seconds", Reason: fmt.Sprintf("%d is negative", c.Session.TTLSeconds)}
	}
	if n := c.Session.CookieName; n != "" && !validCookieName(n) {
		return c, &mcpcore.ConfigError{Field: "session.cookie_name", Reason: fmt.Sprintf("%q is not a cookie name (letters, digits and !#$%%&'*+-.^_`|~)", n)}
	}
	if c.oauthOn() {
		if !*c.MCPEnabled {
			return c, &mcpcore.ConfigError{Field: "oauth", Reason: "the OAuth server is for /mcp, and mcp_enabled is false"}
		}
		o := *c.OAuth
		if err := o.resolve(getenv); err != nil {
			return c, err
		}
		c.OAuth = &o
	}
	if c.Redis != nil && c.Redis.Addr == "" {
		return c, &mcpcore.ConfigError{Field: "redis.addr", Reason: "the Redis address is required (host:port)"}
	}
	if err := c.rateLimit(nil).Validate(); err != nil || c.RateLimit.WindowSeconds < 0 {
		return c, &mcpcore.ConfigError{Field: "rate_limit", Reason: fmt.Sprintf("limits and window must not be negative (%v)", err)}
	}
	return c, nil
}

// SignInLimitConfig bounds failed sign-ins.
type SignInLimitConfig struct {
	PerAccount int `json:"per_account"`
	PerAddress int `json:"per_address"`
	// WindowSeconds is the window's length; default 900.
	WindowSeconds int `json:"window_seconds,omitempty"`
}

// signInLimit is the action package's form of the sign-in limit,
// counted in store (nil: in process).
func (c Config) signInLimit(store action.RateStore) action.SignInLimit {
	return action.SignInLimit{PerAccount: c.SignInLimit.PerAccount, PerAddress: c.SignInLimit.PerAddress,
		Window: time.Duration(c.SignInLimit.WindowSeconds) * time.Second, Store: store}
}

// validCookieName reports whether n is an RFC 6265 cookie name (an HTTP
// token).
func validCookieName(n string) bool {
	for _, r := range n {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r) {
			return false
		}
	}
	return n != ""
}

// sessions is the action package's form of the web sessions, kept in
// store.
func (c Config) sessions(store action.SessionStore) *action.Sessions {
	return &action.Sessions{Store: store, CookieName: c.Session.CookieName, TTL: time.Duration(c.Session.TTLSeconds) * time.Second}
}

// rateLimit is the action package's form of the rate limit, counted in
// store (nil: in process).
func (c Config) rateLimit(store action.RateStore) *action.RateLimit {
	return &action.RateLimit{Unauthenticated: c.RateLimit.Unauthenticated, Authenticated: c.RateLimit.Authenticated,
		Window: time.Duration(c.RateLimit.WindowSeconds) * time.Second, Store: store}
}

// Opener opens the app a plugin serves, with the plugin's configuration and
// the PubSub its WebSocket clients subscribe through (the app publishes on
// it); closer (nil for none) releases what it opened and is closed once, at
// the plugin's Close.
type Opener func(ctx context.Context, cfg Config, ps action.PubSub) (app *action.App, closer io.Closer, err error)

// OpenExample opens the example app (package exampleapp) on cfg.DataPath.
// It refuses shared Redis state (cfg.Redis) beside data that only this
// process sees (memory or a file), as the registered plugin's Configure
// does first.
func OpenExample(_ context.Context, cfg Config, ps action.PubSub) (*action.App, io.Closer, error) {
	if err := cfg.checkSharedData(); err != nil {
		return nil, nil, err
	}
	var opts exampleapp.Options
	if cfg.oauthOn() {
		opts.PrincipalPrefix = OAuthPrincipalPrefix // the OAuth server's users are the app's
	}
	ex, err := exampleapp.Open(cfg.DataPath, ps, opts)
	if err != nil {
		return nil, nil, err
	}
	return ex.App(), ex, nil
}

// Plugin serves one action app over MCP and its HTTP API at /api.
type Plugin struct {
	open   Opener
	cfg    Config
	app    *action.App
	closer io.Closer
	state  sharedState
	host   *mcpcore.Host
	notify *notifier     // nil before Attach
	oauth  *oauth.Server // nil: the OAuth server is off
	// tasksDone is closed when the app's task workers have stopped (nil:
	// the app declares no task).
	tasksDone chan struct{}
	// dataAtPath says the app keeps its data at Config.DataPath (the
	// example app), so that Configure can refuse process-local data
	// beside shared Redis state.
	dataAtPath bool
}

var (
	_ mcpcore.Plugin     = (*Plugin)(nil)
	_ mcpcore.Configurer = (*Plugin)(nil)
)

// New returns a plugin that serves the app open opens at Attach. Serve it
// with mcpcore.Options.Instances (or register it under another name).
func New(open Opener) *Plugin {
	p := &Plugin{open: open}
	p.cfg, _ = Config{}.resolve(func(string) string { return "" }) // the defaults cannot fail
	return p
}

// newExample returns the plugin serving the example app (the registered
// plugin, `mcpkit actions start`), whose data is at Config.DataPath.
func newExample() *Plugin {
	p := New(OpenExample)
	p.dataAtPath = true
	return p
}

// Configure implements mcpcore.Configurer: it decodes the [Config]
// strictly and resolves it with the environment, so that a bad value
// stops the start. It opens nothing. Serving the example app, it refuses
// Redis (shared state) beside data that only this process sees (memory
// or a file, not a PostgreSQL URL); a program serving its own app with
// [New] decides where that app's data lives.
func (p *Plugin) Configure(raw []byte) error {
	var c Config
	if err := mcpcore.DecodeConfig(raw, &c); err != nil {
		return err
	}
	c, err := c.resolve(os.Getenv)
	if err != nil {
		return err
	}
	if p.dataAtPath {
		if err := c.checkSharedData(); err != nil {
			return err
		}
	}
	p.cfg = c
	return nil
}

// Attach implements mcpcore.Plugin: it opens the shared state and the
// app, makes the plugin's logger the app's, adds (unless MCPEnabled is
// false) a tool, resource or prompt per action as the action asks, and
// serves the app's HTTP API at /api and its WebSocket at /ws.
func (p *Plugin) Attach(ctx context.Context, h *mcpcore.Host) error {
	p.host = h
	state, err := openState(ctx, p.cfg.Redis)
	if err != nil {
		return err
	}
	p.state = state
	if state.sessions != nil {
		h.SetSessionStore(state.sessions) // legacy HTTP sessions served by any instance
	}
	app, closer, err := p.open(ctx, p.cfg, &forwardingPubSub{PubSub: p.state.pubsub, relay: p.state.relay})
	if err != nil {
		return fmt.Errorf("open the app: %w", err)
	}
	p.app, p.closer = app, closer
	app.SetLogger(h.Logger())
	if p.cfg.Instructions == "" {
		p.cfg.Instructions = app.Description()
	}
	// One limit of failed sign-ins whichever way they come (the OAuth
	// page runs the same login action), counted in the shared state.
	if err := app.SetSignInLimit(p.cfg.signInLimit(p.state.rates)); err != nil {
		return err
	}
	var errs []error
	if *p.cfg.MCPEnabled {
		errs = append(errs, p.attachMCP(ctx))
	}
	if p.cfg.oauthOn() {
		errs = append(errs, p.attachOAuth())
	} else if p.cfg.OAuth != nil && *p.cfg.MCPEnabled {
		h.Logger().Info(`OAuth server off ("oauth": false): /mcp takes no OAuth token, only the core's static bearer tokens if any`)
	}
	if slices.ContainsFunc(app.Actions(), func(a *action.Action) bool { return a.Task != nil }) {
		// Task workers (an in-process queue) run for the server's lifetime:
		// Close waits for them.
		tasks := action.NewTasks(app, p.state.queue, action.TaskOptions{Logger: h.Logger()})
		p.tasksDone = make(chan struct{})
		go func() {
			defer close(p.tasksDone)
			if err := tasks.Run(h.Context()); err != nil {
				h.Logger().Error("task workers stopped", "err", err)
			}
		}()
	}
	sessions := p.cfg.sessions(p.state.web) // one value: a WebSocket shares its cookie's session
	// The listener's one origin policy: the core checks it in front of
	// every route, and /api and /ws answer CORS by the same list.
	origins := h.AllowedOrigins()
	api := action.HTTPOptions{Prefix: "/api", Logger: h.Logger(), Sessions: sessions, AllowedOrigins: origins,
		RateLimit: p.cfg.rateLimit(p.state.rates), TrustForwardedFor: p.cfg.RateLimit.TrustForwardedFor}
	if p.oauth != nil {
		api.Identify = p.identifyBearer // the OAuth server's tokens are good for /api too
	}
	h.HandleHTTP("/api/", app.HTTPHandler(api))
	ws := app.WebSocketHandler(action.WebSocketOptions{PubSub: p.state.pubsub, Logger: h.Logger(), Sessions: sessions, AllowedOrigins: origins})
	h.HandleHTTP("/ws", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An upgraded connection outlives the HTTP server's shutdown: end
		// it, its subscriptions and its running action with the server.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(h.Context(), cancel)()
		ws.ServeHTTP(w, r.WithContext(ctx))
	}))
	return errors.Join(errs...)
}

// attachMCP serves the app's actions as tools, resources and prompts,
// its description as the instructions, and its PubSub messages as
// notifications.
func (p *Plugin) attachMCP(ctx context.Context) error {
	notify, err := startNotifier(ctx, p.host, p.app, p.state.relay)
	if err != nil {
		return err
	}
	p.notify = notify
	p.host.SetInstructions(p.cfg.Instructions) // beside the core's and other plugins' (mcpkit serve)
	var errs []error
	for _, act := range p.app.Actions() {
		if act.MCP.IsTool() {
			p.addTool(act)
		}
		if act.MCP.Resource != nil {
			errs = append(errs, p.addResource(act))
		}
		if act.MCP.Prompt != nil {
			p.addPrompt(act)
		}
	}
	return errors.Join(errs...)
}

// Close implements mcpcore.Plugin: it closes what the opener opened (the
// example app's store). A late call then fails with the app's error.
func (p *Plugin) Close(ctx context.Context) error {
	if p.tasksDone != nil {
		select { // the host's context has ended: the workers are stopping
		case <-p.tasksDone:
		case <-ctx.Done():
			return fmt.Errorf("task workers still running: %w", ctx.Err())
		}
	}
	var err error
	if p.notify != nil {
		err = p.notify.stop()
	}
	if p.closer != nil {
		err = errors.Join(err, p.closer.Close())
	}
	if p.state.close != nil {
		err = errors.Join(err, p.state.close())
	}
	return err
}

// Instructions are the server instructions the plugin's configuration
// asks for: Config.Instructions, else $MCP_SERVER_INSTRUCTIONS, else the
// app's description (after Attach). Beside other plugins they follow the
// core's paragraph (Host.SetInstructions); `mcpkit actions start` serves
// them alone, with [InstructionsMiddleware].
func (p *Plugin) Instructions() string { return p.cfg.Instructions }
