package respengine

import (
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

// TestCommandsCache: the registry is listed once and kept while COMMAND
// COUNT stays the same; a different count (a module loaded; simulated
// here, as the test server has no module) lists it again. (It was a test
// of the commands tool; the cache is the engine's.)
func TestCommandsCache(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	target := &Target{Name: "local", Addr: s.Addr, Protocol: 3, Password: func() string { return "" }}
	reg := new(CommandRegistry)
	t.Cleanup(reg.Close)
	probe, err := Dial(t.Context(), target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { probe.Close() })
	calls := func(sub string) string {
		v, err := probe.Do(t.Context(), []byte("INFO"), []byte("commandstats"))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(v.Str)) {
			if rest, ok := strings.CutPrefix(line, "cmdstat_command|"+sub+":calls="); ok {
				return rest[:strings.IndexByte(rest, ',')]
			}
		}
		return "0"
	}
	for range 3 {
		if page, err := reg.Page(t.Context(), target, "get", "", 25); err != nil || len(page.Commands) == 0 {
			t.Fatalf("page: %v %+v", err, page)
		}
	}
	if l, c := calls("list"), calls("count"); l != "1" || c != "3" {
		t.Fatalf("COMMAND LIST %s times, COUNT %s times; want 1 and 3", l, c)
	}
	tc := reg.of("local")
	tc.mu.Lock()
	tc.count = -1
	tc.mu.Unlock()
	if _, err := reg.Page(t.Context(), target, "get", "", 25); err != nil {
		t.Fatal(err)
	}
	if l := calls("list"); l != "2" {
		t.Fatalf("COMMAND LIST %s times after the count changed, want 2", l)
	}
	reg.Close()
	if _, err := reg.Page(t.Context(), target, "get", "", 25); err != ErrClosed {
		t.Fatalf("page after Close: %v, want ErrClosed", err)
	}
}
