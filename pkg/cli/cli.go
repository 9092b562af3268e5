// Package cli is the mcpkit command line: `mcpkit serve`, `mcpkit version`
// and `mcpkit plugins`. It wires flags and configuration to the host
// (pkg/mcpcore) and its transports and holds no protocol logic itself.
//
// A third party builds its own binary with a main that blank-imports its
// plugins and calls [Main], exactly as cmd/mcpkit does:
//
//	func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/httpserve"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/stdio"
)

// Version is set at build time with -ldflags "-X github.com/mcpkit/mcpkit/pkg/cli.Version=v1.2.3".
var Version = ""

// Exit codes.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the server failed while running
	ExitUsage   = 2 // bad command line
	ExitConfig  = 3 // invalid configuration: nothing was served
)

const usage = `mcpkit serves the Model Context Protocol (MCP) for data systems, as plugins
on one core, over stdio or streamable HTTP.

Usage:
  mcpkit serve [--stdio | --http ADDR] [--plugins a,b] [--config FILE] [--log-level L] [--log-format F]
  mcpkit plugins           list the plugins built into this binary
  mcpkit version           print the version
  mcpkit help              this text

Examples:
  mcpkit serve --stdio --plugins diag          an MCP client launches this over stdio
  mcpkit serve --http 127.0.0.1:8080           streamable HTTP at http://127.0.0.1:8080/mcp
  mcpkit serve --http 0.0.0.0:8080 --config mcpkit.json
                                               beyond loopback: needs http.bearer_tokens_file in the config

Exit codes: 0 success, 1 the server failed, 2 bad command line, 3 invalid configuration.
Logs go to stderr; over stdio, stdout carries JSON-RPC only.
`

// Main runs the command line and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdin, stdout, stderr)
	case "plugins":
		return listPlugins(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "mcpkit %s\n", version())
		return ExitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	default:
		fmt.Fprintf(stderr, "mcpkit: unknown command %q\n\n%s", args[0], usage)
		return ExitUsage
	}
}

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

func listPlugins(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpkit plugins", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDEFAULT\tDESCRIPTION")
	for _, p := range mcpcore.Plugins() {
		def := "no"
		if p.Default {
			def = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, def, p.Description)
	}
	tw.Flush()
	return ExitOK
}

type serveFlags struct {
	stdio     bool
	httpAddr  string
	plugins   string
	config    string
	logLevel  string
	logFormat string
}

