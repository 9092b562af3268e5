package diag

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBlobIsDeterministic(t *testing.T) {
	a, b, c := Blob(1, 1000), Blob(1, 1000), Blob(2, 1000)
	if !bytes.Equal(a, b) || bytes.Equal(a, c) || len(a) != 1000 {
		t.Fatal("Blob is not a deterministic function of its seed")
	}
	if !bytes.Equal(Blob(1, 10), a[:10]) {
		t.Fatal("a shorter blob is not a prefix of a longer one with the same seed")
	}
}

// TestBlobJSON: the blob reply diag writes itself is exactly the JSON of
// its BlobReply.
func TestBlobJSON(t *testing.T) {
	for _, n := range []int64{0, 1, 2, 3, 1000} {
		var reply BlobReply
		got := blobJSON(9, n)
		if err := json.Unmarshal(got, &reply); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(reply)
		if !bytes.Equal(got, want) || reply.Bytes != n || reply.Seed != 9 {
			t.Fatalf("blob %d: %s, want %s", n, got, want)
		}
	}
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func text(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }

func errorOf(t *testing.T, res *mcp.CallToolResult) mcpcore.ToolErrorDetail {
	t.Helper()
	var r mcpcore.ToolErrorReply
	b, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || json.Unmarshal(b, &r) != nil {
		t.Fatalf("not an error result: %s", b)
	}
	return r.Error
}

func TestTools(t *testing.T) {
	cs, srv, err := mcptest.Connect(t, mcpcore.Options{Plugins: []string{"diag"}})
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, cs, "diag_echo", EchoArgs{Message: "hi"}); res.IsError || text(res) != `{"message":"hi"}` {
		t.Fatalf("echo = %s", text(res))
	}
	var blob BlobReply
	if res := call(t, cs, "diag_blob", BlobArgs{Bytes: 16, Seed: 3}); res.IsError || json.Unmarshal([]byte(text(res)), &blob) != nil || blob.Bytes != 16 || len(blob.SHA256) != 64 {
		t.Fatalf("blob = %s", text(res))
	}
	if d := errorOf(t, call(t, cs, "diag_blob", BlobArgs{Bytes: MaxBlobBytes + 1})); d.Kind != mcpcore.KindBadParams || d.Path != "/bytes" || !strings.Contains(d.Message, "outside") {
		t.Fatalf("oversized blob = %+v", d)
	}
	if res := call(t, cs, "diag_sleep", SleepArgs{Milliseconds: 1}); res.IsError || !strings.Contains(text(res), "slept_ms") {
		t.Fatalf("sleep = %s", text(res))
	}
	if d := errorOf(t, call(t, cs, "diag_fail", FailArgs{Kind: "not_found", Message: "no such key"})); d.Kind != "not_found" || d.Message != "no such key" {
		t.Fatalf("fail = %+v", d)
	}
	if d := errorOf(t, call(t, cs, "diag_fail", FailArgs{})); d.Kind != mcpcore.KindOther {
		t.Fatalf("fail without a kind = %+v", d)
	}
	if d := errorOf(t, call(t, cs, "diag_fail", FailArgs{Panic: true})); d.Kind != mcpcore.KindInternal {
		t.Fatalf("fail with a panic = %+v", d)
	}
	if res := call(t, cs, "diag_echo", EchoArgs{Message: "still here"}); res.IsError {
		t.Fatalf("echo after a panic: %s", text(res))
	}
	if c := srv.Info().Calls; c.Panicked != 1 {
		t.Fatalf("calls = %+v, want one panic", c)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "diag_blob" })
	if schema, _ := json.Marshal(tools.Tools[i].OutputSchema); !strings.Contains(string(schema), `"anyOf"`) || !strings.Contains(string(schema), `"data_base64"`) {
		t.Fatalf("diag_blob output schema: %s", schema)
	}
}

func TestDiagIsADefaultPlugin(t *testing.T) {
	if !slices.Contains(mcpcore.DefaultPluginNames(), "diag") {
		t.Fatalf("default plugins %v lack diag", mcpcore.DefaultPluginNames())
	}
}

