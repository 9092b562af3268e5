package actions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// TestMain stops the shared PostgreSQL server (pgtest.Shared) before
// goleak looks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.M(m)) }

// sharedData is a "data_path" member naming a PostgreSQL store of the
// test's own on the shared server: the example app's data beside Redis.
func sharedData(t testing.TB) string {
	t.Helper()
	return `"data_path": "` + pgtest.Shared(t).StoreURL() + `"`
}

const testDescription = "A test app of every MCP exposure."

type createInputs struct {
	Name     string `json:"name" jsonschema:"the user's name"`
	Email    string `json:"email,omitempty"`
	Password string `json:"password,omitempty" action:"secret"`
}

type nameInputs struct {
	Name string `json:"name,omitempty" jsonschema:"who to greet"`
}

// nested is the result of report:nested, which shows every markdown rule.
var nested = map[string]any{
	"title":  "report",
	"totals": map[string]any{"count": 2, "by": map[string]any{"kind": "a"}},
	"rows":   []any{map[string]any{"id": 1, "note": "x|y"}, map[string]any{"id": 2, "note": "two\nlines"}},
	"tags":   []any{"red", "green"},
}

func off() *bool { return new(bool) }

// testApp has an action for each exposure the plugin serves.
func testApp(t testing.TB) *action.App {
	app := action.NewApp("test", testDescription)
	for _, act := range []action.Action{
		{Name: "user:create", Description: "Create a user.", Inputs: (*createInputs)(nil), Web: &action.Web{Method: "POST", Route: "/users"},
			Run: func(_ context.Context, c *action.Conn, in any) (any, error) {
				if c.Type != "mcp" && c.Type != "web" {
					return nil, action.Errorf(action.KindInternal, "conn type %q", c.Type)
				}
				return map[string]any{"id": 7, "name": in.(*createInputs).Name, "conn": c.Type}, nil
			}},
		{Name: "internal:cleanup", Description: "Not a tool.", MCP: action.MCP{Tool: off()},
			Run: func(context.Context, *action.Conn, any) (any, error) { return "cleaned", nil }},
		{Name: "report:nested", Description: "A nested report.", MCP: action.MCP{ResponseFormat: action.FormatMarkdown},
			Run: func(context.Context, *action.Conn, any) (any, error) { return nested, nil }},
		{Name: "fail:notfound", Description: "Fails.", MCP: action.MCP{ResponseFormat: action.FormatMarkdown},
			Run: func(context.Context, *action.Conn, any) (any, error) {
				return nil, action.Errorf(action.KindNotFound, "no such thing")
			}},
		{Name: "fail:plain", Description: "Fails with a plain error.",
			Run: func(context.Context, *action.Conn, any) (any, error) { return nil, errors.New("secret cause") }},
		{Name: "hello:resource", Description: "Hello as text.", MCP: action.MCP{Tool: off(), Resource: &action.Resource{URI: "test://hello", MIMEType: "text/plain"}},
			Run: func(context.Context, *action.Conn, any) (any, error) { return map[string]any{"text": "hello"}, nil }},
		{Name: "bytes:resource", Description: "Bytes.", MCP: action.MCP{Tool: off(), Resource: &action.Resource{URI: "test://bytes"}},
			Run: func(context.Context, *action.Conn, any) (any, error) {
				return map[string]any{"blob": base64.StdEncoding.EncodeToString([]byte{0, 1, 2}), "mimeType": "application/octet-stream"}, nil
			}},
		{Name: "bad:resource", Description: "Returns no text.", MCP: action.MCP{Tool: off(), Resource: &action.Resource{URI: "test://bad"}},
			Run: func(context.Context, *action.Conn, any) (any, error) { return map[string]any{"other": 1}, nil }},
		{Name: "user:resource", Description: "A user by name.", Inputs: (*createInputs)(nil),
			MCP: action.MCP{Tool: off(), Resource: &action.Resource{URITemplate: "test://users/{name}", MIMEType: "application/json"}},
			Run: func(_ context.Context, _ *action.Conn, in any) (any, error) {
				if n := in.(*createInputs).Name; n != "ann" {
					return nil, action.Errorf(action.KindNotFound, "no user %q", n)
				}
				return map[string]any{"text": `{"name":"ann"}`}, nil
			}},
		{Name: "greeting:prompt", Description: "A greeting.", Inputs: (*nameInputs)(nil), MCP: action.MCP{Tool: off(), Prompt: &action.Prompt{Title: "Greeting"}},
			Run: func(_ context.Context, _ *action.Conn, in any) (any, error) {
				name := in.(*nameInputs).Name
				if name == "" {
					name = "world"
				}
				return map[string]any{"description": "A personalized greeting",
					"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Hello, " + name + "!"}}}}, nil
			}},
		{Name: "plain:prompt", Description: "No arguments.", MCP: action.MCP{Prompt: &action.Prompt{Title: "Plain"}},
			Run: func(context.Context, *action.Conn, any) (any, error) {
				return map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "ready"}}}}, nil
			}},
	} {
		if err := app.Add(act); err != nil {
			t.Fatal(err)
		}
	}
	return app
}

