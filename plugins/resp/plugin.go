// Package resp is mcpkit's RESP sidecar plugin: complete agent access to a
// Redis-protocol datastore (Redis, Valkey, any RESP server) through a few
// tools rather than one per command:
//
//   - <prefix>_execute (execute.go): ordered pipelines on a persistent
//     connection, replies as redis-cli shows them (the text form of
//     pkg/resp, lossless) or in lossless RESP3 JSON (format json);
//   - <prefix>_session (session.go): explicit connections (open, list,
//     close), send and receive for blocking commands, Pub/Sub and MONITOR,
//     and raw byte streams;
//   - <prefix>_commands (commands.go): the target's live command registry;
//   - <prefix>_process (process.go): when the operator enables it, server
//     processes the plugin starts, owns, and terminates and reaps on Close;
//   - <prefix>_management and <prefix>_management_live (management*.go):
//     a target's management API and its /api/live WebSocket;
//   - <prefix>_result: the core's paging of large results;
//
// and the resources <scheme>://capabilities and <scheme>://commands.
//
// The engine is package pkg/respengine (session registry, process
// supervisor, management and live clients, command registry) and the wire
// work (codec, connections, pipelines) package pkg/resp; neither holds MCP
// code. This package decodes the tools' arguments, calls them, and maps
// their values and typed errors back (engine.go). It never
// starts or restarts a datastore, never retries or replays a command, and
// reaches only the configured targets (config.go), never an address from
// a tool's arguments.
//
// A session is one dedicated connection. Each MCP client session has its
// own default session, dialled on first use and kept (SELECT and an open
// transaction survive between calls); explicit handles are unguessable and
// scoped to the caller's principal and MCP client session. A client of the
// 2026-07-28 era has no session that outlives a request over HTTP, so its
// default session and handles are scoped to its principal alone and end by
// idle expiry or close. Sessions run in parallel; calls on one session run
// one at a time, except that in manual mode a send and a receive overlap
// (pkg/respengine's Sessions; session.go).
package resp

import (
	"context"
	"errors"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
)

func init() {
	mcpcore.Register(mcpcore.PluginInfo{
		Name:        "resp",
		Description: "RESP sidecar: pipelines, sessions, blocking and Pub/Sub, the live command registry of a Redis-protocol datastore",
		New:         func() mcpcore.Plugin { return new(Plugin) },
		Limits:      Limits(),
	})
}

// Names of the plugin's own limits.
const (
	LimitMaxSessions    = respengine.LimitMaxSessions
	LimitMaxLiveHandles = respengine.LimitMaxLiveHandles
	LimitSessionIdle    = respengine.LimitSessionIdle
	LimitBatchCommands  = respengine.LimitBatchCommands
	LimitCommandBytes   = respengine.LimitCommandBytes
	LimitBatchBytes     = respengine.LimitBatchBytes
	LimitReplyBytes     = respengine.LimitReplyBytes
	LimitDownloadBytes  = respengine.LimitDownloadBytes
	LimitChildProcesses = respengine.LimitChildProcesses
	LimitChildLogBytes  = respengine.LimitChildLogBytes
)

