package test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startActions runs `mcpkit actions start --http 127.0.0.1:0` with the
// OAuth server opted out ("oauth": false: /mcp without a token, for the
// tests of the app's tools rather than of its sign-in) and returns its
// base URL once it listens. startActionsDefault runs it without a
// configuration.
func startActions(t *testing.T) *httpProc {
	t.Helper()
	cfg := writeConfig(t, `{"plugins": {"actions": {"config": {"oauth": false}}}}`)
	return startListening(t, binary(t), "actions", "--log-format", "json", "start", "--http", "127.0.0.1:0", "--config", cfg)
}

func startActionsDefault(t *testing.T) *httpProc {
	t.Helper()
	return startListening(t, binary(t), "actions", "--log-format", "json", "start", "--http", "127.0.0.1:0")
}

func httpDo(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

// TestActionsStartHTTP serves the example app with `mcpkit actions start`
// and reaches it over MCP (both eras) and its HTTP API.
func TestActionsStartHTTP(t *testing.T) {
	hp := startActions(t)

	if code, body := httpDo(t, "GET", hp.base+"/api/status", ""); code != 200 || !strings.Contains(body, `"name":"example"`) || !strings.Contains(body, `"uptime_seconds"`) {
		t.Errorf("GET /api/status: %d %s", code, body)
	}
	if code, body := httpDo(t, "POST", hp.base+"/api/messages", `{"channel":"general","text":"hello | all","author":"ann"}`); code != 200 || !strings.Contains(body, `"id":1`) {
		t.Errorf("POST /api/messages: %d %s", code, body)
	}
	if code, body := httpDo(t, "GET", hp.base+"/api/messages?channel=general&limit=5", ""); code != 200 || !strings.Contains(body, `"text":"hello | all"`) {
		t.Errorf("GET /api/messages: %d %s", code, body)
	}
	if code, body := httpDo(t, "GET", hp.base+"/api/swagger", ""); code != 200 || !strings.Contains(body, `"/api/messages"`) {
		t.Errorf("GET /api/swagger: %d %s", code, body)
	}

	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs := hp.connect(t, era, nil)
			if got := cs.InitializeResult().Instructions; !strings.Contains(got, "example action app") {
				t.Errorf("instructions %q", got)
			}
			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			if strings.Join(names, " ") != "message-list message-post result session-create session-destroy status user-create" {
				t.Errorf("tools %v", names)
			}
			res := callTool(t, cs, "message-post", map[string]any{"channel": "mcp-" + era, "text": "via mcp", "author": "bot"})
			if res.IsError {
				t.Fatalf("message-post: %s", resultText(res))
			}
			page := decode[struct {
				Messages []struct{ Text string } `json:"messages"`
			}](t, callTool(t, cs, "message-list", map[string]any{"channel": "mcp-" + era}))
			if len(page.Messages) != 1 || page.Messages[0].Text != "via mcp" {
				t.Errorf("message-list: %+v", page)
			}
			if md := resultText(callTool(t, cs, "status", map[string]any{})); !strings.Contains(md, `- **name**: example`) {
				t.Errorf("status as markdown: %s", md)
			}
			if res := callTool(t, cs, "message-post", map[string]any{"channel": "x"}); !res.IsError {
				t.Errorf("a missing param succeeded: %s", resultText(res))
			}
			rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "example://messages/mcp-" + era})
			if err != nil || !strings.Contains(rr.Contents[0].Text, "via mcp") {
				t.Errorf("read the channel's resource: %v %+v", err, rr)
			}
			pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "summarize-channel", Arguments: map[string]string{"channel": "mcp-" + era}})
			if err != nil || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "bot: via mcp") {
				t.Errorf("summarize-channel: %v %+v", err, pr)
			}
		})
	}
}

// TestActionsRun runs an action from the command line.
func TestActionsRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary(t), "actions", "run", "status")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcpkit actions run status: %v\n%s", err, stderr.String())
	}
	var st struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil || st.Name != "example" || st.Version == "" {
		t.Errorf("status: %v %s", err, stdout.String())
	}
	cmd = exec.Command(binary(t), "actions", "run", "message:post", "--channel", "c")
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), `"missing_param"`) {
		t.Errorf("a missing param: %v, stderr %s", err, stderr.String())
	}
}

// TestActionsWebSocket: a WebSocket client of the running binary runs an
// action with its messageId echoed, subscribes to a channel, and receives
// the broadcast of a message posted over HTTP.
func TestActionsWebSocket(t *testing.T) {
	hp := startActions(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hp.base, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	roundTrip := func(msg string) map[string]any {
		t.Helper()
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		return m
	}
	if m := roundTrip(`{"messageType":"action","action":"status","messageId":"s1"}`); m["messageId"] != "s1" || m["response"] == nil {
		t.Fatalf("action over the socket: %v", m)
	}
	if m := roundTrip(`{"messageType":"subscribe","channel":"live","messageId":2}`); m["status"] != "ok" {
		t.Fatalf("subscribe: %v", m)
	}
	if code, body := httpDo(t, "POST", hp.base+"/api/messages", `{"channel":"live","text":"to the room","author":"ann"}`); code != 200 {
		t.Fatalf("POST /api/messages: %d %s", code, body)
	}
	_, data, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		MessageType, Channel string
		Message              struct{ Text string }
	}
	if err := json.Unmarshal(data, &b); err != nil || b.MessageType != "broadcast" || b.Channel != "live" || b.Message.Text != "to the room" {
		t.Fatalf("broadcast %s (%v)", data, err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
}
