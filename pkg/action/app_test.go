package action_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/action"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// CreateUser is the test app's inputs with a secret and constraints.
type CreateUser struct {
	Name     string `json:"name" jsonschema:"the user's name"`
	Password string `json:"password" action:"secret"`
	Age      int    `json:"age,omitempty"`
}

func (*CreateUser) AdjustSchema(s *jsonschema.Schema) error {
	one, eight := 1, 8
	s.Properties["name"].MinLength = &one
	s.Properties["password"].MinLength = &eight
	return nil
}

type ViewUser struct {
	ID      string   `json:"id"`
	Verbose bool     `json:"verbose,omitempty"`
	Limit   int      `json:"limit,omitempty"`
	Tags    []string `json:"tags,omitempty"`
}

type FailWith struct {
	Kind string `json:"kind"`
}

// syncBuffer is a log sink safe for the concurrent writes of an HTTP server.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testApp is a small app exercising every rule; its log goes to the
// returned buffer, at debug level.
func testApp(t testing.TB) (*action.App, *syncBuffer) {
	t.Helper()
	app := action.NewApp("testapp", "an app for tests")
	logs := &syncBuffer{}
	app.SetLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	var order []string
	app.MustAdd(action.Action{
		Name: "status", Description: "the status",
		Web: &action.Web{Method: "GET", Route: "/status"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			return map[string]any{"ok": true, "name": "testapp"}, nil
		},
	})
	app.MustAdd(action.Action{
		Name: "user:create", Description: "create a user", Inputs: (*CreateUser)(nil),
		Web: &action.Web{Method: "POST", Route: "/user"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			u := in.(*CreateUser)
			if u.Name == "taken" {
				return nil, action.Errorf(action.KindConflict, "user %s exists (password %s)", u.Name, u.Password)
			}
			if u.Name == "untyped" {
				return nil, fmt.Errorf("db down, password %s", u.Password)
			}
			return map[string]any{"name": u.Name, "age": u.Age, "params": c.Params}, nil
		},
	})
	app.MustAdd(action.Action{
		Name: "user:view", Description: "view a user", Inputs: (*ViewUser)(nil),
		Web: &action.Web{Method: "GET", Route: "/user/:id"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			return map[string]any{"in": in, "conn": map[string]any{"type": c.Type, "id": c.ID}}, nil
		},
	})
	app.MustAdd(action.Action{
		Name: "user:me", Description: "the caller",
		Web: &action.Web{Method: "GET", Route: "/user/me"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) { return "me", nil },
	})
	app.MustAdd(action.Action{
		Name: "user:update", Description: "update a user", Inputs: (*ViewUser)(nil),
		Web: &action.Web{Method: "PUT", Route: "/user/:id"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) { return in, nil },
	})
	app.MustAdd(action.Action{
		Name: "slow", Description: "waits for its context", Timeout: 50 * time.Millisecond,
		Web: &action.Web{Method: "GET", Route: "/slow"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	app.MustAdd(action.Action{
		Name: "boom", Description: "panics",
		Web: &action.Web{Method: "GET", Route: "/boom"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) { panic("the panic text") },
	})
	app.MustAdd(action.Action{
		Name: "fail", Description: "fails with the kind asked", Inputs: (*FailWith)(nil),
		Web: &action.Web{Method: "POST", Route: "/fail"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			return nil, action.Errorf(action.Kind(in.(*FailWith).Kind), "failed as asked")
		},
	})
	app.MustAdd(action.Action{
		Name: "mw", Description: "middleware order", Inputs: (*FailWith)(nil),
		Before: []action.Middleware{
			{Name: "a", Before: func(ctx context.Context, c *action.Conn, in any) error { order = append(order, "before-a"); return nil }},
			{Name: "b", Before: func(ctx context.Context, c *action.Conn, in any) error {
				order = append(order, "before-b")
				if in.(*FailWith).Kind == "deny" {
					return action.Errorf(action.KindForbidden, "denied")
				}
				return nil
			}},
		},
		After: []action.Middleware{
			{Name: "c", After: func(ctx context.Context, c *action.Conn, in, out any, err error) (any, error) {
				order = append(order, "after-c")
				return fmt.Sprint(out, "+c"), err
			}},
			{Name: "d", After: func(ctx context.Context, c *action.Conn, in, out any, err error) (any, error) {
				order = append(order, "after-d")
				return fmt.Sprint(out, "+d"), err
			}},
		},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			order = append(order, "run")
			r := fmt.Sprint(order)
			order = nil
			return r, nil
		},
	})
	app.MustAdd(action.Action{
		Name: "internal:only", Description: "served by no HTTP route",
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) { return "hidden", nil },
	})
	return app, logs
}

// wantErr checks that err is an *action.Error of kind k naming field.
func wantErr(t *testing.T, err error, k action.Kind, field string) *action.Error {
	t.Helper()
	var e *action.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T): want an *action.Error", err, err)
	}
	if e.Kind != k || e.Field != field {
		t.Fatalf("error %v: want kind %s field %q", err, k, field)
	}
	return e
}

