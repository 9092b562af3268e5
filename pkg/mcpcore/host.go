package mcpcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InfoURI is the built-in resource that describes a running server.
const InfoURI = "mcpkit://info"

// Options assembles a [Server].
type Options struct {
	// Config is the loaded configuration. Zero limits mean DefaultLimits.
	Config Config
	// Plugins selects the plugins to serve, overriding Config.Enable. When
	// both are empty the default plugins are served.
	Plugins []string
	// Version is reported by mcpkit://info and to clients.
	Version string
	// Transport names the transport ("stdio", "http") for mcpkit://info.
	Transport string
	// Logger receives the host's and plugins' logs; nil discards them.
	Logger *slog.Logger
}

// Server is an assembled MCP server: the SDK server plus the host state
// shared by every session.
type Server struct {
	mcp       *mcp.Server
	limits    Limits
	version   string
	transport string
	logger    *slog.Logger
	results   *resultStore
	slots     chan struct{}
	calls     callStats
	inflight  sync.WaitGroup

	hosts []*Host
	tools map[string]string // tool name → owning plugin
	uris  map[string]string // resource URI or template → owning plugin
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
	names := opts.Plugins
	if len(names) == 0 {
		names = opts.Config.Enable
	}
	if len(names) == 0 {
		names = DefaultPluginNames()
	}
	infos, err := resolvePlugins(names)
	if err != nil {
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
		tools:     map[string]string{},
		uris:      map[string]string{},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "mcpkit", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "mcpkit serves MCP tools for data systems. Read " + InfoURI + " for the enabled plugins, their tools and the effective limits. A result larger than the inline limit comes back as result_id/total_bytes/read_tool: call read_tool with offset and length until next_offset is null, concatenate the decoded data_base64 chunks, parse the JSON, then release the handle.",
		Logger:       slog.New(sdkLogHandler{logger.Handler()}).With("component", "sdk"),
		// Declare every list capability: the SDK answers tools/, resources/
		// and prompts/list (empty where no plugin adds any), and 2026-07-28
		// clients must find the handlers they can call declared in discover.
		HasTools:     true,
		HasResources: true,
		HasPrompts:   true,
	})
	defer func() {
		if err != nil {
			s.Close(context.WithoutCancel(ctx))
		}
	}()
	s.addInfoResource()
	for _, info := range infos {
		h := &Host{srv: s, name: info.Name, prefix: info.Name, logger: logger.With("plugin", info.Name)}
		pc := opts.Config.Plugins[info.Name]
		if pc.Prefix != nil {
			h.prefix = *pc.Prefix
		}
		h.plugin = info.New()
		s.hosts = append(s.hosts, h)
		if c, ok := h.plugin.(Configurer); ok {
			raw := []byte(pc.Config)
			if len(raw) == 0 {
				raw = []byte("{}")
			}
			if err := c.Configure(raw); err != nil {
				if !errors.Is(err, ErrConfig) {
					err = &ConfigError{Field: "plugins." + info.Name + ".config", Reason: err.Error()}
				}
				return nil, fmt.Errorf("plugin %s: configure: %w", info.Name, err)
			}
		} else if len(pc.Config) > 0 {
			return nil, &ConfigError{Field: "plugins." + info.Name + ".config", Reason: "this plugin takes no configuration"}
		}
		if err := h.plugin.Attach(ctx, h); err != nil {
			return nil, fmt.Errorf("plugin %s: attach: %w", info.Name, err)
		}
		if len(h.tools) > 0 {
			h.addResultTool()
		}
		if err := errors.Join(h.errs...); err != nil {
			return nil, fmt.Errorf("plugin %s: %w", info.Name, err)
		}
	}
	return s, nil
}

// MCP returns the SDK server that transports serve.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Limits returns the effective limits.
func (s *Server) Limits() Limits { return s.limits }

