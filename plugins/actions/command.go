package actions

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action/oauth"
	"github.com/mcpkit/mcpkit/pkg/cli"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Names of the command's flags.
const (
	flagData   = "data"
	flagStdio  = "stdio"
	flagHTTP   = "http"
	flagConfig = "config"
)

const commandDoc = `Serves, lists or runs the actions of the example action app (package
plugins/actions/exampleapp). --data FILE keeps the app's data (its users and
messages) in FILE, a document store file created when absent, or in the
PostgreSQL store a postgres:// URL names (the password in PGPASSWORD or
PGPASSFILE), which several instances share; without it the data is in memory
and lost at exit. The command's flags (--data, --log-level, --log-format) come
before the verb.

  start [--stdio | --http ADDR] [--config FILE]
        serve the actions plugin alone: every action as an MCP tool under its
        own name (':' as '-': message-post), its resources and prompts, over
        stdio by default; --http ADDR serves /mcp, the app's HTTP API at /api
        (with /api/swagger) and its WebSocket at /ws. As in Keryx, /mcp
        wants an OAuth token from the app's own authorization server
        (/oauth, /.well-known): a client meets a 401 naming the
        protected-resource metadata; plugins.actions.config.oauth false
        opts out, and /mcp is then unauthenticated unless http has bearer
        tokens (a WARN says so). --config FILE is the
        file 'mcpkit serve --config' reads: its limits, its http section
        (addr, bearer tokens, TLS, origins) and plugins.actions (prefix, limits,
        config); other plugins' sections are ignored, and --data wins over
        its data_path. The environment fills what the file leaves unset:
        $MCP_SERVER_ENABLED (default true; false serves no /mcp (404) and no
        OAuth server, only /api and /ws, and refuses --stdio),
        $MCP_SERVER_ROUTE (only /mcp), $MCP_SERVER_INSTRUCTIONS (default the
        app's description), $MCP_MARKDOWN_DEPTH_LIMIT (default 5),
        $MCP_SESSION_TTL (seconds a legacy MCP session may stay idle: the
        core's http_session_idle) and $MCP_ALLOWED_ORIGINS (comma-separated:
        http.allowed_origins, the one origin policy of /mcp, /api, /ws,
        /oauth and /.well-known; '*' is any origin, answered with '*' and
        never with credentials).
  templates DIR
        write the OAuth pages' default templates (oauth-authorize.html,
        oauth-success.html, oauth-common.css, mcpkit.svg) into DIR for
        customising; plugins.actions.config.oauth.templates_dir then serves
        them. Existing files are not overwritten.
  list
        the actions with their descriptions
  run NAME [--input value]... [--json '{...}']
        run one action and print its JSON result (exit 1 and the error as JSON
        on stderr when it fails)

Beside other plugins, 'mcpkit serve --plugins actions,...' serves the same
tools behind the prefix "actions_", configured under plugins.actions.config:
{"mcp_enabled", "mcp_route", "data_path", "instructions",
"markdown_depth_limit", "rate_limit", "redis", "session", "oauth"}; with "redis",
several instances share PubSub, rate-limit counts, task queues, web sessions,
MCP sessions and OAuth clients, codes and tokens, and "data_path" (or --data)
must then be a postgres:// URL they share too: beside data in memory or a file
the start is refused (exit 3). "oauth" ({} or true for the
defaults; "issuer", "code_ttl_seconds", "client_ttl_seconds",
"refresh_ttl_seconds", "access_ttl_seconds", "register_limit",
"register_window_ms", "templates_dir", "verify_cache_ms") makes /mcp want an
OAuth token its users get by signing in or up with the app's login and signup
actions (beside other plugins it is off unless set; false turns it off);
$MCP_OAUTH_CODE_TTL, $MCP_OAUTH_CLIENT_TTL, $MCP_OAUTH_REFRESH_TTL,
$RATE_LIMIT_OAUTH_REGISTER_LIMIT and $RATE_LIMIT_OAUTH_REGISTER_WINDOW_MS fill
what it leaves unset. Its origins are http.allowed_origins.`

