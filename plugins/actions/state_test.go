package actions

import (
	"context"
	"encoding/json"
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
// one Redis share their state: the rate limit counts calls to either, and
// a message posted through one is broadcast to a subscriber of the other's
// PubSub.
func TestSharedStateInRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Password: "s3cret-pw"})
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `{"redis": {"addr": "` + srv.Addr + `", "password_file": "` + pwFile + `", "prefix": "t:"},
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
