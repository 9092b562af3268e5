package test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// firstLogLine decodes the first line a process logged in JSON.
func firstLogLine(t *testing.T, stderr string) map[string]any {
	t.Helper()
	line, _, _ := strings.Cut(stderr, "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("first log line %q is not JSON: %v\n%s", line, err, stderr)
	}
	return m
}

// checkServingLine checks that the first log line names the transport, its
// address and where the choice came from.
func checkServingLine(t *testing.T, stderr, transport, addr, from string) {
	t.Helper()
	m := firstLogLine(t, stderr)
	got, _ := m["addr"].(string)
	if m["msg"] != "serving" || m["transport"] != transport || got != addr || m["from"] != from {
		t.Errorf("first log line %v; want msg=serving transport=%s addr=%q from=%q", m, transport, addr, from)
	}
}

// waitLogged waits until the process logs a line whose msg is msg.
func waitLogged(t *testing.T, p *proc, msg string) {
	t.Helper()
	eventually(t, 15*time.Second, "log line "+msg, func() bool {
		for line := range strings.Lines(p.stderr.String()) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
				return true
			}
		}
		select {
		case <-p.done:
			t.Fatalf("mcpkit exited before logging %q: %v\n%s", msg, p.err, p.stderr.String())
		default:
		}
		return false
	})
}

// TestTransportRule is the regression test of a client hanging on
// `mcpkit serve --config FILE` when FILE sets http.addr: the rule is now
// explicit (a flag wins over the file; without a flag, the file's http.addr
// serves HTTP; otherwise stdio), the first log line says which transport is
// served and why, and the usage text states the rule.
func TestTransportRule(t *testing.T) {
	cfg := writeConfig(t, `{"http": {"addr": "127.0.0.1:0"}}`)

	t.Run("config http.addr without a flag serves HTTP and says so first", func(t *testing.T) {
		p := startProc(t, nil, nil, "serve", "--config", cfg, "--log-format", "json")
		waitLogged(t, p, "listening")
		checkServingLine(t, p.stderr.String(), "http", "127.0.0.1:0", "config http.addr")
	})
	t.Run("--stdio wins over config http.addr", func(t *testing.T) {
		sp := startStdio(t, "--config", cfg, "--log-format", "json")
		ping(t, sp.connect(t, legacyEra))
		checkServingLine(t, sp.stderr.String(), "stdio", "", "--stdio")
	})
	t.Run("--http wins over config http.addr", func(t *testing.T) {
		hp := startHTTP(t, "--config", writeConfig(t, `{"http": {"addr": "127.0.0.1:1"}}`))
		pingHTTP(t, hp.connect(t, legacyEra, nil))
		checkServingLine(t, hp.stderr.String(), "http", "127.0.0.1:0", "--http")
	})
	t.Run("no flag and no http.addr serves stdio", func(t *testing.T) {
		out, err := exec.Command(binary(t), "serve", "--log-format", "json").CombinedOutput() // stdin at EOF
		if err != nil {
			t.Fatalf("serve with stdin at EOF: %v\n%s", err, out)
		}
		checkServingLine(t, string(out), "stdio", "", "default")
	})
	t.Run("the usage text states the rule", func(t *testing.T) {
		out, err := exec.Command(binary(t), "serve", "--help").Output()
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(out)), " ") // whatever the line breaks
		for _, want := range []string{"A flag wins over the configuration file", "With neither flag, mcpkit serves HTTP at the file's http.addr when it sets one, and stdio otherwise"} {
			if !strings.Contains(text, want) {
				t.Errorf("serve --help lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestServeWithoutFlags: a client that launches `mcpkit serve` with no flag
// at all gets the default plugins (diag, until the data plugins land).
func TestServeWithoutFlags(t *testing.T) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(t.Context(),
		&mcp.CommandTransport{Command: exec.Command(binary(t), "serve")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for _, p := range info(t, cs).Plugins {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "diag") {
		t.Fatalf("`mcpkit serve` serves %v, want the diag plugin among them", names)
	}
	got := decode[map[string]string](t, callTool(t, cs, "diag_echo", map[string]any{"message": "hi"}))
	if got["message"] != "hi" {
		t.Fatalf("diag_echo = %v", got)
	}
}
