package respengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultServerBinary is the executable [Processes] runs when
// [ProcessOptions.Binary] is not set, looked up in PATH.
const DefaultServerBinary = "redis-server"

// Names of the limits [Processes] reports in a [*LimitError].
const (
	LimitChildProcesses = "child_processes"
	LimitChildLogBytes  = "child_log_bytes"
)

// Bounds of Start's arguments.
const (
	MaxStartArgs     = 1024      // arguments of one start
	MaxStartArgBytes = 64 * 1024 // bytes of one argument
)

// closeGrace is how long Close lets children exit after SIGTERM.
const closeGrace = 5 * time.Second

// ProcessOptions configure [Processes].
type ProcessOptions struct {
	// Binary is the server executable ("": redis-server from PATH). Nothing
	// else is ever run: no shell, executable, environment or working
	// directory comes from a call.
	Binary string
	// MaxProcesses bounds the owned processes at once (running, or exited
	// and not yet released by Stop), help and restore runs included
	// (LimitChildProcesses).
	MaxProcesses int
	// LogBytes is the output retained per process (LimitChildLogBytes).
	LogBytes int
	// Logger receives a warning for a process that Close had to kill.
	Logger *slog.Logger
}

// Processes owns the server processes it started: it alone signals them,
// through their own process handles (never a PID read back from anywhere),
// so that a server it did not start is never touched. Every child is
// reaped by its waiter goroutine; Close terminates them all and waits for
// every goroutine. Each process belongs to the owner that started it (a
// principal): only that owner finds it.
type Processes struct {
	binaryPath string
	max        int
	logBytes   int
	logger     *slog.Logger

	wg sync.WaitGroup // waiters and log readers

	mu      sync.Mutex
	owned   map[string]*child
	running int // programs of help and restore, counted with owned
	closed  bool
}

// child is one owned process.
type child struct {
	handle  string
	owner   string // the principal that started it
	binary  string
	args    []string
	pid     int
	started time.Time
	cmd     *exec.Cmd
	log     *logRing
	out     *os.File      // the read end of its stdout and stderr
	done    chan struct{} // closed once reaped; state and exitedAt are set before
	logDone chan struct{} // closed once the output reached EOF (or out was closed)

	state    *os.ProcessState
	exitedAt time.Time
}

// NewProcesses returns an empty supervisor; it starts nothing.
func NewProcesses(opts ProcessOptions) *Processes {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Processes{binaryPath: opts.Binary, max: opts.MaxProcesses, logBytes: opts.LogBytes, logger: logger, owned: map[string]*child{}}
}

// binary returns the server executable: ProcessOptions.Binary, else
// redis-server from PATH.
func (ps *Processes) binary() (string, error) { return ServerBinary(ps.binaryPath) }

// ServerBinary returns the server executable configured as binary, else
// redis-server from PATH (an [ErrUnavailable] error when there is none).
func ServerBinary(binary string) (string, error) {
	if binary != "" {
		return binary, nil
	}
	bin, err := exec.LookPath(DefaultServerBinary)
	if err != nil {
		return "", errorf(ErrUnavailable, "the server binary: %w; set process.binary; nothing was run", err)
	}
	return bin, nil
}

// reserve counts one more child against child_processes.
func (ps *Processes) reserve() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return ErrClosed
	}
	if n := len(ps.owned) + ps.running; n >= ps.max {
		return &LimitError{Limit: LimitChildProcesses, Max: int64(ps.max), Actual: int64(n + 1),
			Detail: "every owned process slot is taken (exited processes keep theirs until stop releases the handle); nothing was started"}
	}
	ps.running++
	return nil
}

func (ps *Processes) unreserve() {
	ps.mu.Lock()
	ps.running--
	ps.mu.Unlock()
}

// Start spawns the server binary with args for owner, its stdout and
// stderr into a log of LogBytes, its stdin /dev/null, and returns it:
// spawned, which says nothing of its readiness.
func (ps *Processes) Start(owner string, args []string) (ProcessInfo, error) {
	c, err := ps.start(owner, args)
	if err != nil {
		return ProcessInfo{}, err
	}
	return c.info(), nil
}

