package resp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
)

// TestEngineErrorKinds: every class of the engine's errors reaches the
// host as this plugin's error kind, wrapped or not, with its message as it
// is; limits, refused arguments and the engine's end become the core's.
func TestEngineErrorKinds(t *testing.T) {
	kindOf := func(err error) string {
		var k interface{ ErrorKind() string }
		if !errors.As(err, &k) {
			return ""
		}
		return k.ErrorKind()
	}
	for class, want := range map[error]string{
		respengine.ErrSessionNotFound: KindSessionNotFound,
		respengine.ErrSessionReset:    KindSessionReset,
		respengine.ErrRefused:         KindRefused,
		respengine.ErrUnavailable:     KindConnection,
		respengine.ErrConnectionLost:  KindConnectionLost,
		respengine.ErrUnknownEffect:   KindUnknownEffect,
		respengine.ErrProcessNotFound: KindProcessNotFound,
	} {
		err := fmt.Errorf("outer: %w", &respengine.Error{Class: class})
		if got := engineError(err); kindOf(got) != want || got.Error() != err.Error() {
			t.Errorf("%v: kind %q message %q, want %q %q", class, kindOf(got), got, want, err)
		}
	}
	if got := engineError(respengine.ErrClosed); kindOf(got) != mcpcore.KindUnavailable || !errors.Is(got, mcpcore.ErrClosed) {
		t.Errorf("ErrClosed: %v", got)
	}
	var le *mcpcore.LimitError
	if got := engineError(&respengine.LimitError{Limit: LimitMaxSessions, Max: 2, Actual: 3, Detail: "d"}); !errors.As(got, &le) || le.Limit != LimitMaxSessions || le.Max != 2 || le.Actual != 3 {
		t.Errorf("LimitError: %v", got)
	}
	var pe *mcpcore.ParamError
	if got := engineError(&respengine.ArgError{Arg: "args/3", Reason: "r"}); !errors.As(got, &pe) || pe.Path != "/args/3" || pe.Reason != "r" {
		t.Errorf("ArgError: %v", got)
	}
	if got := engineError(context.Canceled); got != context.Canceled {
		t.Errorf("another error: %v", got)
	}
}

// TestBatchRefusalWords: the engine's batch refusals reach a caller of
// execute and of send word for word as the plugin words them, the refused
// command naming the session tool (which sends it).
func TestBatchRefusalWords(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	e := connect(t, targetAt(s, ""), `{"batch_commands": 2, "command_bytes": 1024, "batch_bytes": 1500}`)
	h := e.open(nil, nil)
	set := func(n int) string { return `["SET","k","` + strings.Repeat("x", n) + `"]` }
	limit := func(name string, max, needed int, detail string) string {
		return fmt.Sprintf(`{"kind":"limit","message":"limit %s (%d) exceeded: needed %d: %s","limit":"%s","max":%d}`, name, max, needed, detail, name, max)
	}
	for _, c := range []struct {
		commands, execute, send string // send: "" when it sends the batch, "-" when not asked
	}{
		{`[["SET","k","v"],["subscribe","c"]]`, `{"kind":"refused","message":"command 1 (SUBSCRIBE) has no ordinary one-reply shape, so execute does not run it; nothing was sent: open a session with resp_session and use its send and receive actions"}`, ""},
		{`[["A"],["B"],["C"]]`, limit(LimitBatchCommands, 2, 3, "nothing was sent; split the batch"), "="},
		{`[["PING"],` + set(2000) + `]`, limit(LimitCommandBytes, 1024, 2029, "command 1; nothing was sent"), "="},
		{`[` + set(900) + `,` + set(900) + `]`, limit(LimitBatchBytes, 1500, 1856, "nothing was sent; split the batch"), "="},
		{`[["GET"],["SET",{"base64":"!"}]]`, `{"kind":"bad_params","message":"invalid argument /commands/1/1: invalid base64 (standard alphabet, padded): illegal base64 data at input byte 0","path":"/commands/1/1"}`, "="},
		{`[["GET"],["SET",{"a/b~":1}]]`, `{"kind":"bad_params","message":"invalid argument /commands/1/1/a~1b~0: unexpected member: an object argument must be exactly {\"base64\": \"...\"}","path":"/commands/1/1/a~1b~0"}`, "-"},
	} {
		if c.send == "=" {
			c.send = c.execute
		}
		for tool, want := range map[string]string{"resp_execute": c.execute, "resp_session": c.send} {
			if want == "-" {
				continue
			}
			args := map[string]any{"commands": json.RawMessage(c.commands)}
			if tool == "resp_session" {
				args["action"], args["session"] = ActionSend, h
			}
			res := e.call(nil, tool, args)
			got, _ := json.Marshal(decode[errReply](t, res).Error)
			if res.IsError != (want != "") || want != "" && string(got) != want {
				t.Errorf("%s %.80s:\n got %s\nwant %s", tool, c.commands, got, want)
			}
		}
	}
}
