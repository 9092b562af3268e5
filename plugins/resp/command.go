package resp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"

	"github.com/mcpkit/mcpkit/pkg/cli"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/httpserve"
	"github.com/mcpkit/mcpkit/pkg/respadmin"
)

// Names of the command's own flags.
const (
	flagHost       = "host"
	flagPort       = "port"
	flagConfig     = "config"
	flagToolPrefix = "tool-prefix"
	flagStdio      = "stdio"
	flagHTTP       = "http"
	flagAllowProc  = "allow-process"
	flagServerBin  = "server-binary"
)

const commandDoc = `Serves the RESP plugin alone: what an MCP client launches to reach one
Redis-protocol datastore. It never starts the datastore
and connects lazily: it starts, and lists its tools, while the target is down.

--host and --port set the default target's address (default 127.0.0.1:6379,
RESP3); with --config they override the configured default target's. --config
FILE is the plugin's own configuration (default_target, targets, file_root,
process, limits) as 'plugins.resp.config' takes it in an 'mcpkit serve' file,
plus "limits": an object of any limit names, the plugin's (max_sessions,
batch_commands, reply_bytes, ...) and the core's (inline_result_bytes,
tool_timeout, ...), each applied where it belongs. MCPKIT_RESP_AUTH supplies
the default target's password when the configuration gives none.

--tool-prefix names the tools <prefix>_execute, <prefix>_session,
<prefix>_commands and <prefix>_result (default resp, e.g. resp_execute).
--allow-process (or process.enabled) serves <prefix>_process: privileged
host administration that starts, stops and restores server processes of
--server-binary (or process.binary; default redis-server from PATH); the
processes it started are terminated and reaped when it exits.
Over stdio by default; --http ADDR serves streamable HTTP on
loopback (for tokens and TLS use 'mcpkit serve --plugins resp --config').

'mcpkit resp admin' serves the management gateway of one RESP server (the
--target ADDR host:port) at --listen ADDR: JSON routes under /api, /metrics
and the /api/live WebSocket that the management tools reach through a
target's management_url. Its --config FILE (strict JSON, all optional):
username, password_file | password_env, database, tls {ca_cert, server_name,
client_cert, client_key} for the target; tokens_file (lines "ROLE TOKEN",
ROLE viewer, operator or admin); tls_cert_file and tls_key_file to serve
HTTPS; audit_file (append-only JSON lines; without it POSTs are refused);
reveal ("off", or the least role that sees key values); replication_export
(GET /api/replication/snapshot); live {max_connections, queue_frames,
max_frame_bytes}. Without tokens it listens on loopback only, and every
caller acts as admin.`

func init() {
	cli.RegisterCommand(cli.Command{
		Name:    "resp",
		Summary: "serve the RESP sidecar (Redis-protocol datastore access) alone, over stdio by default",
		Usage:   "[--host H] [--port P] [--config FILE] [--tool-prefix P] [--allow-process] [--server-binary PATH] [--stdio | --http ADDR] [--log-level L] [--log-format F]\n       mcpkit resp [--log-level L] [--log-format F] admin --target ADDR --listen ADDR [--config FILE]",
		Doc:     commandDoc,
		Flags: func(fs *flag.FlagSet) {
			fs.String(flagHost, "", "default target `host` (default 127.0.0.1)")
			fs.Int(flagPort, 0, "default target `port` (default 6379)")
			fs.String(flagConfig, "", "the plugin's JSON configuration `FILE` (unknown fields are errors)")
			fs.String(flagToolPrefix, "resp", "tool `prefix`")
			fs.Bool(flagStdio, false, "serve MCP over stdin/stdout (the default)")
			fs.String(flagHTTP, "", "serve streamable HTTP at `ADDR` (loopback)")
			fs.Bool(flagAllowProc, false, "serve the process tool: start, stop and restore server processes on this host (as process.enabled)")
			fs.String(flagServerBin, "", "the server `executable` the process tool runs (as process.binary; default redis-server from PATH)")
			cli.AddLogFlags(fs)
		},
		Run: runCommand,
	})
}

