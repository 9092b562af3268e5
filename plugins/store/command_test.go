package store

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/cli"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runCLI runs `mcpkit args...` in process and returns its exit code,
// stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// storeFile writes a store file with n documents in "c" and one in "d"
// (loaded: one write per document would take a batch delay each).
func storeFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := docstore.Open(path, docstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	data := dumpOf("c", n, func(int) string { return `{"n": 1, "f": 1.0}` }) +
		`{"type":"collection","collection":"d"}` + "\n" + `{"type":"document","collection":"d","id":"x","doc":{}}` + "\n"
	if _, err := db.Load(t.Context(), strings.NewReader(data), docstore.LoadRefuse, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCommandExitCodes: bad command lines exit 2, bad configurations and
// store files that are missing, empty or damaged where one must exist 3,
// failed operations 1.
func TestCommandExitCodes(t *testing.T) {
	dir := t.TempDir()
	file := storeFile(t, 1)
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"store", "--stdio", "--http", "127.0.0.1:0"}, cli.ExitUsage, "choose one"},
		{[]string{"store", "a.db", "b.db"}, cli.ExitUsage, `unexpected argument "b.db"`},
		{[]string{"store", "--bogus"}, cli.ExitUsage, "-bogus"},
		{[]string{"store", "dump"}, cli.ExitUsage, "give the store file"},
		{[]string{"store", "dump", file, "extra"}, cli.ExitUsage, `unexpected argument "extra"`},
		{[]string{"store", "dump", file, "--bogus"}, cli.ExitUsage, "-bogus"},
		{[]string{"store", "load", file}, cli.ExitUsage, "--in FILE"},
		{[]string{"store", "load", file, "--in", file, "--mode", "upsert"}, cli.ExitUsage, `--mode "upsert"`},
		{[]string{"store", "backup", file}, cli.ExitUsage, "--out FILE"},
		{[]string{"store", "--files-dir", filepath.Join(dir, "nope")}, cli.ExitConfig, "files_dir"},
		{[]string{"store", "--tool-prefix", "Bad Prefix"}, cli.ExitConfig, "prefix"},
		{[]string{"store", dir}, cli.ExitConfig, "is a directory"},
		{[]string{"store", "dump", filepath.Join(dir, "missing.db")}, cli.ExitConfig, "no store file"},
		{[]string{"store", "backup", filepath.Join(dir, "missing.db"), "--out", filepath.Join(dir, "b.db")}, cli.ExitConfig, "no store file"},
		{[]string{"store", "verify", filepath.Join(dir, "missing.db")}, cli.ExitConfig, "no store file"},
		{[]string{"store", "dump", empty}, cli.ExitConfig, "empty (0 bytes)"},
		{[]string{"store", "verify", empty}, cli.ExitConfig, "empty (0 bytes)"},
		{[]string{"store", "verify", file, "extra"}, cli.ExitUsage, `unexpected argument "extra"`},
		{[]string{"store", "load", filepath.Join(dir, "new.db"), "--in", filepath.Join(dir, "missing.jsonl")}, cli.ExitFailure, "missing.jsonl"},
		{[]string{"store", "dump", file, "--collection", "nope"}, cli.ExitFailure, `no collection \"nope\"`},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.err) {
				t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("dump created the store file it was asked to dump")
	}
	if st, err := os.Stat(empty); err != nil || st.Size() != 0 {
		t.Errorf("dump or verify changed the empty file: %v, %v", st, err)
	}
}

