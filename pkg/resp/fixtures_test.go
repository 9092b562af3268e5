package resp

import (
	"bytes"
	"encoding/json"
	"flag"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

var update = flag.Bool("update", false, "rewrite testdata/debug_protocol from a live redis-server")

// debugProtocolTypes are the arguments of DEBUG PROTOCOL.
var debugProtocolTypes = []string{"string", "integer", "double", "bignum", "null", "array", "set", "map",
	"attrib", "push", "verbatim", "true", "false"}

// recorder keeps every byte read through it.
type recorder struct {
	r   net.Conn
	buf bytes.Buffer
}

func (c *recorder) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.buf.Write(p[:n])
	return n, err
}

// debugProtocol returns the raw bytes of everything the server sends for
// DEBUG PROTOCOL typ (a push and the reply that follows it, an attribute
// with its reply), delimited by an ECHO sent after it.
func debugProtocol(t *testing.T, addr string, protocol int, typ string) []byte {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	rec := &recorder{r: nc}
	r := NewReader(rec, ReaderOptions{})
	if protocol == 3 {
		if _, err := nc.Write(AppendCommand(nil, [][]byte{[]byte("HELLO"), []byte("3")})); err != nil {
			t.Fatal(err)
		}
		if v, _, err := r.ReadValue(); err != nil || v.Kind != KindMap {
			t.Fatalf("HELLO 3: %#v, %v", v, err)
		}
	}
	const marker = "end-of-fixture"
	var cmds []byte
	cmds = AppendCommand(cmds, [][]byte{[]byte("DEBUG"), []byte("PROTOCOL"), []byte(typ)})
	cmds = AppendCommand(cmds, [][]byte{[]byte("ECHO"), []byte(marker)})
	if _, err := nc.Write(cmds); err != nil {
		t.Fatal(err)
	}
	start := int64(rec.buf.Len()) - int64(r.w-r.r) // the HELLO reply's bytes are behind
	n := int64(0)
	for {
		v, size, err := r.ReadValue()
		if err != nil {
			t.Fatalf("DEBUG PROTOCOL %s (RESP%d): %v", typ, protocol, err)
		}
		if v.Kind == KindBulkString && string(v.Str) == marker {
			return rec.buf.Bytes()[start : start+n]
		}
		n += size
	}
}

func fixturePath(protocol int, typ, ext string) string {
	return filepath.Join("testdata", "debug_protocol", map[int]string{2: "resp2", 3: "resp3"}[protocol], typ+ext)
}

// decodeAll decodes every frame of wire and returns their JSON forms.
func decodeAll(t *testing.T, wire []byte) ([]Value, []byte) {
	t.Helper()
	r := NewReader(bytes.NewReader(wire), ReaderOptions{})
	var vals []Value
	var n int64
	for {
		v, size, err := r.ReadValue()
		if err != nil {
			if n != int64(len(wire)) {
				t.Fatalf("decoded %d of %d bytes: %v", n, len(wire), err)
			}
			break
		}
		n += size
		vals = append(vals, v)
	}
	js, err := json.MarshalIndent(vals, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return vals, append(js, '\n')
}

// TestDebugProtocolFixtures decodes the recorded replies of DEBUG PROTOCOL
// (every RESP3 type from a real server, and RESP2's where they differ),
// checks their JSON forms, and checks that a live server still sends the
// same bytes. -update rewrites the fixtures from the live server.
func TestDebugProtocolFixtures(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{Config: []string{"enable-debug-command yes"}})
	for _, typ := range debugProtocolTypes {
		for _, protocol := range []int{3, 2} {
			live := debugProtocol(t, srv.Addr, protocol, typ)
			path := fixturePath(protocol, typ, ".resp")
			if protocol == 2 {
				resp3, err := os.ReadFile(fixturePath(3, typ, ".resp"))
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Equal(live, resp3) {
					if _, err := os.Stat(path); err == nil {
						t.Errorf("%s exists but RESP2 sends the same bytes as RESP3", path)
					}
					continue
				}
			}
			if *update {
				_, js := decodeAll(t, live)
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, live, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(fixturePath(protocol, typ, ".json"), js, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			stored, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to record)", err)
			}
			if !bytes.Equal(stored, live) {
				t.Errorf("DEBUG PROTOCOL %s (RESP%d): the server sends %q, %s holds %q", typ, protocol, live, path, stored)
			}
			vals, js := decodeAll(t, stored)
			want, err := os.ReadFile(fixturePath(protocol, typ, ".json"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(js, want) {
				t.Errorf("%s decodes to\n%s\nwant\n%s", path, js, want)
			}
			var re []byte
			for _, v := range vals {
				re = AppendValue(re, v)
			}
			if again, _ := decodeAll(t, re); !reflect.DeepEqual(again, vals) {
				t.Errorf("%s: re-encoded frames decode differently", path)
			}
		}
	}
}

// TestDebugProtocolKinds pins what the recorded RESP3 fixtures must be, so
// that -update cannot silently record something else.
func TestDebugProtocolKinds(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"string":   "bulk_string",
		"integer":  "integer",
		"double":   "double",
		"bignum":   "big_number",
		"null":     "null",
		"array":    "array",
		"set":      "set",
		"map":      "map",
		"attrib":   "attribute",
		"push":     "push bulk_string",
		"verbatim": "verbatim",
		"true":     "boolean",
		"false":    "boolean",
	}
	for typ, kinds := range want {
		wire, err := os.ReadFile(fixturePath(3, typ, ".resp"))
		if err != nil {
			t.Fatal(err)
		}
		vals, _ := decodeAll(t, wire)
		var got []string
		for _, v := range vals {
			got = append(got, v.Kind.String())
		}
		if strings.Join(got, " ") != kinds {
			t.Errorf("%s: kinds %v, want %s", typ, got, kinds)
		}
	}
}
