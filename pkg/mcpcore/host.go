package mcpcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// InfoURI is the built-in resource that describes a running server.
const InfoURI = "mcpkit://info"

// Options assembles a [Server].
type Options struct {
	// Config is the loaded configuration. Zero limits mean DefaultLimits.
	Config Config
	// Plugins selects the registered plugins to serve, overriding
	// Config.Enable. When both are empty the default plugins are served,
	// unless Instances is set.
	Plugins []string
	// Instances are plugins served without the registry, after the selected
	// registered ones; with instances and no selection, only they are
	// served.
	Instances []Instance
	// Version is reported by mcpkit://info and to clients.
	Version string
	// Transport names the transport ("stdio", "http") for mcpkit://info.
	Transport string
	// Logger receives the host's and plugins' logs; nil discards them.
	Logger *slog.Logger
	// Middleware is receiving middleware around every request (a request
	// trace, metrics), the first outermost. A tools/call result it sees is
	// the handler's *mcp.CallToolResult. (Middleware added to MCP() later
	// wraps the host's result encoding and sees a type of its own.)
	Middleware []mcp.Middleware
	// TracerProvider and MeterProvider, when set, have the host record
	// every request: a SERVER span (in the context each handler receives)
	// and the metrics of docs/observability.md. Nil records nothing
	// (pkg/telemetry builds them from the OTEL_* environment).
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// Server is an assembled MCP server: the SDK server plus the host state
// shared by every session.
type Server struct {
	mcp       *mcp.Server
	impl      *mcp.Implementation // the server's identity, as the SDK server has it
	limits    Limits
	version   string
	transport string
	logger    *slog.Logger
	results   *resultStore
	slots     chan struct{}
	workers   *workers // run the tool handlers
	calls     callStats
	sessions  sessionTable
	obs       *observer // nil: no telemetry

	// life ends when Close starts (Host.Context).
	life    context.Context
	endLife context.CancelFunc

	// mu orders the start of every call (inflight.Add) against Close.
	mu       sync.RWMutex
	closing  bool
	inflight sync.WaitGroup

	// Set while NewServer assembles the server, then read-only.
	hosts []*Host
	// regMu guards what plugins add (these maps, each Host's lists of
	// names and templates) once the server is serving, when a plugin may
	// still add tools, resources and prompts.
	regMu   sync.RWMutex
	serving atomic.Bool            // NewServer has returned: additions go to the SDK at once
	tools   map[string]string      // tool name → owning plugin
	direct  map[string]directEntry // direct tools (fastpath.Direct) → handler, as the SDK has it
	uris    map[string]string      // resource URI or template → owning plugin
	prompts map[string]string      // prompt name → owning plugin
	http    HTTPContributions
	origins []string // http.allowed_origins (Host.AllowedOrigins)
	// The plugins that set the single-owner HTTP contributions.
	verifierOwner, storeOwner string
	// directCall runs a direct call (Run): Options.Middleware around the
	// tool's handler.
	directCall mcp.MethodHandler
	// reuseResults: no Options.Middleware sees a direct call's result, so
	// the memory a handler encodes it into (fastpath.ResultBuffer) can be reused
	// once the response is written.
	reuseResults bool
	// longestCall is the longest timeout of any tool added (tool_timeout
	// or a tool's own), in nanoseconds: how long Run waits at EOF for the
	// calls already read (see directConn.drain).
	longestCall atomic.Int64
}

// NewServer creates the selected plugins, configures them, attaches them and
// returns the assembled server. On error, every plugin already created is
// closed.
func NewServer(ctx context.Context, opts Options) (_ *Server, err error) {
	if opts.Config.Limits == (Limits{}) {
		opts.Config.Limits = DefaultLimits()
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	infos, err := selectPlugins(opts)
	if err != nil {
		return nil, err
	}
	if err := checkPluginConfig(opts.Config, infos); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lim := opts.Config.Limits
	s := &Server{
		limits:    lim,
		version:   opts.Version,
		transport: opts.Transport,
		logger:    logger,
		results:   newResultStore(lim.RetainedResultBytes, lim.ResultExpiry.D(), nil),
		slots:     make(chan struct{}, lim.ConcurrentToolCalls),
		workers:   newWorkers(workerIdle),
		tools:     map[string]string{},
		direct:    map[string]directEntry{},
		uris:      map[string]string{},
		prompts:   map[string]string{},
		origins:   slices.Clone(opts.Config.HTTP.AllowedOrigins),
	}
	s.sessions.init()
	s.life, s.endLife = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			s.Close(context.WithoutCancel(ctx))
		}
	}()
	s.uris[InfoURI] = "mcpkit"
	// The plugins attach first, their additions queued (Host.sdkAdd), so
	// that the SDK server is created knowing which optional capabilities
	// (completions, resource subscriptions) some plugin serves.
	for _, info := range infos {
		if err := s.attach(ctx, info, opts.Config.Plugins[info.Name]); err != nil {
			return nil, err
		}
	}
	if s.obs, err = s.newObserver(opts); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	s.mcp = s.newSDKServer(opts)
	s.addInfoResource()
	if err := s.addQueued(); err != nil {
		return nil, err
	}
	s.serving.Store(true)
	return s, nil
}