// setup is a server of the test app and one client session.
type setup struct {
	cs  *mcp.ClientSession
	srv *mcpcore.Server
}

// serve serves the test app with the plugin configuration cfg (JSON) and
// the prefix (nil: the plugin's name), and the instructions middleware.
func serve(t *testing.T, cfg string, prefix *string) setup {
	t.Helper()
	p := New(func(context.Context, Config, action.PubSub) (*action.App, io.Closer, error) {
		return testApp(t), nil, nil
	})
	c := mcpcore.DefaultConfig()
	c.Plugins = map[string]mcpcore.PluginConfig{"actions": {Prefix: prefix, Config: json.RawMessage(cfg)}}
	cs, srv, err := mcptest.Connect(t, mcpcore.Options{Config: c, Instances: []mcpcore.Instance{{Name: "actions", Plugin: p}},
		Middleware: []mcp.Middleware{InstructionsMiddleware(p.Instructions)}})
	if err != nil {
		t.Fatal(err)
	}
	return setup{cs: cs, srv: srv}
}

func noPrefix() *string { s := ""; return &s }

func (s setup) call(t *testing.T, tool, args string) *mcp.CallToolResult {
	t.Helper()
	res, err := s.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.(*mcp.TextContent).Text)
	}
	return b.String()
}

// errorOf is a failed call's error reply.
func errorOf(t *testing.T, res *mcp.CallToolResult) mcpcore.ToolErrorDetail {
	t.Helper()
	if !res.IsError {
		t.Fatalf("call succeeded: %s", text(res))
	}
	var reply mcpcore.ToolErrorReply
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &reply); err != nil {
		t.Fatalf("error reply %s: %v", data, err)
	}
	return reply.Error
}

// markdownOf is a markdown result's text, served as is: one text content
// and no structuredContent.
func markdownOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError || res.StructuredContent != nil {
		t.Fatalf("markdown result (isError %v, structured %v): %s", res.IsError, res.StructuredContent, text(res))
	}
	return text(res)
}

func TestToolsAsServed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix *string
		want   []string
	}{
		{"no prefix", noPrefix(), []string{"fail-notfound", "fail-plain", "plain-prompt", "report-nested", "user-create"}},
		{"plugin prefix", nil, []string{"actions_fail-notfound", "actions_fail-plain", "actions_plain-prompt", "actions_report-nested", "actions_result", "actions_user-create"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, `{}`, tc.prefix)
			res, err := s.cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			want := tc.want
			if tc.prefix != nil {
				want = append(slices.Clone(want), "result")
			}
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("tools %v, want %v", names, want)
			}
			i := slices.IndexFunc(res.Tools, func(tool *mcp.Tool) bool { return strings.HasSuffix(tool.Name, "user-create") })
			tool := res.Tools[i]
			if tool.Description != "Create a user." {
				t.Errorf("description %q", tool.Description)
			}
			schema, _ := json.Marshal(tool.InputSchema)
			for _, want := range []string{`"name":{"description":"the user's name","type":"string"}`, `"required":["name"]`, `"format":"password"`} {
				if !strings.Contains(string(schema), want) {
					t.Errorf("input schema %s lacks %s", schema, want)
				}
			}
		})
	}
}

