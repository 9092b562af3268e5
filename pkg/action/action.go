package action

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// DefaultTimeout is an action's timeout when it sets none (Keryx's 300 s).
const DefaultTimeout = 300 * time.Second

// Action is one action: served over every transport through [App.Run].
type Action struct {
	// Name is lowercase words (a letter, then letters, digits or '_') joined
	// by ':', at most 64 bytes: "user:create".
	Name        string
	Description string
	// Inputs is a pointer to the inputs struct type (e.g.
	// (*CreateUserInputs)(nil)), or nil for none. Its JSON Schema is derived
	// by github.com/google/jsonschema-go: property names from `json` tags,
	// required unless omitempty/omitzero, descriptions from `jsonschema`
	// tags. Constraints (minLength, enum, ...) come from an optional method
	// on the type, [SchemaAdjuster]. A top-level field tagged
	// `action:"secret"` is redacted ("[redacted]") in Conn.Params, logs and
	// error messages, and is `format: password`, writeOnly in the schema.
	Inputs any
	// Run does the work. in is a pointer to a fresh, validated inputs struct
	// (nil when Inputs is nil). It runs on the caller's goroutine under
	// the action's timeout: it must return when ctx is done.
	Run     func(ctx context.Context, c *Conn, in any) (any, error)
	Web     *Web          // optional HTTP route
	Timeout time.Duration // 0: DefaultTimeout
	Before  []Middleware  // run in order before Run; the first error ends the call
	After   []Middleware  // run in order after Run; each sees and may replace (result, error)
	Task    *Task         // a background task: run by [Tasks]
	MCP     MCP

	schema *inputSchema // derived by App.Add
}

// Web is an action's HTTP route: Method (GET, POST, PUT, PATCH or DELETE)
// and Route under the API prefix, Keryx style: "/user/:id", where ":id"
// names an input.
type Web struct{ Method, Route string }

// Task declares an action as a background task (run by a later part).
type Task struct {
	Queue     string
	Frequency time.Duration // 0: not recurring
}

// MCP is how the MCP surface exposes an action.
type MCP struct {
	Tool           *bool     // nil: true
	Resource       *Resource // expose as a resource
	Prompt         *Prompt   // expose as a prompt
	ResponseFormat Format    // "" is FormatJSON
	LoginAction    bool      // the OAuth login action (at most one per app)
	SignupAction   bool      // the OAuth signup action (at most one per app)
}

// IsTool reports whether the action is exposed as an MCP tool.
func (m MCP) IsTool() bool { return m.Tool == nil || *m.Tool }

// Resource exposes an action as an MCP resource: exactly one of URI and
// URITemplate, whose {variables} must be inputs.
type Resource struct{ URI, URITemplate, MIMEType string }

// Prompt exposes an action as an MCP prompt.
type Prompt struct{ Title string }

// Format is an MCP tool response format.
type Format string

// The response formats.
const (
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
)

// Middleware wraps the run. Before may fail the call (its error is the
// call's error, and neither Run nor later middlewares run). After sees the
// result and error and returns their replacements. Either may be nil.
type Middleware struct {
	Name   string
	Before func(ctx context.Context, c *Conn, in any) error
	After  func(ctx context.Context, c *Conn, in any, out any, err error) (any, error)
}

// Conn is the connection an action runs for.
type Conn struct {
	Type      string // "web", "websocket", "cli", "task", "mcp"
	ID        string // per connection (the request id for web)
	Remote    string // remote address, when there is one
	Principal string // authenticated identity, or ""
	// Params are the params as the transport gave them (before validation),
	// set by App.Run with secret inputs redacted ([Action.Redacted]).
	Params map[string]any
	// Session is the client's web session (HTTP and WebSocket transports
	// configured with [Sessions]); nil on every other connection.
	Session *Session
}

// InputSchema returns the action's derived JSON Schema (an object schema;
// with no properties when the action has no inputs). It is nil before the
// action is added to an App. Callers must not modify it.
func (act *Action) InputSchema() *jsonschema.Schema {
	if act.schema == nil {
		return nil
	}
	return act.schema.schema
}

// EffectiveTimeout is Timeout, or DefaultTimeout when Timeout is 0.
func (act *Action) EffectiveTimeout() time.Duration {
	if act.Timeout == 0 {
		return DefaultTimeout
	}
	return act.Timeout
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(:[a-z][a-z0-9_]*)*$`)

var webMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// reservedRoutes are served by the HTTP transport itself.
var reservedRoutes = []string{"/swagger"}

// check validates everything about act that needs no other action, and
// derives its schema.
func (act *Action) check() error {
	if len(act.Name) > 64 || !nameRE.MatchString(act.Name) {
		return fmt.Errorf("action name %q: want lowercase words (a letter, then letters, digits or '_') joined by ':', at most 64 bytes", act.Name)
	}
	if act.Run == nil {
		return fmt.Errorf("action %s: Run is nil", act.Name)
	}
	if act.Timeout < 0 {
		return fmt.Errorf("action %s: negative timeout %v", act.Name, act.Timeout)
	}
	s, err := deriveSchema(act.Inputs)
	if err != nil {
		return fmt.Errorf("action %s: inputs: %w", act.Name, err)
	}
	act.schema = s
	if act.Web != nil {
		if err := act.checkWeb(); err != nil {
			return fmt.Errorf("action %s: web route: %w", act.Name, err)
		}
	}
	if act.Task != nil && (act.Task.Queue == "" || act.Task.Frequency < 0) {
		return fmt.Errorf("action %s: task: want a queue name and a frequency >= 0", act.Name)
	}
	return act.checkMCP()
}

func (act *Action) checkWeb() error {
	w := act.Web
	if !slices.Contains(webMethods, w.Method) {
		return fmt.Errorf("method %q: want one of %s", w.Method, strings.Join(webMethods, ", "))
	}
	segs, err := parseRoute(w.Route)
	if err != nil {
		return err
	}
	if slices.Contains(reservedRoutes, w.Route) {
		return fmt.Errorf("%s is served by the transport itself", w.Route)
	}
	for _, s := range segs {
		if s.param && act.schema.props[s.text] == nil {
			return fmt.Errorf("%s: path parameter %q is not an input", w.Route, s.text)
		}
	}
	return nil
}

func (act *Action) checkMCP() error {
	m := act.MCP
	switch m.ResponseFormat {
	case "", FormatJSON, FormatMarkdown:
	default:
		return fmt.Errorf("action %s: response format %q: want %q or %q", act.Name, m.ResponseFormat, FormatJSON, FormatMarkdown)
	}
	if m.LoginAction && m.SignupAction {
		return fmt.Errorf("action %s: both the login and the signup action", act.Name)
	}
	if r := m.Resource; r != nil {
		if (r.URI == "") == (r.URITemplate == "") {
			return fmt.Errorf("action %s: resource: want exactly one of URI and URITemplate", act.Name)
		}
		for _, v := range templateVars(r.URITemplate) {
			if act.schema.props[v] == nil {
				return fmt.Errorf("action %s: resource: template variable %q is not an input", act.Name, v)
			}
		}
	}
	return nil
}

var templateVarRE = regexp.MustCompile(`\{[+#./;?&]?([A-Za-z0-9_]+)[^}]*\}`)

// templateVars lists the variable names of a URI template.
func templateVars(t string) []string {
	var out []string
	for _, m := range templateVarRE.FindAllStringSubmatch(t, -1) {
		out = append(out, m[1])
	}
	return out
}