// attach creates one plugin with its host, resolves its limits, configures
// it and lets it attach; its additions stay queued for the SDK server, which
// is created once every plugin has attached. The plugin joins s.hosts as
// soon as it exists, so that a failure closes it with the others.
func (s *Server) attach(ctx context.Context, info PluginInfo, pc PluginConfig) (err error) {
	h := &Host{srv: s, name: info.Name, prefix: info.Name, logger: s.logger.With("plugin", info.Name), limitSpecs: info.Limits}
	if info.NoPrefix {
		h.prefix = ""
	}
	if pc.Prefix != nil {
		h.prefix = *pc.Prefix
	}
	if h.limitValues, err = resolveLimits("plugins."+info.Name+".limits", info.Limits, pc.Limits); err != nil {
		return err
	}
	h.plugin = info.New()
	s.hosts = append(s.hosts, h)
	if err := configure(info.Name, h.plugin, pc.Config); err != nil {
		return err
	}
	if err := h.plugin.Attach(ctx, h); err != nil {
		return fmt.Errorf("plugin %s: attach: %w", info.Name, err)
	}
	if len(h.tools) > 0 {
		h.addResultTool()
	}
	if err := errors.Join(h.errs...); err != nil {
		return fmt.Errorf("plugin %s: %w", info.Name, err)
	}
	return nil
}

// configure hands a Configurer its raw configuration ("{}" when none is
// given); a plugin that is not one must not be given any.
func configure(name string, p Plugin, config json.RawMessage) error {
	c, ok := p.(Configurer)
	if !ok {
		if len(config) > 0 {
			return &ConfigError{Field: "plugins." + name + ".config", Reason: "this plugin takes no configuration"}
		}
		return nil
	}
	raw := []byte(config)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := c.Configure(raw); err != nil {
		if !errors.Is(err, ErrConfig) {
			err = &ConfigError{Field: "plugins." + name + ".config", Reason: err.Error()}
		}
		return fmt.Errorf("plugin %s: configure: %w", name, err)
	}
	return nil
}