// Close waits for tool calls in flight (bounded by ctx), then closes the
// plugins in reverse order and releases every retained result.
func (s *Server) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.logger.Warn("closing with tool calls still running", "in_flight", s.calls.snapshot().InFlight)
	}
	var errs []error
	for _, h := range slices.Backward(s.hosts) {
		if err := h.plugin.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: close: %w", h.name, err))
			continue
		}
		s.logger.Info("plugin closed", "plugin", h.name)
	}
	s.hosts = nil
	s.results.Close()
	return errors.Join(errs...)
}

// Host is what a plugin sees of the server while it attaches: its prefix,
// the limits, a logger, and the methods that add tools and resources. Its
// Add methods are for Attach only: they are not safe to call once the
// server is serving.
type Host struct {
	srv    *Server
	plugin Plugin
	name   string
	prefix string
	logger *slog.Logger
	tools  []string
	uris   []string
	errs   []error
}

// Name is the plugin's registered name.
func (h *Host) Name() string { return h.name }

// Prefix is the plugin's tool prefix ("" when configured without one).
func (h *Host) Prefix() string { return h.prefix }

// Limits returns the effective limits.
func (h *Host) Limits() Limits { return h.srv.limits }

// Logger returns the plugin's logger (stderr for the binary).
func (h *Host) Logger() *slog.Logger { return h.logger }

// ToolName returns the served name of a plugin tool: "<prefix>_<name>", or
// name alone when the prefix is empty.
func (h *Host) ToolName(name string) string {
	if h.prefix == "" {
		return name
	}
	return h.prefix + "_" + name
}

// ReadToolName is the name of the plugin's result read tool.
func (h *Host) ReadToolName() string { return h.ToolName("result") }

// ToolFunc handles one tool call. It returns a JSON-serializable value
// (normally a struct) that the host serializes once, inline or paged. It
// must honour ctx: ctx ends on timeout and on notifications/cancelled. To
// return a structured result marked isError, return [ErrorResult]; any other
// error becomes an isError result with its message, except a
// *jsonrpc.Error, which is answered as a JSON-RPC protocol error.
type ToolFunc[In any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (any, error)

// AddTool adds a tool named h.ToolName(t.Name). Its input schema is derived
// from In (json and jsonschema struct tags) and validated by the SDK. A name
// already served by this or another plugin is a startup error naming both.
func AddTool[In any](h *Host, t *mcp.Tool, fn ToolFunc[In]) {
	tool := *t
	tool.Name = h.ToolName(t.Name)
	if !h.claim(h.srv.tools, &h.tools, "tool", tool.Name) {
		return
	}
	if tool.InputSchema == nil {
		schema, err := jsonschema.For[In](nil)
		if err != nil {
			h.errs = append(h.errs, fmt.Errorf("tool %s: input schema: %w", tool.Name, err))
			return
		}
		tool.InputSchema = schema
	}
	srv, name := h.srv, tool.Name
	mcp.AddTool(srv.mcp, &tool, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, err := srv.call(ctx, h, name, resultOwner(h, req), func(ctx context.Context) (any, error) { return fn(ctx, req, in) })
		return res, nil, err
	})
}

// AddResource adds a resource; its URI must be unique across plugins.
func (h *Host) AddResource(r *mcp.Resource, fn mcp.ResourceHandler) {
	if h.claim(h.srv.uris, &h.uris, "resource", r.URI) {
		h.srv.mcp.AddResource(r, fn)
	}
}

// AddResourceTemplate adds a resource template; its URI template must be
// unique across plugins.
func (h *Host) AddResourceTemplate(t *mcp.ResourceTemplate, fn mcp.ResourceHandler) {
	if h.claim(h.srv.uris, &h.uris, "resource template", t.URITemplate) {
		h.srv.mcp.AddResourceTemplate(t, fn)
	}
}

// AddPrompt adds a prompt named h.ToolName(p.Name).
func (h *Host) AddPrompt(p *mcp.Prompt, fn mcp.PromptHandler) {
	prompt := *p
	prompt.Name = h.ToolName(p.Name)
	h.srv.mcp.AddPrompt(&prompt, fn)
}

