package action_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/action"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	app, _ := testApp(t)
	var stdout, stderr bytes.Buffer
	code := app.RunCLI(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCLIList(t *testing.T) {
	code, out, _ := runCLI(t, "list")
	if code != action.ExitOK || !strings.Contains(out, "user:create") || !strings.Contains(out, "create a user") ||
		strings.Index(out, "boom") > strings.Index(out, "user:create") {
		t.Errorf("list: %d\n%s", code, out)
	}
}

func TestCLIRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want map[string]any
	}{
		{"flags", []string{"run", "user:view", "--id", "7", "--limit=3", "--verbose", "--tags", "a", "--tags", "b"},
			map[string]any{"id": "7", "limit": float64(3), "verbose": true, "tags": []any{"a", "b"}}},
		{"bool value", []string{"run", "user:view", "--verbose=false", "--id", "7"}, map[string]any{"id": "7"}},
		{"json", []string{"run", "user:view", "--json", `{"id":"9","limit":2}`}, map[string]any{"id": "9", "limit": float64(2)}},
		{"json and flags", []string{"run", "user:view", "--json", `{"id":"9"}`, "--limit", "4"}, map[string]any{"id": "9", "limit": float64(4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			var got struct {
				In   map[string]any `json:"in"`
				Conn map[string]any `json:"conn"`
			}
			if code != action.ExitOK || json.Unmarshal([]byte(out), &got) != nil {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			for k, v := range tc.want {
				if gb, _ := json.Marshal(got.In[k]); string(gb) != string(must(json.Marshal(v))) {
					t.Errorf("%s = %s, want %v", k, gb, v)
				}
			}
			if got.Conn["type"] != "cli" || got.Conn["id"] == "" {
				t.Errorf("conn %v", got.Conn)
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestCLIErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		kind action.Kind
	}{
		{"no command", nil, action.ExitUsage, ""},
		{"unknown command", []string{"frob"}, action.ExitUsage, ""},
		{"no name", []string{"run"}, action.ExitUsage, ""},
		{"unknown action", []string{"run", "nope"}, action.ExitUsage, ""},
		{"unknown flag", []string{"run", "user:view", "--id", "1", "--admin", "x"}, action.ExitUsage, ""},
		{"no value", []string{"run", "user:view", "--id"}, action.ExitUsage, ""},
		{"bad json", []string{"run", "user:view", "--json", "{"}, action.ExitUsage, ""},
		{"json conflict", []string{"run", "user:view", "--json", `{"id":"1"}`, "--id", "2"}, action.ExitUsage, ""},
		{"missing", []string{"run", "user:view"}, action.ExitAction, action.KindMissingParam},
		{"bad number", []string{"run", "user:view", "--id", "1", "--limit", "x"}, action.ExitAction, action.KindInvalidParam},
		{"action error", []string{"run", "fail", "--kind", "conflict"}, action.ExitAction, action.KindConflict},
		{"timeout", []string{"run", "slow"}, action.ExitAction, action.KindTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != tc.code || out != "" {
				t.Fatalf("exit %d stdout %q stderr %q: want exit %d and no output", code, out, errOut, tc.code)
			}
			if tc.kind == "" {
				if !strings.Contains(errOut, "usage:") {
					t.Errorf("stderr %q: want the usage", errOut)
				}
				return
			}
			var e struct {
				Error struct{ Kind action.Kind } `json:"error"`
			}
			if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Error.Kind != tc.kind {
				t.Errorf("stderr %q: want a JSON error of kind %s", errOut, tc.kind)
			}
		})
	}
}
