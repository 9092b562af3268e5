package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoPlugin is a real plugin with one tool, for serving tests.
type echoPlugin struct{}

type echoArgs struct {
	Message string `json:"message"`
}

func (echoPlugin) Attach(ctx context.Context, h *mcpcore.Host) error {
	mcpcore.AddTool(h, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in echoArgs) (any, error) {
		return in, nil
	})
	return nil
}

func (echoPlugin) Close(context.Context) error { return nil }

// testCommand echoes its flag and arguments; registered once per test binary.
var testCommand = Command{
	Name:    "cli-test",
	Summary: "a command registered by the tests",
	Usage:   "[--word W] [ARG...]",
	Doc:     "It prints its flag and arguments.",
	Flags: func(fs *flag.FlagSet) {
		fs.String("word", "none", "a `word` to print")
		AddLogFlags(fs)
	},
	Run: func(ctx context.Context, env *Env) int {
		word, _ := FlagValue[string](env.Flags, "word")
		fmt.Fprintf(env.Stdout, "word=%s args=%q\n", word, env.Args)
		if word == "fail" {
			return env.Fail(errors.New("asked to fail"))
		}
		return ExitOK
	},
}

func init() {
	mcpcore.Register(mcpcore.PluginInfo{Name: "clitest", New: func() mcpcore.Plugin { return echoPlugin{} }})
	RegisterCommand(testCommand)
}

// run calls Main and returns its exit code, stdout and stderr.
func run(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestHelp(t *testing.T) {
	code, out, _ := run("help")
	if code != ExitOK {
		t.Fatalf("help: exit %d", code)
	}
	for _, c := range []string{"serve", "plugins", "version", "help", "cli-test"} {
		cmd := lookupCommand(c)
		if !strings.Contains(out, "  "+c+" ") || !strings.Contains(out, cmd.Summary) {
			t.Errorf("help does not list %s with its summary %q:\n%s", c, cmd.Summary, out)
		}
	}
	if code, _, errOut := run(); code != ExitUsage || !strings.Contains(errOut, "cli-test") {
		t.Errorf("no arguments: exit %d, stderr %q; want 2 and the command list", code, errOut)
	}
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		if code, got, _ := run(args...); code != ExitOK || got != out {
			t.Errorf("%v: exit %d, output differs from help:\n%s", args, code, got)
		}
	}

	code, usage, _ := run("help", "cli-test")
	if code != ExitOK {
		t.Fatalf("help cli-test: exit %d", code)
	}
	for _, want := range []string{"Usage: mcpkit cli-test [--word W] [ARG...]", "A command registered by the tests.", "It prints its flag and arguments.", "-word word", "-log-level level"} {
		if !strings.Contains(usage, want) {
			t.Errorf("help cli-test lacks %q:\n%s", want, usage)
		}
	}
	for _, args := range [][]string{{"cli-test", "--help"}, {"cli-test", "-h"}} {
		if code, got, _ := run(args...); code != ExitOK || got != usage {
			t.Errorf("%v: exit %d, output %q; want exit 0 and the text of help cli-test", args, code, got)
		}
	}
	if code, _, errOut := run("help", "nope"); code != ExitUsage || !strings.Contains(errOut, `unknown command "nope"`) {
		t.Errorf("help nope: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run("help", "serve", "plugins"); code != ExitUsage || !strings.Contains(errOut, "at most one") {
		t.Errorf("help serve plugins: exit %d, stderr %q", code, errOut)
	}
	if _, usage, _ := run("help", "serve"); !strings.Contains(usage, "A flag wins over\nthe configuration file") {
		t.Errorf("serve's usage does not state the transport rule:\n%s", usage)
	}
}

func TestRegisteredCommand(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		out, errIn string
	}{
		{[]string{"cli-test"}, ExitOK, `word=none args=[]`, ""},
		{[]string{"cli-test", "--word", "hi", "a", "--b"}, ExitOK, `word=hi args=["a" "--b"]`, ""},
		{[]string{"cli-test", "--bogus"}, ExitUsage, "", "flag provided but not defined: -bogus\nUsage: mcpkit cli-test"},
		{[]string{"cli-test", "--log-level", "loud"}, ExitUsage, "", `mcpkit cli-test: --log-level "loud": want debug, info, warn or error`},
		{[]string{"cli-test", "--word", "fail"}, ExitFailure, "word=fail", `msg="cli-test failed" err="asked to fail"`},
		{[]string{"bogus"}, ExitUsage, "", `unknown command "bogus"`},
	} {
		code, out, errOut := run(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.errIn) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", tc.args, code, out, errOut, tc.code, tc.out, tc.errIn)
		}
	}
}