// claim records name as owned by h's plugin in owners, or records an error
// naming both plugins when another already owns it.
func (h *Host) claim(owners map[string]string, mine *[]string, kind, name string) bool {
	if prev, taken := owners[name]; taken {
		if prev == h.name {
			h.errs = append(h.errs, &ConfigError{Field: "plugins." + h.name, Reason: fmt.Sprintf("%s %q is added twice", kind, name)})
		} else {
			h.errs = append(h.errs, &ConfigError{Field: "plugins." + h.name, Reason: fmt.Sprintf(
				"%s name collision: %q of plugin %q is already served by plugin %q; give one of them another prefix (plugins.<name>.prefix)", kind, name, h.name, prev)})
		}
		return false
	}
	owners[name] = h.name
	*mine = append(*mine, name)
	return true
}

// errorResult is the value behind [ErrorResult].
type errorResult struct{ value any }

func (e *errorResult) Error() string { return "tool reported an error result" }

// ErrorResult returns an error that makes the host serve v as the tool's
// structured result with isError set: for replies that are errors but still
// carry data (a server error reply inside an otherwise successful pipeline,
// or what was received before a timeout or cancellation: a handler whose ctx
// ends has a short grace period to return it).
func ErrorResult(v any) error { return &errorResult{value: v} }

// cancelGrace is how long a timed-out or cancelled handler may take to
// return its partial result before the host answers without it.
const cancelGrace = 250 * time.Millisecond

// call runs one tool call under the concurrency limit and the timeout and
// turns its outcome into a CallToolResult.
func (s *Server) call(ctx context.Context, h *Host, tool, owner string, fn func(context.Context) (any, error)) (*mcp.CallToolResult, error) {
	select {
	case s.slots <- struct{}{}:
	default:
		s.calls.rejected.Add(1)
		return toolError(&LimitError{Limit: "concurrent_tool_calls", Max: int64(s.limits.ConcurrentToolCalls),
			Detail: "too many tool calls are running; nothing was done, retry when one finishes"}), nil
	}
	s.calls.started.Add(1)
	s.calls.inFlight.Add(1)
	s.inflight.Add(1)
	timeout := s.limits.ToolTimeout.D()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	defer cancel() // only after the outcome is classified: ctx.Err must mean timeout or cancellation

	type outcome struct {
		v   any
		err error
	}
	done := make(chan outcome, 1)
	// The handler runs on its own goroutine so that a handler which ignores
	// ctx still cannot hold the client past the timeout; its slot is only
	// freed when it really returns, so the concurrency limit stays truthful.
	go func() {
		defer func() {
			s.calls.inFlight.Add(-1)
			<-s.slots
			s.inflight.Done()
		}()
		v, err := fn(ctx)
		done <- outcome{v, err}
	}()
	var out outcome
	select {
	case out = <-done:
	case <-ctx.Done():
		// A handler that honours ctx gets a moment to return what it has
		// (a partial result through ErrorResult); one that ignores ctx is
		// abandoned, and keeps its slot until it really returns.
		grace := time.NewTimer(cancelGrace)
		select {
		case out = <-done:
		case <-grace.C:
			out.err = ctx.Err()
		}
		grace.Stop()
	}
	var partial *errorResult
	if out.err != nil && ctx.Err() != nil && !errors.As(out.err, &partial) {
		if context.Cause(ctx) == ErrTimeout {
			s.calls.timedOut.Add(1)
			return toolError(fmt.Errorf("%w after %s (limit tool_timeout): the call may have had effects; inspect state before retrying", ErrTimeout, timeout)), nil
		}
		s.calls.cancelled.Add(1)
		return toolError(fmt.Errorf("tool call cancelled: %w", out.err)), nil
	}
	var isError bool
	if out.err != nil {
		var er *errorResult
		var protocolErr *jsonrpc.Error
		if errors.As(out.err, &protocolErr) {
			// A JSON-RPC error is the plugin's deliberate protocol-level
			// answer (e.g. a missing client capability), as in the SDK.
			s.calls.failed.Add(1)
			return nil, protocolErr
		}
		if !errors.As(out.err, &er) {
			s.calls.failed.Add(1)
			return toolError(out.err), nil
		}
		out.v, isError = er.value, true
		s.calls.failed.Add(1)
	}
	data, err := json.Marshal(out.v)
	if err != nil {
		s.calls.failed.Add(1)
		return toolError(fmt.Errorf("tool %s: serialize result: %w", tool, err)), nil
	}
	if int64(len(data)) <= s.limits.InlineResultBytes {
		return inlineResult(data, isError), nil
	}
	handle, err := s.results.Put(owner, data)
	if err != nil {
		s.calls.failed.Add(1)
		return toolError(err), nil
	}
	s.calls.paged.Add(1)
	ref, _ := json.Marshal(pagedResult{
		ResultID:   handle.ID,
		TotalBytes: handle.TotalBytes,
		ReadTool:   h.ReadToolName(),
		ChunkBytes: s.limits.ResultChunkBytes,
		ExpiresAt:  handle.ExpiresAt.UTC().Format(time.RFC3339),
	})
	return inlineResult(ref, isError), nil
}

