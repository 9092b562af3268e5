package respengine

import "testing"

// TestParseRedirect: only well-formed MOVED and ASK errors are redirects.
func TestParseRedirect(t *testing.T) {
	for msg, want := range map[string]Redirect{
		"MOVED 3999 127.0.0.1:6381": {Kind: RedirectMoved, Slot: 3999, Address: "127.0.0.1:6381"},
		"ASK 0 [::1]:7000":          {Kind: RedirectAsk, Slot: 0, Address: "[::1]:7000"},
		"MOVED 16384 h:1":           {},
		"MOVED x h:1":               {},
		"MOVED 1":                   {},
		"ERR MOVED 1 h:1":           {},
		"WRONGTYPE Operation":       {},
	} {
		got, ok := parseRedirect([]byte(msg))
		if ok != (want.Kind != "") || got != want {
			t.Errorf("%q: %+v %v, want %+v", msg, got, ok, want)
		}
	}
	targets := map[string]*Target{"a": {Addr: "127.0.0.1:7000"}, "v6": {Addr: "[::1]:7000"}}
	if targetAt(targets, "127.0.0.1:7000") != "a" || targetAt(targets, "[::1]:7000") != "v6" || targetAt(targets, "127.0.0.1:7001") != "" || targetAt(targets, "?") != "" {
		t.Fatal("targetAt")
	}
}
