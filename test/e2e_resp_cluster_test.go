package test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

// TestRespCluster: `mcpkit resp` with each node of a real three-master
// Redis Cluster configured as a named target: sessions are opened on a
// node by name; a command for a slot of another node comes back as the
// MOVED error reply it is, described as a redirect naming the configured
// target that serves the slot, and is not replayed there.
func TestRespCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, redistest.Options{})
	targets := map[string]any{}
	for i, n := range c.Nodes {
		targets["n"+strconv.Itoa(i)] = map[string]any{"host": "127.0.0.1", "port": n.Port}
	}
	cfg, err := json.Marshal(map[string]any{"default_target": "n0", "targets": targets})
	if err != nil {
		t.Fatal(err)
	}
	cs := startResp(t, nil, "--config", writeConfig(t, string(cfg)))

	// A key of a slot that node 2 serves.
	var key string
	var slot int
	for i := 0; ; i++ {
		key = "cluster:" + strconv.Itoa(i)
		if slot, err = strconv.Atoi(execute(t, cs, "", []any{"CLUSTER", "KEYSLOT", key})[0].Str(t)); err != nil {
			t.Fatal(err)
		}
		if c.Owner(slot) == 2 {
			break
		}
	}
	moved := fmt.Sprintf("MOVED %d %s", slot, c.Nodes[2].Addr)

	n0 := session(t, cs, map[string]any{"action": "open", "target": "n0"}).Session
	session(t, cs, map[string]any{"action": "send", "session": n0, "commands": [][]any{{"SET", key, "v"}, {"PING"}}})
	r, isErr := callAs[struct {
		sessionReply
		Redirects []struct {
			Index   int    `json:"index"`
			Kind    string `json:"kind"`
			Slot    int    `json:"slot"`
			Address string `json:"address"`
			Target  string `json:"target"`
		} `json:"redirects"`
	}](t, cs, "resp_session", map[string]any{"action": "receive", "format": "json", "session": n0, "max_frames": 2, "wait_ms": 5000})
	if isErr || len(r.Frames) != 2 || r.Frames[0].Type != "simple_error" || r.Frames[0].Str(t) != moved || r.Frames[1].Str(t) != "PONG" ||
		len(r.Redirects) != 1 || r.Redirects[0].Index != 0 || r.Redirects[0].Kind != "moved" || r.Redirects[0].Slot != slot ||
		r.Redirects[0].Address != c.Nodes[2].Addr || r.Redirects[0].Target != "n2" {
		t.Fatalf("receive on node 0: %+v", r)
	}
	n2 := session(t, cs, map[string]any{"action": "open", "target": "n2"}).Session
	if got := execute(t, cs, n2, []any{"EXISTS", key}); got[0].Str(t) != "0" {
		t.Fatalf("the SET sent to node 0 was replayed on node 2: EXISTS = %+v", got[0])
	}
	if got := execute(t, cs, n2, []any{"SET", key, "here"}, []any{"GET", key}); got[1].Str(t) != "here" {
		t.Fatalf("on the node that serves the slot: %+v", got)
	}
}
