package respengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// command returns a command of args' words.
func command(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// sized returns SET k <value>, its value grown until the framed command is
// exactly n bytes.
func sized(t *testing.T, n int64) [][]byte {
	t.Helper()
	c := command("SET", "k", "")
	for resp.CommandSize(c) < n {
		c[2] = append(c[2], 'v')
	}
	if resp.CommandSize(c) != n {
		t.Fatalf("no SET k command is %d bytes", n)
	}
	return c
}

// wantLimit fails unless err is a LimitError of limit with max, actual and
// detail.
func wantLimit(t *testing.T, err error, limit string, max, actual int64, detail string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != limit || le.Max != max || le.Actual != actual || le.Detail != detail {
		t.Errorf("got %v, want limit %s of %d, needed %d: %s", err, limit, max, actual, detail)
	}
}

// TestBatchLimitsAtTheBoundary: a batch exactly at each limit passes; one
// command or one byte more is refused, with the limit's name, its value,
// what the batch needed and which command broke it.
func TestBatchLimitsAtTheBoundary(t *testing.T) {
	l := BatchLimits{Commands: 3, CommandBytes: 64, BatchBytes: 150}
	ping := command("PING") // 14 bytes framed
	for _, check := range []func([][][]byte) error{l.CheckPipeline, func(c [][][]byte) error { return l.CheckSend(c, nil) }} {
		if err := check([][][]byte{ping, ping, ping}); err != nil {
			t.Errorf("3 commands at batch_commands 3: %v", err)
		}
		wantLimit(t, check([][][]byte{ping, ping, ping, ping}), LimitBatchCommands, 3, 4, "nothing was sent; split the batch")
		if err := check([][][]byte{ping, sized(t, 64)}); err != nil {
			t.Errorf("a command of 64 bytes at command_bytes 64: %v", err)
		}
		wantLimit(t, check([][][]byte{ping, sized(t, 65)}), LimitCommandBytes, 64, 65, "command 1; nothing was sent")
		if err := check([][][]byte{sized(t, 64), sized(t, 60), sized(t, 26)}); err != nil {
			t.Errorf("a batch of 150 bytes at batch_bytes 150: %v", err)
		}
		wantLimit(t, check([][][]byte{sized(t, 64), sized(t, 60), sized(t, 27)}), LimitBatchBytes, 150, 151, "nothing was sent; split the batch")
		var ae *ArgError
		if err := check(nil); !errors.As(err, &ae) || ae.Arg != "commands" || ae.Reason != "no command given" {
			t.Errorf("an empty batch: %v", err)
		}
	}
	// Raw data is held to batch_bytes alone.
	if err := l.CheckSend(nil, make([]byte, 150)); err != nil {
		t.Errorf("150 bytes of data at batch_bytes 150: %v", err)
	}
	wantLimit(t, l.CheckSend(nil, make([]byte, 151)), LimitBatchBytes, 150, 151, "nothing was sent")
	// A zero limit refuses every batch.
	wantLimit(t, BatchLimits{}.CheckPipeline([][][]byte{ping}), LimitBatchCommands, 0, 1, "nothing was sent; split the batch")
}

// TestBatchRefusedCommands: a pipeline refuses a command with an unusual
// reply shape, by its index and upper-case name, as of class ErrRefused;
// a send writes it. Commands are checked in order: the first at fault is
// the one reported.
func TestBatchRefusedCommands(t *testing.T) {
	l := BatchLimits{Commands: 8, CommandBytes: 64, BatchBytes: 1024}
	for _, c := range []struct {
		cmds  [][][]byte
		index int
		name  string
	}{
		{[][][]byte{command("SET", "k", "v"), command("subscribe", "ch")}, 1, "SUBSCRIBE"},
		{[][][]byte{command("Client", "Reply", "OFF")}, 0, "CLIENT REPLY"},
		{[][][]byte{command("GET", "k"), command("PING"), command("script", "debug", "yes"), command("MONITOR")}, 2, "SCRIPT DEBUG"},
		{[][][]byte{command("QUIT"), sized(t, 65)}, 0, "QUIT"},
	} {
		err := l.CheckPipeline(c.cmds)
		var ce *CommandRefusedError
		if !errors.As(err, &ce) || ce.Index != c.index || ce.Name != c.name || !errors.Is(err, ErrRefused) {
			t.Errorf("%q: %v, want command %d (%s) refused", c.cmds, err, c.index, c.name)
		}
		if err := l.CheckSend(c.cmds[:c.index+1], nil); err != nil {
			t.Errorf("send %q: %v", c.cmds[:c.index+1], err)
		}
	}
	// A command over command_bytes before a refused one is reported first.
	wantLimit(t, l.CheckPipeline([][][]byte{sized(t, 65), command("SUBSCRIBE", "ch")}), LimitCommandBytes, 64, 65, "command 0; nothing was sent")
	if err := l.CheckPipeline([][][]byte{command("CLIENT", "LIST"), command("SET", "subscribe", "v")}); err != nil {
		t.Errorf("ordinary commands: %v", err)
	}
}

// TestParseCommands: a batch's JSON becomes the bytes sent; a refused
// command or argument is an ArgError at its JSON-pointer path below
// "commands", a member's name escaped.
func TestParseCommands(t *testing.T) {
	var raw [][]json.RawMessage
	if err := json.Unmarshal([]byte(`[["SET","k",{"base64":"AP8="}],["INCRBY","n",-5]]`), &raw); err != nil {
		t.Fatal(err)
	}
	cmds, err := ParseCommands(raw)
	if want := `[["SET" "k" "\x00\xff"] ["INCRBY" "n" "-5"]]`; err != nil || fmt.Sprintf("%q", cmds) != want {
		t.Fatalf("parsed %q, %v; want %s", cmds, err, want)
	}
	for in, want := range map[string]ArgError{
		`[["SET","k",1.5]]`:             {Arg: "commands/0/2", Reason: "a JSON number argument must be an integer; send 1.5 as a decimal string"},
		`[["GET"],["SET",{"x":1}]]`:     {Arg: "commands/1/1/x", Reason: `unexpected member: an object argument must be exactly {"base64": "..."}`},
		`[["GET"],["SET",{"a/b~c":1}]]`: {Arg: "commands/1/1/a~1b~0c", Reason: `unexpected member: an object argument must be exactly {"base64": "..."}`},
		`[["GET"],[]]`:                  {Arg: "commands/1", Reason: "a command needs at least its name"},
		`[["GET",true]]`:                {Arg: "commands/0/1", Reason: `want a string, {"base64": "..."} or an integer, got a boolean`},
	} {
		if err := json.Unmarshal([]byte(in), &raw); err != nil {
			t.Fatal(err)
		}
		var ae *ArgError
		if _, err := ParseCommands(raw); !errors.As(err, &ae) || *ae != want {
			t.Errorf("%s: %v, want %+v", in, err, want)
		}
	}
	// A caller that decodes a batch itself gets the same path.
	if ae := CommandArgError(4, &resp.ArgError{Index: 2, Member: "~/", Reason: "r"}); ae.Arg != "commands/4/2/~0~1" || ae.Reason != "r" {
		t.Errorf("CommandArgError: %+v", ae)
	}
}

// TestSendChecksBeforeTheSession: Sessions.Send refuses a batch or data
// over the registry's batch limits before it looks the session up (an
// unknown one here), and lets a command a pipeline refuses through to it;
// CheckPipeline applies the same limits.
func TestSendChecksBeforeTheSession(t *testing.T) {
	r := NewSessions(SessionOptions{MaxSessions: 1, Batch: BatchLimits{Commands: 2, CommandBytes: 64, BatchBytes: 100}})
	t.Cleanup(func() { r.Close() })
	ctx, sc := t.Context(), Scope{Principal: "p"}
	_, err := r.Send(ctx, sc, "rs_unknown", [][][]byte{command("PING"), command("PING"), command("PING")}, nil)
	wantLimit(t, err, LimitBatchCommands, 2, 3, "nothing was sent; split the batch")
	_, err = r.Send(ctx, sc, "", nil, make([]byte, 101))
	wantLimit(t, err, LimitBatchBytes, 100, 101, "nothing was sent")
	if _, err := r.Send(ctx, sc, "rs_unknown", [][][]byte{command("SUBSCRIBE", "ch")}, nil); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("a SUBSCRIBE within the limits: %v, want the session not found", err)
	}
	wantLimit(t, r.CheckPipeline([][][]byte{sized(t, 65)}), LimitCommandBytes, 64, 65, "command 0; nothing was sent")
	if err := r.CheckPipeline([][][]byte{command("SUBSCRIBE", "ch")}); !errors.Is(err, ErrRefused) {
		t.Errorf("CheckPipeline of a SUBSCRIBE: %v", err)
	}
	if strings.Contains(fmt.Sprint(r.CheckPipeline([][][]byte{command("MONITOR")})), "execute") {
		t.Error("the engine's refusal names a tool") // the caller says where to run it
	}
}