func TestRegisterCommandPanics(t *testing.T) {
	ok := Command{Summary: "s", Run: func(context.Context, *Env) int { return ExitOK }}
	for _, tc := range []struct {
		name string
		mod  func(c *Command)
		want string
	}{
		{"empty name", func(c *Command) { c.Name = "" }, "invalid command name"},
		{"upper case", func(c *Command) { c.Name = "Diag" }, "invalid command name"},
		{"leading digit", func(c *Command) { c.Name = "1x" }, "invalid command name"},
		{"space", func(c *Command) { c.Name = "a b" }, "invalid command name"},
		{"built-in", func(c *Command) { c.Name = "serve" }, `"serve" is a built-in command`},
		{"help", func(c *Command) { c.Name = "help" }, `"help" is a built-in command`},
		{"duplicate", func(c *Command) { c.Name = testCommand.Name }, "registered twice"},
		{"no summary", func(c *Command) { c.Name = "cli-nosummary"; c.Summary = " " }, "one-line Summary"},
		{"two-line summary", func(c *Command) { c.Name = "cli-twolines"; c.Summary = "a\nb" }, "one-line Summary"},
		{"nil run", func(c *Command) { c.Name = "cli-norun"; c.Run = nil }, "nil Run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Fatalf("panic %v, want one containing %q", r, tc.want)
				}
				if c.Name != testCommand.Name && lookupCommand(c.Name) != nil && builtin(c.Name) == nil {
					t.Fatalf("the refused command %q was registered", c.Name)
				}
			}()
			RegisterCommand(c)
		})
	}
}

func TestChooseTransport(t *testing.T) {
	for _, tc := range []struct {
		stdio            bool
		http, config     string
		wantAddr, wantBy string
		usage            bool
	}{
		{false, "", "", "", FromDefault, false},
		{false, "", "127.0.0.1:8080", "127.0.0.1:8080", FromConfig, false},
		{true, "", "127.0.0.1:8080", "", FromStdioFlag, false},
		{false, "127.0.0.1:9", "127.0.0.1:8080", "127.0.0.1:9", FromHTTPFlag, false},
		{false, "127.0.0.1:9", "", "127.0.0.1:9", FromHTTPFlag, false},
		{true, "", "", "", FromStdioFlag, false},
		{true, "127.0.0.1:9", "", "", "", true},
	} {
		addr, by, err := ChooseTransport(tc.stdio, tc.http, tc.config)
		var ue *UsageError
		if addr != tc.wantAddr || by != tc.wantBy || errors.As(err, &ue) != tc.usage || (err != nil) != tc.usage {
			t.Errorf("ChooseTransport(%v, %q, %q) = %q, %q, %v; want %q, %q, usage error %v",
				tc.stdio, tc.http, tc.config, addr, by, err, tc.wantAddr, tc.wantBy, tc.usage)
		}
	}
}

