package actions

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// TestSharedStateInRedis: two instances of the example app configured with
// one Redis (and one PostgreSQL store) share their state: the rate limit
// counts calls to either, and a message posted through one is broadcast
// to a subscriber of the other's PubSub.
func TestSharedStateInRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Password: "s3cret-pw"})
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `{"redis": {"addr": "` + srv.Addr + `", "password_file": "` + pwFile + `", "prefix": "t:"}, ` + sharedData(t) + `,
		"rate_limit": {"unauthenticated": 3, "authenticated": 0}}`
	var apis []*httptest.Server
	var plugins []*Plugin
	for range 2 {
		p := New(OpenExample)
		c := mcpcore.DefaultConfig()
		c.Plugins = map[string]mcpcore.PluginConfig{"actions": {Config: json.RawMessage(cfg)}}
		s, err := mcpcore.NewServer(t.Context(), mcpcore.Options{Config: c, Instances: []mcpcore.Instance{{Name: "actions", Plugin: p}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		web := httptest.NewServer(s.HTTP().Routes[0].Handler)
		t.Cleanup(web.Close)
		apis, plugins = append(apis, web), append(plugins, p)
	}
	sub, err := plugins[1].state.pubsub.Subscribe(t.Context(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var codes []int
	for i, api := range []*httptest.Server{apis[0], apis[0], apis[1], apis[1]} {
		body := `{"channel":"shared","text":"m` + string(rune('0'+i)) + `","author":"a"}`
		resp, err := http.Post(api.URL+"/api/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if codes[0] != 200 || codes[2] != 200 || codes[3] != http.StatusTooManyRequests {
		t.Fatalf("statuses %v: the limit of 3 is not shared between the instances", codes)
	}
	msg := <-sub.C()
	if !strings.Contains(string(msg.Message.(json.RawMessage)), `"text":"m0"`) {
		t.Fatalf("broadcast seen by the other instance: %+v", msg)
	}
	if err := New(OpenExample).Configure([]byte(`{"redis": {"prefix": "x"}}`)); err == nil {
		t.Error("a Redis without an address was accepted")
	}
}

// TestSharedRedisNeedsSharedData: the example app's plugin refuses Redis
// (shared sessions, tokens and PubSub) beside data in memory or in a file,
// which each instance would number on its own, naming the fix; a
// PostgreSQL URL is accepted, and so is a program's own app (New), whose
// data the plugin knows nothing of.
func TestSharedRedisNeedsSharedData(t *testing.T) {
	const redis = `"redis": {"addr": "127.0.0.1:1"}`
	for _, tc := range []struct{ data, want string }{
		{`""`, "in this process's memory"},
		{`"/var/lib/mcpkit/app.db"`, `in the file "/var/lib/mcpkit/app.db"`},
		{`"relative/postgres://x"`, `in the file "relative/postgres://x"`},
	} {
		err := newExample().Configure([]byte(`{"data_path": ` + tc.data + `, ` + redis + `}`))
		if !errors.Is(err, mcpcore.ErrConfig) || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "data_path") || !strings.Contains(err.Error(), "postgres://") {
			t.Errorf("data_path %s beside redis: %v; want a configuration error naming the fix", tc.data, err)
		}
	}
	for _, data := range []string{"postgres://app@db:5432/mcpkit?mcpkit_store=actions", "POSTGRESQL://db/mcpkit"} {
		if err := newExample().Configure([]byte(`{"data_path": "` + data + `", ` + redis + `}`)); err != nil {
			t.Errorf("data_path %s beside redis: %v", data, err)
		}
	}
	if err := newExample().Configure([]byte(`{"data_path": "/var/lib/app.db"}`)); err != nil {
		t.Errorf("a file without redis: %v", err)
	}
	if err := New(OpenExample).Configure([]byte(`{` + redis + `}`)); err != nil {
		t.Errorf("a program's own app beside redis: %v", err)
	}
	// mcpkit actions start: --data FILE beside the file's redis.
	file := mcpcore.DefaultConfig()
	file.Plugins = map[string]mcpcore.PluginConfig{"actions": {Config: json.RawMessage(`{` + redis + `}`)}}
	opts, _, err := startOptions(file, "/tmp/app.db", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	_, err = mcpcore.NewServer(t.Context(), opts)
	if !errors.Is(err, mcpcore.ErrConfig) || !strings.Contains(err.Error(), `in the file "/tmp/app.db"`) {
		t.Errorf("actions start --data FILE beside redis: %v", err)
	}
}

// OpenExample refuses the same split when a program serves the example
// app through New, whose Configure does not check it.
func TestOpenExampleRefusesLocalDataBesideRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := mcpcore.DefaultConfig()
	c.Plugins = map[string]mcpcore.PluginConfig{"actions": {Config: json.RawMessage(`{"redis": {"addr": "` + srv.Addr + `"}}`)}}
	_, err := mcpcore.NewServer(t.Context(), mcpcore.Options{Config: c, Instances: []mcpcore.Instance{{Name: "actions", Plugin: New(OpenExample)}}})
	if !errors.Is(err, mcpcore.ErrConfig) || !strings.Contains(err.Error(), "in this process's memory") {
		t.Fatalf("New(OpenExample) beside redis with data in memory: %v", err)
	}
}
