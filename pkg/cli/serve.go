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
	"net/http"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcpkit/mcpkit/pkg/httporigin"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/httpserve"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/stdio"
	"github.com/mcpkit/mcpkit/pkg/telemetry"
)

// ServeParams is what [Serve] serves. [Env.ServeParams] fills it from the
// shared serve flags.
type ServeParams struct {
	// Options assembles the server. Serve sets Transport, and Version when
	// it is empty; a nil Logger discards every log line.
	Options mcpcore.Options
	// HTTPAddr serves streamable HTTP at this address; empty serves one
	// session over Stdin and Stdout.
	HTTPAddr string
	// TransportFrom says why this transport was chosen (see
	// [ChooseTransport]); the first log line reports it when set.
	TransportFrom string
	// Stdin and Stdout carry JSON-RPC over stdio. Nothing else ever writes
	// to Stdout.
	Stdin  io.Reader
	Stdout io.Writer
	// OneProcessor serves a stdio session with the Go runtime on one
	// processor (unless the GOMAXPROCS environment variable sets a number)
	// and stdin and stdout read and written through the runtime's poller
	// by raw system calls when they are pipes or sockets: for a sidecar
	// whose calls wait on a datastore, hand-offs between its goroutines
	// then cost no thread wake-ups, and its reads and writes do not wake
	// the runtime's monitor (internal/rawio). All is restored when the
	// session ends. It does not apply to HTTP.
	OneProcessor bool
	// NoMCP, when not empty, says why /mcp is not served (an action app
	// whose MCP server is disabled: "MCP_SERVER_ENABLED=false"): over HTTP
	// /mcp is 404, logged at start, and only /healthz and the plugins'
	// routes are served; stdio, which carries MCP only, is refused.
	NoMCP string
}

// Serve assembles the server of p.Options and serves it until ctx ends
// (Main's context ends on SIGINT or SIGTERM) or, over stdio, until the
// client closes stdin. It is `mcpkit serve` itself, so every serving command
// gets the same limits, logs, startup checks and exit codes: its first log
// line is `serving` with the transport (and address); it returns ExitConfig
// when the HTTP settings or the assembly are invalid (nothing was served),
// ExitFailure when the server failed, and ExitOK after a clean shutdown.
// The plugins are closed before it returns.
func Serve(ctx context.Context, p ServeParams) int {
	logger := p.Options.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p.Options.Logger = logger
	if p.Options.Version == "" {
		p.Options.Version = version()
	}
	first := []any{"transport", "stdio"}
	p.Options.Transport = "stdio"
	if p.HTTPAddr != "" {
		first = []any{"transport", "http", "addr", p.HTTPAddr}
		p.Options.Transport = "http"
	}
	if p.TransportFrom != "" {
		first = append(first, "from", p.TransportFrom)
	}
	logger.Info("serving", first...)
	if p.NoMCP != "" && p.HTTPAddr == "" {
		logger.Error("refusing to serve stdio", "err", &mcpcore.ConfigError{Field: "transport",
			Reason: "MCP is disabled (" + p.NoMCP + ") and stdio carries MCP only: serve HTTP (--http ADDR) for the plugins' routes"})
		return ExitConfig
	}

	var web *httpSettings
	if p.HTTPAddr != "" {
		var err error
		if web, err = httpSetup(p.HTTPAddr, p.Options.Config.HTTP, logger); err != nil {
			logger.Error("refusing to serve HTTP", "err", err)
			return ExitConfig
		}
	} else if p.Options.Config.HTTP.MetricsAddr != "" {
		logger.Error("refusing to serve stdio", "err", &mcpcore.ConfigError{Field: "http.metrics_addr",
			Reason: "/metrics is served over HTTP only; over stdio export metrics with OTLP (OTEL_EXPORTER_OTLP_ENDPOINT)"})
		return ExitConfig
	}
	tel, err := setupTelemetry(ctx, &p, web != nil)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return ExitConfig
	}
	defer shutdownTelemetry(tel, logger)
	logger = p.Options.Logger
	if web != nil {
		web.metrics = tel.MetricsHandler()
	}
	srv, err := mcpcore.NewServer(ctx, p.Options)
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
	if len(srv.Info().Plugins) == 0 {
		logger.Warn("no plugin selected: serving only " + mcpcore.InfoURI + "; choose plugins with --plugins or the config's \"enable\" (see 'mcpkit plugins')")
	}
	if web != nil {
		web.noMCP = p.NoMCP
		return serveHTTP(ctx, srv, web, logger)
	}
	stdin, stdout := p.Stdin, p.Stdout
	if p.OneProcessor {
		var restore func()
		stdin, stdout, restore = oneProcessor(stdin, stdout, logger)
		defer restore()
	}
	return serveStdio(ctx, srv, stdin, stdout, logger)
}

