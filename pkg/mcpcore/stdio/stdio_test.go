package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const waitTimeout = 10 * time.Second

// ---- helpers ---------------------------------------------------------------

// wireResponse is a JSON-RPC response as read back from the wire.
type wireResponse struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"` // set from the raw member, even for null
	Result  json.RawMessage  `json:"result"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// parseResponse parses one output line strictly: it must be a JSON-RPC 2.0
// response with an "id" member (possibly null) and exactly one of result and
// error.
func parseResponse(line []byte) (*wireResponse, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if !json.Valid(line) {
		return nil, fmt.Errorf("output line is not JSON: %q", line)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		return nil, fmt.Errorf("output line is not an object: %q", line)
	}
	rawID, ok := members["id"]
	if !ok {
		return nil, fmt.Errorf("output line has no id: %q", line)
	}
	var r wireResponse
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("output line %q: %v", line, err)
	}
	if r.JSONRPC != "2.0" {
		return nil, fmt.Errorf("output line has jsonrpc %q: %q", r.JSONRPC, line)
	}
	id := json.RawMessage(bytes.TrimSpace(rawID))
	r.ID = &id // encoding/json leaves a *RawMessage nil for null
	if !(string(id) == "null" || id[0] == '"' || id[0] == '-' || ('0' <= id[0] && id[0] <= '9')) {
		return nil, fmt.Errorf("output line has a bad id %s: %q", id, line)
	}
	if (r.Result != nil) == (r.Error != nil) {
		return nil, fmt.Errorf("output line needs exactly one of result and error: %q", line)
	}
	return &r, nil
}

// runConn feeds input to a connection over a bytes.Reader, reads every
// message until EOF and, if respond is set, answers each call with an empty
// result. It returns the messages, everything written and the connection.
func runConn(t testing.TB, input []byte, opts Options, respond bool) ([]jsonrpc.Message, []byte, *conn) {
	t.Helper()
	ctx := context.Background()
	var out bytes.Buffer // unsynchronized on purpose: the race detector checks writeMu
	mc, err := NewTransport(bytes.NewReader(input), &out, opts).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*conn)
	var msgs []jsonrpc.Message
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Read: %v, want EOF", err)
			}
			break
		}
		msgs = append(msgs, msg)
		if req, ok := msg.(*jsonrpc.Request); ok && respond && req.IsCall() {
			if err := c.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	<-c.readDone
	return msgs, out.Bytes(), c
}

func ping(id any) string {
	b, _ := json.Marshal(id)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"ping"}`, b)
}

// bigRequest returns a request line of at least n bytes with the given
// id, placed before (idFirst) or after the large params.
func bigRequest(id string, n int, idFirst bool) string {
	pad := strings.Repeat("A", n)
	if idFirst {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}`, id, pad)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}},"id":%s}`, pad, id)
}

// wantError describes one expected error response.
type wantError struct {
	id      string // JSON text of the id
	code    int64
	message string // substring of the message
}

func checkErrors(t *testing.T, out []byte, want []wantError) {
	t.Helper()
	lines := bytes.SplitAfter(out, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d output lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, line := range lines {
		r, err := parseResponse(line)
		if err != nil {
			t.Fatal(err)
		}
		if r.Error == nil {
			t.Fatalf("line %d: want an error response, got %s", i, line)
		}
		if got := string(*r.ID); got != want[i].id {
			t.Errorf("line %d: id %s, want %s", i, got, want[i].id)
		}
		if r.Error.Code != want[i].code {
			t.Errorf("line %d: code %d, want %d", i, r.Error.Code, want[i].code)
		}
		if !strings.Contains(r.Error.Message, want[i].message) {
			t.Errorf("line %d: message %q, want it to contain %q", i, r.Error.Message, want[i].message)
		}
	}
}

func callIDs(msgs []jsonrpc.Message) []any {
	var ids []any
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok {
			ids = append(ids, req.ID.Raw())
		}
	}
	return ids
}

// ---- framing (no server) --------------------------------------------------