func runCommand(ctx context.Context, env *cli.Env) int {
	if len(env.Args) > 0 && env.Args[0] == "admin" {
		err := runAdmin(ctx, env, env.Args[1:])
		if errors.Is(err, flag.ErrHelp) {
			return cli.ExitOK
		}
		return env.Fail(err)
	}
	if len(env.Args) > 0 {
		return env.Fail(cli.Usagef("unexpected argument %q", env.Args[0]))
	}
	stdio, _ := cli.FlagValue[bool](env.Flags, flagStdio)
	httpAddr, _ := cli.FlagValue[string](env.Flags, flagHTTP)
	addr, from, err := cli.ChooseTransport(stdio, httpAddr, "")
	if err != nil {
		return env.Fail(err)
	}
	opts, err := commandOptions(env.Flags)
	if err != nil {
		return env.Fail(err)
	}
	opts.Logger = env.Logger
	// The sidecar over stdio runs on one processor (cli.ServeParams.OneProcessor):
	// its calls wait on the datastore, and make bench-resp measures it faster so.
	return cli.Serve(ctx, cli.ServeParams{Options: opts, HTTPAddr: addr, TransportFrom: from, Stdin: env.Stdin, Stdout: env.Stdout,
		OneProcessor: true})
}

// commandOptions builds the server options of `mcpkit resp` from its flags:
// the plugin alone, its configuration file with --host and --port applied,
// and the file's limits split between the core and the plugin.
func commandOptions(fs *flag.FlagSet) (mcpcore.Options, error) {
	host, _ := cli.FlagValue[string](fs, flagHost)
	port, _ := cli.FlagValue[int](fs, flagPort)
	path, _ := cli.FlagValue[string](fs, flagConfig)
	prefix, _ := cli.FlagValue[string](fs, flagToolPrefix)
	allowProc, _ := cli.FlagValue[bool](fs, flagAllowProc)
	serverBin, _ := cli.FlagValue[string](fs, flagServerBin)
	if port < 0 || port > 65535 {
		return mcpcore.Options{}, cli.Usagef("--port %d is outside [0, 65535]", port)
	}
	var file commandFile
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return mcpcore.Options{}, &mcpcore.ConfigError{Field: "--config", Reason: err.Error()}
		}
		if err := mcpcore.DecodeConfig(data, &file); err != nil {
			return mcpcore.Options{}, fmt.Errorf("config %s: %w", path, err)
		}
	}
	file.applyAddress(host, port)
	if allowProc {
		file.Process.Enabled = true
	}
	if serverBin != "" {
		file.Process.Binary = serverBin
	}
	raw, err := json.Marshal(file.Config)
	if err != nil {
		return mcpcore.Options{}, fmt.Errorf("config %s: %w", path, err)
	}
	cfg := mcpcore.DefaultConfig()
	pluginLimits, err := splitLimits(file.Limits, &cfg.Limits)
	if err != nil {
		return mcpcore.Options{}, err
	}
	cfg.Plugins = map[string]mcpcore.PluginConfig{"resp": {Prefix: &prefix, Config: raw, Limits: pluginLimits}}
	if err := cfg.Validate(); err != nil {
		return mcpcore.Options{}, err
	}
	return mcpcore.Options{Config: cfg, Plugins: []string{"resp"}}, nil
}

// commandFile is the file of `mcpkit resp --config`: the plugin's
// [Config] and "limits".
type commandFile struct {
	Config
	Limits json.RawMessage `json:"limits,omitempty"`
}

// applyAddress sets the default target's host and port from the flags
// (zero values leave them).
func (f *commandFile) applyAddress(host string, port int) {
	if host == "" && port == 0 {
		return
	}
	name, err := defaultTargetName(f.DefaultTarget, f.Targets)
	if err != nil {
		return // resolve reports it
	}
	if f.Targets == nil {
		f.Targets = map[string]*TargetConfig{}
	}
	t := f.Targets[name]
	if t == nil {
		t = &TargetConfig{}
		f.Targets[name] = t
	}
	if host != "" {
		t.Host = host
	}
	if port != 0 {
		t.Port = port
	}
}