const serveDoc = `Transport: --stdio serves one session on stdin/stdout (stdout carries JSON-RPC
only); --http ADDR serves streamable HTTP at http://ADDR/mcp. A flag wins over
the configuration file. With neither flag, mcpkit serves HTTP at the file's
http.addr when it sets one, and stdio otherwise; the first log line names the
transport and where the choice came from. An MCP client that launches mcpkit
should pass --stdio.

Plugins: --plugins overrides the file's "enable"; without either, the plugins
registered as default are served (see 'mcpkit plugins').

HTTP beyond loopback needs authentication (http.bearer_tokens_file or
http.bearer_tokens_env in the configuration).`

const flagPlugins = "plugins"

// serveCommand is `mcpkit serve`: Serve with the shared flags and a plugin
// selection.
var serveCommand = Command{
	Name:    "serve",
	Summary: "serve MCP over stdio or streamable HTTP",
	Usage:   "[--stdio | --http ADDR [--metrics-addr ADDR]] [--plugins a,b] [--config FILE] [--log-level L] [--log-format F]",
	Doc:     serveDoc,
	Flags: func(fs *flag.FlagSet) {
		AddServeFlags(fs)
		fs.String(flagPlugins, "", "comma-separated `list` of plugins to serve (default: the config's enable, else the default plugins)")
	},
	Run: func(ctx context.Context, env *Env) int {
		if len(env.Args) > 0 {
			return env.Fail(Usagef("unexpected argument %q", env.Args[0]))
		}
		p, err := env.ServeParams()
		if err != nil {
			return env.Fail(err)
		}
		list, _ := FlagValue[string](env.Flags, flagPlugins)
		for name := range strings.SplitSeq(list, ",") {
			if name = strings.TrimSpace(name); name != "" {
				p.Options.Plugins = append(p.Options.Plugins, name)
			}
		}
		return Serve(ctx, p)
	},
}

// stdioOptions is the one place that turns the assembled server into the
// stdio transport's options.
func stdioOptions(srv *mcpcore.Server, logger *slog.Logger) stdio.Options {
	lim := srv.Limits()
	return stdio.Options{
		MaxFrameBytes: lim.FrameBytes,
		// Twice the concurrency limit: every running call can have a reply
		// waiting to be written and a next request already read.
		MaxPendingRequests: 2 * lim.ConcurrentToolCalls,
		MaxInflightBytes:   lim.InflightRequestBytes,
		Refused:            srv.CountRefused,
		Logger:             logger,
	}
}

// httpOptions is the one place that turns the assembled server and the HTTP
// settings into the HTTP handler's options.
func httpOptions(srv *mcpcore.Server, web *httpSettings, logger *slog.Logger) httpserve.Options {
	lim := srv.Limits()
	plugins := srv.HTTP()
	routes := make([]httpserve.Route, 0, len(plugins.Routes))
	for _, r := range plugins.Routes {
		routes = append(routes, httpserve.Route{Pattern: r.Pattern, Handler: r.Handler, Owner: "plugin " + r.Plugin})
	}
	return httpserve.Options{
		Server:              srv.MCP(),
		SessionIdle:         lim.HTTPSessionIdle.D(),
		MaxSessions:         lim.HTTPSessions,
		MaxBodyBytes:        lim.FrameBytes,
		MaxInflightBytes:    lim.InflightRequestBytes,
		AllowedOrigins:      web.origins,
		NoMCP:               web.noMCP != "",
		BearerTokens:        web.tokens,
		Verifier:            plugins.Verifier,
		ResourceMetadataURL: plugins.ResourceMetadataURL,
		SessionStore:        plugins.SessionStore,
		SessionOpened:       srv.TrackSession,
		Routes:              routes,
		Refused:             srv.CountRefused,
		RequestInfo:         srv.Observed(),
		Logger:              logger,
	}
}

// serveStdio serves one session over stdin/stdout until EOF or ctx ends.
func serveStdio(ctx context.Context, srv *mcpcore.Server, stdin io.Reader, stdout io.Writer, logger *slog.Logger) int {
	// A client that goes away closes our stdout: get EPIPE from the write
	// rather than dying of SIGPIPE, so that plugins are still closed.
	signal.Ignore(syscall.SIGPIPE)
	logger.Info("ready", "transport", "stdio", "plugins", pluginNames(srv))
	t := stdio.NewTransport(stdin, stdout, stdioOptions(srv, logger))
	if err := srv.Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		logger.Error("stdio session ended", "err", err)
		return ExitFailure
	}
	logger.Info("stdio session ended")
	return ExitOK
}

// httpSettings is what serving HTTP needs beyond the limits.
type httpSettings struct {
	addr    string
	origins []string
	tokens  []string
	tls     *tls.Config
	noMCP   string // ServeParams.NoMCP
	// metrics is the Prometheus handler (nil when metrics are off), served
	// at /metrics or on metricsAddr.
	metrics     http.Handler
	metricsAddr string
}

// httpSetup reads the HTTP credentials and TLS files. Whether the listen
// address needs authentication is decided once the plugins are attached
// (one may supply a token verifier): see serveHTTP.
func httpSetup(addr string, c mcpcore.HTTPConfig, logger *slog.Logger) (*httpSettings, error) {
	tokens, err := c.BearerTokens()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil && httpserve.CheckListenAddr(addr, false) != nil {
		logger.Warn("serving plain HTTP beyond loopback: bearer tokens cross the network in clear text; set http.tls_cert_file and http.tls_key_file, or terminate TLS in front of mcpkit")
	}
	return &httpSettings{addr: addr, origins: c.AllowedOrigins, tokens: tokens, tls: tlsConfig, metricsAddr: c.MetricsAddr}, nil
}

