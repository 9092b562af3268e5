package test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// processInfo is the process tool's start and status result.
type processInfo struct {
	Handle       string `json:"handle"`
	PID          int    `json:"pid"`
	Running      bool   `json:"running"`
	Signal       string `json:"signal"`
	ExitCode     *int   `json:"exit_code"`
	LogBytes     int64  `json:"log_bytes"`
	DroppedBytes int64  `json:"dropped_bytes"`
}

// processLogs is the process tool's logs result.
type processLogs struct {
	SinceSequence int64  `json:"since_sequence"`
	NextSequence  int64  `json:"next_sequence"`
	Encoding      string `json:"encoding"`
	Data          string `json:"data"`
	MissedBytes   int64  `json:"missed_bytes"`
	DroppedBytes  int64  `json:"dropped_bytes"`
}

func (l processLogs) text(t *testing.T) string {
	if l.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(l.Data)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return l.Data
}

// processesOn lists the PIDs of the process table whose command line
// names one of the loopback ports: redis-server retitles itself (and a
// save child) "redis-server 127.0.0.1:PORT". A zombie's is empty: the
// test checks the children's /proc entries too.
func processesOn(t *testing.T, ports []int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, port := range ports {
			if bytes.Contains(cmdline, []byte("127.0.0.1:"+strconv.Itoa(port))) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// exitedOrZombie reports whether pid has exited: gone from the process
// table, or a zombie waiting for its parent.
func exitedOrZombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// TestRespProcess: through the built binary, the process tool starts
// redis-servers that it owns; one killed from outside is reported so by
// status; log overflow is counted; and when the sidecar exits, on stdin
// EOF or on SIGTERM, every child it started is terminated and reaped: no
// process of theirs is left in the process table, not even a zombie.
func TestRespProcess(t *testing.T) {
	for _, exit := range []string{"stdin EOF", "SIGTERM"} {
		t.Run(exit, func(t *testing.T) {
			dirs := t.TempDir()
			cfg := writeConfig(t, `{"plugins": {"resp": {"config": {"process": {"enabled": true}}, "limits": {"child_log_bytes": 1024}}}}`)
			sp := startStdio(t, "--plugins", "resp", "--config", cfg)
			cs := sp.connect(t, legacyEra)
			proc := func(args map[string]any) *mcp.CallToolResult { return callTool(t, cs, "resp_process", args) }

			var children []processInfo
			ports := []int{}
			for i := range 3 {
				port := freeLoopbackPort(t)
				dir := filepath.Join(dirs, strconv.Itoa(i))
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "verbose"}
				if i == 2 { // its own log file outlives the sidecar: it tells how the server ended
					args = append(args, "--logfile", filepath.Join(dir, "redis.log"))
				}
				res := proc(map[string]any{"action": "start", "args": args})
				c := decode[processInfo](t, res)
				if res.IsError || c.PID <= 0 || !c.Running {
					t.Fatalf("start: %s", resultText(res))
				}
				children, ports = append(children, c), append(ports, port)
			}
			logs := func(h string) processLogs {
				return decode[processLogs](t, proc(map[string]any{"action": "logs", "handle": h, "max_bytes": 1 << 20}))
			}
			status := func(h string) processInfo {
				return decode[processInfo](t, proc(map[string]any{"action": "status", "handle": h}))
			}
			logFile := func() string {
				b, _ := os.ReadFile(filepath.Join(dirs, "2", "redis.log"))
				return string(b)
			}
			for i, c := range children {
				eventually(t, 10*time.Second, "ready", func() bool {
					if i == 2 {
						return strings.Contains(logFile(), "Ready to accept connections")
					}
					return strings.Contains(logs(c.Handle).text(t), "Ready to accept connections")
				})
			}
			if got := processesOn(t, ports); len(got) != 3 {
				t.Fatalf("the process table has %v on the children's ports, want the 3 children %+v", got, children)
			}

			// Killed from outside: status says by what.
			if err := syscall.Kill(children[0].PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			eventually(t, 5*time.Second, "the killed child reported", func() bool { return !status(children[0].Handle).Running })
			if st := status(children[0].Handle); st.Signal != "killed" || st.ExitCode == nil || *st.ExitCode != -1 {
				t.Fatalf("status of the killed child = %+v", st)
			}

			// Log overflow: every connection logs a line at verbose level.
			for status(children[1].Handle).LogBytes < 3000 {
				c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])))
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			st, l := status(children[1].Handle), logs(children[1].Handle)
			if st.DroppedBytes == 0 || l.DroppedBytes < st.DroppedBytes || l.MissedBytes != l.SinceSequence || l.SinceSequence == 0 || len(l.text(t)) > 1024 {
				t.Fatalf("overflow: status %+v, logs %+v", st, l)
			}

			switch exit {
			case "stdin EOF":
				sp.closeStdin()
			case "SIGTERM":
				sp.cmd.Process.Signal(syscall.SIGTERM)
				// exec's Wait also waits for the copy into its stdin: see
				// the exit in /proc (a zombie until reaped), then close stdin.
				eventually(t, 15*time.Second, "mcpkit exited on SIGTERM", func() bool { return exitedOrZombie(sp.cmd.Process.Pid) })
				sp.closeStdin()
			}
			select {
			case <-sp.done:
			case <-time.After(15 * time.Second):
				t.Fatalf("mcpkit did not exit within 15s of %s", exit)
			}
			if sp.err != nil {
				t.Fatalf("mcpkit exited with %v after %s", sp.err, exit)
			}
			if got := processesOn(t, ports); len(got) != 0 {
				t.Fatalf("after the sidecar's exit on %s, the process table still has %v", exit, got)
			}
			for _, c := range children {
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", c.PID)); !os.IsNotExist(err) {
					t.Fatalf("child %d outlived the sidecar (%v)", c.PID, err)
				}
			}
			// Terminated by the sidecar (SIGTERM, a clean shutdown), not merely
			// killed by the kernel as the sidecar died.
			if l := logFile(); !strings.Contains(l, "Received SIGTERM") || !strings.Contains(l, "ready to exit, bye bye") {
				t.Fatalf("child 2 did not shut down on SIGTERM:\n%s", l)
			}
			if !strings.Contains(sp.stderr.String(), "plugin closed") {
				t.Fatalf("no plugin closed line in the log:\n%s", sp.stderr.String())
			}
		})
	}
}