// splitLimits applies the core's limits named in raw to core and returns
// the plugin's as a JSON object for plugins.resp.limits. A name that is
// neither is a [*mcpcore.ConfigError] listing both tables.
func splitLimits(raw json.RawMessage, core *mcpcore.Limits) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, &mcpcore.ConfigError{Field: "limits", Reason: "must be an object of limit names and values"}
	}
	coreVals, pluginVals := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	isCore := func(n string) bool {
		return slices.ContainsFunc(mcpcore.CoreLimits(), func(s mcpcore.LimitSpec) bool { return s.Name == n })
	}
	isPlugin := func(n string) bool {
		return slices.ContainsFunc(Limits(), func(s mcpcore.LimitSpec) bool { return s.Name == n })
	}
	for name, v := range all {
		switch {
		case isCore(name):
			coreVals[name] = v
		case isPlugin(name):
			pluginVals[name] = v
		default:
			var known []string
			for _, s := range append(mcpcore.CoreLimits(), Limits()...) {
				known = append(known, s.Name)
			}
			return nil, &mcpcore.ConfigError{Field: "limits." + name, Reason: fmt.Sprintf("unknown field %q: no such limit (known: %v)", name, known)}
		}
	}
	if len(coreVals) > 0 {
		b, _ := json.Marshal(coreVals)
		if err := json.Unmarshal(b, core); err != nil {
			var ce *mcpcore.ConfigError
			if errors.As(err, &ce) {
				return nil, ce
			}
			return nil, &mcpcore.ConfigError{Field: "limits", Reason: err.Error()}
		}
	}
	if len(pluginVals) == 0 {
		return nil, nil
	}
	b, _ := json.Marshal(pluginVals)
	return b, nil
}

// runAdmin runs `mcpkit resp admin`: the management gateway until ctx ends.
func runAdmin(ctx context.Context, env *cli.Env, args []string) error {
	fs := flag.NewFlagSet("mcpkit resp admin", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	target := fs.String("target", "", "the RESP server's `host:port`")
	listen := fs.String("listen", "", "the gateway's listen `address` (loopback unless tokens_file is configured)")
	config := fs.String(flagConfig, "", "the gateway's JSON configuration `FILE`")
	fs.Usage = func() {}
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(env.Stdout, "Usage of mcpkit resp admin (see 'mcpkit help resp'):")
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		return err
	case err != nil:
		return cli.Usagef("admin: %v", err)
	case fs.NArg() > 0:
		return cli.Usagef("admin: unexpected argument %q", fs.Arg(0))
	case *target == "" || *listen == "":
		return cli.Usagef("admin: give --target and --listen")
	}
	opts, tlsCfg, err := adminOptions(*target, *config)
	if err != nil {
		return err
	}
	opts.Logger = env.Logger
	srv, err := respadmin.New(opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := httpserve.CheckListenAddr(*listen, srv.Authenticated()); errors.Is(err, httpserve.ErrUnauthenticatedListen) {
		return fmt.Errorf("refusing to listen on %q: %w: the gateway gives admin access to %s; set tokens_file in --config, or listen on 127.0.0.1", *listen, httpserve.ErrUnauthenticatedListen, *target)
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	return httpserve.ListenAndServe(ctx, *listen, srv, httpserve.ServeOptions{
		Logger: env.Logger,
		TLS:    tlsCfg,
		Ready: func(a net.Addr) {
			env.Logger.Info("listening", "url", scheme+"://"+a.String(), "target", *target, "authenticated", srv.Authenticated())
		},
	})
}

// adminOptions reads the gateway's configuration file (none: defaults)
// into the gateway's options and the TLS configuration it serves with.
func adminOptions(target, path string) (respadmin.Options, *tls.Config, error) {
	var f respadmin.File
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return respadmin.Options{}, nil, &mcpcore.ConfigError{Field: "--config", Reason: err.Error()}
		}
		if err := mcpcore.DecodeConfig(data, &f); err != nil {
			return respadmin.Options{}, nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return respadmin.Options{}, nil, cli.Usagef("admin: --target %q: want host:port", target)
	}
	opts, serveTLS, err := f.Options(target, func(field, file, env string) (string, bool, error) {
		pw, ok, err := mcpcore.ReadSecret(field, file, env)
		if err == nil && !ok {
			pw = os.Getenv(EnvAuth)
		}
		return pw, true, err
	})
	return opts, serveTLS, configError(err)
}
