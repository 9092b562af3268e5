package test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runBinary runs a built binary to completion and returns its exit code,
// stdout and stderr.
func runBinary(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// connectCommandStdio launches bin with args as an MCP client does and
// connects over its stdio; stderr collects the process's logs.
func connectCommandStdio(t *testing.T, era string, stderr *syncBuffer, bin string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(t.Context(),
		&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	checkEra(t, cs, era)
	return cs
}

// servedPlugins lists the plugins mcpkit://info reports.
func servedPlugins(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for _, p := range info(t, cs).Plugins {
		names = append(names, p.Name)
	}
	return names
}

// TestCommandHelp: help lists the built-in and the registered commands with
// their summaries; `help CMD` and `CMD --help` print the same usage.
func TestCommandHelp(t *testing.T) {
	bin := binary(t)
	code, out, _ := runBinary(t, bin, "help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, want := range []string{"\n  serve ", "\n  plugins ", "\n  version ", "\n  help ", "\n  diag ", "serve the diag plugin alone to check a client"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	for _, cmd := range []string{"serve", "diag", "plugins"} {
		code, viaHelp, _ := runBinary(t, bin, "help", cmd)
		code2, viaFlag, _ := runBinary(t, bin, cmd, "--help")
		if code != 0 || code2 != 0 || viaHelp != viaFlag || !strings.HasPrefix(viaHelp, "Usage: mcpkit "+cmd) {
			t.Errorf("help %s (exit %d) and %s --help (exit %d) differ or lack the synopsis:\n%s\n---\n%s", cmd, code, cmd, code2, viaHelp, viaFlag)
		}
	}
	if _, usage, _ := runBinary(t, bin, "help", "diag"); !strings.Contains(usage, "-trace") || !strings.Contains(usage, "-config FILE") {
		t.Errorf("diag's usage lacks its flags:\n%s", usage)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"help", "nope"}, 2, `unknown command "nope"`},
		{[]string{"diag", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"diag", "extra"}, 2, `mcpkit diag: unexpected argument "extra"`},
		{[]string{"diag", "--stdio", "--http", "127.0.0.1:0"}, 2, "choose one of --stdio and --http"},
		{[]string{"diag", "--http", "0.0.0.0:0"}, 3, "bearer_tokens_file"},
		{[]string{"diag", "--config", writeConfig(t, `{"limits": {"tool_timeot": "1s"}}`)}, 3, `unknown field \"tool_timeot\"`},
	} {
		if code, _, errOut := runBinary(t, bin, tc.args...); code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("mcpkit %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// TestDiagCommand: `mcpkit diag --trace` serves the diag plugin alone and
// logs every message the client sends, in both eras.
func TestDiagCommand(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			stderr := &syncBuffer{}
			cs := connectCommandStdio(t, era, stderr, binary(t), "diag", "--stdio", "--trace", "--log-format", "json")
			if got := servedPlugins(t, cs); len(got) != 1 || got[0] != "diag" {
				t.Fatalf("diag serves %v", got)
			}
			callTool(t, cs, "diag_echo", map[string]any{"message": "hi"})
			if res := callTool(t, cs, "diag_blob", map[string]any{"bytes": -1}); !res.IsError {
				t.Fatalf("diag_blob with -1 bytes succeeded: %s", resultText(res))
			}
			cs.Close()
			traced := map[string]map[string]any{}
			for line := range strings.Lines(stderr.String()) {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "trace" {
					key, _ := m["method"].(string)
					if tool, ok := m["tool"].(string); ok {
						key += " " + tool
					}
					if uri, ok := m["uri"].(string); ok {
						key += " " + uri
					}
					if _, ok := m["took"]; !ok {
						t.Errorf("trace line without its duration: %s", line)
					}
					traced[key] = m
				}
			}
			for _, want := range []string{"tools/call diag_echo", "tools/call diag_blob", "resources/read mcpkit://info"} {
				if traced[want] == nil {
					t.Errorf("no trace of %s; traced %v\n%s", want, traced, stderr.String())
				}
			}
			if m := traced["tools/call diag_blob"]; m != nil && m["is_error"] != true {
				t.Errorf("the failed blob call is traced without is_error: %v", m)
			}
			if m := traced["tools/call diag_echo"]; m != nil && m["is_error"] != nil {
				t.Errorf("the echo call is traced as an error: %v", m)
			}
		})
	}
	t.Run("without --trace", func(t *testing.T) {
		stderr := &syncBuffer{}
		cs := connectCommandStdio(t, legacyEra, stderr, binary(t), "diag", "--stdio", "--log-format", "json")
		callTool(t, cs, "diag_echo", map[string]any{"message": "hi"})
		cs.Close()
		if strings.Contains(stderr.String(), `"msg":"trace"`) {
			t.Errorf("traced without --trace:\n%s", stderr.String())
		}
		checkServingLine(t, stderr.String(), "stdio", "", "--stdio")
	})
	t.Run("http", func(t *testing.T) {
		p := startProc(t, nil, nil, "diag", "--http", "127.0.0.1:0", "--trace", "--log-format", "json")
		waitLogged(t, p, "listening")
		checkServingLine(t, p.stderr.String(), "http", "127.0.0.1:0", "--http")
	})
}

// TestHelloCommand: a third-party binary's plugin registers a command that
// serves its plugin alone, configured from its argument; the binary's help
// lists it beside mcpkit's own.
func TestHelloCommand(t *testing.T) {
	bin := buildHello(t)
	code, out, _ := runBinary(t, bin, "help")
	for _, want := range []string{"\n  hello ", "serve the hello plugin alone", "\n  diag ", "\n  serve "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("hello-mcpkit help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs := connectCommandStdio(t, era, &syncBuffer{}, bin, "hello", "--stdio", "Howdy")
			if got := servedPlugins(t, cs); len(got) != 1 || got[0] != "hello" {
				t.Fatalf("hello serves %v", got)
			}
			got := decode[map[string]string](t, callTool(t, cs, "hello_greet", map[string]any{"name": "Ada"}))
			if got["greeting"] != "Howdy, Ada!" {
				t.Fatalf("greeting = %q", got["greeting"])
			}
		})
	}
	t.Run("the argument replaces the file's plugin config, keeping its prefix", func(t *testing.T) {
		cfg := writeConfig(t, `{"enable": ["diag"], "plugins": {"hello": {"prefix": "hi", "config": {"greeting": "Salut"}}}}`)
		cs := connectCommandStdio(t, legacyEra, &syncBuffer{}, bin, "hello", "--stdio", "--config", cfg, "Hey")
		got := decode[map[string]string](t, callTool(t, cs, "hi_greet", map[string]any{"name": "Ada"}))
		if got["greeting"] != "Hey, Ada!" {
			t.Fatalf("greeting = %q", got["greeting"])
		}
	})
	t.Run("diag ignores the file's enable", func(t *testing.T) {
		cfg := writeConfig(t, `{"enable": ["hello"]}`)
		cs := connectCommandStdio(t, legacyEra, &syncBuffer{}, bin, "diag", "--stdio", "--config", cfg)
		if got := servedPlugins(t, cs); len(got) != 1 || got[0] != "diag" {
			t.Fatalf("diag serves %v", got)
		}
	})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"hello", "--stdio", "a", "b"}, 2, `unexpected argument "b"`},
		{[]string{"hello", "--stdio", ""}, 3, "greeting must not be empty"},
	} {
		if code, _, errOut := runBinary(t, bin, tc.args...); code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("hello-mcpkit %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