// serveHTTP serves streamable HTTP until ctx ends.
func serveHTTP(ctx context.Context, srv *mcpcore.Server, web *httpSettings, logger *slog.Logger) int {
	opts := httpOptions(srv, web, logger)
	if web.metricsAddr == "" {
		opts.Metrics = web.metrics
	}
	h, err := httpserve.NewHandler(opts)
	if err != nil {
		logger.Error("refusing to serve HTTP", "err", err)
		return ExitConfig
	}
	defer h.Close()
	// ListenAndServe refuses it too; checking here makes it a configuration
	// error (exit 3) rather than a failure of the running server.
	if err := httpserve.CheckListenAddr(web.addr, h.Authenticated()); err != nil {
		logger.Error("refusing to serve HTTP", "err", err)
		return ExitConfig
	}
	if web.metricsAddr != "" && web.metrics != nil {
		if err := httpserve.CheckListenAddr(web.metricsAddr, h.Authenticated()); err != nil {
			logger.Error("refusing to serve HTTP", "err", fmt.Errorf("http.metrics_addr: %w", err))
			return ExitConfig
		}
		stop := serveMetrics(ctx, web, h, logger)
		defer stop()
	}
	scheme, path := "http", httpserve.MCPPath
	if web.tls != nil {
		scheme = "https"
	}
	switch {
	case web.noMCP != "":
		path = ""
		logger.Info("MCP server disabled ("+web.noMCP+"): /mcp is not served (404); only /healthz and the plugins' routes are", "plugins", pluginNames(srv))
	case !h.Authenticated() && slices.Contains(web.origins, httporigin.Any):
		logger.Warn(`/mcp is unauthenticated and http.allowed_origins has "*": any web page a local browser opens can call every tool; set http.bearer_tokens_file or a plugin's OAuth server`)
	case !h.Authenticated():
		logger.Warn("/mcp is unauthenticated: any client that reaches the listener calls every tool; set http.bearer_tokens_file or a plugin's OAuth server")
	}
	ready := func(addr net.Addr) {
		logger.Info("listening", "addr", addr.String(), "transport", "http", "url", scheme+"://"+addr.String()+path,
			"tls", web.tls != nil, "auth", h.Authenticated(), "plugins", pluginNames(srv))
	}
	if err := httpserve.ListenAndServe(ctx, web.addr, h, httpserve.ServeOptions{Logger: logger, Ready: ready, TLS: web.tls}); err != nil {
		logger.Error("http server failed", "err", err)
		return ExitFailure
	}
	logger.Info("shut down")
	return ExitOK
}

// setupTelemetry builds the OpenTelemetry providers the OTEL_* environment
// asks for (pkg/telemetry), with Prometheus when the process serves HTTP,
// and hands them to the server's options; with traces exported, the logs
// carry trace_id and span_id.
func setupTelemetry(ctx context.Context, p *ServeParams, httpListener bool) (*telemetry.Telemetry, error) {
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "mcpkit", Version: p.Options.Version,
		Prometheus: httpListener, Logger: p.Options.Logger})
	if err != nil {
		return nil, err
	}
	p.Options.TracerProvider, p.Options.MeterProvider = tel.TracerProvider(), tel.MeterProvider()
	if tel.Tracing() {
		p.Options.Logger = slog.New(telemetry.LogHandler(p.Options.Logger.Handler()))
	}
	return tel, nil
}

// shutdownTelemetry flushes the spans and metrics still buffered, once
// the server has closed (deferred before it).
func shutdownTelemetry(tel *telemetry.Telemetry, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		logger.Warn("telemetry: flushing at exit", "err", err)
	}
}

// serveMetrics serves /metrics alone on web.metricsAddr, behind what
// guards /mcp (h.Protect), until ctx ends; stop waits for it to end.
func serveMetrics(ctx context.Context, web *httpSettings, h *httpserve.Handler, logger *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle(httpserve.MetricsPath, h.Protect(web.metrics))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ready := func(addr net.Addr) {
			logger.Info("metrics listening", "addr", addr.String(), "path", httpserve.MetricsPath)
		}
		if err := httpserve.ListenAndServe(ctx, web.metricsAddr, guarded{mux, h.Authenticated()}, httpserve.ServeOptions{Logger: logger, Ready: ready, TLS: web.tls}); err != nil {
			logger.Error("metrics listener failed", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// guarded is a handler behind h.Protect: ListenAndServe's listen check
// asks whether it requires authentication.
type guarded struct {
	http.Handler
	auth bool
}

func (g guarded) Authenticated() bool { return g.auth }

func pluginNames(srv *mcpcore.Server) []string {
	var names []string
	for _, p := range srv.Info().Plugins {
		names = append(names, p.Name)
	}
	return names
}