// newSDKServer creates the SDK server once the plugins have attached, so
// that it declares the optional capabilities (completions, resource
// subscriptions) some plugin serves, and installs the host's middleware
// around every request.
func (s *Server) newSDKServer(opts Options) *mcp.Server {
	sopts := &mcp.ServerOptions{
		Instructions: coreInstructions,
		Logger:       slog.New(sdkLogHandler{s.logger.Handler()}).With("component", "sdk"),
		// Declare every list capability: the SDK answers tools/, resources/
		// and prompts/list (empty where no plugin adds any), and 2026-07-28
		// clients must find the handlers they can call declared in discover.
		HasTools:     true,
		HasResources: true,
		HasPrompts:   true,
	}
	if s.serves(func(h *Host) bool { return h.completer != nil }) {
		sopts.CompletionHandler = s.complete
	}
	if s.serves(func(h *Host) bool { return h.subscriber != nil }) {
		sopts.SubscribeHandler = s.subscribe
		sopts.UnsubscribeHandler = s.unsubscribe
	}
	s.impl = &mcp.Implementation{Name: "mcpkit", Version: opts.Version}
	srv := mcp.NewServer(s.impl, sopts)
	// Each call wraps the handler built so far: the host's session tracking
	// innermost, the host's result encoding outermost.
	srv.AddReceivingMiddleware(s.addInstructions, s.trackSessions)
	srv.AddReceivingMiddleware(opts.Middleware...)
	srv.AddReceivingMiddleware(encodeToolResults)
	if s.obs != nil {
		srv.AddReceivingMiddleware(s.observe)
	}
	srv.AddSendingMiddleware(sendLogsByDefault)
	s.directCall = s.directChain(opts.Middleware)
	s.reuseResults = len(opts.Middleware) == 0
	return srv
}

// addQueued hands every plugin's queued additions to the SDK server; a
// definition the SDK refuses is a startup error naming its plugin.
func (s *Server) addQueued() error {
	for _, h := range s.hosts {
		for _, add := range h.pending {
			h.sdkAdd(add)
		}
		h.pending = nil
		if err := errors.Join(h.errs...); err != nil {
			return fmt.Errorf("plugin %s: %w", h.name, err)
		}
	}
	return nil
}

// MCP returns the SDK server that transports serve.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Limits returns the effective core limits.
func (s *Server) Limits() Limits { return s.limits }

// Close shuts the server down, in this order: the lifetime context
// ([Host.Context]) ends and new tool calls are refused; the tool calls in
// flight are awaited until ctx ends; the client sessions still open are
// closed and their end hooks run (also bounded by ctx); the plugins are
// closed in reverse order (see [Plugin.Close] for what a plugin may still
// see then); every retained result is released. Close is safe to call more
// than once and concurrently with [Server.Info]; later calls return nil.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	s.mu.Unlock()
	s.endLife()

	if !waitCtx(ctx, s.inflight.Wait) {
		s.logger.Warn("closing with tool calls still running: their handlers ignored the shutdown deadline", "in_flight", s.calls.inFlight.Load())
	}
	s.workers.stop()
	waitCtx(ctx, s.workers.wait) // the idle ones exit at once; an abandoned handler's, when it returns
	if !waitCtx(ctx, s.sessions.closeAll) {
		s.logger.Warn("closing before every session's end hooks returned")
	}
	var errs []error
	for _, h := range slices.Backward(s.hosts) {
		if n := h.inflight.Load(); n > 0 {
			s.logger.Warn("closing a plugin while handlers of it still run; they will see it closed", "plugin", h.name, "abandoned_calls", n)
		}
		if err := h.plugin.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: close: %w", h.name, err))
			continue
		}
		s.logger.Info("plugin closed", "plugin", h.name)
	}
	s.results.Close()
	s.obs.close()
	return errors.Join(errs...)
}

