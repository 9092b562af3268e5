package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a server with the store plugin (prefix "": the seed's tool
// names) and one client session.
type env struct {
	t      *testing.T
	srv    *mcpcore.Server
	plugin *Plugin
	cs     *mcp.ClientSession
	files  string // files_dir
}

// in returns e for the subtest t (whose failures it then reports).
func (e *env) in(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// backend is a way to open the store: in memory, or a file.
type backend struct {
	name string
	path func(t *testing.T) string // the store file ("" in memory)
}

var backends = []backend{
	{"memory", func(*testing.T) string { return "" }},
	{"file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") }},
}

// eachBackend runs fn in a subtest per backend, each with its own server
// and a files_dir.
func eachBackend(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			fn(t, connect(t, Config{Path: b.path(t), FilesDir: t.TempDir()}))
		})
	}
}

// connect serves the store plugin with cfg and the prefix "".
func connect(t *testing.T, cfg Config, core ...func(*mcpcore.Limits)) *env {
	t.Helper()
	e, err := tryConnect(t, cfg, core...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func tryConnect(t *testing.T, cfg Config, core ...func(*mcpcore.Limits)) (*env, error) {
	t.Helper()
	return connectWith(t, cfg, nil, core...)
}

// connectWith is tryConnect with the plugin's own limits (a JSON object,
// nil for the defaults).
func connectWith(t *testing.T, cfg Config, limits json.RawMessage, core ...func(*mcpcore.Limits)) (*env, error) {
	t.Helper()
	p := new(Plugin)
	cs, srv, err := serve(t, p, cfg, limits, core...)
	if err != nil {
		return nil, err
	}
	return &env{t: t, srv: srv, plugin: p, cs: cs, files: cfg.FilesDir}, nil
}

// serve serves p with cfg, its own limits (nil for the defaults) and the
// prefix "", to one client session, both closed at the end of tb.
func serve(tb testing.TB, p *Plugin, cfg Config, limits json.RawMessage, core ...func(*mcpcore.Limits)) (*mcp.ClientSession, *mcpcore.Server, error) {
	tb.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	c := mcpcore.DefaultConfig()
	for _, f := range core {
		f(&c.Limits)
	}
	prefix := ""
	c.Plugins = map[string]mcpcore.PluginConfig{"store": {Prefix: &prefix, Config: raw, Limits: limits}}
	return mcptest.Connect(tb, mcpcore.Options{Config: c, Instances: []mcpcore.Instance{{Name: "store", Plugin: p, Limits: Limits()}}})
}

// call calls tool with args, raw JSON (so that the test controls ints and
// floats exactly).
func (e *env) call(tool, args string) *mcp.CallToolResult {
	e.t.Helper()
	return callOn(e.t, e.cs, tool, args)
}

func callOn(t *testing.T, cs *mcp.ClientSession, tool, args string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return res
}

// text is a result's text: the same JSON as its structured content, which
// the SDK client would decode with every number a float64.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// ok calls tool and wants it to succeed; it returns the result's JSON.
func (e *env) ok(tool, args string) string {
	e.t.Helper()
	res := e.call(tool, args)
	if res.IsError {
		e.t.Fatalf("%s %s: %s", tool, args, text(res))
	}
	return text(res)
}

// okAs is ok decoded into T.
func okAs[T any](e *env, tool, args string) T {
	e.t.Helper()
	var v T
	out := e.ok(tool, args)
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		e.t.Fatalf("%s: decode %s: %v", tool, out, err)
	}
	return v
}

// errReply is a failed call's structured content.
type errReply struct {
	Error struct {
		Kind     string  `json:"kind"`
		Message  string  `json:"message"`
		Path     string  `json:"path"`
		Limit    string  `json:"limit"`
		Revision *uint64 `json:"revision"`
		Exists   *bool   `json:"exists"`
		Op       *int    `json:"op"` // write's failed operation
	} `json:"error"`
}

// fail calls tool and wants an error of kind; it returns the error.
func (e *env) fail(tool, args, kind string) errReply {
	e.t.Helper()
	res := e.call(tool, args)
	var r errReply
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil || !res.IsError || r.Error.Kind != kind {
		e.t.Fatalf("%s %s: want an error of kind %s, got %s", tool, args, kind, text(res))
	}
	return r
}

// badParams calls tool and wants bad_params at path.
func (e *env) badParams(tool, args, path string) errReply {
	e.t.Helper()
	r := e.fail(tool, args, mcpcore.KindBadParams)
	if r.Error.Path != path {
		e.t.Fatalf("%s %s: bad_params at %q (%s), want %q", tool, args, r.Error.Path, r.Error.Message, path)
	}
	return r
}

// seedTools are the seed's 29 tools, by the seed's names; the plugin
// serves them and write (storeTools).
var seedTools = []string{"backup", "compare_and_set", "count", "create_compound_index", "create_geo_index", "create_index", "create_scalar_index",
	"create_text_index", "delete", "delete_where", "dump", "geo", "get", "get_schema", "in_neighbors", "insert_auto", "join", "link", "list_collections", "load",
	"neighbors", "page", "patch", "phrase_search", "search", "set_schema", "store", "traverse", "unlink"}

// storeTools are the plugin's 30 tools: the seed's and write.
var storeTools = append(slices.Clone(seedTools), "write")

// TestTools: the plugin serves the seed's tools under the seed's names, write
// (and the core's read tool), each with a complete object input schema whose every
// argument has a description.
func TestTools(t *testing.T) {
	e := connect(t, Config{})
	list, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Name == "result" {
			continue
		}
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
		s := tool.InputSchema.(map[string]any)
		if s["type"] != "object" || s["additionalProperties"] == nil {
			t.Errorf("%s: input schema %v is not a closed object", tool.Name, s)
		}
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			if d, _ := p.(map[string]any)["description"].(string); d == "" {
				t.Errorf("%s: argument %s has no description", tool.Name, name)
			}
		}
	}
	want := append(slices.Clone(storeTools), "result")
	slices.Sort(want)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
}