// TestRespProcessPrincipals: over HTTP with two bearer tokens, a process
// is its starter's: another principal neither lists nor reaches it.
func TestRespProcessPrincipals(t *testing.T) {
	const token, token2 = "e2e-process-token-1a2b", "e2e-process-token-3c4d"
	cfg, _ := json.Marshal(map[string]any{
		"enable":  []string{"resp"},
		"plugins": map[string]any{"resp": map[string]any{"config": map[string]any{"process": map[string]any{"enabled": true}}}},
		"http":    map[string]any{"bearer_tokens_file": writeConfig(t, token+"\n"+token2+"\n")},
	})
	hp := startHTTP(t, "--config", writeConfig(t, string(cfg)))
	one := hp.connect(t, legacyEra, &http.Client{Transport: bearer{token: token}})
	two := hp.connect(t, modernEra, &http.Client{Transport: bearer{token: token2}})
	st := decode[processInfo](t, callTool(t, one, "resp_process", map[string]any{"action": "start",
		"args": []string{"--port", strconv.Itoa(freeLoopbackPort(t)), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}}))
	type list struct {
		Processes []processInfo `json:"processes"`
	}
	if l := decode[list](t, callTool(t, two, "resp_process", map[string]any{"action": "status"})); len(l.Processes) != 0 {
		t.Fatalf("another principal lists %+v", l)
	}
	for _, action := range []string{"status", "logs", "stop"} {
		if r, isErr := callAs[execReply](t, two, "resp_process", map[string]any{"action": action, "handle": st.Handle}); !isErr || r.Error == nil || r.Error.Kind != "process_not_found" {
			t.Fatalf("another principal's %s: isError=%v %+v", action, isErr, r.Error)
		}
	}
	if l := decode[list](t, callTool(t, one, "resp_process", map[string]any{"action": "status"})); len(l.Processes) != 1 || !l.Processes[0].Running {
		t.Fatalf("the starter lists %+v", l)
	}
}