func serve(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f serveFlags
	fs := flag.NewFlagSet("mcpkit serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&f.stdio, "stdio", false, "serve MCP over stdin/stdout (the default)")
	fs.StringVar(&f.httpAddr, "http", "", "serve streamable HTTP at `ADDR` (path /mcp, health at /healthz)")
	fs.StringVar(&f.plugins, "plugins", "", "comma-separated `list` of plugins to serve (default: the default plugins)")
	fs.StringVar(&f.config, "config", "", "JSON configuration `FILE` (unknown fields are errors)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log `format` on stderr: text or json")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: mcpkit serve [--stdio | --http ADDR] [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpkit serve: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "mcpkit serve: %v\n", err)
		return ExitUsage
	}
	cfg := mcpcore.DefaultConfig()
	if f.config != "" {
		if cfg, err = mcpcore.LoadConfig(f.config); err != nil {
			logger.Error("invalid configuration", "err", err)
			return ExitConfig
		}
	}
	if f.httpAddr == "" && cfg.HTTP.Addr != "" && !f.stdio {
		f.httpAddr = cfg.HTTP.Addr
	}
	if f.stdio && f.httpAddr != "" {
		fmt.Fprintln(stderr, "mcpkit serve: choose one of --stdio and --http")
		return ExitUsage
	}
	var selected []string
	if f.plugins != "" {
		for _, p := range strings.Split(f.plugins, ",") {
			if p = strings.TrimSpace(p); p != "" {
				selected = append(selected, p)
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	transport := "stdio"
	var web *httpSettings
	if f.httpAddr != "" {
		transport = "http"
		if web, err = httpSetup(f.httpAddr, cfg.HTTP, logger); err != nil {
			logger.Error("refusing to serve HTTP", "err", err)
			return ExitConfig
		}
	}
	srv, err := mcpcore.NewServer(ctx, mcpcore.Options{
		Config: cfg, Plugins: selected, Version: version(), Transport: transport, Logger: logger,
	})
	if err != nil {
		logger.Error("cannot start", "err", err)
		if errors.Is(err, mcpcore.ErrConfig) {
			return ExitConfig
		}
		return ExitFailure
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(cctx); err != nil {
			logger.Error("close", "err", err)
		}
	}()
	if web != nil {
		return serveHTTP(ctx, srv, cfg.Limits, web, logger)
	}
	return serveStdio(ctx, srv, cfg.Limits, stdin, stdout, logger)
}

// serveStdio serves one session over stdin/stdout until EOF or a signal.
func serveStdio(ctx context.Context, srv *mcpcore.Server, lim mcpcore.Limits, stdin io.Reader, stdout io.Writer, logger *slog.Logger) int {
	// A client that goes away closes our stdout: get EPIPE from the write
	// rather than dying of SIGPIPE, so that plugins are still closed.
	signal.Ignore(syscall.SIGPIPE)
	logger.Info("serving", "transport", "stdio", "plugins", pluginNames(srv))
	t := stdio.NewTransport(stdin, stdout, stdio.Options{MaxFrameBytes: lim.FrameBytes, Logger: logger})
	if err := srv.MCP().Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		logger.Error("stdio session ended", "err", err)
		return ExitFailure
	}
	logger.Info("stdio session ended")
	return ExitOK
}

// httpSettings is what `serve --http` needs beyond the limits.
type httpSettings struct {
	addr    string
	origins []string
	tokens  []string
	tls     *tls.Config
}

// httpSetup reads the HTTP credentials and refuses a listen address beyond
// loopback without authentication.
func httpSetup(addr string, c mcpcore.HTTPConfig, logger *slog.Logger) (*httpSettings, error) {
	tokens, err := c.BearerTokens()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	if err := httpserve.CheckListenAddr(addr, len(tokens) > 0); err != nil {
		return nil, err
	}
	if tlsConfig == nil && httpserve.CheckListenAddr(addr, false) != nil {
		logger.Warn("serving plain HTTP beyond loopback: bearer tokens cross the network in clear text; set http.tls_cert_file and http.tls_key_file, or terminate TLS in front of mcpkit")
	}
	return &httpSettings{addr: addr, origins: c.AllowedOrigins, tokens: tokens, tls: tlsConfig}, nil
}

// serveHTTP serves streamable HTTP until a signal.
func serveHTTP(ctx context.Context, srv *mcpcore.Server, lim mcpcore.Limits, web *httpSettings, logger *slog.Logger) int {
	h := httpserve.NewHandler(httpserve.Options{
		Server:         srv.MCP(),
		SessionIdle:    lim.HTTPSessionIdle.D(),
		MaxSessions:    lim.HTTPSessions,
		MaxBodyBytes:   lim.FrameBytes,
		AllowedOrigins: web.origins,
		BearerTokens:   web.tokens,
		Logger:         logger,
	})
	defer h.Close()
	scheme := "http"
	if web.tls != nil {
		scheme = "https"
	}
	ready := func(addr net.Addr) {
		logger.Info("listening", "addr", addr.String(), "transport", "http", "url", scheme+"://"+addr.String()+"/mcp",
			"tls", web.tls != nil, "auth", len(web.tokens) > 0, "plugins", pluginNames(srv))
	}
	if err := httpserve.ListenAndServe(ctx, web.addr, h, httpserve.ServeOptions{Logger: logger, Ready: ready, TLS: web.tls}); err != nil {
		logger.Error("http server failed", "err", err)
		return ExitFailure
	}
	logger.Info("shut down")
	return ExitOK
}

func pluginNames(srv *mcpcore.Server) []string {
	var names []string
	for _, p := range srv.Info().Plugins {
		names = append(names, p.Name)
	}
	return names
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
