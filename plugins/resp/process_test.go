package resp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// processConfig enables the process tool with extra configuration.
func processConfig(extra string) string {
	return `{"process": {"enabled": true` + extra + `}}`
}

// freePort returns a loopback port nothing listens on (never 6379).
func freePort(t *testing.T) int {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port != 6379 {
			return port
		}
	}
}

// serverArgs are start's arguments for a disposable redis-server on port,
// persisting nothing, in its own directory.
func serverArgs(t *testing.T, port int, extra ...string) []string {
	return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, extra...)
}

func (e *env) proc(args map[string]any) *mcp.CallToolResult {
	e.t.Helper()
	return e.call(nil, "resp_process", args)
}

// startServer starts a redis-server through the tool and returns its start
// reply.
func (e *env) startServer(args []string) ProcessStartReply {
	e.t.Helper()
	res := e.proc(map[string]any{"action": "start", "args": args})
	r := decode[ProcessStartReply](e.t, res)
	if res.IsError || !strings.HasPrefix(r.Handle, "rp_") || r.PID <= 0 || !r.Running {
		b, _ := json.Marshal(res.StructuredContent)
		e.t.Fatalf("start: %s", b)
	}
	return r
}

func (e *env) status(handle string) ProcessInfo {
	e.t.Helper()
	res := e.proc(map[string]any{"action": "status", "handle": handle})
	if res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		e.t.Fatalf("status: %s", b)
	}
	return decode[ProcessInfo](e.t, res)
}

func (e *env) logs(handle string, since int64, max int) ProcessLogsReply {
	e.t.Helper()
	args := map[string]any{"action": "logs", "handle": handle, "since_sequence": since}
	if max > 0 {
		args["max_bytes"] = max
	}
	res := e.proc(args)
	if res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		e.t.Fatalf("logs: %s", b)
	}
	return decode[ProcessLogsReply](e.t, res)
}

// logText decodes a page's data.
func logText(t *testing.T, r ProcessLogsReply) string {
	t.Helper()
	if r.Encoding == EncodingBase64 {
		b, err := base64.StdEncoding.DecodeString(r.Data)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return r.Data
}

// procState returns the state letter of process pid (/proc/PID/stat: R,
// S, T for stopped, Z, ...), or 0.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) {
		return b[i+2]
	}
	return 0
}

// procGone reports whether pid has left the process table (exited and
// reaped: no zombie either).
func procGone(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return os.IsNotExist(err)
}

// TestProcessDisabled: without process.enabled the tool is not served.
func TestProcessDisabled(t *testing.T) {
	e := connect(t, "{}", "")
	tools, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "resp_process" {
			t.Fatal("the process tool is served while process control is disabled")
		}
	}
	on := connect(t, processConfig(""), "")
	failure(t, on.call(nil, "resp_process", map[string]any{"action": "launch"}), mcpcore.KindBadParams)
}

