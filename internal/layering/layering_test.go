package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// engines are the packages that must import no MCP code, with everything
// below them.
var engines = []string{
	"github.com/mcpkit/mcpkit/pkg/resp/...",
	"github.com/mcpkit/mcpkit/pkg/respadmin/...",
	"github.com/mcpkit/mcpkit/pkg/respengine/...",
	"github.com/mcpkit/mcpkit/pkg/docstore/...",
	"github.com/mcpkit/mcpkit/pkg/action/...",
}

// mcpCode are the import path prefixes of MCP code.
var mcpCode = []string{
	"github.com/mcpkit/mcpkit/pkg/mcpcore",
	"github.com/modelcontextprotocol/",
}

// TestEnginesImportNoMCP lists every dependency of the engines (not of
// their tests, which may drive a real MCP client) and fails on any that is
// MCP code, naming the engine that pulls it in.
func TestEnginesImportNoMCP(t *testing.T) {
	// go test puts the go command that runs it first in PATH.
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}, engines...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	roots := map[string]bool{}
	for _, e := range engines {
		roots[strings.TrimSuffix(e, "/...")] = true
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		if !isEngine(pkg, roots) {
			continue
		}
		checked++
		for _, d := range deps {
			if isMCP(d) {
				t.Errorf("engine package %s imports MCP code: %s", pkg, d)
			}
		}
	}
	if checked < len(roots) {
		t.Fatalf("checked %d engine packages, want at least %d: go list output changed?\n%s", checked, len(roots), out)
	}
}

// isEngine reports whether pkg is one of the engines or below one.
func isEngine(pkg string, roots map[string]bool) bool {
	for r := range roots {
		if pkg == r || strings.HasPrefix(pkg, r+"/") {
			return true
		}
	}
	return false
}

func isMCP(pkg string) bool {
	for _, p := range mcpCode {
		if strings.HasPrefix(pkg, p) {
			return true
		}
	}
	return false
}