// waitCtx runs wait on its own goroutine and reports whether it returned
// before ctx ended. On false the goroutine is left to finish wait alone.
func waitCtx(ctx context.Context, wait func()) bool {
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Host is what a plugin sees of the server: its name and prefix, the
// limits, a logger, the server's lifetime, its client sessions, and the
// methods that add tools, resources and prompts. The Set and On methods are
// for Attach only. The Add methods are for Attach too, and may also be
// called while the server is serving: the addition then takes effect at
// once and clients are told the list changed; adding again a name the
// plugin owns replaces it, and a refused addition is logged (there is no
// startup left to fail). The other methods are safe to call at any time
// from any goroutine.
type Host struct {
	srv         *Server
	plugin      Plugin
	name        string
	prefix      string
	logger      *slog.Logger
	limitSpecs  []LimitSpec
	limitValues map[string]int64
	tools       []string
	uris        []string
	prompts     []string
	routes      []string
	sessionEnd  []func(*Session)
	// instructions is the plugin's paragraph of the server instructions.
	instructions string
	// pending are the SDK additions Attach made, for NewServer.
	pending []pendingAdd
	// completer and subscriber are the plugin's optional handlers
	// (SetCompleter, SetSubscriber).
	completer  Completer
	subscriber Subscriber
	// templates are the plugin's resource templates, for routing
	// subscriptions to the resources they match.
	templates []*uritemplate.Template
	inflight  atomic.Int64 // this plugin's tool calls whose handler has not returned
	errs      []error
}

// coreInstructions are the server instructions of every mcpkit server;
// plugins add theirs ([Host.SetInstructions]).
const coreInstructions = "mcpkit serves MCP tools for data systems. Read " + InfoURI + " for the enabled plugins, their tools and the effective limits. A result larger than the inline limit comes back as result_id/total_bytes/read_tool: call read_tool with offset and length until next_offset is null, concatenate the decoded data_base64 chunks (the result's JSON; its text when format is text; a complete MCP tool result's JSON when format is mcp_result), then release the handle. A failed call's structuredContent.error.kind says what failed (limit, timeout, cancelled, bad_params with path, internal, result_not_found, or a plugin's own kind)."

// SetInstructions sets the plugin's paragraph of the server instructions,
// which clients read from initialize (legacy era) and server/discover
// (2026-07-28): the core's paragraph, then each plugin's, in plugin order.
// Call it from Attach.
func (h *Host) SetInstructions(text string) { h.instructions = strings.TrimSpace(text) }

// instructions composes the server instructions.
func (s *Server) instructions() string {
	parts := []string{coreInstructions}
	for _, h := range s.hosts {
		if h.instructions != "" {
			parts = append(parts, h.instructions)
		}
	}
	return strings.Join(parts, "\n\n")
}

// addInstructions is the receiving middleware that puts the composed
// instructions in initialize and server/discover results. It is the
// innermost, so that middleware in Options.Middleware may still replace
// them.
func (s *Server) addInstructions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil { // res may be a typed nil (a second initialize)
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions = s.instructions()
		case *mcp.DiscoverResult:
			r.Instructions = s.instructions()
		}
		return res, err
	}
}

// Name is the plugin's name.
func (h *Host) Name() string { return h.name }

// Limits returns the effective core limits.
func (h *Host) Limits() Limits { return h.srv.limits }

// AllowedOrigins are the browser origins the HTTP listener admits besides
// same-origin requests (http.allowed_origins; "*" is any): the core
// refuses every other origin on /mcp and on the plugins' routes. A plugin
// route that answers CORS itself decides with the same list (package
// httporigin), so that both agree.
func (h *Host) AllowedOrigins() []string { return slices.Clone(h.srv.origins) }

// Limit returns the effective value of one of the plugin's own limits
// (declared in [PluginInfo.Limits] or [Instance.Limits]; durations in
// nanoseconds). Reading an undeclared limit is a programming error: Limit
// panics, so that the first test that runs the code finds it.
func (h *Host) Limit(name string) int64 {
	v, ok := h.limitValues[name]
	if !ok {
		panic(fmt.Sprintf("mcpcore: plugin %s reads limit %q, which it did not declare", h.name, name))
	}
	return v
}

// Logger returns the plugin's logger (stderr for the binary).
func (h *Host) Logger() *slog.Logger { return h.logger }

// Context is the server's lifetime: it ends when [Server.Close] starts,
// before the plugin's Close is called. Reapers, subscribers and other
// background work of the plugin run under it; Close then waits for them.
func (h *Host) Context() context.Context { return h.srv.life }

// ToolName returns the served name of a plugin tool: "<prefix>_<name>", or
// name alone when the prefix is empty. Prompts are named the same way.
func (h *Host) ToolName(name string) string {
	if h.prefix == "" {
		return name
	}
	return h.prefix + "_" + name
}

// ReadToolName is the name of the plugin's result read tool.
func (h *Host) ReadToolName() string { return h.ToolName("result") }

