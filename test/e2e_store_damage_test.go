package test

import (
	"bytes"
	bin "encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// storePage is the page size of the store files the tests make (bbolt
// uses the OS page size).
var storePage = int64(os.Getpagesize())

// loadedStore makes a store file of n documents (with an index) with
// `mcpkit store load`, and returns its path and bytes.
func loadedStore(t *testing.T, n int) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	var in strings.Builder
	in.WriteString(`{"type":"dump","format":1}` + "\n")
	in.WriteString(`{"type":"collection","collection":"notes","indexes":[{"name":"g","fields":["g"]}]}` + "\n")
	for i := range n {
		fmt.Fprintf(&in, `{"type":"document","collection":"notes","id":%d,"doc":{"g":%d,"text":"note %d %s"}}`+"\n", i, i%10, i, strings.Repeat("x", 60))
	}
	dump := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(dump, []byte(in.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.db")
	if code, _, stderr := runBinary(t, binary(t), "store", "load", path, "--in", dump); code != 0 {
		t.Fatalf("load: exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// storeMeta returns the root page and the high-water mark (pages in use)
// that the active meta page of a store file gives (bbolt's layout: the
// meta after a 16-byte page header; root at 16, pgid at 40, txid at 48
// within it).
func storeMeta(data []byte) (root, pages int64) {
	m0, m1 := data[16:], data[storePage+16:]
	m := m0
	if bin.NativeEndian.Uint64(m1[48:]) > bin.NativeEndian.Uint64(m0[48:]) {
		m = m1
	}
	return int64(bin.NativeEndian.Uint64(m[16:])), int64(bin.NativeEndian.Uint64(m[40:]))
}

// leafHolding returns the leaf page of a store file that holds text.
func leafHolding(t *testing.T, data []byte, text string) int64 {
	t.Helper()
	for p := int64(2); p < int64(len(data))/storePage; p++ {
		page := data[p*storePage : (p+1)*storePage]
		if int64(bin.NativeEndian.Uint64(page)) == p && page[8] == 2 && bytes.Contains(page, []byte(text)) {
			return p
		}
	}
	t.Fatalf("no leaf page holds %q", text)
	return 0
}

// wantRefused checks that a command on a damaged or unusable store file
// exited 3 with the file named on stderr, never crashed, and left the
// file as it was.
func wantRefused(t *testing.T, path string, before []byte, code int, stderr, want string) {
	t.Helper()
	if code != 3 || !strings.Contains(stderr, path) || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 3 naming %s and %q", code, stderr, path, want)
	}
	for _, crash := range []string{"goroutine ", "panic", "SIGBUS", "fatal error"} {
		if strings.Contains(stderr, crash) {
			t.Errorf("stderr shows a crash (%q):\n%s", crash, stderr)
		}
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the file changed (%d bytes before, %d after, %v)", len(before), len(after), err)
	}
}

// TestStoreDamagedFileE2E: dump, backup and verify of a store file cut
// short or with a page overwritten exit 3 naming the file and what is
// wrong, and never crash; `mcpkit store FILE` refuses to start (exit 3)
// on damage in what an open reads (the meta pages, the root bucket's
// pages), and otherwise starts and fails with kind "damaged" the calls
// that reach the damage and every write; verify lists the damage and
// passes a sound file. A read-only verb never
// creates or changes a file: an empty or missing file is refused as it is.
func TestStoreDamagedFileE2E(t *testing.T) {
	mcpkit := binary(t)
	path, data := loadedStore(t, 3000)
	dir := t.TempDir()
	if code, stdout, stderr := runBinary(t, mcpkit, "store", "verify", path); code != 0 || !strings.Contains(stdout, "no damage found") {
		t.Fatalf("verify of a sound store: exit %d\n%s%s", code, stdout, stderr)
	}
	garbage := bytes.Repeat([]byte{0xA5, 0x17, 0xC3, 0x5E}, 128)
	overwrite := func(at int64) []byte {
		b := bytes.Clone(data)
		copy(b[at:], garbage)
		return b
	}
	root, pages := storeMeta(data)
	cases := []struct {
		name string
		data []byte
		want string // in the error
	}{
		{"cut at 64 KiB", data[:65536], "truncated"},
		{"cut at 8 KiB", data[:8192], "truncated"},
		{"cut one byte short", data[:pages*storePage-1], "truncated"},
		{"root page overwritten", overwrite(root * storePage), fmt.Sprintf("page %d at offset %d", root, root*storePage)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".db")
			if err := os.WriteFile(file, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runBinary(t, mcpkit, "store", "dump", file)
			wantRefused(t, file, tc.data, code, stderr, tc.want)
			code, _, stderr = runBinary(t, mcpkit, "store", "backup", file, "--out", file+".bak")
			wantRefused(t, file, tc.data, code, stderr, tc.want)
			code, stdout, stderr := runBinary(t, mcpkit, "store", "verify", file)
			wantRefused(t, file, tc.data, code, stderr, tc.want)
			if !strings.Contains(stdout, file+": damaged\n  ") {
				t.Errorf("verify's report:\n%s", stdout)
			}
			code, _, stderr = runBinary(t, mcpkit, "store", file)
			wantRefused(t, file, tc.data, code, stderr, tc.want)
			if !strings.Contains(stderr, "cannot start") {
				t.Errorf("serve: no refused start:\n%s", stderr)
			}
		})
	}

	// Damage below the root bucket's pages is not read at open (see
	// docs/store.md): the server starts, and what reaches the page fails.
	t.Run("a collection page overwritten", func(t *testing.T) {
		leaf := leafHolding(t, data, "note 1500 x")
		bad := overwrite(leaf * storePage)
		file := filepath.Join(dir, "leaf.db")
		if err := os.WriteFile(file, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("page %d at offset %d", leaf, leaf*storePage)
		code, _, stderr := runBinary(t, mcpkit, "store", "dump", file)
		wantRefused(t, file, bad, code, stderr, want)
		code, _, stderr = runBinary(t, mcpkit, "store", "backup", file, "--out", file+".bak")
		wantRefused(t, file, bad, code, stderr, want)
		code, stdout, stderr := runBinary(t, mcpkit, "store", "verify", file)
		wantRefused(t, file, bad, code, stderr, want)
		if !strings.Contains(stdout, file+": damaged\n  ") {
			t.Errorf("verify's report:\n%s", stdout)
		}
		cs, serveErr := serveStore(t, modernEra, file)
		if !strings.Contains(storeCall(t, cs, "get", `{"collection":"notes","id":10}`), `"id":10`) {
			t.Error("get of a document on an intact page")
		}
		for _, call := range []struct{ tool, args string }{
			{"get", `{"collection":"notes","id":1500}`},
			{"store", `{"collection":"notes","id":5000,"doc":{"g":1}}`},
		} {
			res := callTool(t, cs, call.tool, json.RawMessage(call.args))
			if kind := toolErrorKind(t, res); kind != "damaged" || !strings.Contains(resultText(res), file) {
				t.Errorf("%s reaching the damaged page: kind %q: %s", call.tool, kind, resultText(res))
			}
		}
		cs.Close()
		if strings.Contains(serveErr.String(), "goroutine ") {
			t.Errorf("the server's stderr shows a crash:\n%s", serveErr)
		}
		if after, err := os.ReadFile(file); err != nil || !bytes.Equal(after, bad) {
			t.Errorf("serving the damaged file changed it: %v", err)
		}
	})

	t.Run("empty and missing files", func(t *testing.T) {
		empty := filepath.Join(dir, "empty.db")
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"dump", "verify"} {
			code, _, stderr := runBinary(t, mcpkit, "store", verb, empty)
			wantRefused(t, empty, nil, code, stderr, "empty")
		}
		code, _, stderr := runBinary(t, mcpkit, "store", "backup", empty, "--out", filepath.Join(dir, "b.db"))
		wantRefused(t, empty, nil, code, stderr, "empty")
		missing := filepath.Join(dir, "missing.db")
		code, _, stderr = runBinary(t, mcpkit, "store", "dump", missing)
		if code != 3 || !strings.Contains(stderr, "no store file") {
			t.Errorf("dump of a missing file: exit %d\n%s", code, stderr)
		}
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Errorf("dump created %s: %v", missing, err)
		}
	})

	t.Run("a new store is small", func(t *testing.T) {
		file := filepath.Join(dir, "new.db")
		cs, _ := serveStore(t, modernEra, file)
		storeCall(t, cs, "store", `{"collection":"c","id":1,"doc":{"a":1}}`)
		cs.Close()
		if st, err := os.Stat(file); err != nil || st.Size() > 256<<10 {
			t.Errorf("a store of one document: %d bytes, %v", st.Size(), err)
		}
	})
}

// toolErrorKind returns structuredContent.error.kind of a failed call.
func toolErrorKind(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var sc struct {
		Error struct {
			Kind string `json:"kind"`
		} `json:"error"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || json.Unmarshal(b, &sc) != nil {
		t.Fatalf("not a tool error: %s", resultText(res))
	}
	return sc.Error.Kind
}

// TestStoreDamageWhileServingE2E: damage done to the file under a running
// `mcpkit store FILE` (cut short: reads fault; pages overwritten: bbolt's
// assertions) fails the calls that meet it, reads and writes, with error
// kind "damaged" naming the file; the process stays up, and once the file
// is whole again the same session works.
func TestStoreDamageWhileServingE2E(t *testing.T) {
	path, data := loadedStore(t, 3000)
	cs, stderr := serveStore(t, modernEra, path)
	get := `{"collection":"notes","id":2999}`
	if !strings.Contains(storeCall(t, cs, "get", get), `"id":2999`) {
		t.Fatal("get before the damage")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	restore := func() {
		t.Helper()
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
	}
	damages := []struct {
		name   string
		damage func() error
	}{
		{"cut short", func() error { return f.Truncate(3 * storePage) }},
		{"pages overwritten", func() error {
			_, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, len(data)-int(2*storePage)), 2*storePage)
			return err
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			if err := d.damage(); err != nil {
				t.Fatal(err)
			}
			for _, call := range []struct{ tool, args string }{
				{"get", get},
				{"page", `{"collection":"notes","filter":{"g":3},"limit":5}`},
				{"store", `{"collection":"notes","id":5000,"doc":{"g":1}}`},
			} {
				res := callTool(t, cs, call.tool, json.RawMessage(call.args))
				if kind := toolErrorKind(t, res); kind != "damaged" || !strings.Contains(resultText(res), path) {
					t.Errorf("%s on a damaged file: kind %q: %s", call.tool, kind, resultText(res))
				}
			}
			restore()
			if !strings.Contains(storeCall(t, cs, "get", get), `"id":2999`) {
				t.Fatal("get after the file was restored")
			}
			ping(t, cs)
		})
	}
	if strings.Contains(stderr.String(), "goroutine ") {
		t.Errorf("the server's stderr shows a crash:\n%s", stderr)
	}
}