func TestFail(t *testing.T) {
	var stderr, logs bytes.Buffer
	env := &Env{Command: &testCommand, Stderr: &stderr, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	for _, tc := range []struct {
		err  error
		code int
		in   *bytes.Buffer
		want string
	}{
		{nil, ExitOK, &logs, ""},
		{Usagef("bad %s", "word"), ExitUsage, &stderr, "mcpkit cli-test: bad word\nRun 'mcpkit help cli-test' for usage.\n"},
		{fmt.Errorf("load: %w", &mcpcore.ConfigError{Field: "limits.x", Reason: "no"}), ExitConfig, &logs, `msg="invalid configuration" err="load: config limits.x: no"`},
		{errors.New("boom"), ExitFailure, &logs, `msg="cli-test failed" err=boom`},
	} {
		stderr.Reset()
		logs.Reset()
		if code := env.Fail(tc.err); code != tc.code || !strings.Contains(tc.in.String(), tc.want) {
			t.Errorf("Fail(%v) = %d, wrote %q; want %d and %q", tc.err, code, tc.in.String(), tc.code, tc.want)
		}
	}
}

func TestServeParams(t *testing.T) {
	dir := t.TempDir()
	withAddr := filepath.Join(dir, "http.json")
	if err := os.WriteFile(withAddr, []byte(`{"http": {"addr": "127.0.0.1:8080"}, "limits": {"tool_timeout": "3s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) *Env {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		AddServeFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &Env{Command: &testCommand, Flags: fs}
	}
	p, err := parse("--config", withAddr).ServeParams()
	if err != nil || p.HTTPAddr != "127.0.0.1:8080" || p.TransportFrom != FromConfig || p.Options.Config.Limits.ToolTimeout.D() != 3*time.Second {
		t.Errorf("config with http.addr: %+v, %v", p, err)
	}
	if p, err := parse("--stdio", "--config", withAddr).ServeParams(); err != nil || p.HTTPAddr != "" || p.TransportFrom != FromStdioFlag {
		t.Errorf("--stdio over config http.addr: %+v, %v", p, err)
	}
	if _, err := parse("--config", filepath.Join(dir, "missing.json")).ServeParams(); exitCode(err) != ExitConfig || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("unreadable config: %v (exit %d), want exit code 3 naming the file", err, exitCode(err))
	}
	if _, err := parse("--stdio", "--http", "127.0.0.1:0").ServeParams(); exitCode(err) != ExitUsage {
		t.Errorf("--stdio --http: %v, want a usage error", err)
	}
	if _, err := (&Env{Flags: flag.NewFlagSet("t", flag.ContinueOnError)}).ServeParams(); !errors.Is(err, errNoServeFlags) {
		t.Errorf("without serve flags: %v", err)
	}
}

func TestFlagValue(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("n", 7, "")
	fs.Var(plainValue{}, "plain", "")
	if v, ok := FlagValue[int](fs, "n"); !ok || v != 7 {
		t.Errorf("FlagValue[int](n) = %d, %v", v, ok)
	}
	if _, ok := FlagValue[string](fs, "n"); ok {
		t.Error("FlagValue of the wrong type reported ok")
	}
	if _, ok := FlagValue[int](fs, "missing"); ok {
		t.Error("FlagValue of an undefined flag reported ok")
	}
	if _, ok := FlagValue[string](fs, "plain"); ok {
		t.Error("FlagValue of a flag.Value without Get reported ok")
	}
}

type plainValue struct{}

func (plainValue) String() string   { return "" }
func (plainValue) Set(string) error { return nil }

// logRecorder is a slog.Handler that keeps every record (without the
// attributes of With, which these tests do not need), for reading the logs
// of a server while it serves.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

// all returns the records so far as maps: "msg" and the attributes.
func (r *logRecorder) all() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, rec := range r.records {
		m := map[string]any{"msg": rec.Message}
		rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
		out = append(out, m)
	}
	return out
}

// firstLog decodes the first JSON log line.
func firstLog(t *testing.T, logs string) map[string]any {
	t.Helper()
	line, _, _ := strings.Cut(logs, "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("first log line %q: %v", line, err)
	}
	return m
}

// TestMainServeStdio runs `serve --stdio` in process: a client calls a tool,
// closes stdin, and Main returns 0 after logging the transport first.
func TestMainServeStdio(t *testing.T) {
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	var logs bytes.Buffer // read once Main has returned
	done := make(chan int, 1)
	go func() {
		defer stdoutW.Close()
		done <- Main([]string{"serve", "--stdio", "--plugins", "clitest", "--log-format", "json"}, stdinR, stdoutW, &logs)
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: stdoutR, Writer: stdinW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "clitest_echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	cs.Close()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Fatalf("exit %d\n%s", code, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not end on EOF")
	}
	if m := firstLog(t, logs.String()); m["msg"] != "serving" || m["transport"] != "stdio" || m["from"] != FromStdioFlag {
		t.Errorf("first log line %v, want serving transport=stdio from=--stdio", m)
	}
}

// TestServeHTTP runs Serve over HTTP with middleware until its context ends.
func TestServeHTTP(t *testing.T) {
	logs := &logRecorder{}
	var seen atomic.Int32
	count := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				seen.Add(1)
			}
			return next(ctx, method, req)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- Serve(ctx, ServeParams{
			Options:  mcpcore.Options{Plugins: []string{"clitest"}, Logger: slog.New(logs), Middleware: []mcp.Middleware{count}},
			HTTPAddr: "127.0.0.1:0",
		})
	}()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, m := range logs.all() {
			if m["msg"] == "listening" {
				url, _ = m["url"].(string)
			}
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("not listening (exit %d): %v", <-done, logs.all())
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "clitest_echo", Arguments: map[string]any{"message": "hi"}}); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	cs.Close()
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d: %v", code, logs.all())
	}
	if seen.Load() != 1 {
		t.Errorf("middleware saw %d tools/call, want 1", seen.Load())
	}
	if m := logs.all()[0]; m["msg"] != "serving" || m["transport"] != "http" || m["addr"] != "127.0.0.1:0" {
		t.Errorf("first log record %v, want serving transport=http addr=127.0.0.1:0", m)
	}
}

// TestServeRefuses: startup failures are exit code 3 and serve nothing.
func TestServeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    ServeParams
		want string
	}{
		{"unknown plugin", ServeParams{Options: mcpcore.Options{Plugins: []string{"nope"}}}, `unknown plugin \"nope\"`},
		{"non-loopback without auth", ServeParams{HTTPAddr: "0.0.0.0:0"}, "refusing to serve HTTP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			tc.p.Options.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			tc.p.Stdin, tc.p.Stdout = strings.NewReader(""), io.Discard
			if code := Serve(t.Context(), tc.p); code != ExitConfig || !strings.Contains(logs.String(), tc.want) {
				t.Errorf("exit %d, logs %q; want 3 and %q", code, logs.String(), tc.want)
			}
			if strings.Contains(logs.String(), "listening") || strings.Contains(logs.String(), "msg=ready") {
				t.Errorf("served after a startup failure:\n%s", logs.String())
			}
		})
	}
}

// TestServeNoPlugins: serving without any plugin works (mcpkit://info only)
// but says so.
func TestServeNoPlugins(t *testing.T) {
	var logs bytes.Buffer
	code := Serve(t.Context(), ServeParams{Options: mcpcore.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, Stdin: strings.NewReader(""), Stdout: io.Discard})
	if code != ExitOK || !strings.Contains(logs.String(), "no plugin selected") {
		t.Errorf("exit %d, logs %q; want 0 and a warning", code, logs.String())
	}
}