// TestRegistered: through the registry (as `mcpkit serve --plugins store`)
// the plugin is not a default one and its tools carry the prefix "store".
func TestRegistered(t *testing.T) {
	info, ok := mcpcore.LookupPlugin("store")
	if !ok || info.Default {
		t.Fatalf("registration %+v, %v: want a registered plugin that is not a default one", info, ok)
	}
	cs, _, err := mcptest.Connect(t, mcpcore.Options{Plugins: []string{"store"}})
	if err != nil {
		t.Fatal(err)
	}
	callOK := func(tool, args string) string {
		res := callOn(t, cs, tool, args)
		if res.IsError {
			t.Fatalf("%s: %s", tool, text(res))
		}
		return text(res)
	}
	callOK("store_store", `{"collection": "c", "id": 1, "doc": {"a": 1}}`)
	if got := callOK("store_get", `{"collection": "c", "id": 1}`); got != `{"id":1,"revision":1,"doc":{"a":1}}` {
		t.Fatalf("store_get = %s", got)
	}
}

// TestConfig: unknown fields are refused, files_dir must be a directory,
// path may not be one; a file store is created where the path says.
func TestConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	for raw, field := range map[string]string{
		`{"paht": "x"}`:                      "json",
		`{"files_dir": "` + file + `"}`:      "files_dir",
		`{"files_dir": "` + dir + `/nope"}`:  "files_dir",
		`{"path": "` + dir + `"}`:            "path",
		`{"path": "x", "files_dir": 3}`:      "json",
		`{"path": "x"} {"path": "y"}`:        "json",
		`{"path": "x", "files-dir": "/tmp"}`: "json",
	} {
		var p Plugin
		err := p.Configure([]byte(raw))
		var ce *mcpcore.ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%s: %v, want a config error on %s", raw, err, field)
		}
	}
	path := filepath.Join(dir, "new.db")
	connect(t, Config{Path: path}).ok("store", `{"collection": "c", "id": "x", "doc": {}}`)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the store file was not created: %v", err)
	}
}
