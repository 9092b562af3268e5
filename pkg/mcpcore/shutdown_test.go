package mcpcore

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestInfoDuringClose: mcpkit://info may be read while the server closes
// (run with -race).
func TestInfoDuringClose(t *testing.T) {
	registerTestPlugins()
	setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "one"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) { return nil, nil })
	})
	srv, err := NewServer(t.Context(), Options{Plugins: []string{"ta"}})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if in := srv.Info(); len(in.Plugins) != 1 {
				t.Errorf("info during close lists %d plugins", len(in.Plugins))
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	time.Sleep(time.Millisecond)
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if err := srv.Close(context.Background()); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestCloseWithAbandonedHandler: when the shutdown deadline passes with a
// handler that ignores its context still running, Close says so in the log
// (plugin and count) before closing the plugin.
func TestCloseWithAbandonedHandler(t *testing.T) {
	registerTestPlugins()
	release := make(chan struct{})
	returned := make(chan struct{})
	entered := make(chan struct{})
	closed := setAttach("ta", func(h *Host) {
		AddTool(h, &mcp.Tool{Name: "stubborn"}, func(context.Context, *mcp.CallToolRequest, struct{}) (any, error) {
			defer close(returned)
			close(entered)
			<-release // ignores ctx
			return map[string]bool{"late": true}, nil
		})
	})
	logs := &logBuffer{}
	cfg := DefaultConfig()
	cfg.Limits.ToolTimeout = Duration(50 * time.Millisecond)
	srv, err := NewServer(t.Context(), Options{Config: cfg, Plugins: []string{"ta"}, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	cs, ss := connectMemory(t, srv.MCP())
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ta_stubborn", Arguments: struct{}{}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "timed out") {
		t.Fatalf("stubborn call: %v %s", err, text(res))
	}
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !*closed {
		t.Fatal("the plugin was not closed")
	}
	log := logs.String()
	if !strings.Contains(log, "closing a plugin while handlers of it still run") || !strings.Contains(log, "plugin=ta abandoned_calls=1") {
		t.Fatalf("the log does not say that a handler of ta still runs:\n%s", log)
	}
	close(release)
	<-returned
	cs.Close()
	ss.Wait()
	eventually(t, "the abandoned call to end", func() bool { return srv.Info().Calls.InFlight == 0 })
}

// TestLifetimeContext: Host.Context ends when Close starts, before the
// plugin's Close; new calls are then refused with kind unavailable.
func TestLifetimeContext(t *testing.T) {
	registerTestPlugins()
	var host *Host
	var ctxEndedBeforeClose bool
	workerDone := make(chan struct{})
	setAttach("ta", func(h *Host) {
		host = h
		go func() { // a background worker living as long as the server
			<-h.Context().Done()
			close(workerDone)
		}()
	})
	srv, err := NewServer(t.Context(), Options{Plugins: []string{"ta"}})
	if err != nil {
		t.Fatal(err)
	}
	srv.hosts[0].plugin.(*testPlugin).onClose = func() { ctxEndedBeforeClose = host.Context().Err() != nil }
	if host.Context().Err() != nil {
		t.Fatal("the lifetime ended before Close")
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-workerDone
	if !ctxEndedBeforeClose {
		t.Fatal("the plugin's Close ran while Host.Context was still live")
	}
	res, err := toolCall{host: host, tool: "ta_x", timeout: time.Second}.run(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}},
		func(context.Context) (any, error) { t.Error("a call ran after Close"); return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	if d := errorKind(t, res); d.Kind != KindUnavailable || !strings.Contains(d.Message, ErrClosed.Error()) {
		t.Fatalf("a call after Close: %+v", d)
	}
}

// eventually polls cond for up to 5 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