// start is Start, returning the child.
func (ps *Processes) start(owner string, args []string) (*child, error) {
	if err := checkStartArgs(args); err != nil {
		return nil, err
	}
	bin, err := ps.binary()
	if err != nil {
		return nil, err
	}
	if err := ps.reserve(); err != nil {
		return nil, err
	}
	defer ps.unreserve()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: output pipe: %w", bin, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = childProcAttr()
	err = cmd.Start()
	w.Close() // the child holds its own copy
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("start %s: %w; nothing is running", bin, err)
	}
	c := &child{handle: newHandle("rp_"), owner: owner, binary: bin, args: slices.Clone(args), pid: cmd.Process.Pid,
		started: time.Now(), cmd: cmd, log: newLogRing(ps.logBytes), out: r, done: make(chan struct{}), logDone: make(chan struct{})}
	if c.args == nil {
		c.args = []string{}
	}
	ps.wg.Go(func() {
		io.Copy(c.log, r) // ends at EOF, or when release closes r
		close(c.logDone)
	})
	ps.wg.Go(func() {
		st, _ := cmd.Process.Wait()
		c.state, c.exitedAt = st, time.Now()
		close(c.done)
	})
	ps.mu.Lock()
	ps.owned[c.handle] = c
	closed := ps.closed
	ps.mu.Unlock()
	if closed { // close began meanwhile and will not see c: end it here
		c.terminate(context.Background(), 0)
		ps.release(c)
		return nil, ErrClosed
	}
	return c, nil
}

// processNotFound says the same whether the handle never existed, was
// released, or belongs to another principal.
func processNotFound(h string) error {
	return errorf(ErrProcessNotFound, "process %q is not owned by this caller (unknown, released by stop, or another principal's): status lists yours", h)
}

func (ps *Processes) find(owner, handle string) (*child, error) {
	if handle == "" {
		return nil, &ArgError{Arg: "handle", Reason: "this action needs the handle start returned"}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	c := ps.owned[handle]
	if c == nil || c.owner != owner {
		return nil, processNotFound(handle)
	}
	return c, nil
}

// Status describes owner's process handle.
func (ps *Processes) Status(owner, handle string) (ProcessInfo, error) {
	c, err := ps.find(owner, handle)
	if err != nil {
		return ProcessInfo{}, err
	}
	return c.info(), nil
}

// List describes owner's processes, oldest first.
func (ps *Processes) List(owner string) []ProcessInfo {
	out := []ProcessInfo{}
	for _, c := range ps.list(owner) {
		out = append(out, c.info())
	}
	return out
}

// list returns owner's processes, oldest first.
func (ps *Processes) list(owner string) []*child {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*child
	for _, c := range ps.owned {
		if c.owner == owner {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *child) int { return a.started.Compare(b.started) })
	return out
}

// exited reports whether the process has exited and been reaped.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// outputDone reports whether the process's output has all been read.
func (c *child) outputDone() bool {
	select {
	case <-c.logDone:
		return c.exited()
	default:
		return false
	}
}

func (c *child) info() ProcessInfo {
	page := c.log.read(0, 0)
	in := ProcessInfo{Handle: c.handle, PID: c.pid, Binary: c.binary, Args: c.args, Running: !c.exited(), StartedAt: c.started,
		LogBytes: page.end, DroppedBytes: page.dropped}
	if !in.Running {
		at := c.exitedAt
		in.ExitedAt = &at
	}
	if !in.Running && c.state != nil { // nil only if wait failed, which it does not for a started child
		code := c.state.ExitCode()
		in.ExitCode, in.Exit = &code, c.state.String()
		if ws, ok := c.state.Sys().(interface {
			Signaled() bool
			Signal() syscall.Signal
		}); ok && ws.Signaled() {
			in.Signal = ws.Signal().String()
		}
	}
	return in
}

// terminate ends the process if it still runs: SIGTERM, then SIGKILL once
// grace has passed or ctx has ended (at once when grace is 0), and waits
// until it is reaped. It returns what ended it.
func (c *child) terminate(ctx context.Context, grace time.Duration) string {
	if c.exited() {
		return "already_exited"
	}
	if grace > 0 {
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err == nil {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-c.done:
				return "sigterm"
			case <-t.C:
			case <-ctx.Done():
			}
		}
	}
	c.cmd.Process.Kill() // fails only once it has exited, which done then says
	<-c.done
	return "sigkill"
}

