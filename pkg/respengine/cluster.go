package respengine

import (
	"bytes"
	"net"
	"slices"
	"strconv"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// Cluster targets: each node of a Redis Cluster is a configured target of
// its own, opened explicitly (the session tool's open with its name). The
// sidecar never follows a redirect: a MOVED or ASK error reply stays the
// reply it is, and is described beside the replies as a [Redirect], so
// that the agent decides where to send the command next (ASK: ASKING then
// the command, on a session to the named node). ASKING and READONLY hold
// for the connection they were sent on, which is the session's own.

// Kinds of a [Redirect].
const (
	RedirectMoved = "moved" // the slot lives on another node for good: send there
	RedirectAsk   = "ask"   // the slot is migrating: send ASKING, then the command, to that node, once
)

// Redirect describes a MOVED or ASK error reply: the command was not run,
// and nothing was sent anywhere else.
type Redirect struct {
	// Index is the reply's position among the call's replies (or frames).
	Index int    `json:"index"`
	Kind  string `json:"kind" jsonschema:"moved or ask"`
	Slot  int    `json:"slot"`
	// Address is the node's endpoint as the server gave it; Target the
	// configured target at that address, when there is one (open a
	// session to it); without one, the node is not reachable from here.
	Address string `json:"address"`
	Target  string `json:"target,omitempty"`
}

// Redirects finds the MOVED and ASK error replies among values, each with
// the name of the target among targets (by name) at its address.
func Redirects(values []resp.Value, targets map[string]*Target) []Redirect {
	var out []Redirect
	for i, v := range values {
		if !v.IsError() {
			continue
		}
		r, ok := parseRedirect(v.Str)
		if !ok {
			continue
		}
		r.Index = i
		r.Target = targetAt(targets, r.Address)
		out = append(out, r)
	}
	return out
}

// parseRedirect parses "MOVED <slot> <host:port>" or "ASK <slot>
// <host:port>".
func parseRedirect(msg []byte) (Redirect, bool) {
	f := bytes.Fields(msg)
	if len(f) != 3 {
		return Redirect{}, false
	}
	var r Redirect
	switch string(f[0]) {
	case "MOVED":
		r.Kind = RedirectMoved
	case "ASK":
		r.Kind = RedirectAsk
	default:
		return Redirect{}, false
	}
	slot, err := strconv.Atoi(string(f[1]))
	if err != nil || slot < 0 || slot >= 16384 {
		return Redirect{}, false
	}
	r.Slot, r.Address = slot, string(f[2])
	return r, true
}

// targetAt returns the name of the target among targets at addr
// (host:port as a server names a node), the first by name, or "".
func targetAt(targets map[string]*Target, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	want := net.JoinHostPort(host, port)
	names := make([]string, 0, len(targets))
	for name := range targets {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if targets[name].Addr == want {
			return name
		}
	}
	return ""
}
