package resp

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Actions of the process tool.
const (
	ProcessHelp    = "help"
	ProcessStart   = "start"
	ProcessStatus  = "status"
	ProcessLogs    = "logs"
	ProcessStop    = "stop"
	ProcessRestore = "restore"
)

// ProcessTimeout is the process tool's own timeout: a stop waits up to
// MaxGraceMS for the server to exit, a restore copies and checks a whole
// RDB file.
const ProcessTimeout = mcpcore.MaxToolTimeout

// Bounds of the process tool's arguments.
const (
	MaxStartArgs     = respengine.MaxStartArgs     // arguments of one start
	MaxStartArgBytes = respengine.MaxStartArgBytes // bytes of one argument
	DefaultLogPage   = respengine.DefaultLogPage   // logs' default max_bytes
	MaxLogPage       = respengine.MaxLogPage       // logs' largest max_bytes
	DefaultGraceMS   = 5000                        // stop's default grace_ms
	MaxGraceMS       = 60_000                      // stop's largest grace_ms
)

// KindProcessNotFound: an unknown or released process handle, or one that
// another principal started.
const KindProcessNotFound = "process_not_found"

// ProcessArgs are the process tool's arguments; which apply depends on the
// action. Nothing in them names an executable, an environment or a working
// directory: the server binary is the configured one, started in the
// sidecar's own working directory and environment.
type ProcessArgs struct {
	Action        string   `json:"action" jsonschema:"help, start, status, logs, stop or restore"`
	Handle        string   `json:"handle,omitempty" jsonschema:"the handle start returned (status, logs, stop); status without one lists the caller's processes"`
	Args          []string `json:"args,omitempty" jsonschema:"start: the server's arguments, as on its command line (e.g. [\"--port\",\"7001\",\"--dir\",\"/srv/a\"]); help: [\"restore\"] for the RDB checker restore runs"`
	SinceSequence *int64   `json:"since_sequence,omitempty" jsonschema:"logs: the byte cursor to read from: 0 (the default) or the next_sequence of the previous page"`
	MaxBytes      int      `json:"max_bytes,omitempty" jsonschema:"logs: at most this many bytes (default 16384, at most 1048576)"`
	GraceMS       *int     `json:"grace_ms,omitempty" jsonschema:"stop: how long to wait after SIGTERM before SIGKILL, in milliseconds (default 5000, at most 60000)"`
	Source        string   `json:"source,omitempty" jsonschema:"restore: the RDB file to restore (a path on the sidecar's host)"`
	DataDir       string   `json:"data_dir,omitempty" jsonschema:"restore: the new data directory to create and place the RDB in as dump.rdb; an existing path is refused"`
}

// The results of the process tool are the engine's descriptions.
type (
	ProcessInfo      = respengine.ProcessInfo
	ProcessStopReply = respengine.ProcessStopReply
	ProcessLogsReply = respengine.ProcessLogsReply
	ProgramReply     = respengine.ProgramReply
	RestoreReply     = respengine.RestoreReply
)

// Names and encodings of the process tool's programs and output.
const (
	DefaultServerBinary = respengine.DefaultServerBinary
	CheckerName         = respengine.CheckerName
	RestoredFile        = respengine.RestoredFile
	EncodingUTF8        = respengine.EncodingUTF8
	EncodingBase64      = respengine.EncodingBase64
)

// ProcessStartReply is start's result: the process was spawned, which
// says nothing of its readiness (inspect status and logs).
type ProcessStartReply struct {
	ProcessInfo
	Note string `json:"note"`
}

// ProcessListReply is status's result without a handle.
type ProcessListReply struct {
	Processes []ProcessInfo `json:"processes"`
}

// addProcess adds the process tool when the operator enabled it
// (process.enabled); otherwise the tool is not served at all, and the
// capabilities resource says process control is off.
func (p *Plugin) addProcess() error {
	if !p.cfg.process.Enabled {
		return nil
	}
	p.procs = respengine.NewProcesses(respengine.ProcessOptions{Binary: p.cfg.process.Binary,
		MaxProcesses: int(p.host.Limit(LimitChildProcesses)), LogBytes: int(p.host.Limit(LimitChildLogBytes)), Logger: p.host.Logger()})
	mcpcore.AddTool(p.host, &mcp.Tool{Name: "process",
		Description: "Privileged host administration of RESP server processes, which the operator enabled. The executable is the configured server binary (redis-server by default); no shell, executable, environment or working directory comes from arguments. " +
			"help {args?: [\"restore\"]} runs the server's own help. start {args} spawns the server with any startup arguments and returns an owned handle and PID: spawning, not readiness; inspect status and logs. " +
			"status {handle?} (none: every process you own), logs {handle, since_sequence?, max_bytes?} (byte cursors: follow next_sequence; dropped and missed bytes are counted), " +
			"stop {handle, grace_ms?} (SIGTERM, SIGKILL after grace_ms; reaps and releases the handle; send SHUTDOWN first for a graceful save). " +
			"restore {source, data_dir} verifies an RDB file with the server's checker and places it in a NEW data directory as dump.rdb (an existing data_dir is refused). " +
			"Only processes started here are ever touched; all are terminated when the sidecar exits."},
		p.process, fastpath.Direct(mcpcore.ToolOptions{Timeout: ProcessTimeout}))
	return nil
}

func (p *Plugin) process(ctx context.Context, req *mcp.CallToolRequest, in ProcessArgs) (any, error) {
	out, err := p.processAction(ctx, mcpcore.Principal(req), in)
	if err != nil {
		return nil, engineError(err)
	}
	return out, nil
}

// processAction runs one action of the process tool for owner. A help or
// restore whose program failed is an error result carrying its reply.
func (p *Plugin) processAction(ctx context.Context, owner string, in ProcessArgs) (any, error) {
	ps := p.procs
	switch in.Action {
	case ProcessHelp:
		reply, err := ps.Help(ctx, in.Args)
		if err == nil && !reply.Success {
			return nil, mcpcore.ErrorResult(reply)
		}
		return reply, err
	case ProcessStart:
		info, err := ps.Start(owner, in.Args)
		if err != nil {
			return nil, err
		}
		return ProcessStartReply{ProcessInfo: info, Note: "spawned, not necessarily ready: inspect status and logs (or connect) before relying on it"}, nil
	case ProcessStatus:
		if in.Handle == "" {
			return ProcessListReply{Processes: ps.List(owner)}, nil
		}
		return ps.Status(owner, in.Handle)
	case ProcessLogs:
		var since int64
		if in.SinceSequence != nil {
			since = *in.SinceSequence
		}
		return ps.Logs(owner, in.Handle, since, in.MaxBytes)
	case ProcessStop:
		grace := time.Duration(DefaultGraceMS) * time.Millisecond
		if in.GraceMS != nil {
			if *in.GraceMS < 0 || *in.GraceMS > MaxGraceMS {
				return nil, &mcpcore.ParamError{Path: "/grace_ms", Reason: fmt.Sprintf("%d is outside [0, %d]", *in.GraceMS, MaxGraceMS)}
			}
			grace = time.Duration(*in.GraceMS) * time.Millisecond
		}
		return ps.Stop(ctx, owner, in.Handle, grace)
	case ProcessRestore:
		reply, err := ps.Restore(ctx, in.Source, in.DataDir)
		if err == nil && !reply.Success {
			return nil, mcpcore.ErrorResult(reply)
		}
		return reply, err
	}
	return nil, &mcpcore.ParamError{Path: "/action", Reason: fmt.Sprintf("%q is not help, start, status, logs, stop or restore", in.Action)}
}