func TestRunValidates(t *testing.T) {
	app, _ := testApp(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, action, params string
		kind                 action.Kind
		field                string
	}{
		{"unknown action", "nope", `{}`, action.KindNotFound, ""},
		{"not an object", "user:create", `[1]`, action.KindInvalidParam, ""},
		{"bad json", "user:create", `{"name":`, action.KindInvalidParam, ""},
		{"unknown param", "user:create", `{"name":"a","password":"12345678","admin":true}`, action.KindInvalidParam, "admin"},
		{"case differs", "user:create", `{"Name":"a","password":"12345678"}`, action.KindInvalidParam, "Name"},
		{"missing", "user:create", `{"password":"12345678"}`, action.KindMissingParam, "name"},
		{"missing secret", "user:create", `{"name":"a"}`, action.KindMissingParam, "password"},
		{"wrong type", "user:create", `{"name":5,"password":"12345678"}`, action.KindInvalidParam, "name"},
		{"not an integer", "user:create", `{"name":"a","password":"12345678","age":1.5}`, action.KindInvalidParam, "age"},
		{"constraint", "user:create", `{"name":"","password":"12345678"}`, action.KindInvalidParam, "name"},
		{"no inputs", "status", `{"x":1}`, action.KindInvalidParam, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := app.Run(ctx, &action.Conn{Type: "test"}, tc.action, json.RawMessage(tc.params))
			wantErr(t, err, tc.kind, tc.field)
		})
	}
	for _, params := range []string{``, `null`, ` {} `} {
		if out, err := app.Run(ctx, nil, "status", json.RawMessage(params)); err != nil || out.(map[string]any)["ok"] != true {
			t.Errorf("status with params %q: %v, %v", params, out, err)
		}
	}
}

func TestRunDecodesFreshInputs(t *testing.T) {
	app, _ := testApp(t)
	c := &action.Conn{Type: "test"}
	out, err := app.Run(context.Background(), c, "user:create", json.RawMessage(`{"name":"ann","password":"hunter22x","age":7}`))
	if err != nil {
		t.Fatal(err)
	}
	m := out.(map[string]any)
	if m["name"] != "ann" || m["age"] != 7 {
		t.Errorf("result %v", m)
	}
	if c.Params["password"] != action.Redacted || c.Params["name"] != "ann" {
		t.Errorf("Conn.Params %v: want the password redacted and the name kept", c.Params)
	}
	// a second call does not see the first's values
	out, err = app.Run(context.Background(), c, "user:create", json.RawMessage(`{"name":"bob","password":"hunter22x"}`))
	if err != nil || out.(map[string]any)["age"] != 0 {
		t.Errorf("second call: %v, %v; want age 0", out, err)
	}
}

func TestSecretsRedacted(t *testing.T) {
	app, logs := testApp(t)
	const pw = "sup3r-s3cret-pw"
	for _, tc := range []struct {
		params string
		kind   action.Kind
	}{
		{`{"name":"taken","password":"` + pw + `"}`, action.KindConflict},        // the action's own message quotes it
		{`{"name":"untyped","password":"` + pw + `"}`, action.KindInternal},      // the logged cause quotes it
		{`{"name":"x","password":"short"}`, action.KindInvalidParam},             // the validator's reason would quote it
		{`{"name":"x","password":` + `["` + pw + `"]}`, action.KindInvalidParam}, // wrong type
	} {
		_, err := app.Run(context.Background(), &action.Conn{}, "user:create", json.RawMessage(tc.params))
		e := wantErr(t, err, tc.kind, map[bool]string{true: "password", false: ""}[tc.kind == action.KindInvalidParam])
		if strings.Contains(e.Message, pw) || strings.Contains(e.Message, "short") {
			t.Errorf("error message %q shows the secret", e.Message)
		}
	}
	if _, err := app.Run(context.Background(), &action.Conn{}, "user:create", json.RawMessage(`{"name":"ok","password":"`+pw+`"}`)); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if strings.Contains(out, pw) || strings.Contains(out, "short") {
		t.Errorf("the log shows the secret:\n%s", out)
	}
	if !strings.Contains(out, `"password":"[redacted]"`) || !strings.Contains(out, "db down, password [redacted]") {
		t.Errorf("the log lacks the redacted params or the scrubbed cause:\n%s", out)
	}
	s := mustLookup(t, app, "user:create").InputSchema().Properties["password"]
	if s.Format != "password" || !s.WriteOnly {
		t.Errorf("password schema %+v: want format password, writeOnly", s)
	}
}