// Stop terminates owner's process handle (unless it has exited: SIGTERM,
// then SIGKILL after grace), reaps it and releases the handle. A ctx that
// ends meanwhile (timeout, cancellation) cuts the grace short: the process
// is killed rather than left running unowned.
func (ps *Processes) Stop(ctx context.Context, owner, handle string, grace time.Duration) (ProcessStopReply, error) {
	c, err := ps.find(owner, handle)
	if err != nil {
		return ProcessStopReply{}, err
	}
	by := c.terminate(ctx, grace)
	ps.release(c)
	return ProcessStopReply{ProcessInfo: c.info(), StoppedBy: by, Released: true}, nil
}

// release forgets an exited child: its handle is unknown from now on.
// Output still held open by a grandchild is cut off.
func (ps *Processes) release(c *child) {
	ps.mu.Lock()
	delete(ps.owned, c.handle)
	ps.mu.Unlock()
	select {
	case <-c.logDone:
	case <-time.After(100 * time.Millisecond): // a grandchild keeps the pipe open
		c.out.Close()
		<-c.logDone
	}
	c.out.Close()
}

// Close terminates every owned process (SIGTERM, SIGKILL after 5 seconds
// or when ctx ends), reaps them and waits for every goroutine; later calls
// fail with [ErrClosed]. A nil ps has nothing to close.
func (ps *Processes) Close(ctx context.Context) error {
	if ps == nil {
		return nil
	}
	ps.mu.Lock()
	ps.closed = true
	all := make([]*child, 0, len(ps.owned))
	for _, c := range ps.owned {
		all = append(all, c)
	}
	ps.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range all {
		wg.Go(func() {
			if by := c.terminate(ctx, closeGrace); by == "sigkill" {
				ps.logger.Warn("owned server process did not exit on SIGTERM: killed", "handle", c.handle, "pid", c.pid)
			}
			ps.release(c)
		})
	}
	wg.Wait()
	ps.wg.Wait()
	return nil
}

// runProgram runs the server binary to completion under ctx as argv0 with
// args (argv0 selects the binary's personality: redis-check-rdb is the
// server's own RDB checker), counted against child_processes, its output
// kept in a log of child_log_bytes.
func (ps *Processes) runProgram(ctx context.Context, bin, argv0 string, args []string) (ProgramReply, error) {
	if err := ps.reserve(); err != nil {
		return ProgramReply{}, err
	}
	defer ps.unreserve()
	out := newLogRing(ps.logBytes)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Args[0] = argv0
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	reply := ProgramReply{Program: argv0, Args: slices.Clone(args), ExitCode: cmd.ProcessState.ExitCode()}
	if reply.Args == nil {
		reply.Args = []string{}
	}
	data, dropped := out.all()
	reply.Encoding, reply.Output = encodeBytes(data)
	reply.OutputBytes, reply.DroppedBytes = dropped+int64(len(data)), dropped
	var ee *exec.ExitError
	switch {
	case err == nil:
		reply.Success = true
	case ctx.Err() != nil:
		return reply, fmt.Errorf("%s: %w", argv0, context.Cause(ctx))
	case errors.As(err, &ee):
	default:
		return reply, fmt.Errorf("run %s: %w", bin, err)
	}
	return reply, nil
}

// checkStartArgs refuses what no command line can carry, before anything
// is spawned.
func checkStartArgs(args []string) error {
	if len(args) > MaxStartArgs {
		return &ArgError{Arg: "args", Reason: fmt.Sprintf("%d arguments, at most %d", len(args), MaxStartArgs)}
	}
	for i, a := range args {
		if len(a) > MaxStartArgBytes {
			return &ArgError{Arg: fmt.Sprintf("args/%d", i), Reason: fmt.Sprintf("%d bytes, at most %d", len(a), MaxStartArgBytes)}
		}
		if strings.IndexByte(a, 0) >= 0 {
			return &ArgError{Arg: fmt.Sprintf("args/%d", i), Reason: "contains a NUL byte, which no command line can carry"}
		}
	}
	return nil
}