func init() {
	cli.RegisterCommand(cli.Command{
		Name:    "actions",
		Summary: "serve the example action app's actions over MCP and HTTP (/api), list them, or run one",
		Usage:   "[--data FILE] [--log-level L] [--log-format F] start [--stdio | --http ADDR] [--config FILE]\n       mcpkit actions templates DIR\n       mcpkit actions [--data FILE] list\n       mcpkit actions [--data FILE] run NAME [--input value]... [--json '{...}']",
		Doc:     commandDoc,
		Flags: func(fs *flag.FlagSet) {
			fs.String(flagData, "", "the app's data: a store `file` or a postgres:// URL (default: memory)")
			cli.AddLogFlags(fs)
		},
		Run: runCommand,
	})
}

func runCommand(ctx context.Context, env *cli.Env) int {
	if len(env.Args) == 0 {
		return env.Fail(cli.Usagef("no verb: want start, templates, list or run"))
	}
	data, _ := cli.FlagValue[string](env.Flags, flagData)
	verb, args := env.Args[0], env.Args[1:]
	switch verb {
	case "start":
		return runStart(ctx, env, data, args)
	case "templates":
		if len(args) != 1 {
			return env.Fail(cli.Usagef("templates: want one directory"))
		}
		if err := oauth.WriteDefaultTemplates(args[0]); err != nil {
			return env.Fail(err)
		}
		return cli.ExitOK
	case "list", "run", "help":
		app, closer, err := OpenExample(ctx, Config{DataPath: data}, nil) // nothing subscribes from the command line
		if err != nil {
			return env.Fail(err)
		}
		defer closer.Close()
		return app.RunCLI(ctx, env.Args, env.Stdout, env.Stderr)
	}
	return env.Fail(cli.Usagef("unknown verb %q: want start, templates, list or run", verb))
}