// resultOwner scopes retained results to the plugin's read tool and, when
// the request was authenticated, to the caller's identity: a result_id is
// unguessable, and with authentication it is also useless to anyone else.
func resultOwner(h *Host, req *mcp.CallToolRequest) string {
	owner := h.ReadToolName()
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
		owner += "\x00" + req.Extra.TokenInfo.UserID
	}
	return owner
}

// pagedResult is what a tool returns in place of a result that is too large
// to return inline.
type pagedResult struct {
	ResultID   string `json:"result_id"`
	TotalBytes int64  `json:"total_bytes"`
	ReadTool   string `json:"read_tool"`
	ChunkBytes int64  `json:"chunk_bytes"`
	ExpiresAt  string `json:"expires_at"`
}

// inlineResult returns data as structuredContent (when it is a JSON object)
// and as the same JSON text.
func inlineResult(data []byte, isError bool) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}, IsError: isError}
	if len(data) > 0 && data[0] == '{' {
		res.StructuredContent = json.RawMessage(data)
	}
	return res
}

// ToolErrorReply is the structuredContent of a tool error the host itself
// reports, so that an agent can act on the kind without parsing the text:
// "limit" (with Limit and Max), "timeout", "cancelled", "result_not_found"
// or "error".
type ToolErrorReply struct {
	Error ToolErrorDetail `json:"error"`
}

// ToolErrorDetail describes one error; see [ToolErrorReply].
type ToolErrorDetail struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Limit   string `json:"limit,omitempty"`
	Max     int64  `json:"max,omitempty"`
}

// toolError turns err into an isError result: its message as text and, as
// structuredContent, a [ToolErrorReply] that says what kind of error it is.
func toolError(err error) *mcp.CallToolResult {
	d := ToolErrorDetail{Kind: "error", Message: err.Error()}
	var le *LimitError
	switch {
	case errors.As(err, &le):
		d.Kind, d.Limit, d.Max = "limit", le.Limit, le.Max
	case errors.Is(err, ErrTimeout):
		d.Kind = "timeout"
	case errors.Is(err, context.Canceled):
		d.Kind = "cancelled"
	case errors.Is(err, ErrResultNotFound):
		d.Kind = "result_not_found"
	}
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: d.Message}}}
	if data, merr := json.Marshal(ToolErrorReply{Error: d}); merr == nil {
		res.StructuredContent = json.RawMessage(data)
	}
	return res
}

// sdkLogHandler hands the SDK's records to the host's handler with Info
// demoted to Debug: the SDK logs every connection (every request, for
// stateless HTTP) at Info, which would drown the operator's log.
type sdkLogHandler struct{ slog.Handler }

func (h sdkLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demote(l))
}

func (h sdkLogHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
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