// TestCommandHelp: `mcpkit help store` and `mcpkit store dump --help`
// describe the verbs and their flags.
func TestCommandHelp(t *testing.T) {
	code, out, _ := runCLI(t, "help", "store")
	for _, want := range []string{"mcpkit store dump PATH [--out FILE] [--collection C]...", "mcpkit store load PATH --in FILE", "mcpkit store backup PATH --out FILE", "mcpkit store verify PATH", "-files-dir", "-tool-prefix", "progress bar"} {
		if code != cli.ExitOK || !strings.Contains(out, want) {
			t.Errorf("help store lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "store", "dump", "--help")
	if code != cli.ExitOK || !strings.Contains(out, "-collection") || !strings.Contains(out, "-out") {
		t.Errorf("store dump --help: exit %d\n%s", code, out)
	}
}

// TestCommandVerbs: dump (to a file or stdout, some collections), load and
// backup work on store files from the command line, flags before or after
// the file, with plain progress lines when stderr is not a terminal.
func TestCommandVerbs(t *testing.T) {
	file := storeFile(t, 3000)
	dir := t.TempDir()
	out := filepath.Join(dir, "all.jsonl")
	code, stdout, stderr := runCLI(t, "store", "dump", file, "--out", out)
	if code != cli.ExitOK || stdout != "" || !strings.Contains(stderr, "dump: 3001/3001 documents\n") || !strings.Contains(stderr, "dumped 3001 documents to "+out) {
		t.Fatalf("dump: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if strings.ContainsAny(stderr, "\r\x1b") {
		t.Errorf("not a terminal, yet the progress draws: %q", stderr)
	}
	dump, _ := os.ReadFile(out)
	if n := strings.Count(string(dump), "\n"); n != 3001+3 || !strings.Contains(string(dump), `"doc":{"n":1,"f":1.0}`) {
		t.Fatalf("the dump has %d lines:\n%.300s", n, dump)
	}
	code, stdout, _ = runCLI(t, "store", "dump", "--collection", "d", file)
	if code != cli.ExitOK || strings.Count(stdout, "\n") != 3 || !strings.Contains(stdout, `"id":"x"`) {
		t.Fatalf("dump --collection d to stdout: exit %d, %q", code, stdout)
	}

	loaded := filepath.Join(dir, "loaded.db")
	code, _, stderr = runCLI(t, "store", "load", loaded, "--in", out)
	if code != cli.ExitOK || !strings.Contains(stderr, "load: 3004/3004 lines\n") || !strings.Contains(stderr, "loaded 3001 documents in 2 collections") {
		t.Fatalf("load: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "store", "load", "--in", out, loaded)
	if code != cli.ExitFailure || !strings.Contains(stderr, "replace or merge") {
		t.Fatalf("a second load (mode refuse): exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr = runCLI(t, "store", "load", loaded, "--in", out, "--mode", "replace"); code != cli.ExitOK {
		t.Fatalf("load --mode replace: exit %d, stderr %q", code, stderr)
	}

	// The verbs that read a file leave it byte for byte as it was.
	before, err := os.ReadFile(loaded)
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "backup.db")
	code, _, stderr = runCLI(t, "store", "backup", loaded, "--out", backup)
	if code != cli.ExitOK || !strings.Contains(stderr, "backed up "+loaded+" to "+backup) || !strings.Contains(stderr, "backup: ") {
		t.Fatalf("backup: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "store", "verify", loaded)
	if code != cli.ExitOK || stdout != loaded+": no damage found (pages, bbolt's consistency check, documents and indexes)\n" {
		t.Fatalf("verify: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr = runCLI(t, "store", "dump", loaded, "--out", filepath.Join(dir, "again.jsonl")); code != cli.ExitOK {
		t.Fatalf("dump: exit %d, stderr %q", code, stderr)
	}
	if after, err := os.ReadFile(loaded); err != nil || !bytes.Equal(after, before) {
		t.Errorf("backup, verify and dump changed the store file (%d bytes before, %d after, %v)", len(before), len(after), err)
	}
	db, err := docstore.Open(backup, docstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, _, err := db.Count(t.Context(), "c", nil)
	d, gerr := db.Get(t.Context(), "c", docstore.Int(3000))
	got, _ := docstore.ToJSON(d.Value)
	if err != nil || gerr != nil || n != 3000 || string(got) != `{"n":1,"f":1.0}` {
		t.Fatalf("the backup: %d documents (%v), document 3000 %s (%v)", n, err, got, gerr)
	}
}

// TestCommandServesStdio: `mcpkit store FILE` serves the seed's tool names
// over stdio, keeps what it stores in the file, and exits 0 at EOF.
func TestCommandServesStdio(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	// serve runs `mcpkit store args...` and connects a client; stop closes
	// the client and waits for the command to exit.
	serve := func(args ...string) (cs *mcp.ClientSession, stop func()) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		code := make(chan int, 1)
		go func() {
			code <- cli.Main(append([]string{"store"}, args...), inR, outW, io.Discard)
			outW.Close()
			inR.Close()
		}()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs, func() {
			cs.Close()
			if c := <-code; c != cli.ExitOK {
				t.Errorf("exit %d at EOF", c)
			}
		}
	}
	cs, stop := serve(path)
	if res := callOn(t, cs, "store", `{"collection": "c", "id": 1, "doc": {"v": 2.0}}`); res.IsError {
		t.Fatal(text(res))
	}
	stop()
	// The file holds it: a second server over it finds it, with a prefix.
	cs, stop = serve("--tool-prefix", "kv", path)
	defer stop()
	if got := text(callOn(t, cs, "kv_get", `{"collection": "c", "id": 1}`)); got != `{"id":1,"revision":1,"doc":{"v":2.0}}` {
		t.Fatalf("kv_get = %s", got)
	}
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != len(storeTools)+1 {
		t.Fatalf("%d tools (%v)", len(list.Tools), err)
	}
}

// TestProgressDisplay: plain lines at most once a second and the last
// always; on a terminal, a bar.
func TestProgressDisplay(t *testing.T) {
	var plain bytes.Buffer
	d := newProgressDisplay(&plain, "dump", "documents")
	for i := int64(1); i <= 5000; i++ {
		d.report(i, 5000)
	}
	d.finish()
	if got := plain.String(); got != "dump: 1/5000 documents\ndump: 5000/5000 documents\n" {
		t.Fatalf("plain lines %q", got)
	}
	var unknown bytes.Buffer
	d = newProgressDisplay(&unknown, "backup", "bytes")
	d.report(4096, 0)
	d.finish()
	if got := unknown.String(); got != "backup: 4096 bytes\n" {
		t.Fatalf("plain line without a total %q", got)
	}
	var bar bytes.Buffer
	d = newProgressDisplay(&bar, "load", "lines")
	d.tty = true
	d.report(10, 0)
	d.report(50, 100)
	d.report(100, 100)
	d.finish()
	if got := bar.String(); !strings.Contains(got, "load") || !strings.Contains(got, "100%") || !strings.Contains(got, "(100/100") || !strings.Contains(got, "\r") {
		t.Fatalf("bar %q", got)
	}
}

// TestCommandOptions: the command serves the plugin alone with its
// configuration and the prefix given ("" by default).
func TestCommandOptions(t *testing.T) {
	opts, err := commandOptions(Config{Path: "a.db", FilesDir: "/tmp"}, "")
	if err != nil {
		t.Fatal(err)
	}
	pc := opts.Config.Plugins["store"]
	var c Config
	if json.Unmarshal(pc.Config, &c) != nil || c.Path != "a.db" || c.FilesDir != "/tmp" || *pc.Prefix != "" || len(opts.Plugins) != 1 || opts.Plugins[0] != "store" {
		t.Fatalf("options %+v, config %s", opts, pc.Config)
	}
}

// TestCommandVerifyDocuments: verify reports a document the engine cannot
// read (the file's pages sound, what one holds damaged) and exits 3,
// leaving the file as it was.
func TestCommandVerifyDocuments(t *testing.T) {
	file := storeFile(t, 3)
	db, err := kv.Open(file, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx kv.Tx) error {
		return tx.Bucket([]byte("d\x00d")).Put(docstore.AppendKey(nil, docstore.Text("x")), []byte{0xff, 0xff, 0xff})
	})
	if cerr := db.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "store", "verify", file)
	if code != cli.ExitConfig || !strings.HasPrefix(stdout, file+": damaged\n  docstore: verify: ") || !strings.Contains(stderr, "store verify found damage") {
		t.Errorf("verify: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if after, err := os.ReadFile(file); err != nil || !bytes.Equal(after, before) {
		t.Errorf("verify changed the file: %v", err)
	}
}
