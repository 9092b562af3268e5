package resp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
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
	MaxStartArgs     = 1024            // arguments of one start
	MaxStartArgBytes = 64 * 1024       // bytes of one argument
	DefaultLogPage   = 16 * 1024       // logs' default max_bytes
	MaxLogPage       = 1024 * 1024     // logs' largest max_bytes
	DefaultGraceMS   = 5000            // stop's default grace_ms
	MaxGraceMS       = 60_000          // stop's largest grace_ms
	closeGrace       = 5 * time.Second // how long Close lets children exit after SIGTERM
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

// ProcessInfo describes one owned process (start, status, stop).
type ProcessInfo struct {
	Handle    string     `json:"handle"`
	PID       int        `json:"pid"`
	Binary    string     `json:"binary"`
	Args      []string   `json:"args"`
	Running   bool       `json:"running"`
	StartedAt time.Time  `json:"started_at"`
	ExitedAt  *time.Time `json:"exited_at,omitempty"`
	// Exit is how the process ended ("exit status 1", "signal: killed"),
	// ExitCode its code, -1 when a signal ended it.
	Exit     string `json:"exit,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty" jsonschema:"the signal that ended the process, when one did"`
	// LogBytes is the bytes the process wrote to stdout and stderr so
	// far (the next log sequence), DroppedBytes those no longer retained.
	LogBytes     int64 `json:"log_bytes"`
	DroppedBytes int64 `json:"dropped_bytes"`
}

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

// ProcessStopReply is stop's result: the process has exited and been
// reaped, and the handle is released.
type ProcessStopReply struct {
	ProcessInfo
	// StoppedBy says what ended it: "sigterm", "sigkill", or
	// "already_exited" when it had ended before the stop.
	StoppedBy string `json:"stopped_by"`
	Released  bool   `json:"released"`
}

// ProcessLogsReply is one page of a process's output (stdout and stderr
// as they interleaved). Data is lossless: UTF-8 text, or base64 when the
// bytes are not valid UTF-8.
type ProcessLogsReply struct {
	Handle string `json:"handle"`
	// SinceSequence is the sequence of the page's first byte: the one
	// asked for, or the oldest retained one when older bytes were dropped
	// (MissedBytes says how many of those this read missed).
	SinceSequence int64  `json:"since_sequence"`
	NextSequence  int64  `json:"next_sequence"`
	Encoding      string `json:"encoding"`
	Data          string `json:"data"`
	Bytes         int    `json:"bytes"`
	MissedBytes   int64  `json:"missed_bytes"`
	DroppedBytes  int64  `json:"dropped_bytes"`
	// More: retained bytes follow NextSequence; read on from there.
	More    bool `json:"more"`
	Running bool `json:"running"`
	// Complete: the process has exited and all of its output has been
	// read into the log; nothing will follow the last byte.
	Complete bool `json:"complete"`
}

// ProgramReply is the result of help and restore: a run of the server
// binary (or its RDB checker) to completion, its output lossless.
type ProgramReply struct {
	Program  string   `json:"program"`
	Args     []string `json:"args"`
	Success  bool     `json:"success"`
	ExitCode int      `json:"exit_code"`
	Encoding string   `json:"encoding"`
	Output   string   `json:"output"`
	// OutputBytes counts the output; DroppedBytes the leading part of it
	// not retained (child_log_bytes bounds what is kept).
	OutputBytes  int64  `json:"output_bytes"`
	DroppedBytes int64  `json:"dropped_bytes"`
	Note         string `json:"note,omitempty"`
}

