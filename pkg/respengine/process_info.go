package respengine

import (
	"fmt"
	"time"
)

// Bounds of a log read.
const (
	DefaultLogPage = 16 * 1024   // Logs' default max
	MaxLogPage     = 1024 * 1024 // Logs' largest max
)

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

// Logs reads one page of owner's process handle's log: up to max bytes
// (0: DefaultLogPage) from the byte cursor since (0, or the NextSequence
// of the previous page).
func (ps *Processes) Logs(owner, handle string, since int64, max int) (ProcessLogsReply, error) {
	c, err := ps.find(owner, handle)
	if err != nil {
		return ProcessLogsReply{}, err
	}
	if max == 0 {
		max = DefaultLogPage
	}
	if max < 0 || max > MaxLogPage {
		return ProcessLogsReply{}, &ArgError{Arg: "max_bytes", Reason: fmt.Sprintf("%d is outside [1, %d]", max, MaxLogPage)}
	}
	complete := c.outputDone()
	page := c.log.read(since, max)
	if since < 0 || since > page.end {
		return ProcessLogsReply{}, &ArgError{Arg: "since_sequence", Reason: fmt.Sprintf("%d is outside [0, %d] (the log's next_sequence)", since, page.end)}
	}
	enc, data := encodeBytes(page.data)
	return ProcessLogsReply{Handle: c.handle, SinceSequence: page.first, NextSequence: page.next, Encoding: enc, Data: data, Bytes: len(page.data),
		MissedBytes: page.missed, DroppedBytes: page.dropped, More: page.next < page.end, Running: !c.exited(), Complete: complete && page.next == page.end}, nil
}