// URIScheme returns the plugin's resource URI scheme: its prefix, or its
// name when the prefix is empty, with "_" mapped to "-" and "x-" put in
// front when it does not start with a letter, so that it is always a valid
// RFC 3986 scheme ([a-z][a-z0-9+.-]*). Prefix "ffkv_2" gives "ffkv-2".
func (h *Host) URIScheme() string {
	s := h.prefix
	if s == "" {
		s = h.name
	}
	s = strings.ReplaceAll(s, "_", "-")
	if s[0] < 'a' || s[0] > 'z' {
		s = "x-" + s
	}
	return s
}

// ResourceURI returns "<scheme>://<path>" with the plugin's [Host.URIScheme];
// path is used as given ("capabilities", "keys/{key}").
func (h *Host) ResourceURI(path string) string { return h.URIScheme() + "://" + path }

// AddResource adds a resource. Its URI must be absolute ("scheme://...",
// see [Host.ResourceURI]) and unique across plugins, and it must have a name
// and a handler; an invalid one is a startup error naming the plugin.
func (h *Host) AddResource(r *mcp.Resource, fn mcp.ResourceHandler) {
	if r == nil {
		h.fail(errors.New("resource: nil definition"))
		return
	}
	h.addResource("resource", r.URI, r.Name, fn, func(m *mcp.Server) { m.AddResource(r, fn) })
}

// AddResourceTemplate adds a resource template (RFC 6570). Its URI template
// must be valid, absolute and unique across plugins, and it must have a name
// and a handler; an invalid one is a startup error naming the plugin.
func (h *Host) AddResourceTemplate(t *mcp.ResourceTemplate, fn mcp.ResourceHandler) {
	if t == nil {
		h.fail(errors.New("resource template: nil definition"))
		return
	}
	h.addResource("resource template", t.URITemplate, t.Name, fn, func(m *mcp.Server) {
		m.AddResourceTemplate(t, fn)
		// The SDK has parsed the template: this does not fail.
		if tmpl, err := uritemplate.New(t.URITemplate); err == nil {
			h.templates = append(h.templates, tmpl)
		}
	})
}

// addResource checks what the SDK does not (a handler, a name, an absolute
// URI with a valid scheme), claims the URI and adds it through the SDK.
func (h *Host) addResource(kind, uri, name string, fn mcp.ResourceHandler, add func(*mcp.Server)) {
	scheme, _, absolute := strings.Cut(uri, "://")
	switch {
	case fn == nil:
		h.fail(fmt.Errorf("%s %q: nil handler", kind, uri))
	case name == "":
		h.fail(fmt.Errorf("%s %q: no name", kind, uri))
	case !absolute || !validScheme(scheme):
		h.fail(fmt.Errorf("%s %q: the URI must be absolute, scheme://... with a scheme [a-z][a-z0-9+.-]* (see Host.ResourceURI)", kind, uri))
	default:
		h.srv.regMu.Lock()
		defer h.srv.regMu.Unlock()
		if h.claim(h.srv.uris, &h.uris, kind, uri) {
			h.queue(kind, uri, add)
		}
	}
}

