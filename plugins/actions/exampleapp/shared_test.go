package exampleapp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/plugins/actions/exampleapp"
)

// Three instances of the app opened at once on one fresh PostgreSQL store
// (each creating the app's indexes) all start; users signed up through
// each get distinct ids, each id is the same user through every instance,
// one email signed up through all three at once is one user, and a
// message posted through one is listed through the others.
func TestSharedStore(t *testing.T) {
	t.Parallel()
	path := pgtest.Start(t, pgtest.Options{}).StoreURL()
	apps, errs := make([]*exampleapp.App, 3), make([]error, 3)
	var wg sync.WaitGroup
	for i := range apps {
		wg.Go(func() {
			apps[i], errs[i] = exampleapp.Open(path, nil, exampleapp.Options{BcryptCost: bcrypt.MinCost, PrincipalPrefix: "user:"})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		t.Cleanup(func() { apps[i].Close() })
	}
	web := func() *action.Conn { return &action.Conn{Type: "web"} } // a Conn per call: Run writes to it
	run := func(i int, c *action.Conn, name, params string) (any, error) {
		return apps[i].App().Run(t.Context(), c, name, json.RawMessage(params))
	}
	ids := map[int64]string{}
	for i := range apps {
		name := fmt.Sprintf("User%d", i)
		out, err := run(i, web(), "user:create", fmt.Sprintf(`{"name":%q,"email":"u%d@example.com","password":"password %d"}`, name, i, i))
		if err != nil {
			t.Fatalf("sign up through instance %d: %v", i, err)
		}
		id := out.(exampleapp.SignedIn).User.ID
		if ids[id] != "" {
			t.Fatalf("%s and %s are both user %d", ids[id], name, id)
		}
		ids[id] = name
	}
	for id, name := range ids {
		for i := range apps {
			out, err := run(i, &action.Conn{Type: "mcp", Principal: fmt.Sprintf("user:%d", id)}, "message:post", `{"channel":"c","text":"hi"}`)
			if err != nil || out.(exampleapp.Message).Author != name {
				t.Errorf("user %d through instance %d posts as %+v (%v), want %s", id, i, out, err, name)
			}
		}
	}
	created := make(chan error, len(apps))
	for i := range apps {
		wg.Go(func() {
			_, err := run(i, web(), "user:create", `{"name":"Dup","email":"dup@example.com","password":"dup password"}`)
			created <- err
		})
	}
	wg.Wait()
	close(created)
	var wins, conflicts int
	for err := range created {
		var ae *action.Error
		switch {
		case err == nil:
			wins++
		case errors.As(err, &ae) && ae.Kind == action.KindConflict:
			conflicts++
		default:
			t.Errorf("a concurrent sign-up: %v", err)
		}
	}
	if wins != 1 || conflicts != len(apps)-1 {
		t.Errorf("one email signed up through %d instances at once: %d users, %d conflicts", len(apps), wins, conflicts)
	}
	for i := range apps {
		out, err := run(i, web(), "message:list", `{"channel":"c","limit":100}`)
		if err != nil || len(out.(exampleapp.Page).Messages) != len(ids)*len(apps) {
			t.Errorf("the channel through instance %d: %+v (%v), want %d messages", i, out, err, len(ids)*len(apps))
		}
	}
}

// With its PostgreSQL server down, the app answers unavailable (HTTP
// 503), its message naming neither the server nor its error; once the
// server is back, the same app serves again without being reopened.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t, pgtest.Options{})
	ex, err := exampleapp.Open(pg.StoreURL(), nil, exampleapp.Options{BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	srv := httptest.NewServer(ex.App().HTTPHandler(action.HTTPOptions{}))
	defer srv.Close()
	post := func() (int, string) {
		resp, err := http.Post(srv.URL+"/api/messages", "application/json", strings.NewReader(`{"channel":"c","text":"hi","author":"ann"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(); code != 200 {
		t.Fatalf("post: %d %s", code, body)
	}
	pg.Stop()
	code, body := post()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"kind":"unavailable"`) || strings.Contains(body, "127.0.0.1") || strings.Contains(body, "postgres") {
		t.Fatalf("post with the server down: %d %s; want 503 unavailable, nothing of the server", code, body)
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for code, body = post(); code != 200; code, body = post() {
		if time.Now().After(deadline) {
			t.Fatalf("post after the restart: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
