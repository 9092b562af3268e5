package respengine

import (
	"bytes"
	"testing"
)

// TestRefusedName: execute refuses the commands with unusual reply shapes
// in any ASCII case, subcommands included, and checks the others without
// allocating.
func TestRefusedName(t *testing.T) {
	args := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, a := range s {
			out[i] = []byte(a)
		}
		return out
	}
	for _, c := range []struct {
		cmd  [][]byte
		want string
	}{
		{args("subscribe", "ch"), "SUBSCRIBE"},
		{args("Client", "reply", "OFF"), "CLIENT REPLY"},
		{args("CLIENT", "tracking", "on"), "CLIENT TRACKING"},
		{args("script", "DEBUG", "yes"), "SCRIPT DEBUG"},
		{args("client", "list"), ""},
		{args("CLIENT"), ""},
		{args("quit"), "QUIT"},
		{args("Sync"), "SYNC"},
		{args("script", "load", "return 1"), ""},
		{args("SET", "subscribe", "v"), ""},
		{args("GET", "k"), ""},
		{args("ſubscribe"), ""}, // not ASCII: not a command name Redis knows
		{args("CLIENT", string(bytes.Repeat([]byte("x"), 40))), ""},
		{args(string(bytes.Repeat([]byte("S"), 40))), ""},
	} {
		if got := RefusedName(c.cmd); got != c.want {
			t.Errorf("RefusedName(%q) = %q, want %q", c.cmd, got, c.want)
		}
	}
	set := args("SET", "k", "v")
	if n := testing.AllocsPerRun(100, func() { RefusedName(set) }); n != 0 {
		t.Errorf("refusedName allocates %v times for an ordinary command", n)
	}
}