// Limits declares the plugin's own limits, for its registration and for a
// program that embeds it ([mcpcore.Instance]).
func Limits() []mcpcore.LimitSpec {
	return []mcpcore.LimitSpec{
		{Name: LimitMaxSessions, Kind: mcpcore.LimitCount, Default: 64, Min: 1, Max: 4096, Unit: "sessions",
			Meaning: "RESP sessions open at once (default sessions and explicit handles; each holds one connection); opening one more fails"},
		{Name: LimitMaxLiveHandles, Kind: mcpcore.LimitCount, Default: 64, Min: 1, Max: 4096, Unit: "handles",
			Meaning: "management live (WebSocket) handles open at once, apart from RESP sessions"},
		{Name: LimitSessionIdle, Kind: mcpcore.LimitDuration, Default: int64(15 * time.Minute), Min: int64(time.Second), Max: int64(24 * time.Hour),
			Meaning: "how long a RESP session may stay unused before it is closed (a call in progress keeps it alive)"},
		{Name: LimitBatchCommands, Kind: mcpcore.LimitCount, Default: 1024, Min: 1, Max: 65536, Unit: "commands",
			Meaning: "commands in one execute or send batch; a larger batch is refused before anything is sent"},
		{Name: LimitCommandBytes, Kind: mcpcore.LimitBytes, Default: 8 * mcpcore.MiB, Min: 1 * mcpcore.KiB, Max: 512 * mcpcore.MiB,
			Meaning: "one framed command on the wire; a larger one is refused before anything is sent"},
		{Name: LimitBatchBytes, Kind: mcpcore.LimitBytes, Default: 16 * mcpcore.MiB, Min: 1 * mcpcore.KiB, Max: 1 * mcpcore.GiB,
			Meaning: "one framed batch on the wire; a larger one is refused before anything is sent"},
		{Name: LimitReplyBytes, Kind: mcpcore.LimitBytes, Default: 64 * mcpcore.MiB, Min: 1 * mcpcore.KiB, Max: 1 * mcpcore.GiB,
			Meaning: "decoded size of the replies one execute or receive may read (wire bytes plus about 100 bytes per value, so that it bounds memory); beyond it the call fails, the connection is closed and the unread replies have unknown outcomes"},
		{Name: LimitDownloadBytes, Kind: mcpcore.LimitBytes, Default: 1 * mcpcore.GiB, Min: 1 * mcpcore.KiB, Max: 1 * mcpcore.GiB,
			Meaning: "one management snapshot download; a larger one fails and its partial file is removed"},
		{Name: LimitChildProcesses, Kind: mcpcore.LimitCount, Default: 8, Min: 1, Max: 64, Unit: "processes",
			Meaning: "owned server processes at once (process tool): running, or exited and not yet released by stop; a help or restore run counts while it runs; starting one more fails"},
		{Name: LimitChildLogBytes, Kind: mcpcore.LimitBytes, Default: 64 * mcpcore.KiB, Min: 1 * mcpcore.KiB, Max: 64 * mcpcore.MiB,
			Meaning: "log bytes retained per owned process; older bytes are dropped and counted"},
	}
}

// Plugin is the RESP sidecar plugin.
type Plugin struct {
	cfg   *settings
	host  *mcpcore.Host
	reg   *respengine.Sessions
	cmds  *respengine.CommandRegistry
	procs *respengine.Processes
	mgmt  *management // nil unless a target has a management_url
}

var (
	_ mcpcore.Plugin     = (*Plugin)(nil)
	_ mcpcore.Configurer = (*Plugin)(nil)
)

// Configure implements mcpcore.Configurer: it decodes and resolves the
// [Config] (reading credentials and TLS files), so that a bad configuration
// stops the start. It connects to nothing.
func (p *Plugin) Configure(raw []byte) error {
	cfg, err := parseConfig(raw)
	if err != nil {
		return err
	}
	p.cfg = cfg
	return nil
}

// Attach implements mcpcore.Plugin: it adds the tools and resources and
// starts the idle reaper. It connects to nothing: the first call that needs
// a target dials it.
func (p *Plugin) Attach(ctx context.Context, h *mcpcore.Host) error {
	if p.cfg == nil {
		if err := p.Configure([]byte("{}")); err != nil {
			return err
		}
	}
	p.host = h
	p.reg = respengine.NewSessions(respengine.SessionOptions{DefaultTarget: p.cfg.targets[p.cfg.defaultTarget],
		MaxSessions: int(h.Limit(LimitMaxSessions)), Idle: time.Duration(h.Limit(LimitSessionIdle)),
		Batch: respengine.BatchLimits{Commands: h.Limit(LimitBatchCommands), CommandBytes: h.Limit(LimitCommandBytes), BatchBytes: h.Limit(LimitBatchBytes)}})
	p.cmds = new(respengine.CommandRegistry)
	for _, add := range []func() error{p.addExecute, p.addSession, p.addCommands, p.addProcess, p.addManagement, p.addResources} {
		if err := add(); err != nil {
			return err
		}
	}
	h.OnSessionEnd(func(cs *mcpcore.Session) { p.reg.CloseOwner(cs.Principal(), cs.ID()) })
	p.reg.Start(h.Context())
	return nil
}

// Close implements mcpcore.Plugin: it stops the reaper, closes every
// session's connection, terminates and reaps every process the process
// tool started, and waits for the management live handles to close.
func (p *Plugin) Close(ctx context.Context) error {
	if p.reg == nil {
		return nil
	}
	p.cmds.Close()
	errs := []error{p.procs.Close(ctx), p.reg.Close()}
	if p.mgmt != nil {
		errs = append(errs, p.mgmt.live.Close(ctx))
	}
	return errors.Join(errs...)
}
