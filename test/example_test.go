package test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHelloPluginBinary builds examples/hello-plugin the way a plugin author
// does (their own main importing mcpkit's command line and their plugin) and
// calls its tool over stdio in both eras.
func TestHelloPluginBinary(t *testing.T) {
	bin := buildHello(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(t.Context(),
				&mcp.CommandTransport{Command: exec.Command(bin, "serve", "--stdio")}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			checkEra(t, cs, era)
			got := decode[map[string]string](t, callTool(t, cs, "hello_greet", map[string]any{"name": "Ada"}))
			if got["greeting"] != "Hello, Ada!" {
				t.Fatalf("greeting = %q", got["greeting"])
			}
			// Its default plugins: its own and the first-party default, diag.
			var names []string
			for _, p := range info(t, cs).Plugins {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, []string{"diag", "hello"}) {
				t.Fatalf("the example serves %v, want its default plugins [diag hello]", names)
			}
		})
	}
}

// TestToolNameCollision: two plugins that would serve the same tool name stop
// the start, with an error naming both and exit code 3.
func TestToolNameCollision(t *testing.T) {
	bin := buildHello(t)
	cfg := writeConfig(t, `{"plugins": {"hello": {"prefix": "diag"}}}`)
	out, err := exec.Command(bin, "serve", "--stdio", "--plugins", "diag,hello", "--config", cfg).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 3 {
		t.Fatalf("exit = %v, want exit code 3\n%s", err, out)
	}
	for _, want := range []string{`\"diag_result\"`, `plugin \"hello\"`, `plugin \"diag\"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

// buildHello builds examples/hello-plugin the way its author would.
func buildHello(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hello-mcpkit")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "examples", "hello-plugin")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example: %v\n%s", err, out)
	}
	return bin
}