// TestProcessLifecycle: start acknowledges a spawn with a handle and PID;
// the server comes up on its own (logs and a connection say so); logs page
// by byte cursors without loss; stop terminates it with SIGTERM, reaps it
// and releases the handle.
func TestProcessLifecycle(t *testing.T) {
	port := freePort(t)
	e := connect(t, fmt.Sprintf(`{"targets": {"child": {"port": %d}}, "process": {"enabled": true}}`, port), "")
	st := e.startServer(serverArgs(t, port))
	if st.Note == "" || st.Binary == "" || !filepath.IsAbs(st.Binary) || st.Args[1] != strconv.Itoa(port) {
		t.Fatalf("start = %+v", st)
	}
	waitFor(t, func() bool {
		return strings.Contains(logText(t, e.logs(st.Handle, 0, 0)), "Ready to accept connections")
	})
	if r := e.exec(cmd("SET", "owned", "yes"), cmd("GET", "owned")); r.Replies[1].Str(t) != "yes" {
		t.Fatalf("the started server: %+v", r)
	}

	// Pages of 100 bytes concatenate to the whole log.
	var whole strings.Builder
	var seq int64
	for {
		page := e.logs(st.Handle, seq, 100)
		if page.SinceSequence != seq || page.MissedBytes != 0 || page.Bytes > 100 || page.NextSequence != seq+int64(page.Bytes) {
			t.Fatalf("page at %d: %+v", seq, page)
		}
		whole.WriteString(logText(t, page))
		seq = page.NextSequence
		if !page.More {
			break
		}
	}
	if full := logText(t, e.logs(st.Handle, 0, MaxLogPage)); !strings.HasPrefix(full, whole.String()) || whole.Len() == 0 {
		t.Fatalf("paged log %q is not a prefix of the whole %q", whole.String(), full)
	}
	failure(t, e.proc(map[string]any{"action": "logs", "handle": st.Handle, "since_sequence": 1 << 40}), mcpcore.KindBadParams)
	failure(t, e.proc(map[string]any{"action": "logs", "handle": st.Handle, "max_bytes": MaxLogPage + 1}), mcpcore.KindBadParams)

	list := decode[ProcessListReply](t, e.proc(map[string]any{"action": "status"}))
	if len(list.Processes) != 1 || list.Processes[0].Handle != st.Handle || !list.Processes[0].Running {
		t.Fatalf("status list = %+v", list)
	}
	res := e.proc(map[string]any{"action": "stop", "handle": st.Handle})
	stop := decode[ProcessStopReply](t, res)
	if res.IsError || stop.StoppedBy != "sigterm" || stop.Running || stop.ExitCode == nil || *stop.ExitCode != 0 || !stop.Released {
		t.Fatalf("stop = %+v", stop)
	}
	if !procGone(st.PID) {
		t.Fatalf("pid %d is still in the process table after stop", st.PID)
	}
	failure(t, e.proc(map[string]any{"action": "status", "handle": st.Handle}), KindProcessNotFound)
	failure(t, e.proc(map[string]any{"action": "stop", "handle": "rp_00000000000000000000000000000000"}), KindProcessNotFound)
}

// TestProcessKilledFromOutside: a child killed by someone else is reported
// as exited by that signal, its log still readable to the end; stop then
// only releases it.
func TestProcessKilledFromOutside(t *testing.T) {
	e := connect(t, processConfig(""), "")
	st := e.startServer(serverArgs(t, freePort(t)))
	waitFor(t, func() bool { return e.logs(st.Handle, 0, 0).Bytes > 0 })
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return !e.status(st.Handle).Running })
	info := e.status(st.Handle)
	if info.Signal != "killed" || info.ExitCode == nil || *info.ExitCode != -1 || info.ExitedAt == nil || info.Exit != "signal: killed" {
		t.Fatalf("status of a killed child = %+v", info)
	}
	waitFor(t, func() bool { return e.logs(st.Handle, 0, 0).Complete })
	if r := e.logs(st.Handle, 0, MaxLogPage); r.Running || !r.Complete || r.More || int64(r.Bytes) != info.LogBytes {
		t.Fatalf("logs of a killed child = %+v (log_bytes %d)", r, info.LogBytes)
	}
	if stop := decode[ProcessStopReply](t, e.proc(map[string]any{"action": "stop", "handle": st.Handle})); stop.StoppedBy != "already_exited" || !stop.Released {
		t.Fatalf("stop = %+v", stop)
	}
}