func validScheme(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// AddPrompt adds a prompt named h.ToolName(p.Name). Its name must be unique
// across plugins and it must have a handler; an invalid one is a startup
// error naming the plugin.
func (h *Host) AddPrompt(p *mcp.Prompt, fn mcp.PromptHandler) {
	switch {
	case p == nil:
		h.fail(errors.New("prompt: nil definition"))
		return
	case p.Name == "":
		h.fail(errors.New("prompt: no name"))
		return
	case fn == nil:
		h.fail(fmt.Errorf("prompt %q: nil handler", p.Name))
		return
	}
	prompt := *p
	prompt.Name = h.ToolName(p.Name)
	h.srv.regMu.Lock()
	defer h.srv.regMu.Unlock()
	if h.claim(h.srv.prompts, &h.prompts, "prompt", prompt.Name) {
		h.queue("prompt", prompt.Name, func(m *mcp.Server) { m.AddPrompt(&prompt, fn) })
	}
}

// fail records a startup error; NewServer reports them all, naming the
// plugin. Once the server is serving, it logs the error instead: the
// addition did not happen.
func (h *Host) fail(err error) {
	if h.srv.serving.Load() {
		h.logger.Error("a tool, resource or prompt added while serving was refused", "err", err)
		return
	}
	h.errs = append(h.errs, err)
}

// pendingAdd is a tool, resource or prompt a plugin added in Attach,
// added to the SDK server once every plugin has attached.
type pendingAdd struct {
	kind, name string
	add        func(*mcp.Server)
}

// queue records one of the SDK's Add calls for NewServer to make, or makes
// it at once when the server is serving (regMu held), which announces the
// change to the clients (notifications/.../list_changed).
func (h *Host) queue(kind, name string, add func(*mcp.Server)) {
	p := pendingAdd{kind, name, add}
	if !h.srv.serving.Load() {
		h.pending = append(h.pending, p)
		return
	}
	h.sdkAdd(p)
}

// sdkAdd makes one of the SDK's Add calls, turning a panic (the SDK's way
// of refusing a definition) into a startup error.
func (h *Host) sdkAdd(p pendingAdd) {
	defer func() {
		if r := recover(); r != nil {
			h.fail(fmt.Errorf("%s %q: refused by the MCP SDK: %v", p.kind, p.name, r))
		}
	}()
	p.add(h.srv.mcp)
}

// claim records name as owned by h's plugin in owners, or records an error
// naming both plugins when another already owns it. While serving, a
// plugin may add a name it owns again: the addition replaces it.
func (h *Host) claim(owners map[string]string, mine *[]string, kind, name string) bool {
	if prev, taken := owners[name]; taken {
		if prev == h.name && h.srv.serving.Load() {
			return true
		}
		if prev == h.name {
			h.fail(&ConfigError{Field: "plugins." + h.name, Reason: fmt.Sprintf("%s %q is added twice", kind, name)})
		} else {
			h.fail(&ConfigError{Field: "plugins." + h.name, Reason: fmt.Sprintf(
				"%s name collision: %q of plugin %q is already served by plugin %q; give one of them another prefix (plugins.<name>.prefix)", kind, name, h.name, prev)})
		}
		return false
	}
	owners[name] = h.name
	*mine = append(*mine, name)
	return true
}

// sdkLogHandler hands the SDK's records to the host's handler with Info
// demoted to Debug: the SDK logs every connection (every request, for
// stateless HTTP) at Info, which would drown the operator's log. The
// records of a client's mistakes, which the SDK logs at Error as if the
// server had failed, are logged at Info: any client could otherwise fill
// the error log (over HTTP, package httpserve refuses these requests
// before the SDK sees them, naming the client's address).
type sdkLogHandler struct{ slog.Handler }

// sdkClientMistakes are the messages of the SDK's Error records that a
// client's request causes (mcp.ServerSession's handling of a request).
var sdkClientMistakes = map[string]bool{
	"method removed in the new protocol":   true,
	"method invalid during initialization": true,
	"duplicate initialize request":         true,
	"initialized before initialize":        true,
	"duplicate initialized notification":   true,
}

func (h sdkLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, min(demote(l), slog.LevelInfo)) // a mistake's Error record is logged at Info
}

func (h sdkLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelError && sdkClientMistakes[r.Message] {
		r.Level = slog.LevelInfo
		r.AddAttrs(slog.String("cause", "client request"))
	} else {
		r.Level = demote(r.Level)
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h sdkLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return sdkLogHandler{h.Handler.WithAttrs(as)}
}

func (h sdkLogHandler) WithGroup(name string) slog.Handler {
	return sdkLogHandler{h.Handler.WithGroup(name)}
}

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

// recovered logs a panic of plugin code, recovered by the caller, with
// its stack, and counts it in mcpkit://info. The log line carries ctx's
// trace (trace_id, span_id) when the call is traced.
func (s *Server) recovered(ctx context.Context, logger *slog.Logger, what string, r any) {
	s.calls.panicked.Add(1)
	logger.ErrorContext(ctx, what+" panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
}
