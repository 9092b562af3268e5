package respengine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// CommandEntry is one command of the registry: its COMMAND INFO entry and
// its COMMAND DOCS map, as the server returned them.
type CommandEntry struct {
	Name string     `json:"name"`
	Info resp.Value `json:"info"`
	Docs resp.Value `json:"docs"`
}

// CommandsReply is one page of the registry, sorted by name.
type CommandsReply struct {
	Target string `json:"target"`
	// Count is COMMAND COUNT: the server's top-level commands.
	Count int64 `json:"count"`
	// Matching counts the names (subcommands included) that match prefix.
	Matching   int            `json:"matching"`
	Commands   []CommandEntry `json:"commands"`
	NextCursor *string        `json:"next_cursor"`
}

// CommandRegistry keeps each target's command registry (COMMAND LIST,
// INFO and DOCS) until its COMMAND COUNT changes (a module loaded or
// unloaded), with one connection per target for the lookups, apart from
// the sessions. Close closes those connections.
type CommandRegistry struct {
	mu      sync.Mutex
	targets map[string]*targetCommands
	closed  bool
}

type targetCommands struct {
	mu      sync.Mutex // one lookup at a time per target
	conn    *resp.Conn
	count   int64
	names   []string                // sorted
	entries map[string]CommandEntry // filled page by page
}

// of returns the cache of a target, or nil once the plugin is closed.
func (c *CommandRegistry) of(name string) *targetCommands {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if c.targets == nil {
		c.targets = map[string]*targetCommands{}
	}
	tc := c.targets[name]
	if tc == nil {
		tc = &targetCommands{}
		c.targets[name] = tc
	}
	return tc
}

// Close closes the lookup connections; a lookup in progress finishes
// first, and none starts after ([ErrClosed]).
func (c *CommandRegistry) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, tc := range c.targets {
		tc.mu.Lock()
		if tc.conn != nil {
			tc.conn.Close()
			tc.conn = nil
		}
		tc.mu.Unlock()
	}
}

// Page returns one page of t's registry: up to limit commands (subcommands
// included, named like config|get) whose name starts with prefix
// (case-insensitive), after cursor (the NextCursor of the previous page),
// sorted by name. It refreshes the registry when COMMAND COUNT changed.
func (c *CommandRegistry) Page(ctx context.Context, t *Target, prefix, cursor string, limit int) (CommandsReply, error) {
	tc := c.of(t.Name)
	if tc == nil {
		return CommandsReply{}, ErrClosed
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	out, err := tc.page(ctx, t, strings.ToLower(prefix), cursor, limit)
	if err != nil {
		if tc.conn != nil {
			tc.conn.Close()
			tc.conn = nil
		}
		return CommandsReply{}, err
	}
	return out, nil
}

// page refreshes the registry when COMMAND COUNT changed and returns the
// page after cursor. The caller holds tc.mu.
func (tc *targetCommands) page(ctx context.Context, t *Target, prefix, cursor string, limit int) (CommandsReply, error) {
	if tc.conn == nil {
		c, err := Dial(ctx, t)
		if err != nil {
			return CommandsReply{}, err
		}
		tc.conn = c
	}
	count, err := tc.do(ctx, t, "COMMAND", "COUNT")
	if err != nil {
		return CommandsReply{}, err
	}
	if count.Kind != resp.KindInteger {
		return CommandsReply{}, fmt.Errorf("target %q: COMMAND COUNT answered %s, not an integer", t.Name, count.Kind)
	}
	if count.Int != tc.count || tc.names == nil {
		list, err := tc.do(ctx, t, "COMMAND", "LIST")
		if err != nil {
			return CommandsReply{}, err
		}
		names := make([]string, 0, len(list.Elems))
		for _, v := range list.Elems {
			names = append(names, strings.ToLower(string(v.Str)))
		}
		slices.Sort(names)
		tc.count, tc.names, tc.entries = count.Int, slices.Compact(names), map[string]CommandEntry{}
	}
	var matching []string
	for _, n := range tc.names {
		if strings.HasPrefix(n, prefix) {
			matching = append(matching, n)
		}
	}
	start, _ := slices.BinarySearch(matching, cursor)
	if start < len(matching) && cursor != "" && matching[start] == cursor {
		start++
	}
	end := min(start+limit, len(matching))
	out := CommandsReply{Target: t.Name, Count: tc.count, Matching: len(matching), Commands: []CommandEntry{}}
	if err := tc.fill(ctx, t, matching[start:end]); err != nil {
		return CommandsReply{}, err
	}
	for _, n := range matching[start:end] {
		out.Commands = append(out.Commands, tc.entries[n])
	}
	if end < len(matching) {
		next := matching[end-1]
		out.NextCursor = &next
	}
	return out, nil
}

// fill looks up the INFO and DOCS of the names not cached yet.
func (tc *targetCommands) fill(ctx context.Context, t *Target, names []string) error {
	var missing []string
	for _, n := range names {
		if _, ok := tc.entries[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	info, err := tc.do(ctx, t, append([]string{"COMMAND", "INFO"}, missing...)...)
	if err != nil {
		return err
	}
	docs, err := tc.do(ctx, t, append([]string{"COMMAND", "DOCS"}, missing...)...)
	if err != nil {
		return err
	}
	if len(info.Elems) != len(missing) {
		return fmt.Errorf("target %q: COMMAND INFO answered %d entries for %d names", t.Name, len(info.Elems), len(missing))
	}
	// DOCS is a map (RESP3) or a flat array (RESP2) of name, doc; unknown
	// names are skipped.
	byName := map[string]resp.Value{}
	for i := 0; i+1 < len(docs.Elems); i += 2 {
		byName[strings.ToLower(string(docs.Elems[i].Str))] = docs.Elems[i+1]
	}
	for i, n := range missing {
		d, ok := byName[n]
		if !ok {
			d = resp.Value{Kind: resp.KindNull}
		}
		tc.entries[n] = CommandEntry{Name: n, Info: info.Elems[i], Docs: d}
	}
	return nil
}

// do runs one lookup command; a server error reply is an error.
func (tc *targetCommands) do(ctx context.Context, t *Target, args ...string) (resp.Value, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	v, err := tc.conn.Do(ctx, b...)
	if err != nil {
		return resp.Value{}, errorf(ErrUnavailable, "target %q (%s): %s %s: %w", t.Name, t.Addr, args[0], args[1], err)
	}
	if v.IsError() {
		return resp.Value{}, fmt.Errorf("target %q: %s %s: %s", t.Name, args[0], args[1], v.ErrorText())
	}
	return v, nil
}