// TestProcessStopEscalates: a server that does not exit on SIGTERM
// within grace_ms (here stopped with SIGSTOP) is killed, reaped and
// released all the same.
func TestProcessStopEscalates(t *testing.T) {
	e := connect(t, processConfig(""), "")
	st := e.startServer(serverArgs(t, freePort(t)))
	waitFor(t, func() bool { return e.logs(st.Handle, 0, 0).Bytes > 0 })
	if err := syscall.Kill(st.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Until the server is scheduled it has not stopped, and a SIGTERM sent
	// meanwhile is delivered first (the lower number) and ends it.
	waitFor(t, func() bool { return procState(st.PID) == 'T' })
	start := time.Now()
	stop := decode[ProcessStopReply](t, e.proc(map[string]any{"action": "stop", "handle": st.Handle, "grace_ms": 300}))
	if stop.StoppedBy != "sigkill" || stop.Signal != "killed" || !stop.Released || time.Since(start) < 300*time.Millisecond || !procGone(st.PID) {
		t.Fatalf("stop of a stopped server = %+v after %v", stop, time.Since(start))
	}
}

// TestProcessLogOverflow: beyond child_log_bytes the oldest bytes are
// dropped and counted; a cursor in the dropped part reads on from the
// oldest retained byte and says how many it missed.
func TestProcessLogOverflow(t *testing.T) {
	e := connect(t, processConfig(""), `{"child_log_bytes": 1024}`)
	port := freePort(t)
	st := e.startServer(serverArgs(t, port, "--loglevel", "verbose"))
	waitFor(t, func() bool {
		return strings.Contains(logText(t, e.logs(st.Handle, 0, 0)), "Ready to accept connections")
	})
	// Every connection logs a line at verbose level.
	for e.status(st.Handle).LogBytes < 4096 {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		time.Sleep(time.Millisecond)
	}
	info := e.status(st.Handle)
	r := e.logs(st.Handle, 0, MaxLogPage)
	if info.DroppedBytes == 0 || r.DroppedBytes < info.DroppedBytes || r.MissedBytes != r.SinceSequence || r.SinceSequence < info.DroppedBytes ||
		r.Bytes > 1024 || r.NextSequence < info.LogBytes || r.SinceSequence+int64(r.Bytes) != r.NextSequence {
		t.Fatalf("overflowed log: status %+v, logs from 0 %+v", info, r)
	}
	if strings.Contains(logText(t, r), "Server initialized") {
		t.Fatalf("the first lines should have been dropped: %q", logText(t, r))
	}
}

// TestProcessLimits: child_processes bounds the handles held (an exited
// process keeps its slot until stop releases it) and help's runs; bad
// arguments are refused before anything is spawned.
func TestProcessLimits(t *testing.T) {
	e := connect(t, processConfig(""), `{"child_processes": 1}`)
	st := e.startServer(serverArgs(t, freePort(t)))
	failure(t, e.proc(map[string]any{"action": "start", "args": serverArgs(t, freePort(t))}), mcpcore.KindLimit)
	failure(t, e.proc(map[string]any{"action": "help"}), mcpcore.KindLimit)
	syscall.Kill(st.PID, syscall.SIGKILL)
	waitFor(t, func() bool { return !e.status(st.Handle).Running })
	failure(t, e.proc(map[string]any{"action": "start", "args": serverArgs(t, freePort(t))}), mcpcore.KindLimit)
	e.proc(map[string]any{"action": "stop", "handle": st.Handle})
	if res := e.proc(map[string]any{"action": "help"}); res.IsError {
		t.Fatalf("help after the slot was released: %+v", res.StructuredContent)
	}

	if r := failure(t, e.proc(map[string]any{"action": "start", "args": []string{"--port", "a\x00b"}}), mcpcore.KindBadParams); r.Error.Path != "/args/1" {
		t.Fatalf("NUL: %+v", r)
	}
	if r := failure(t, e.proc(map[string]any{"action": "start", "args": make([]string, MaxStartArgs+1)}), mcpcore.KindBadParams); r.Error.Path != "/args" {
		t.Fatalf("too many: %+v", r)
	}
	if r := failure(t, e.proc(map[string]any{"action": "stop"}), mcpcore.KindBadParams); r.Error.Path != "/handle" {
		t.Fatalf("no handle: %+v", r)
	}
	if r := failure(t, e.proc(map[string]any{"action": "stop", "handle": st.Handle, "grace_ms": MaxGraceMS + 1}), mcpcore.KindBadParams); r.Error.Path != "/grace_ms" {
		t.Fatalf("grace: %+v", r)
	}
	if list := decode[ProcessListReply](t, e.proc(map[string]any{"action": "status"})); len(list.Processes) != 0 {
		t.Fatalf("nothing should run: %+v", list)
	}
}

// TestProcessBinary: process.binary replaces redis-server from PATH; one
// that is missing or cannot run fails start, which says nothing runs.
func TestProcessBinary(t *testing.T) {
	bin, err := redistest.BinaryPath()
	if err != nil {
		t.Fatal(err)
	}
	e := connect(t, processConfig(fmt.Sprintf(`, "binary": %q`, bin)), "")
	res := e.proc(map[string]any{"action": "help"})
	help := decode[ProgramReply](t, res)
	if res.IsError || !help.Success || !strings.Contains(help.Output, "Usage") || help.Encoding != EncodingUTF8 {
		t.Fatalf("help = %+v", help)
	}
	res = e.proc(map[string]any{"action": "help", "args": []string{"restore"}})
	if help := decode[ProgramReply](t, res); res.IsError || help.Program != CheckerName || !strings.Contains(help.Output, "Usage: "+CheckerName) || help.Note == "" {
		t.Fatalf("help restore = %+v", help)
	}
	failure(t, e.proc(map[string]any{"action": "help", "args": []string{"--version"}}), mcpcore.KindBadParams)

	notProgram := filepath.Join(t.TempDir(), "redis-server")
	if err := os.WriteFile(notProgram, []byte("not a program\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"/nonexistent/redis-server", notProgram} {
		broken := connect(t, processConfig(fmt.Sprintf(`, "binary": %q`, bad)), "")
		if r := failure(t, broken.call(nil, "resp_process", map[string]any{"action": "start"}), mcpcore.KindOther); !strings.Contains(r.Error.Message, "nothing is running") {
			t.Fatalf("binary %s: %+v", bad, r)
		}
		if list := decode[ProcessListReply](t, broken.call(nil, "resp_process", map[string]any{"action": "status"})); len(list.Processes) != 0 {
			t.Fatalf("a failed start left %+v", list)
		}
	}
}

// TestProcessRestore: restore checks an RDB with the server's checker and
// places it in a new data directory, from which a started server loads the
// same keys; an existing directory and a corrupt file are refused, the
// latter leaving nothing behind.
func TestProcessRestore(t *testing.T) {
	src := redistest.Start(t, redistest.Options{})
	port := freePort(t)
	e := connect(t, fmt.Sprintf(`{"targets": {"src": {"port": %d}, "restored": {"port": %d}}, "default_target": "src", "process": {"enabled": true}}`,
		src.Port, port), "")
	e.exec(cmd("SET", "k1", "v1"), cmd("HSET", "h", "f", "v"), cmd("SAVE"))
	rdb := filepath.Join(src.Dir, "dump.rdb")
	want, err := os.ReadFile(rdb)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	res := e.proc(map[string]any{"action": "restore", "source": rdb, "data_dir": dir})
	r := decode[RestoreReply](t, res)
	sum := sha256.Sum256(want)
	if res.IsError || !r.Success || r.ExitCode != 0 || r.Bytes != int64(len(want)) || r.SHA256 != hex.EncodeToString(sum[:]) ||
		r.File != filepath.Join(dir, RestoredFile) || !strings.Contains(r.Output, "RDB looks OK") {
		t.Fatalf("restore = %+v", r)
	}
	if got, _ := os.ReadFile(r.File); !bytes.Equal(got, want) {
		t.Fatal("the restored file differs from the source")
	}
	st := e.startServer(append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, r.StartArgs...))
	waitFor(t, func() bool {
		return strings.Contains(logText(t, e.logs(st.Handle, 0, MaxLogPage)), "Ready to accept connections")
	})
	restored := e.open(nil, map[string]any{"target": "restored"})
	got := decode[execReply](t, e.execOn(nil, restored, cmd("GET", "k1"), cmd("HGET", "h", "f")))
	if got.Replies[0].Str(t) != "v1" || got.Replies[1].Str(t) != "v" {
		t.Fatalf("the restored server holds %+v", got)
	}
	e.proc(map[string]any{"action": "stop", "handle": st.Handle})

	if fr := failure(t, e.proc(map[string]any{"action": "restore", "source": rdb, "data_dir": dir}), KindRefused); !strings.Contains(fr.Error.Message, "already exists") {
		t.Fatalf("existing data_dir: %+v", fr)
	}
	corrupt := filepath.Join(t.TempDir(), "corrupt.rdb")
	os.WriteFile(corrupt, append(want[:len(want)/2:len(want)/2], "garbage"...), 0o600)
	bad := filepath.Join(t.TempDir(), "bad")
	res = e.proc(map[string]any{"action": "restore", "source": corrupt, "data_dir": bad})
	if r := decode[RestoreReply](t, res); !res.IsError || r.Success || r.ExitCode == 0 || r.File != "" || r.Output == "" {
		t.Fatalf("corrupt restore = %+v", r)
	}
	if _, err := os.Lstat(bad); !os.IsNotExist(err) {
		t.Fatalf("a failed restore left %s (%v)", bad, err)
	}
	for _, args := range []map[string]any{{"data_dir": bad}, {"source": rdb}, {"source": src.Dir, "data_dir": bad}} {
		args["action"] = "restore"
		failure(t, e.proc(args), mcpcore.KindBadParams)
	}
}

// TestProcessClose: closing the plugin (the sidecar's shutdown)
// terminates and reaps every owned child, running or not, and later calls
// find the tool closed; a server the tool did not start is untouched.
func TestProcessClose(t *testing.T) {
	foreign := redistest.Start(t, redistest.Options{})
	e := connect(t, processConfig(""), "")
	var pids []int
	for range 3 {
		pids = append(pids, e.startServer(serverArgs(t, freePort(t))).PID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !procGone(pid) {
			t.Fatalf("pid %d outlived the plugin's Close", pid)
		}
	}
	if foreign.Exited() {
		t.Fatal("Close stopped a server the tool did not start")
	}
	if _, err := e.plugin.procs.Start("", nil); !errors.Is(err, respengine.ErrClosed) || !strings.Contains(engineError(err).Error(), mcpcore.ErrClosed.Error()) {
		t.Fatalf("start after close: %v", err)
	}
}

// TestCapabilitiesPrivileges: the capabilities resource reports the
// management origins per target (never a token), the live and download
// limits, and process control with its binary and limits; its access map
// names exactly the privileged tools that are served.
func TestCapabilitiesPrivileges(t *testing.T) {
	t.Setenv("RESP_TEST_MGMT_TOKEN", "mgmt-secret")
	root := t.TempDir()
	read := func(e *env) (Capabilities, string) {
		t.Helper()
		res, err := e.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "resp://capabilities"})
		if err != nil {
			t.Fatal(err)
		}
		var c Capabilities
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &c); err != nil {
			t.Fatal(err)
		}
		tools, err := e.cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		served := map[string]bool{}
		for _, tl := range tools.Tools {
			if served[tl.Name] = true; c.Access[tl.Name] == "" {
				t.Errorf("the access map misses the served tool %s", tl.Name)
			}
		}
		for name := range c.Access {
			if strings.HasPrefix(name, "resp_") && !served[name] {
				t.Errorf("the access map names %s, which is not served", name)
			}
		}
		return c, res.Contents[0].Text
	}
	e := connect(t, fmt.Sprintf(`{"default_target": "a", "file_root": %q, "targets": {
		"a": {"port": 7001, "management_url": "http://127.0.0.1:7101", "management_token_env": "RESP_TEST_MGMT_TOKEN"}, "b": {"port": 7002}},
		"process": {"enabled": true, "binary": "/usr/bin/redis-server"}}`, root),
		`{"max_live_handles": 16, "download_bytes": 1048576, "child_processes": 4, "child_log_bytes": 2048}`)
	c, text := read(e)
	if !c.Privileges.Management || !c.Privileges.Live || !c.Privileges.Process || !c.Privileges.Downloads ||
		!c.Targets[0].Management || c.Targets[1].Management || len(c.Management.Targets) != 1 || c.Management.Targets[0] != "a" ||
		c.Management.MaxLiveHandles != 16 || c.Management.MaxDownloadBytes != 1048576 || c.Management.FileRoot != root ||
		!c.Process.Enabled || c.Process.Binary != "/usr/bin/redis-server" || c.Process.MaxChildren != 4 || c.Process.LogRetentionBytes != 2048 ||
		c.Access["resp_process"] == "" || c.Access["resp_management"] == "" || c.Access["resp_management_live"] == "" {
		t.Fatalf("capabilities = %s", text)
	}
	if strings.Contains(text, "mgmt-secret") {
		t.Fatal("the capabilities carry the management token")
	}

	off := connect(t, "{}", "")
	c, text = read(off)
	if c.Privileges.Management || c.Privileges.Live || c.Privileges.Process || c.Privileges.Downloads || c.Process.Enabled || c.Process.Binary != "" ||
		len(c.Management.Targets) != 0 || c.Management.MaxLiveHandles != 64 || c.Management.MaxDownloadBytes != 1<<30 ||
		c.Process.MaxChildren != 8 || c.Process.LogRetentionBytes != 64<<10 || c.Access["resp_process"] != "" || c.Access["resp_management"] != "" {
		t.Fatalf("default capabilities = %s", text)
	}
}
