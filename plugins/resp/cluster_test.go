package resp

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

// clusterConfig names every node of c a target, n0 the default.
func clusterConfig(c *redistest.Cluster) string {
	var targets []string
	for i, n := range c.Nodes {
		targets = append(targets, fmt.Sprintf(`"n%d": {"port": %d}`, i, n.Port))
	}
	return `{"default_target": "n0", "targets": {` + strings.Join(targets, ", ") + `}}`
}

// redirectsReply is the session tool's receive result with its
// redirects.
type redirectsReply struct {
	Frames    json.RawMessage `json:"frames"`
	Redirects []Redirect      `json:"redirects"`
}

// TestCluster: against a real three-master cluster, each node is a named
// target opened explicitly; a MOVED or ASK reply is returned as the typed
// error it is, described (kind, slot, address, the configured target
// there), and never followed or replayed; ASKING and READONLY hold for
// the session's own connection only.
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, redistest.Options{})
	e := connect(t, clusterConfig(c), "")

	// A key that node 1 serves.
	var key string
	var slot int
	for i := 0; ; i++ {
		key = "k" + strconv.Itoa(i)
		n, err := strconv.Atoi(e.exec(cmd("CLUSTER", "KEYSLOT", key)).Replies[0].Str(t))
		if err != nil {
			t.Fatal(err)
		}
		if slot = n; c.Owner(slot) == 1 {
			break
		}
	}
	moved := fmt.Sprintf("MOVED %d %s", slot, c.Nodes[1].Addr)

	// execute on node 0: the error reply as it is, nothing replayed on node 1.
	res := e.call(nil, "resp_execute", map[string]any{"format": "json", "commands": [][]any{{"SET", key, "v"}}})
	r := decode[execReply](t, res)
	if !res.IsError || r.Outcome != OutcomeError || r.Replies[0].Type != "simple_error" || r.Replies[0].Str(t) != moved {
		t.Fatalf("SET on node 0: %+v", r)
	}
	if rd := decode[redirectsReply](t, res).Redirects; len(rd) != 1 || rd[0] != (Redirect{Index: 0, Kind: RedirectMoved, Slot: slot, Address: c.Nodes[1].Addr, Target: "n1"}) {
		t.Fatalf("execute's redirects: %+v", rd)
	}
	n1 := e.open(nil, map[string]any{"target": "n1"})
	if r := decode[execReply](t, e.execOn(nil, n1, cmd("GET", key))); r.Replies[0].Type != "null" {
		t.Fatalf("the redirected SET reached node 1: %+v", r)
	}

	// send/receive: the redirect described.
	n0 := e.open(nil, map[string]any{"target": "n0"})
	receive := func(session string, cmds ...[]any) redirectsReply {
		t.Helper()
		if res := e.call(nil, "resp_session", map[string]any{"action": "send", "session": session, "commands": cmds}); res.IsError {
			t.Fatalf("send: %+v", res.StructuredContent)
		}
		res := e.call(nil, "resp_session", map[string]any{"action": "receive", "format": "json", "session": session, "max_frames": len(cmds), "wait_ms": 5000})
		return decode[redirectsReply](t, res)
	}
	got := receive(n0, cmd("PING"), cmd("GET", key))
	if len(got.Redirects) != 1 || got.Redirects[0] != (Redirect{Index: 1, Kind: RedirectMoved, Slot: slot, Address: c.Nodes[1].Addr, Target: "n1"}) {
		t.Fatalf("receive: %s, redirects %+v", got.Frames, got.Redirects)
	}

	// ASK while the slot migrates from node 1 to node 2.
	n2 := e.open(nil, map[string]any{"target": "n2"})
	id := func(session string) string {
		return decode[execReply](t, e.execOn(nil, session, cmd("CLUSTER", "MYID"))).Replies[0].Str(t)
	}
	id1, id2 := id(n1), id(n2)
	for _, step := range []struct{ session, state, node string }{{n2, "IMPORTING", id1}, {n1, "MIGRATING", id2}} {
		if r := decode[execReply](t, e.execOn(nil, step.session, cmd("CLUSTER", "SETSLOT", slot, step.state, step.node))); r.Outcome != OutcomeOK {
			t.Fatalf("SETSLOT %s: %+v", step.state, r)
		}
	}
	n1manual := e.open(nil, map[string]any{"target": "n1"})
	got = receive(n1manual, cmd("GET", key))
	if len(got.Redirects) != 1 || got.Redirects[0] != (Redirect{Index: 0, Kind: RedirectAsk, Slot: slot, Address: c.Nodes[2].Addr, Target: "n2"}) {
		t.Fatalf("receive during migration: %s, redirects %+v", got.Frames, got.Redirects)
	}

	// ASKING holds for the next command on its own connection, across
	// calls on one session, and not on another session to the same node.
	other := e.open(nil, map[string]any{"target": "n2"})
	if r := decode[execReply](t, e.execOn(nil, n2, cmd("ASKING"))); r.Outcome != OutcomeOK {
		t.Fatalf("ASKING: %+v", r)
	}
	r = decode[execReply](t, e.execOn(nil, other, cmd("SET", key, "imported")))
	if r.Outcome != OutcomeError || r.Replies[0].Str(t) != moved {
		t.Fatalf("SET without ASKING on another session: %+v", r)
	}
	if r := decode[execReply](t, e.execOn(nil, n2, cmd("SET", key, "imported"), cmd("GET", key))); r.Replies[0].Str(t) != "OK" || r.Replies[1].Str(t) != moved {
		t.Fatalf("after ASKING, one command is served, the next is not: %+v", r)
	}

	// READONLY marks its own connection only.
	flags := func(session string) string {
		info := decode[execReply](t, e.execOn(nil, session, cmd("CLIENT", "INFO"))).Replies[0].Str(t)
		for _, f := range strings.Fields(info) {
			if v, ok := strings.CutPrefix(f, "flags="); ok {
				return v
			}
		}
		t.Fatalf("CLIENT INFO without flags: %q", info)
		return ""
	}
	e.execOn(nil, other, cmd("READONLY"))
	if a, b := flags(other), flags(n2); !strings.Contains(a, "r") || strings.Contains(b, "r") {
		t.Fatalf("READONLY: flags %q on its session, %q on another", a, b)
	}
}