func mustLookup(t *testing.T, app *action.App, name string) *action.Action {
	t.Helper()
	act, ok := app.Lookup(name)
	if !ok {
		t.Fatalf("no action %s", name)
	}
	return act
}

func TestMiddleware(t *testing.T) {
	app, _ := testApp(t)
	out, err := app.Run(context.Background(), nil, "mw", json.RawMessage(`{"kind":"ok"}`))
	if err != nil || out != "[before-a before-b run]+c+d" {
		t.Errorf("got %v, %v: want Before in order, Run, After in order", out, err)
	}
	_, err = app.Run(context.Background(), nil, "mw", json.RawMessage(`{"kind":"deny"}`))
	wantErr(t, err, action.KindForbidden, "")
}

func TestTimeout(t *testing.T) {
	app, _ := testApp(t)
	start := time.Now()
	_, err := app.Run(context.Background(), nil, "slow", nil)
	wantErr(t, err, action.KindTimeout, "")
	if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
		t.Errorf("took %v: want the 50ms timeout", took)
	}
	if got := mustLookup(t, app, "status").EffectiveTimeout(); got != 300*time.Second {
		t.Errorf("default timeout %v", got)
	}
}

func TestPanicIsInternal(t *testing.T) {
	app, logs := testApp(t)
	_, err := app.Run(context.Background(), nil, "boom", nil)
	e := wantErr(t, err, action.KindInternal, "")
	if strings.Contains(e.Message, "panic text") || e.Message != "internal error" {
		t.Errorf("message %q: want \"internal error\"", e.Message)
	}
	if out := logs.String(); !strings.Contains(out, "the panic text") || !strings.Contains(out, "goroutine") {
		t.Errorf("the log lacks the panic and its stack:\n%s", out)
	}
}

func TestKindsAndErrorf(t *testing.T) {
	want := map[action.Kind]int{
		action.KindMissingParam: 400, action.KindInvalidParam: 400, action.KindNotFound: 404,
		action.KindUnauthorized: 401, action.KindForbidden: 403, action.KindRateLimited: 429,
		action.KindTimeout: 408, action.KindConflict: 409, action.KindTooLarge: 413, action.KindInternal: 500,
		"made_up": 500,
	}
	for k, s := range want {
		if got := k.HTTPStatus(); got != s {
			t.Errorf("%s: status %d, want %d", k, got, s)
		}
	}
	cause := errors.New("cause")
	e := action.Errorf(action.KindNotFound, "no user %d: %w", 7, cause)
	if e.Message != "no user 7: cause" || !errors.Is(e, cause) || e.Error() != "not_found: no user 7: cause" {
		t.Errorf("Errorf: %+v", e)
	}
}