// TestBlobBytesInFlight: blobs being generated at once are bounded by the
// plugin's limit, set in the configuration; one beyond it fails with a
// typed limit error and nothing is allocated.
func TestBlobBytesInFlight(t *testing.T) {
	p := new(Plugin)
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"diag": {Limits: json.RawMessage(`{"blob_bytes_in_flight": 1048576}`)}}
	cs, srv, err := mcptest.Connect(t, mcpcore.Options{Config: cfg, Instances: []mcpcore.Instance{{Name: "diag", Plugin: p, Limits: Limits()}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Info().Plugins[0].Limits; len(got) != 1 || got[0].Name != LimitBlobBytesInFlight || got[0].Value != "1048576" {
		t.Fatalf("info limits = %+v", got)
	}
	p.mu.Lock()
	p.blobBytes = 900 * mcpcore.KiB // another call is generating a blob
	p.mu.Unlock()
	d := errorOf(t, call(t, cs, "diag_blob", BlobArgs{Bytes: 200 * mcpcore.KiB}))
	if d.Kind != mcpcore.KindLimit || d.Limit != LimitBlobBytesInFlight || d.Max != mcpcore.MiB {
		t.Fatalf("a blob beyond the budget: %+v", d)
	}
	if res := call(t, cs, "diag_blob", BlobArgs{Bytes: 100 * mcpcore.KiB}); res.IsError {
		t.Fatalf("a blob within the budget: %s", text(res))
	}
	p.mu.Lock()
	p.blobBytes = 0
	p.mu.Unlock()
	if d := errorOf(t, call(t, cs, "diag_blob", BlobArgs{Bytes: 2 * mcpcore.MiB})); d.Kind != mcpcore.KindLimit {
		t.Fatalf("a blob larger than the whole budget: %+v", d)
	}
	if st := readState(t, cs); st.BlobBytesInFlight != 0 {
		t.Fatalf("after the calls, %d blob bytes are still reserved", st.BlobBytesInFlight)
	}
}

func readState(t *testing.T, cs *mcp.ClientSession) State {
	t.Helper()
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "diag://state"})
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSessionState: whoami keeps a counter per session, freed when the
// session ends.
func TestSessionState(t *testing.T) {
	a, srv, err := mcptest.Connect(t, mcpcore.Options{Plugins: []string{"diag"}})
	if err != nil {
		t.Fatal(err)
	}
	b := mcptest.Session(t, srv, nil, nil)
	whoami := func(cs *mcp.ClientSession) WhoamiReply {
		var w WhoamiReply
		if err := json.Unmarshal([]byte(text(call(t, cs, "diag_whoami", struct{}{}))), &w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	whoami(a)
	wa, wb := whoami(a), whoami(b)
	if wa.Calls != 2 || wb.Calls != 1 || wa.SessionID == wb.SessionID || wa.Principal != "" || wa.PrincipalSessions != 2 {
		t.Fatalf("whoami: a %+v, b %+v", wa, wb)
	}
	if st := readState(t, a); st.SessionsTracked != 2 {
		t.Fatalf("state = %+v, want 2 sessions tracked", st)
	}
	b.Close()
	deadline := time.Now().Add(5 * time.Second)
	for readState(t, a).SessionsTracked != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the ended session's state was not freed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNotify: notify reaches every session of the principal that set a log
// level, at once or later; a notification still pending when the server
// closes is dropped with the server's lifetime, without holding Close.
func TestNotify(t *testing.T) {
	srv, err := mcpcore.NewServer(t.Context(), mcpcore.Options{Plugins: []string{"diag"}})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	opts := &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
		if req.Params.Logger == "diag" && req.Params.Level == "notice" {
			got <- req.Params.Data.(string)
		}
	}}
	listener := mcptest.Session(t, srv, opts, nil)
	if err := listener.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	sender := mcptest.Session(t, srv, nil, nil) // sets no level: receives nothing
	var reply NotifyReply
	if err := json.Unmarshal([]byte(text(call(t, sender, "diag_notify", NotifyArgs{Message: "now"}))), &reply); err != nil || reply.Sessions != 2 {
		t.Fatalf("notify now: %+v %v", reply, err)
	}
	if msg := <-got; msg != "now" {
		t.Fatalf("received %q", msg)
	}
	if res := call(t, sender, "diag_notify", NotifyArgs{Message: "later", AfterMS: 20}); !strings.Contains(text(res), `"scheduled":true`) {
		t.Fatalf("notify later: %s", text(res))
	}
	if msg := <-got; msg != "later" {
		t.Fatalf("received %q", msg)
	}
	if d := errorOf(t, call(t, sender, "diag_notify", NotifyArgs{Message: "x", AfterMS: 60_001})); d.Kind != mcpcore.KindBadParams || d.Path != "/after_ms" {
		t.Fatalf("a delay beyond a minute: %+v", d)
	}
	call(t, sender, "diag_notify", NotifyArgs{Message: "never", AfterMS: 60_000})
	start := time.Now()
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close waited %v for a pending notification", took)
	}
}
