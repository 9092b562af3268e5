package mcpcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type nopPlugin struct{}

func (nopPlugin) Attach(context.Context, *Host) error { return nil }
func (nopPlugin) Close(context.Context) error         { return nil }

var registerOK sync.Once

func registerNop() {
	Register(PluginInfo{Name: "reg-ok", New: func() Plugin { return nopPlugin{} }, Default: true})
}

func TestRegisterRejectsBadRegistrations(t *testing.T) {
	newNop := func() Plugin { return nopPlugin{} }
	registerOK.Do(registerNop)
	for _, tc := range []struct {
		name string
		info PluginInfo
	}{
		{"duplicate", PluginInfo{Name: "reg-ok", New: newNop}},
		{"empty name", PluginInfo{Name: "", New: newNop}},
		{"invalid name", PluginInfo{Name: "Bad Name", New: newNop}},
		{"nil New", PluginInfo{Name: "reg-nil"}},
		{"bad limit", PluginInfo{Name: "reg-lim", New: newNop, Limits: []LimitSpec{{Name: "x", Kind: LimitCount, Default: 2, Max: 1, Meaning: "m"}}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", tc.name)
				}
			}()
			Register(tc.info)
		}()
	}
	if _, ok := LookupPlugin("reg-ok"); !ok {
		t.Fatal("registered plugin not found")
	}
	found := false
	for _, n := range DefaultPluginNames() {
		found = found || n == "reg-ok"
	}
	if !found {
		t.Fatal("default plugin not listed as default")
	}
}

var testLimits = []LimitSpec{
	{Name: "batch", Kind: LimitCount, Default: 10, Min: 1, Max: 100, Unit: "commands", Meaning: "commands in one batch"},
	{Name: "reply_bytes", Kind: LimitBytes, Default: MiB, Min: KiB, Max: GiB, Meaning: "bytes of one reply"},
	{Name: "idle", Kind: LimitDuration, Default: int64(time.Minute), Min: int64(time.Second), Max: int64(time.Hour), Meaning: "idle time of a connection"},
}

var (
	registerLimited sync.Once
	lastLimited     *limitedPlugin // the last one New made (the registration outlives a test run: -count)
)

// limitedPlugin records the limits it reads at attach.
type limitedPlugin struct{ got map[string]int64 }

func (p *limitedPlugin) Attach(_ context.Context, h *Host) error {
	p.got = map[string]int64{}
	for _, l := range testLimits {
		p.got[l.Name] = h.Limit(l.Name)
	}
	return nil
}

func (p *limitedPlugin) Close(context.Context) error { return nil }

