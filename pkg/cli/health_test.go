package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHealth: mcpkit health exits 0 on a 200, 1 on another status, on a
// server that does not answer in time and on no server, 2 on a bad
// command line.
func TestHealth(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("ok\n"))
	}))
	defer ok.Close()
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer stuck.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--url", ok.URL + "/healthz"}, ExitOK, ""},
		{[]string{"--url", ok.URL + "/elsewhere"}, ExitFailure, "HTTP 404"},
		{[]string{"--url", stuck.URL + "/healthz", "--timeout", "200ms"}, ExitFailure, "deadline exceeded"},
		{[]string{"--url", gone.URL + "/healthz"}, ExitFailure, "connection refused"},
		{[]string{"--url", ok.URL, "extra"}, ExitUsage, `unexpected argument "extra"`},
		{[]string{"--timeout", "0s"}, ExitUsage, "must be positive"},
		{[]string{"--url", "http://[::1"}, ExitUsage, "--url"},
	} {
		code, _, stderr := run(append([]string{"health"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("health %v = %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
}