func TestToolCallJSON(t *testing.T) {
	s := serve(t, `{}`, noPrefix())
	res := s.call(t, "user-create", `{"name":"ann","password":"hunter2hunter2"}`)
	if res.IsError || text(res) != `{"conn":"mcp","id":7,"name":"ann"}` {
		t.Fatalf("result %s (isError %v)", text(res), res.IsError)
	}
	if res.StructuredContent == nil {
		t.Error("an object result has no structuredContent")
	}
}

func TestToolCallErrors(t *testing.T) {
	s := serve(t, `{}`, noPrefix())
	for _, tc := range []struct {
		name, tool, args   string
		kind, path, inText string
	}{
		{"missing param", "user-create", `{}`, mcpcore.KindBadParams, "/name", "missing_param"},
		{"invalid param", "user-create", `{"name":3}`, mcpcore.KindBadParams, "/name", "invalid_param"},
		{"unknown param", "user-create", `{"name":"a","x":1}`, mcpcore.KindBadParams, "/x", "invalid_param"},
		{"action error in a markdown tool", "fail-notfound", `{}`, "not_found", "", "no such thing"},
		{"plain error", "fail-plain", `{}`, "internal", "", "internal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := s.call(t, tc.tool, tc.args)
			d := errorOf(t, res)
			if d.Kind != tc.kind || d.Path != tc.path || !strings.Contains(d.Message, tc.inText) {
				t.Errorf("error %+v, want kind %s path %q message with %q", d, tc.kind, tc.path, tc.inText)
			}
			if strings.Contains(text(res), "secret cause") {
				t.Errorf("the cause leaked: %s", text(res))
			}
		})
	}
}

