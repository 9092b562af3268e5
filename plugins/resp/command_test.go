package resp

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/cli"
)

// TestCommandExitCodes: bad command lines exit 2, bad configurations 3.
func TestCommandExitCodes(t *testing.T) {
	t.Setenv(EnvAuth, "")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"limits": {"max_sessions": 0}}`), 0o600)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"resp", "--stdio", "--http", "127.0.0.1:0"}, cli.ExitUsage},
		{[]string{"resp", "extra"}, cli.ExitUsage},
		{[]string{"resp", "--port", "70000"}, cli.ExitUsage},
		{[]string{"resp", "--config", filepath.Join(dir, "missing.json")}, cli.ExitConfig},
		{[]string{"resp", "--config", bad}, cli.ExitConfig},
		{[]string{"resp", "--tool-prefix", "Bad Prefix"}, cli.ExitConfig},
	} {
		var stderr strings.Builder
		if code := cli.Main(tc.args, strings.NewReader(""), io.Discard, &stderr); code != tc.code {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", tc.args, code, tc.code, stderr.String())
		}
	}
}

// TestCommandServesStdio: `mcpkit resp --tool-prefix ffkv` serves the
// seed's tool names over stdio with the target down, and exits 0 at EOF.
func TestCommandServesStdio(t *testing.T) {
	t.Setenv(EnvAuth, "")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- cli.Main([]string{"resp", "--port", "1", "--tool-prefix", "ffkv"}, inR, outW, io.Discard)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	var list string
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), `{"jsonrpc":"2.0","id":2,`) {
			list = lines.Text()
			break
		}
	}
	for _, name := range []string{"ffkv_execute", "ffkv_session", "ffkv_commands", "ffkv_result"} {
		if !strings.Contains(list, `"name":"`+name+`"`) {
			t.Errorf("tools/list lacks %s: %.300s", name, list)
		}
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if c := <-code; c != cli.ExitOK {
		t.Fatalf("exit %d at EOF", c)
	}
}