func TestFraming(t *testing.T) {
	t.Parallel()
	exact := bigRequest("1", 0, true)
	exact = exact[:len(exact)-3] + strings.Repeat(" ", 1024-len(exact)) + "}}}" // exactly 1024 bytes
	tests := []struct {
		name    string
		input   string
		max     int64
		wantIDs []any
		want    []wantError
	}{
		{
			name:    "blank whitespace and CRLF lines are ignored",
			input:   "\n\n   \n\t \r\n\r\n" + ping(1) + "\r\n \r\n" + ping("two") + "\n\r\n" + "  " + ping(3) + "  ",
			wantIDs: []any{int64(1), "two", int64(3)},
		},
		{
			name:    "last line without newline",
			input:   ping(1) + "\n" + ping(2),
			wantIDs: []any{int64(1), int64(2)},
		},
		{
			name:    "malformed JSON",
			input:   "{not json\n" + ping(1) + "\n" + `{"jsonrpc":"2.0","id":5,"method":"ping"} trailing` + "\n" + ping(2) + "\n",
			wantIDs: []any{int64(1), int64(2)},
			want: []wantError{
				{"null", jsonrpc.CodeParseError, "parse error"},
				{"null", jsonrpc.CodeParseError, "parse error"},
			},
		},
		{
			name: "valid JSON but not JSON-RPC",
			input: `{"jsonrpc":"1.0","id":7,"method":"ping"}` + "\n" +
				`{"id":"abc","method":"ping"}` + "\n" +
				`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}` + "\n" +
				"123\n\"str\"\nnull\n" +
				ping(8) + "\n",
			wantIDs: []any{int64(8)},
			want: []wantError{
				{"7", jsonrpc.CodeInvalidRequest, "invalid request"},
				{`"abc"`, jsonrpc.CodeInvalidRequest, "invalid request"},
				{"null", jsonrpc.CodeInvalidRequest, "invalid request"},
				{"null", jsonrpc.CodeInvalidRequest, "invalid request"},
				{"null", jsonrpc.CodeInvalidRequest, "invalid request"},
				{"null", jsonrpc.CodeInvalidRequest, "invalid request"},
			},
		},
		{
			name:    "batch",
			input:   "[" + ping(1) + "," + ping(2) + "]\n[]\n" + ping(3) + "\n",
			wantIDs: []any{int64(3)},
			want: []wantError{
				{"null", jsonrpc.CodeInvalidRequest, "batches are not supported"},
				{"null", jsonrpc.CodeInvalidRequest, "batches are not supported"},
			},
		},
		{
			name:    "oversized frame with number id",
			max:     1024,
			input:   bigRequest("42", 2000, true) + "\n" + ping(43) + "\n",
			wantIDs: []any{int64(43)},
			want:    []wantError{{"42", jsonrpc.CodeInvalidRequest, "frame of more than 1024 bytes exceeds the frame_bytes limit (1024)"}},
		},
		{
			name:    "oversized frame with string id, CRLF",
			max:     1024,
			input:   bigRequest(`"req-\u0031"`, 200_000, true) + "\r\n" + ping(1) + "\r\n",
			wantIDs: []any{int64(1)},
			want:    []wantError{{`"req-1"`, jsonrpc.CodeInvalidRequest, "frame_bytes limit (1024)"}},
		},
		{
			// The TypeScript SDK writes the id last: it is found by
			// scanning the line as it is skipped (before, id null).
			name:    "oversized frame, id after the params",
			max:     1024,
			input:   bigRequest("9", 10_000, false) + "\n" + ping(1) + "\n",
			wantIDs: []any{int64(1)},
			want:    []wantError{{"9", jsonrpc.CodeInvalidRequest, "frame_bytes limit (1024)"}},
		},
		{
			name:    "oversized frame of MiBs, string id after the params, CRLF",
			max:     1024,
			input:   bigRequest(`"last-\u0031"`, 3<<20, false) + "\r\n" + ping(1) + "\n",
			wantIDs: []any{int64(1)},
			want:    []wantError{{`"last-1"`, jsonrpc.CodeInvalidRequest, "frame_bytes limit (1024)"}},
		},
		{
			name:    "oversized frame, id only inside the params",
			max:     1024,
			input:   `{"jsonrpc":"2.0","method":"x","params":{"id":5,"pad":"` + strings.Repeat("}", 2000) + `"}}` + "\n" + ping(1) + "\n",
			wantIDs: []any{int64(1)},
			want:    []wantError{{"null", jsonrpc.CodeInvalidRequest, "frame_bytes limit (1024)"}},
		},
		{
			name:    "oversized frame at EOF",
			max:     1024,
			input:   ping(1) + "\n" + bigRequest("2", 5000, true),
			wantIDs: []any{int64(1)},
			want:    []wantError{{"2", jsonrpc.CodeInvalidRequest, "frame_bytes limit (1024)"}},
		},
		{
			name:    "oversized whitespace line",
			max:     1024,
			input:   strings.Repeat(" ", 1025) + "\n" + ping(1) + "\n",
			wantIDs: []any{int64(1)},
			want:    []wantError{{"null", jsonrpc.CodeInvalidRequest, "frame_bytes limit (1024)"}},
		},
		{
			name:    "frame of exactly the limit, with and without CR",
			max:     1024,
			input:   exact + "\n" + exact + "\r\n" + exact + "x\n",
			wantIDs: []any{int64(1), int64(1)},
			want:    []wantError{{"1", jsonrpc.CodeInvalidRequest, "frame_bytes limit (1024)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msgs, out, _ := runConn(t, []byte(tt.input), Options{MaxFrameBytes: tt.max}, false)
			if got := fmt.Sprint(callIDs(msgs)); got != fmt.Sprint(tt.wantIDs) {
				t.Errorf("request ids %s, want %s", got, fmt.Sprint(tt.wantIDs))
			}
			checkErrors(t, out, tt.want)
		})
	}
}

func TestOversizedFrameMemoryBounded(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	for _, idFirst := range []bool{true, false} {
		input := bigRequest("7", 6<<20, idFirst) + "\n" + ping(8) + "\n"
		msgs, out, c := runConn(t, []byte(input), Options{MaxFrameBytes: limit}, false)
		checkErrors(t, out, []wantError{{"7", jsonrpc.CodeInvalidRequest, "frame of more than 1048576 bytes exceeds the frame_bytes limit (1048576)"}})
		if got := fmt.Sprint(callIDs(msgs)); got != "[8]" {
			t.Errorf("id first %v: request ids %s, want [8]", idFirst, got)
		}
		if bound := 2 * (limit + readBufferBytes); c.maxAcc > bound {
			t.Errorf("id first %v: line buffer grew to %d bytes, want at most %d", idFirst, c.maxAcc, bound)
		}
	}
}

// TestOversizedFrameIDLastNotBuffered: finding an id that comes after
// 64 MiB of params allocates about what the frame limit lets the line
// assemble before it is known to be too long, not the line: the bytes past
// the limit are scanned and dropped.
func TestOversizedFrameIDLastNotBuffered(t *testing.T) {
	const (
		limit = 1 << 20
		size  = 64 << 20
	)
	input := []byte(bigRequest(`"tail"`, size, false) + "\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, out, _ := runConn(t, input, Options{MaxFrameBytes: limit}, false)
	runtime.ReadMemStats(&after)
	checkErrors(t, out, []wantError{{`"tail"`, jsonrpc.CodeInvalidRequest, "frame_bytes limit"}})
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*limit {
		t.Errorf("reading a %d MiB line past a %d MiB limit allocated %d MiB, want at most %d MiB",
			size>>20, limit>>20, alloc>>20, 8*limit>>20)
	}
}

func TestLargeFrameWithinLimit(t *testing.T) {
	t.Parallel()
	input := bigRequest("1", 3<<20, true) + "\n" + ping(2) + "\n"
	msgs, out, _ := runConn(t, []byte(input), Options{}, false)
	if len(out) != 0 {
		t.Fatalf("unexpected output %q", out)
	}
	if got := fmt.Sprint(callIDs(msgs)); got != "[1 2]" {
		t.Fatalf("request ids %s, want [1 2]", got)
	}
	var p struct {
		Arguments struct{ Text string } `json:"arguments"`
	}
	if err := json.Unmarshal(msgs[0].(*jsonrpc.Request).Params, &p); err != nil || len(p.Arguments.Text) != 3<<20 {
		t.Fatalf("params not preserved: len %d, err %v", len(p.Arguments.Text), err)
	}
}

func TestRecoverID(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"id":1}`, "1"},
		{` { "jsonrpc" : "2.0" , "id" : -12.5e3 , "method":"x"}`, "-12.5e3"},
		{`{"id":"a\"b"}`, `"a\"b"`},
		{`{"\u0069d":"x"}`, `"x"`},
		{`{"params":{"id":5},"id":6}`, "6"},
		{`{"params":{"text":"x\"}{]\\"},"id":7}`, "7"},
		{`{"method":"m","params":[1,{"a":"]"}],"id":"last"}`, `"last"`},
		{`{"method":"m","id":8,"id":9}`, "8"},
		{`{"params":["}",{"id":5}],"id":"six"`, `"six"`},
		{`{"id":12`, ""}, // truncated number: not recoverable
		{`{"id":"abc`, ""},
		{`{"id":null}`, ""},
		{`{"id":true}`, ""},
		{`{"id":{"a":1}}`, ""},
		{`{"ID":1}`, ""},
		{`[{"id":1}]`, ""},
		{`{"method":"x","params":"unterminated`, ""},
		{``, ""},
		{`{`, ""},
		{`{"id":01}`, ""},
		{`{"id":,"method":"x"}`, ""}, // no value: found by FuzzFrames, once a panic
		{`{"id":}`, ""},
		{`{"id": ,`, ""},
	}
	for _, tt := range tests {
		if got := string(recoverID([]byte(tt.in))); got != tt.want {
			t.Errorf("recoverID(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// ---- connection semantics -------------------------------------------------

// noCloseReader hides the Close method of a reader.
type noCloseReader struct{ io.Reader }

func TestCloseUnblocksRead(t *testing.T) {
	t.Parallel()
	for _, closable := range []bool{false, true} {
		t.Run(fmt.Sprintf("closable=%v", closable), func(t *testing.T) {
			t.Parallel()
			pr, pw := io.Pipe()
			var r io.Reader = noCloseReader{pr}
			if closable {
				r = pr
			}
			mc, err := NewTransport(r, io.Discard, Options{}).Connect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			c := mc.(*conn)
			readErr := make(chan error, 1)
			go func() {
				_, err := c.Read(context.Background())
				readErr <- err
			}()
			time.Sleep(10 * time.Millisecond) // let Read block
			var wg sync.WaitGroup
			for range 4 { // Close is idempotent and concurrency-safe
				wg.Go(func() { _ = c.Close() })
			}
			wg.Wait()
			select {
			case err := <-readErr:
				if !errors.Is(err, io.EOF) {
					t.Errorf("Read after Close: %v, want EOF", err)
				}
			case <-time.After(waitTimeout):
				t.Fatal("Close did not unblock Read")
			}
			if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
				t.Errorf("second Read: %v, want EOF", err)
			}
			if err := c.Write(context.Background(), &jsonrpc.Request{Method: "x"}); !errors.Is(err, mcp.ErrConnectionClosed) {
				t.Errorf("Write after Close: %v, want ErrConnectionClosed", err)
			}
			if !closable {
				// The reader goroutine is still blocked in pr.Read; end it.
				pw.Close()
			}
			select {
			case <-c.readDone:
			case <-time.After(waitTimeout):
				t.Fatal("reader goroutine did not exit")
			}
		})
	}
}

func TestReadContextDone(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	mc, err := NewTransport(pr, io.Discard, Options{}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := mc.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read: %v, want deadline exceeded", err)
	}
	if mc.SessionID() != "" {
		t.Errorf("SessionID() = %q, want empty", mc.SessionID())
	}
}

func TestConnectOnce(t *testing.T) {
	t.Parallel()
	tr := NewTransport(bytes.NewReader(nil), io.Discard, Options{})
	mc, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if _, err := tr.Connect(context.Background()); err == nil {
		t.Fatal("second Connect succeeded")
	}
}

func TestConcurrentWritesDoNotInterleave(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer // unsynchronized: the race detector checks the lock
	mc, err := NewTransport(bytes.NewReader(nil), &out, Options{}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 32, 50
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				params, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", (g*each+i)%5000)})
				msg := &jsonrpc.Request{ID: mustID(fmt.Sprintf("%d-%d", g, i)), Method: "m", Params: params}
				if err := mc.Write(context.Background(), msg); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := mc.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		msg, err := jsonrpc.DecodeMessage(sc.Bytes())
		if err != nil {
			t.Fatalf("interleaved or corrupt line %q: %v", sc.Bytes(), err)
		}
		seen[msg.(*jsonrpc.Request).ID.Raw().(string)] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("read back %d distinct messages, want %d", len(seen), writers*each)
	}
}

func mustID(v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}

func TestLoggerNeverUsesWriter(t *testing.T) {
	t.Parallel()
	input := "{bad\n[1]\n" + bigRequest("1", 5000, true) + "\n"
	// Logs at debug level to a separate buffer; the output must still
	// contain nothing but JSON-RPC responses.
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slogToBuffer(&logs, &mu)
	_, out, _ := runConn(t, []byte(input), Options{MaxFrameBytes: 1024, Logger: logger}, false)
	checkErrors(t, out, []wantError{
		{"null", jsonrpc.CodeParseError, ""},
		{"null", jsonrpc.CodeInvalidRequest, "batches"},
		{"1", jsonrpc.CodeInvalidRequest, "frame_bytes"},
	})
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "oversized frame") {
		t.Errorf("no warning logged for the oversized frame; logs:\n%s", logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func slogToBuffer(buf *bytes.Buffer, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{buf, mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