// runStart serves the plugin alone, without a tool prefix (unless the
// configuration file gives it one).
func runStart(ctx context.Context, env *cli.Env, data string, args []string) int {
	fs := flag.NewFlagSet("mcpkit actions start", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stdio := fs.Bool(flagStdio, false, "serve MCP over stdin/stdout (the default)")
	httpAddr := fs.String(flagHTTP, "", "serve streamable HTTP at ADDR (loopback)")
	path := fs.String(flagConfig, "", "the JSON configuration FILE of mcpkit serve")
	if err := fs.Parse(args); err != nil {
		return env.Fail(cli.Usagef("start: %v", err))
	}
	if fs.NArg() > 0 {
		return env.Fail(cli.Usagef("start: unexpected argument %q", fs.Arg(0)))
	}
	file := mcpcore.DefaultConfig()
	if *path != "" {
		var err error
		if file, err = mcpcore.LoadConfig(*path); err != nil {
			if !errors.Is(err, mcpcore.ErrConfig) {
				err = &mcpcore.ConfigError{Field: "--config", Reason: err.Error()} // unreadable: nothing is served
			}
			return env.Fail(err)
		}
	}
	addr, from, err := cli.ChooseTransport(*stdio, *httpAddr, file.HTTP.Addr)
	if err != nil {
		return env.Fail(err)
	}
	opts, noMCP, err := startOptions(file, data, os.Getenv)
	if err != nil {
		return env.Fail(err)
	}
	opts.Logger = env.Logger
	return cli.Serve(ctx, cli.ServeParams{Options: opts, HTTPAddr: addr, TransportFrom: from, Stdin: env.Stdin, Stdout: env.Stdout, NoMCP: noMCP})
}

// Environment variables of Keryx that `mcpkit actions start` reads for
// the core's settings the configuration file leaves unset.
const (
	// EnvSessionTTL is the idle time in seconds after which a legacy MCP
	// session ends (the core's http_session_idle, at most 86400).
	EnvSessionTTL = "MCP_SESSION_TTL"
	// EnvAllowedOrigins is a comma-separated list of browser origins
	// allowed besides same-origin ones (the file's http.allowed_origins).
	EnvAllowedOrigins = "MCP_ALLOWED_ORIGINS"
)

// startOptions builds the server of `mcpkit actions start` from the
// configuration file's content: the example app's plugin alone, without a
// prefix unless the file gives one, serving its instructions; data, when
// not empty, is the app's data file. getenv fills EnvSessionTTL and
// EnvAllowedOrigins where the file leaves them at their defaults. As in
// Keryx, the OAuth server guards /mcp unless the file says "oauth":
// false. noMCP, when not empty, says why /mcp is not served: the app's
// MCP server is disabled, and the plugin is the server's only one.
func startOptions(file mcpcore.Config, data string, getenv func(string) string) (_ mcpcore.Options, noMCP string, _ error) {
	if s := getenv(EnvSessionTTL); s != "" && file.Limits.HTTPSessionIdle == mcpcore.DefaultLimits().HTTPSessionIdle {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return mcpcore.Options{}, "", &mcpcore.ConfigError{Field: EnvSessionTTL, Reason: fmt.Sprintf("%q is not a positive number of seconds", s)}
		}
		file.Limits.HTTPSessionIdle = mcpcore.Duration(time.Duration(n) * time.Second) // its range is checked with the other limits
	}
	if s := getenv(EnvAllowedOrigins); s != "" && len(file.HTTP.AllowedOrigins) == 0 {
		for o := range strings.SplitSeq(s, ",") {
			if o = strings.TrimSpace(o); o != "" {
				file.HTTP.AllowedOrigins = append(file.HTTP.AllowedOrigins, o)
			}
		}
	}
	pc := file.Plugins["actions"]
	var cfg Config
	if len(pc.Config) > 0 {
		if err := mcpcore.DecodeConfig(pc.Config, &cfg); err != nil {
			return mcpcore.Options{}, "", &mcpcore.ConfigError{Field: "plugins.actions.config", Reason: err.Error()}
		}
	}
	if data != "" {
		cfg.DataPath = data
	}
	// The file's own settings are left for the plugin to resolve (with
	// the environment) at Configure, which reports their errors; here
	// only whether MCP is served matters.
	resolved, err := cfg.resolve(getenv)
	switch {
	case err != nil: // Configure reports it
	case !*resolved.MCPEnabled && cfg.MCPEnabled != nil:
		noMCP = "plugins.actions.config.mcp_enabled is false"
	case !*resolved.MCPEnabled:
		noMCP = EnvEnabled + "=false"
	case cfg.OAuth == nil:
		cfg.OAuth = &OAuthConfig{}
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return mcpcore.Options{}, "", fmt.Errorf("encode the actions configuration: %w", err)
	}
	pc.Config = raw
	if pc.Prefix == nil {
		pc.Prefix = new("")
	}
	file.Enable = nil
	file.Plugins = map[string]mcpcore.PluginConfig{"actions": pc}
	p := newExample()
	return mcpcore.Options{Config: file, Instances: []mcpcore.Instance{{Name: "actions", Plugin: p}},
		Middleware: []mcp.Middleware{InstructionsMiddleware(p.Instructions)}}, noMCP, nil
}

// InstructionsMiddleware serves instructions() as the server instructions
// of initialize (legacy era) and server/discover (2026-07-28 era) results,
// in place of the core's. It is for a server that serves one action app
// alone (`mcpkit actions start`): give it to mcpcore.Options.Middleware.
func InstructionsMiddleware(instructions func() string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			switch r := res.(type) {
			case *mcp.InitializeResult:
				r.Instructions = instructions()
			case *mcp.DiscoverResult:
				r.Instructions = instructions()
			}
			return res, err
		}
	}
}