// TestPluginLimits: a plugin's declared limits are set under
// plugins.<name>.limits, strictly, read through Host.Limit, and listed in
// mcpkit://info under the plugin.
func TestPluginLimits(t *testing.T) {
	registerLimited.Do(func() {
		Register(PluginInfo{Name: "tl", Limits: testLimits, New: func() Plugin { lastLimited = &limitedPlugin{}; return lastLimited }})
	})
	serve := func(limits string) (*Server, error) {
		cfg := DefaultConfig()
		cfg.Plugins = map[string]PluginConfig{"tl": {Limits: json.RawMessage(limits)}}
		srv, err := NewServer(t.Context(), Options{Config: cfg, Plugins: []string{"tl"}})
		if err == nil {
			t.Cleanup(func() { srv.Close(context.Background()) })
		}
		return srv, err
	}
	srv, err := serve(`{"batch": 5, "idle": "15m"}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"batch": 5, "reply_bytes": MiB, "idle": int64(15 * time.Minute)}; !maps.Equal(lastLimited.got, want) {
		t.Fatalf("limits read = %v, want %v", lastLimited.got, want)
	}
	got := srv.Info().Plugins[0].Limits
	want := []LimitInfo{
		{Name: "batch", Kind: "count", Value: "5", Max: "100", Unit: "commands", Meaning: "commands in one batch"},
		{Name: "reply_bytes", Kind: "bytes", Value: "1048576", Max: "1073741824", Meaning: "bytes of one reply"},
		{Name: "idle", Kind: "duration", Value: "15m0s", Max: "1h0m0s", Meaning: "idle time of a connection"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("info limits = %+v", got)
	}
	for _, tc := range []struct{ limits, field, reason string }{
		{`{"bach": 5}`, "plugins.tl.limits.bach", `unknown field "bach": no such limit (known: batch, reply_bytes, idle)`},
		{`{"batch": 101}`, "plugins.tl.limits.batch", "101 is outside [1, 100]"},
		{`{"batch": "5"}`, "plugins.tl.limits.batch", "must be an integer"},
		{`{"idle": 60}`, "plugins.tl.limits.idle", "duration must be a string"},
		{`{"idle": "2h"}`, "plugins.tl.limits.idle", "2h0m0s is outside [1s, 1h0m0s]"},
		{`[]`, "plugins.tl.limits", "must be an object"},
	} {
		_, err := serve(tc.limits)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(ce.Reason, tc.reason) {
			t.Errorf("limits %s: %v, want a ConfigError on %s saying %q", tc.limits, err, tc.field, tc.reason)
		}
	}
	// A registered plugin's limits are checked even when it is not served.
	registerOK.Do(registerNop)
	cfg := DefaultConfig()
	cfg.Plugins = map[string]PluginConfig{"tl": {Limits: json.RawMessage(`{"nope": 1}`)}}
	if _, err := NewServer(t.Context(), Options{Config: cfg, Plugins: []string{"reg-ok"}}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "plugins.tl.limits.nope") {
		t.Fatalf("bad limits of an unserved plugin: %v", err)
	}
	h := &Host{name: "tl", limitValues: map[string]int64{}}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `limit "undeclared"`) {
			t.Fatalf("reading an undeclared limit: %v", r)
		}
	}()
	h.Limit("undeclared")
}

// TestEmbeddedInstances: a Go program serves plugin instances without the
// registry; they are configured, limited, attached and closed like
// registered ones, and the default plugins are not added to them.
func TestEmbeddedInstances(t *testing.T) {
	registerOK.Do(registerNop)
	closed := false
	p := &testPlugin{closed: &closed, attach: func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "limit"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) {
			return map[string]int64{"batch": h.Limit("batch")}, nil
		})
	}}
	cfg := DefaultConfig()
	prefix := "emb"
	cfg.Plugins = map[string]PluginConfig{"embedded": {Prefix: &prefix, Limits: json.RawMessage(`{"batch": 7}`)}}
	r := newRigOpts(t, Options{Config: cfg, Instances: []Instance{{Name: "embedded", Plugin: p, Limits: testLimits}}})
	if res := r.call(t, "emb_limit", struct{}{}); text(res) != `{"batch":7}` {
		t.Fatalf("emb_limit = %s", text(res))
	}
	if in := r.srv.Info(); len(in.Plugins) != 1 || in.Plugins[0].Name != "embedded" || len(in.Plugins[0].Limits) != 3 {
		t.Fatalf("info plugins = %+v, want only the instance", in.Plugins)
	}
	if err := r.srv.Close(context.Background()); err != nil || !closed {
		t.Fatalf("close: %v, instance closed %v", err, closed)
	}

	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Instances: []Instance{{Name: "x"}}}, `embedded instance "x": nil Plugin`},
		{Options{Instances: []Instance{{Name: "Bad", Plugin: nopPlugin{}}}}, `invalid plugin name "Bad"`},
		{Options{Instances: []Instance{{Name: "x", Plugin: nopPlugin{}, Limits: []LimitSpec{{Name: "n", Kind: LimitCount, Max: 1}}}}}, `limit "n": meaning`},
		{Options{Plugins: []string{"reg-ok"}, Instances: []Instance{{Name: "reg-ok", Plugin: nopPlugin{}}}}, "the name of another served plugin"},
		{Options{Config: Config{Plugins: map[string]PluginConfig{"ghost": {}}}, Instances: []Instance{{Name: "x", Plugin: nopPlugin{}}}}, "plugins.ghost: no such plugin is registered or embedded"},
		{Options{Config: Config{Enable: []string{"ghost"}}, Plugins: []string{"reg-ok"}}, `enable: unknown plugin "ghost"`},
	} {
		if _, err := NewServer(t.Context(), tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewServer(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// TestURIScheme: a plugin's resource scheme is always a valid RFC 3986
// scheme, and the SDK accepts resources under it.
func TestURIScheme(t *testing.T) {
	for _, tc := range []struct{ name, prefix, want string }{
		{"resp", "resp", "resp"},
		{"resp", "ffkv_2", "ffkv-2"},
		{"my_store", "", "my-store"},
		{"diag", "9x", "x-9x"},
		{"diag", "-a", "x--a"},
	} {
		h := &Host{name: tc.name, prefix: tc.prefix}
		if got := h.URIScheme(); got != tc.want || !validScheme(got) {
			t.Errorf("URIScheme(name %q, prefix %q) = %q, want %q", tc.name, tc.prefix, got, tc.want)
		}
		if got := h.ResourceURI("state"); got != tc.want+"://state" {
			t.Errorf("ResourceURI = %q", got)
		}
	}
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		h.AddResource(&mcp.Resource{URI: h.ResourceURI("state"), Name: "state"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "ok"}}}, nil
		})
	})
	cfg := DefaultConfig()
	prefix := "t_a"
	cfg.Plugins = map[string]PluginConfig{"ta": {Prefix: &prefix}}
	r := newRigOpts(t, Options{Config: cfg, Plugins: []string{"ta"}})
	res, err := r.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "t-a://state"})
	if err != nil || res.Contents[0].Text != "ok" {
		t.Fatalf("read t-a://state: %v %v", res, err)
	}
}

// TestPrompts: prompts are named like tools, collide like tools, and are
// listed in mcpkit://info.
func TestPrompts(t *testing.T) {
	registerTestPlugins()
	prompt := func(h *Host, name string) {
		h.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
		})
	}
	setAttach("ta", func(h *Host) { prompt(h, "x_y") })
	setAttach("tb", func(h *Host) { prompt(h, "y") })
	r := newRig(t, DefaultLimits(), "ta")
	if got := r.srv.Info().Plugins[0].Prompts; !slices.Equal(got, []string{"ta_x_y"}) {
		t.Fatalf("info prompts = %v", got)
	}
	if _, err := r.cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "ta_x_y"}); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	a, b := "p", "p_x"
	cfg.Plugins = map[string]PluginConfig{"ta": {Prefix: &a}, "tb": {Prefix: &b}}
	_, err := NewServer(t.Context(), Options{Config: cfg, Plugins: []string{"ta", "tb"}})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `prompt name collision: "p_x_y" of plugin "tb" is already served by plugin "ta"`) {
		t.Fatalf("prompt collision: %v", err)
	}
}
