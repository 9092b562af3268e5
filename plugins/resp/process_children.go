package resp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// DefaultServerBinary is the executable the process tool runs when
// process.binary is not set, looked up in PATH.
const DefaultServerBinary = "redis-server"

// processes owns the server processes the process tool started: it alone
// signals them, through their own process handles (never a PID read back
// from anywhere), so that a server it did not start is never touched.
// Every child is reaped by its waiter goroutine; close terminates them all
// and waits for every goroutine.
type processes struct {
	cfg      ProcessConfig
	max      int
	logBytes int
	logger   *slog.Logger

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

func newProcesses(h *mcpcore.Host, cfg ProcessConfig) *processes {
	return &processes{cfg: cfg, max: int(h.Limit(LimitChildProcesses)), logBytes: int(h.Limit(LimitChildLogBytes)),
		logger: h.Logger(), owned: map[string]*child{}}
}

// binary returns the server executable: process.binary, else
// redis-server from PATH.
func (ps *processes) binary() (string, error) { return serverBinary(ps.cfg) }

// serverBinary returns the server executable cfg selects: its binary,
// else redis-server from PATH.
func serverBinary(cfg ProcessConfig) (string, error) {
	if cfg.Binary != "" {
		return cfg.Binary, nil
	}
	bin, err := exec.LookPath(DefaultServerBinary)
	if err != nil {
		return "", mcpcore.Errorf(mcpcore.KindUnavailable, "the server binary: %w; set process.binary; nothing was run", err)
	}
	return bin, nil
}

// reserve counts one more child against child_processes.
func (ps *processes) reserve() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return mcpcore.Errorf(mcpcore.KindUnavailable, "%w", mcpcore.ErrClosed)
	}
	if n := len(ps.owned) + ps.running; n >= ps.max {
		return &mcpcore.LimitError{Limit: LimitChildProcesses, Max: int64(ps.max), Actual: int64(n + 1),
			Detail: "every owned process slot is taken (exited processes keep theirs until stop releases the handle); nothing was started"}
	}
	ps.running++
	return nil
}

func (ps *processes) unreserve() {
	ps.mu.Lock()
	ps.running--
	ps.mu.Unlock()
}

// start spawns the server binary with args, its stdout and stderr into a
// log of child_log_bytes, its stdin /dev/null.
func (ps *processes) start(owner string, args []string) (*child, error) {
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
	c := &child{handle: newProcessHandle(), owner: owner, binary: bin, args: slices.Clone(args), pid: cmd.Process.Pid,
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
		return nil, mcpcore.Errorf(mcpcore.KindUnavailable, "%w", mcpcore.ErrClosed)
	}
	return c, nil
}

// newProcessHandle returns 128 random bits: a handle cannot be guessed.
func newProcessHandle() string {
	var b [16]byte
	rand.Read(b[:])
	return "rp_" + hex.EncodeToString(b[:])
}

// processNotFound says the same whether the handle never existed, was
// released, or belongs to another principal.
func processNotFound(h string) error {
	return mcpcore.Errorf(KindProcessNotFound, "process %q is not owned by this caller (unknown, released by stop, or another principal's): status lists yours", h)
}

func (ps *processes) find(owner, handle string) (*child, error) {
	if handle == "" {
		return nil, &mcpcore.ParamError{Path: "/handle", Reason: "this action needs the handle start returned"}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	c := ps.owned[handle]
	if c == nil || c.owner != owner {
		return nil, processNotFound(handle)
	}
	return c, nil
}

// list returns owner's processes, oldest first.
func (ps *processes) list(owner string) []*child {
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

// stop terminates c (unless it has exited), reaps it and releases its
// handle. A ctx that ends meanwhile (timeout, cancellation) cuts the
// grace short: the process is killed rather than left running unowned.
func (ps *processes) stop(ctx context.Context, c *child, grace time.Duration) ProcessStopReply {
	by := c.terminate(ctx, grace)
	ps.release(c)
	return ProcessStopReply{ProcessInfo: c.info(), StoppedBy: by, Released: true}
}

// release forgets an exited child: its handle is unknown from now on.
// Output still held open by a grandchild is cut off.
func (ps *processes) release(c *child) {
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

// close terminates every owned process (SIGTERM, SIGKILL after
// closeGrace or when ctx ends), reaps them and waits for every goroutine; later
// calls find the tool closed. A nil ps has nothing to close.
func (ps *processes) close(ctx context.Context) error {
	if ps == nil { // Attach failed before the tool was added
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
func (ps *processes) runProgram(ctx context.Context, bin, argv0 string, args []string) (ProgramReply, error) {
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