func TestAddRefuses(t *testing.T) {
	run := func(ctx context.Context, c *action.Conn, in any) (any, error) { return nil, nil }
	type bad struct {
		X string `json:"x" action:"hidden"`
	}
	type twoIDs struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	f := false
	for _, tc := range []struct {
		name string
		act  action.Action
		want string
	}{
		{"bad name", action.Action{Name: "User:Create", Run: run}, "lowercase words"},
		{"empty word", action.Action{Name: "user::create", Run: run}, "lowercase words"},
		{"dash", action.Action{Name: "user-create", Run: run}, "lowercase words"},
		{"no run", action.Action{Name: "x"}, "Run is nil"},
		{"negative timeout", action.Action{Name: "x", Run: run, Timeout: -1}, "negative timeout"},
		{"inputs not a struct pointer", action.Action{Name: "x", Run: run, Inputs: twoIDs{}}, "pointer to a struct"},
		{"unknown action tag", action.Action{Name: "x", Run: run, Inputs: (*bad)(nil)}, "unknown action tag"},
		{"bad method", action.Action{Name: "x", Run: run, Web: &action.Web{Method: "get", Route: "/x"}}, "method"},
		{"relative route", action.Action{Name: "x", Run: run, Web: &action.Web{Method: "GET", Route: "x"}}, "must start with /"},
		{"route param not an input", action.Action{Name: "x", Run: run, Web: &action.Web{Method: "GET", Route: "/x/:id"}}, "not an input"},
		{"repeated route param", action.Action{Name: "x", Run: run, Inputs: (*twoIDs)(nil), Web: &action.Web{Method: "GET", Route: "/x/:id/:id"}}, "repeated"},
		{"reserved route", action.Action{Name: "x", Run: run, Web: &action.Web{Method: "GET", Route: "/swagger"}}, "transport itself"},
		{"same route shape", action.Action{Name: "x", Run: run, Inputs: (*twoIDs)(nil), Web: &action.Web{Method: "GET", Route: "/user/:name"}}, "also action user:view"},
		{"duplicate", action.Action{Name: "status", Run: run}, "added twice"},
		{"resource with both", action.Action{Name: "x", Run: run, MCP: action.MCP{Tool: &f, Resource: &action.Resource{URI: "a://b", URITemplate: "a://{id}"}}}, "exactly one"},
		{"resource with neither", action.Action{Name: "x", Run: run, MCP: action.MCP{Resource: &action.Resource{}}}, "exactly one"},
		{"template var not an input", action.Action{Name: "x", Run: run, MCP: action.MCP{Resource: &action.Resource{URITemplate: "a://{id}"}}}, "not an input"},
		{"format", action.Action{Name: "x", Run: run, MCP: action.MCP{ResponseFormat: "xml"}}, "response format"},
		{"task without queue", action.Action{Name: "x", Run: run, Task: &action.Task{}}, "queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, _ := testApp(t)
			err := app.Add(tc.act)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Add: %v; want an error containing %q", err, tc.want)
			}
		})
	}
	app := action.NewApp("a", "")
	app.MustAdd(action.Action{Name: "login", Run: run, MCP: action.MCP{LoginAction: true}})
	if err := app.Add(action.Action{Name: "login2", Run: run, MCP: action.MCP{LoginAction: true}}); err == nil {
		t.Error("a second login action was added")
	}
	if err := app.Add(action.Action{Name: "res", Run: run, Inputs: (*twoIDs)(nil), MCP: action.MCP{Resource: &action.Resource{URITemplate: "a://users/{id}"}}}); err != nil {
		t.Errorf("a valid resource template: %v", err)
	}
	if names := fmt.Sprint(actionNames(app)); names != "[login res]" {
		t.Errorf("Actions: %s", names)
	}
}

func actionNames(app *action.App) []string {
	var out []string
	for _, a := range app.Actions() {
		out = append(out, a.Name)
	}
	return out
}

// Weights has an input jsonschema-go cannot describe (a map with integer
// keys): it falls back to a string holding the value's JSON text.
type Weights struct {
	Name    string         `json:"name" jsonschema:"who"`
	ByIndex map[int]string `json:"by_index" jsonschema:"labels by index"`
	Note    string         `json:"note,omitempty"`
}

// TestSchemaFallback: an action whose inputs have no JSON Schema as a
// whole still registers; the field that has none is a string of JSON text,
// decoded into its Go type, and bad text is an invalid_param naming it.
func TestSchemaFallback(t *testing.T) {
	app := action.NewApp("t", "fallback")
	got := make(chan map[int]string, 1)
	app.MustAdd(action.Action{Name: "weigh", Inputs: (*Weights)(nil), Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
		got <- in.(*Weights).ByIndex
		return nil, nil
	}})
	act, _ := app.Lookup("weigh")
	s := act.InputSchema()
	if p := s.Properties["by_index"]; p == nil || p.Type != "string" || !strings.Contains(p.Description, "JSON text") {
		t.Fatalf("fallback property: %+v", p)
	}
	if p := s.Properties["name"]; p == nil || p.Type != "string" || p.Description != "who" || !slices.Equal(s.Required, []string{"name", "by_index"}) {
		t.Fatalf("other properties: %+v, required %v", p, s.Required)
	}
	if _, err := app.Run(t.Context(), &action.Conn{Type: "test"}, "weigh", json.RawMessage(`{"name":"x","by_index":"{\"1\":\"a\",\"2\":\"b\"}"}`)); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m[1] != "a" || m[2] != "b" || len(m) != 2 {
		t.Fatalf("decoded %v", m)
	}
	_, err := app.Run(t.Context(), &action.Conn{Type: "test"}, "weigh", json.RawMessage(`{"name":"x","by_index":"{not json"}`))
	var ae *action.Error
	if !errors.As(err, &ae) || ae.Kind != action.KindInvalidParam || ae.Field != "by_index" {
		t.Fatalf("bad JSON text: %v", err)
	}
	if _, err := app.Run(t.Context(), &action.Conn{Type: "test"}, "weigh", json.RawMessage(`{"name":"x","by_index":"{}","extra":1}`)); !errors.As(err, &ae) || ae.Field != "extra" {
		t.Fatalf("an unknown param: %v", err)
	}
}