func TestMarkdownResult(t *testing.T) {
	want := func(md string, parts ...string) []string {
		var missing []string
		for _, p := range parts {
			if !strings.Contains(md, p) {
				missing = append(missing, p)
			}
		}
		return missing
	}
	t.Run("default depth", func(t *testing.T) {
		md := markdownOf(t, serve(t, `{}`, noPrefix()).call(t, "report-nested", `{}`))
		if m := want(md, "- **title**: report\n", "## rows\n\n| id | note |\n| --- | --- |\n| 1 | x\\|y |\n| 2 | two lines |\n",
			"## tags\n\n- red\n- green\n", "## totals\n\n- **count**: 2\n\n### by\n\n- **kind**: a\n"); len(m) > 0 {
			t.Errorf("markdown lacks %q:\n%s", m, md)
		}
	})
	t.Run("configured depth", func(t *testing.T) {
		md := markdownOf(t, serve(t, `{"markdown_depth_limit":2}`, noPrefix()).call(t, "report-nested", `{}`))
		if m := want(md, "## totals\n\n- **count**: 2\n\n### by\n\n```json\n{\n  \"kind\": \"a\"\n}\n```\n"); len(m) > 0 {
			t.Errorf("markdown lacks %q:\n%s", m, md)
		}
	})
	t.Run("depth from the environment", func(t *testing.T) {
		t.Setenv(EnvMarkdownDepth, "1")
		md := markdownOf(t, serve(t, `{}`, noPrefix()).call(t, "report-nested", `{}`))
		if m := want(md, "## tags\n\n```json\n[\n  \"red\",\n  \"green\"\n]\n```\n"); len(m) > 0 {
			t.Errorf("markdown lacks %q:\n%s", m, md)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, cfg, envName, env, want string }{
		{"unknown field", `{"nope":1}`, EnvMarkdownDepth, "", "nope"},
		{"depth out of range", `{"markdown_depth_limit":33}`, EnvMarkdownDepth, "", "markdown_depth_limit"},
		{"bad environment depth", `{}`, EnvMarkdownDepth, "deep", EnvMarkdownDepth},
		{"bad environment enabled", `{}`, EnvEnabled, "maybe", EnvEnabled},
		{"another route in the environment", `{}`, EnvRoute, "/agents", EnvRoute},
		{"another route in the file", `{"mcp_route":"/agents"}`, EnvRoute, "/mcp", "mcp_route"},
		{"negative session TTL", `{"session":{"ttl_seconds":-1}}`, EnvRoute, "", "session.ttl_seconds"},
		{"bad cookie name", `{"session":{"cookie_name":"a;b"}}`, EnvRoute, "", "session.cookie_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.envName, tc.env)
			err := New(OpenExample).Configure([]byte(tc.cfg))
			if !errors.Is(err, mcpcore.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Configure(%s): %v, want a config error naming %s", tc.cfg, err, tc.want)
			}
		})
	}
}

// MCP_SERVER_ENABLED=false (or mcp_enabled false, which wins) serves none
// of the app's actions over MCP; the route /mcp is accepted from either.
func TestMCPEnabled(t *testing.T) {
	for _, tc := range []struct {
		name, cfg, env string
		tools          bool
	}{
		{"default", `{}`, "", true},
		{"environment off", `{"mcp_route":"/mcp"}`, "false", false},
		{"file on wins", `{"mcp_enabled":true}`, "false", true},
		{"file off", `{"mcp_enabled":false}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvEnabled, tc.env)
			t.Setenv(EnvRoute, "/mcp")
			s := serve(t, tc.cfg, noPrefix())
			tools, err := s.cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			has := slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "report-nested" })
			if has != tc.tools {
				t.Errorf("the app's tools served: %v, want %v", has, tc.tools)
			}
		})
	}
}

func TestInstructions(t *testing.T) {
	for _, tc := range []struct{ name, cfg, env, want string }{
		{"app description", `{}`, "", testDescription},
		{"environment", `{}`, "From the environment.", "From the environment."},
		{"configuration wins", `{"instructions":"From the file."}`, "From the environment.", "From the file."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvInstructions, tc.env)
			s := serve(t, tc.cfg, noPrefix())
			if got := s.cs.InitializeResult().Instructions; got != tc.want {
				t.Errorf("instructions %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResources(t *testing.T) {
	s := serve(t, `{}`, noPrefix())
	list, err := s.cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI+" "+r.Name)
	}
	if want := []string{"test://bad bad:resource", "test://bytes bytes:resource", "test://hello hello:resource"}; !slices.Equal(filterTest(uris), want) {
		t.Errorf("resources %v, want %v and mcpkit://info", uris, want)
	}
	templates, err := s.cs.ListResourceTemplates(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "test://users/{name}" {
		t.Errorf("templates %+v", templates.ResourceTemplates)
	}
	read := func(uri string) (*mcp.ResourceContents, error) {
		res, err := s.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return nil, err
		}
		return res.Contents[0], nil
	}
	for _, tc := range []struct {
		uri, text, mime string
		blob            []byte
	}{
		{"test://hello", "hello", "text/plain", nil},
		{"test://bytes", "", "application/octet-stream", []byte{0, 1, 2}},
		{"test://users/ann", `{"name":"ann"}`, "application/json", nil},
	} {
		c, err := read(tc.uri)
		if err != nil {
			t.Errorf("read %s: %v", tc.uri, err)
			continue
		}
		if c.URI != tc.uri || c.Text != tc.text || c.MIMEType != tc.mime || !slices.Equal(c.Blob, tc.blob) {
			t.Errorf("read %s: %+v", tc.uri, c)
		}
	}
	for uri, want := range map[string]string{
		"test://users/bob": "not found",
		"test://bad":       "must return {text, mimeType} or {blob (base64), mimeType}",
	} {
		if _, err := read(uri); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read %s: %v, want %q", uri, err, want)
		}
	}
}

// filterTest keeps the test app's resources (the core adds mcpkit://info).
func filterTest(uris []string) []string {
	var out []string
	for _, u := range uris {
		if strings.HasPrefix(u, "test://") {
			out = append(out, u)
		}
	}
	return out
}

func TestPrompts(t *testing.T) {
	s := serve(t, `{}`, noPrefix())
	list, err := s.cs.ListPrompts(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list.Prompts {
		var args []string
		for _, a := range p.Arguments {
			args = append(args, a.Name+":"+a.Description)
		}
		got = append(got, p.Name+"|"+p.Title+"|"+strings.Join(args, ","))
	}
	if want := []string{"greeting-prompt|Greeting|name:who to greet", "plain-prompt|Plain|"}; !slices.Equal(got, want) {
		t.Errorf("prompts %q, want %q", got, want)
	}
	for _, tc := range []struct {
		name string
		args map[string]string
		want string
	}{
		{"greeting-prompt", map[string]string{"name": "Ann"}, "Hello, Ann!"},
		{"greeting-prompt", nil, "Hello, world!"},
		{"plain-prompt", nil, "ready"},
	} {
		res, err := s.cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: tc.name, Arguments: tc.args})
		if err != nil {
			t.Errorf("%s %v: %v", tc.name, tc.args, err)
			continue
		}
		if len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != tc.want {
			t.Errorf("%s %v: %+v", tc.name, tc.args, res.Messages)
		}
	}
	if _, err := s.cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greeting-prompt", Arguments: map[string]string{"other": "x"}}); err == nil || !strings.Contains(err.Error(), "other") {
		t.Errorf("an unknown argument: %v", err)
	}
}

func TestHTTPAPI(t *testing.T) {
	s := serve(t, `{}`, noPrefix())
	routes := s.srv.HTTP().Routes
	if len(routes) != 2 || routes[0].Pattern != "/api/" || routes[1].Pattern != "/ws" || routes[0].Plugin != "actions" {
		t.Fatalf("routes %+v, want /api/ and /ws", routes)
	}
	web := httptest.NewServer(routes[0].Handler)
	defer web.Close()
	resp, err := http.Post(web.URL+"/api/users", "application/json", strings.NewReader(`{"name":"ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"conn":"web","id":7,"name":"ann"}` {
		t.Errorf("POST /api/users: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(web.URL + "/api/swagger")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"/api/users"`) {
		t.Errorf("GET /api/swagger: %d %s", resp.StatusCode, body)
	}
	web.CloseClientConnections()
	http.DefaultClient.CloseIdleConnections()
}

// TestRecurringTaskRuns: an app's recurring task runs under the served
// plugin, on a "task" connection, and its workers stop when the server
// closes.
func TestRecurringTaskRuns(t *testing.T) {
	runs := make(chan string, 100)
	p := New(func(context.Context, Config, action.PubSub) (*action.App, io.Closer, error) {
		app := action.NewApp("tasks", "an app with a recurring task")
		app.MustAdd(action.Action{Name: "tick", Task: &action.Task{Queue: "default", Frequency: 20 * time.Millisecond},
			Run: func(_ context.Context, c *action.Conn, _ any) (any, error) { runs <- c.Type; return nil, nil }})
		return app, nil, nil
	})
	srv, err := mcpcore.NewServer(t.Context(), mcpcore.Options{Instances: []mcpcore.Instance{{Name: "actions", Plugin: p}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case typ := <-runs:
			if typ != "task" {
				t.Fatalf("ran on a %q connection", typ)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the recurring task did not run three times")
		}
	}
	if err := srv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.tasksDone:
	default:
		t.Fatal("Close returned while task workers were running")
	}
}

// TestAPIRateLimited: the mounted API applies the configured rate limit
// per client: 429 with Retry-After past it.
func TestAPIRateLimited(t *testing.T) {
	s := serve(t, `{"rate_limit": {"unauthenticated": 2, "authenticated": 0}}`, noPrefix())
	web := httptest.NewServer(s.srv.HTTP().Routes[0].Handler)
	defer web.Close()
	var codes []int
	for range 3 {
		resp, err := http.Post(web.URL+"/api/users", "application/json", strings.NewReader(`{"name":"ann"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if codes[0] == http.StatusTooManyRequests || codes[2] != http.StatusTooManyRequests {
		t.Fatalf("statuses %v, want the third refused with 429", codes)
	}
	for _, bad := range []string{`{"rate_limit": {"unauthenticated": -1, "authenticated": 1}}`, `{"rate_limit": {"window_seconds": -5, "unauthenticated": 1, "authenticated": 1}}`} {
		if err := New(OpenExample).Configure([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
