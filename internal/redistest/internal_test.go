package redistest

import (
	"net"
	"strings"
	"testing"
)

// If the chosen port is taken by the time redis-server binds it, Start
// retries with another port. (Not parallel: it swaps pickPort.)
func TestRetryOnPortClash(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()
	s := Start(t, Options{})
	if calls != 2 || s.Port == taken {
		t.Fatalf("calls = %d, port = %d (taken %d)", calls, s.Port, taken)
	}
}

// A server that cannot start reports why, with the tail of its log.
func TestStartErrorIncludesLog(t *testing.T) {
	t.Parallel()
	var stops []func()
	s, err := start(t.TempDir(), Options{Config: []string{"no-such-directive yes"}},
		func(f func()) { stops = append(stops, f) })
	if err == nil {
		s.Stop()
		t.Fatal("start succeeded with a bad config line")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "no-such-directive") || !strings.Contains(err.Error(), "log tail") {
		t.Fatalf("error lacks the log tail: %v", err)
	}
	if len(stops) != 1 {
		t.Fatalf("Stop registered %d times, want 1", len(stops))
	}
	stops[0]() // already stopped: must not block
}

func TestBadACLFails(t *testing.T) {
	t.Parallel()
	_, err := start(t.TempDir(), Options{ACL: []string{"user x on +nosuchcommand"}}, nil)
	if err == nil {
		t.Fatal("start succeeded with a bad ACL line")
	}
	t.Log(err)
}

func TestMissingBinary(t *testing.T) {
	t.Setenv(EnvServerBinary, "/nonexistent/redis-server")
	_, err := start(t.TempDir(), Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "scripts/install-deps.sh") {
		t.Fatalf("err = %v, want a hint to run scripts/install-deps.sh", err)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":          `""`,
		"a b":       `"a b"`,
		`p"w\x`:     `"p\"w\\x"`,
		"tab\there": `"tab\x09here"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}