// RestoreReply is restore's result.
type RestoreReply struct {
	ProgramReply
	Source  string `json:"source"`
	DataDir string `json:"data_dir"`
	// File is the RDB placed in DataDir (only when Success); Bytes and
	// SHA256 describe it.
	File   string `json:"file,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// StartArgs are the arguments that start a server on the restored
	// data (add a port and the rest of the configuration).
	StartArgs []string `json:"start_args,omitempty"`
}

// addProcess adds the process tool when the operator enabled it
// (process.enabled); otherwise the tool is not served at all, and the
// capabilities resource says process control is off.
func (p *Plugin) addProcess() error {
	if !p.cfg.process.Enabled {
		return nil
	}
	p.procs = newProcesses(p.host, p.cfg.process)
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
	ps := p.procs
	switch in.Action {
	case ProcessHelp, ProcessStart, ProcessStatus, ProcessLogs, ProcessStop, ProcessRestore:
	default:
		return nil, &mcpcore.ParamError{Path: "/action", Reason: fmt.Sprintf("%q is not help, start, status, logs, stop or restore", in.Action)}
	}
	owner := mcpcore.Principal(req)
	switch in.Action {
	case ProcessHelp:
		return ps.help(ctx, in)
	case ProcessStart:
		if err := checkStartArgs(in.Args); err != nil {
			return nil, err
		}
		c, err := ps.start(owner, in.Args)
		if err != nil {
			return nil, err
		}
		return ProcessStartReply{ProcessInfo: c.info(), Note: "spawned, not necessarily ready: inspect status and logs (or connect) before relying on it"}, nil
	case ProcessStatus:
		if in.Handle == "" {
			out := ProcessListReply{Processes: []ProcessInfo{}}
			for _, c := range ps.list(owner) {
				out.Processes = append(out.Processes, c.info())
			}
			return out, nil
		}
		c, err := ps.find(owner, in.Handle)
		if err != nil {
			return nil, err
		}
		return c.info(), nil
	case ProcessLogs:
		return ps.logs(owner, in)
	case ProcessStop:
		grace := time.Duration(DefaultGraceMS) * time.Millisecond
		if in.GraceMS != nil {
			if *in.GraceMS < 0 || *in.GraceMS > MaxGraceMS {
				return nil, &mcpcore.ParamError{Path: "/grace_ms", Reason: fmt.Sprintf("%d is outside [0, %d]", *in.GraceMS, MaxGraceMS)}
			}
			grace = time.Duration(*in.GraceMS) * time.Millisecond
		}
		c, err := ps.find(owner, in.Handle)
		if err != nil {
			return nil, err
		}
		return ps.stop(ctx, c, grace), nil
	}
	return ps.restore(ctx, in)
}

// checkStartArgs refuses what no command line can carry, before anything
// is spawned.
func checkStartArgs(args []string) error {
	if len(args) > MaxStartArgs {
		return &mcpcore.ParamError{Path: "/args", Reason: fmt.Sprintf("%d arguments, at most %d", len(args), MaxStartArgs)}
	}
	for i, a := range args {
		if len(a) > MaxStartArgBytes {
			return &mcpcore.ParamError{Path: fmt.Sprintf("/args/%d", i), Reason: fmt.Sprintf("%d bytes, at most %d", len(a), MaxStartArgBytes)}
		}
		if strings.IndexByte(a, 0) >= 0 {
			return &mcpcore.ParamError{Path: fmt.Sprintf("/args/%d", i), Reason: "contains a NUL byte, which no command line can carry"}
		}
	}
	return nil
}

// logs reads one page of a process's log.
func (ps *processes) logs(owner string, in ProcessArgs) (any, error) {
	c, err := ps.find(owner, in.Handle)
	if err != nil {
		return nil, err
	}
	max := in.MaxBytes
	if max == 0 {
		max = DefaultLogPage
	}
	if max < 0 || max > MaxLogPage {
		return nil, &mcpcore.ParamError{Path: "/max_bytes", Reason: fmt.Sprintf("%d is outside [1, %d]", max, MaxLogPage)}
	}
	var since int64
	if in.SinceSequence != nil {
		since = *in.SinceSequence
	}
	complete := c.outputDone()
	page := c.log.read(since, max)
	if since < 0 || since > page.end {
		return nil, &mcpcore.ParamError{Path: "/since_sequence", Reason: fmt.Sprintf("%d is outside [0, %d] (the log's next_sequence)", since, page.end)}
	}
	enc, data := encodeBytes(page.data)
	return ProcessLogsReply{Handle: c.handle, SinceSequence: page.first, NextSequence: page.next, Encoding: enc, Data: data, Bytes: len(page.data),
		MissedBytes: page.missed, DroppedBytes: page.dropped, More: page.next < page.end, Running: !c.exited(), Complete: complete && page.next == page.end}, nil
}
