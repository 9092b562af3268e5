package redisstate_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/action/redisstate"
)

// sessionStores are the implementations under test: each makes two stores
// sharing sessions (two processes for Redis; one value twice in process).
var sessionStores = impls(func() action.SessionStore { return action.NewLocalSessionStore() },
	func(_ *testing.T, c redis.UniversalClient, prefix string) action.SessionStore {
		return redisstate.NewSessionStore(c, prefix)
	})

func load(t *testing.T, s action.SessionStore, id string, ttl time.Duration) (string, bool) {
	t.Helper()
	b, ok, err := s.Load(ctx(t), id, ttl)
	if err != nil {
		t.Fatalf("Load(%q): %v", id, err)
	}
	return string(b), ok
}

// Saved through one store, a session is loaded, replaced and deleted
// through the other; a missing one is absent and deleting it is no error.
func TestSessionStoreSaveLoadDelete(t *testing.T) {
	conform(t, sessionStores, func(t *testing.T, a, b action.SessionStore) {
		if _, ok := load(t, a, "s1", time.Minute); ok {
			t.Fatal("a session nobody saved is live")
		}
		if err := a.Save(ctx(t), "s1", []byte(`{"user":1}`), time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, ok := load(t, b, "s1", time.Minute); !ok || got != `{"user":1}` {
			t.Fatalf("Load through the other store: %q %v", got, ok)
		}
		if err := b.Save(ctx(t), "s1", []byte(`{"user":2}`), time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, _ := load(t, a, "s1", time.Minute); got != `{"user":2}` {
			t.Fatalf("after the replace: %q", got)
		}
		if err := b.Delete(ctx(t), "s1"); err != nil {
			t.Fatal(err)
		}
		if _, ok := load(t, a, "s1", time.Minute); ok {
			t.Fatal("a deleted session is live")
		}
		if err := a.Delete(ctx(t), "s1"); err != nil {
			t.Fatalf("deleting a missing session: %v", err)
		}
	})
}

// A session lapses after its TTL unless loaded, and each Load extends it.
func TestSessionStoreExpiry(t *testing.T) {
	conform(t, sessionStores, func(t *testing.T, a, b action.SessionStore) {
		const ttl = 300 * time.Millisecond
		for _, id := range []string{"idle", "used"} {
			if err := a.Save(ctx(t), id, []byte(`{}`), ttl); err != nil {
				t.Fatal(err)
			}
		}
		for range 4 { // 4 × 150 ms: twice the TTL
			time.Sleep(ttl / 2)
			if _, ok := load(t, b, "used", ttl); !ok {
				t.Fatal("a session loaded every half TTL lapsed")
			}
		}
		if _, ok := load(t, a, "idle", ttl); ok {
			t.Fatal("a session idle for twice its TTL is live")
		}
	})
}

// Two app instances on one Redis serve one web session: the cookie one
// instance sets works on the other, and a destroy on either ends it.
func TestRedisSessionsAcrossInstances(t *testing.T) {
	t.Parallel()
	c1, c2 := twoClients(t)
	var urls []string
	for _, c := range []redis.UniversalClient{c1, c2} {
		app := action.NewApp("sessapp", "an app for session tests")
		app.MustAdd(action.Action{
			Name: "sign:in", Description: "remembers the user",
			Web: &action.Web{Method: "POST", Route: "/in"},
			Run: func(ctx context.Context, c *action.Conn, _ any) (any, error) {
				return "ok", c.Session.Set(ctx, "user", "ann")
			},
		})
		app.MustAdd(action.Action{
			Name: "who", Description: "the user",
			Web: &action.Web{Method: "GET", Route: "/who"},
			Run: func(_ context.Context, c *action.Conn, _ any) (any, error) {
				var u string
				_, err := c.Session.Get("user", &u)
				return u, err
			},
		})
		app.MustAdd(action.Action{
			Name: "sign:out", Description: "ends the session",
			Web: &action.Web{Method: "POST", Route: "/out"},
			Run: func(ctx context.Context, c *action.Conn, _ any) (any, error) { return "ok", c.Session.Destroy(ctx) },
		})
		srv := httptest.NewServer(app.HTTPHandler(action.HTTPOptions{Sessions: &action.Sessions{Store: redisstate.NewSessionStore(c, "app:")}}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	call := func(base, path, cookie string) (string, string) {
		t.Helper()
		method := "POST"
		if path == "/who" {
			method = "GET"
		}
		req, _ := http.NewRequest(method, base+"/api"+path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: action.DefaultSessionCookie, Value: cookie})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, ck := range resp.Cookies() {
			cookie = ck.Value
		}
		return strings.TrimSpace(string(body)), cookie
	}
	_, cookie := call(urls[0], "/in", "")
	if cookie == "" {
		t.Fatal("no session cookie")
	}
	if who, _ := call(urls[1], "/who", cookie); who != `"ann"` {
		t.Fatalf("the other instance sees user %s", who)
	}
	call(urls[1], "/out", cookie)
	if who, _ := call(urls[0], "/who", cookie); who != `""` {
		t.Fatalf("after sign-out on the other instance, user %s", who)
	}
}
