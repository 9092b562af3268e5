package action_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpkit/mcpkit/internal/benchpair"
	"github.com/mcpkit/mcpkit/pkg/action"
)

// statusJSON is what both handlers answer.
var statusJSON = []byte(`{"name":"bench","ok":true}` + "\n")

func benchApp() *action.App {
	app := action.NewApp("bench", "")
	app.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	app.MustAdd(action.Action{
		Name: "status", Web: &action.Web{Method: "GET", Route: "/status"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			return map[string]any{"ok": true, "name": "bench"}, nil
		},
	})
	return app
}

// bare is the peer: a plain net/http handler answering the same JSON.
var bare = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(statusJSON)
})

// BenchmarkStatusHTTP is GET /api/status through HTTPHandler against a bare
// handler, both on a real server and client.
func BenchmarkStatusHTTP(b *testing.B) {
	action := httptest.NewServer(benchApp().HTTPHandler(action.HTTPOptions{}))
	defer action.Close()
	peer := httptest.NewServer(bare)
	defer peer.Close()
	get := func(url string) func() {
		return func() {
			resp, err := http.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("%s: %d", url, resp.StatusCode)
			}
		}
	}
	benchpair.Compare(b, [2]string{"action", "bare"}, [2]func(){get(action.URL + "/api/status"), get(peer.URL + "/status")})
}

// BenchmarkStatusHandler is the same pair in-process (ServeHTTP with a
// recorder): the framework's own cost, without the network's.
func BenchmarkStatusHandler(b *testing.B) {
	h := benchApp().HTTPHandler(action.HTTPOptions{})
	serve := func(h http.Handler, path string) func() {
		req := httptest.NewRequest("GET", path, nil)
		return func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("%s: %d", path, w.Code)
			}
		}
	}
	benchpair.Compare(b, [2]string{"action", "bare"}, [2]func(){serve(h, "/api/status"), serve(bare, "/status")})
}
