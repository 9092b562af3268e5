package sessionstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient returns a client of s, closed when t ends.
func newClient(t *testing.T, s *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.Password, MaxRetries: -1, DialTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// stores are the implementations under the conformance tests: each makes
// two stores sharing records (one Memory twice; two Redis stores on two
// clients of one disposable server, as two instances would be).
var stores = []struct {
	name string
	new  func(t *testing.T) (a, b Store)
}{
	{"memory", func(*testing.T) (Store, Store) {
		m := NewMemory()
		return m, m
	}},
	{"redis", func(t *testing.T) (Store, Store) {
		s := redistest.Start(t, redistest.Options{})
		return NewRedis(newClient(t, s), "app:"), NewRedis(newClient(t, s), "app:")
	}},
}

// conform runs test on every implementation, in parallel.
func conform(t *testing.T, test func(t *testing.T, a, b Store)) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			a, b := st.new(t)
			test(t, a, b)
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// now is the current time to the millisecond, which every store keeps
// exactly.
func now() time.Time { return time.Now().Truncate(time.Millisecond) }

func mustLoad(t *testing.T, s Store, id string, extend time.Time) Record {
	t.Helper()
	rec, ok, err := s.Load(ctx(t), id, extend)
	if err != nil || !ok {
		t.Fatalf("Load(%q) = %v, %v; want a record", id, ok, err)
	}
	return rec
}

func mustMiss(t *testing.T, s Store, id string, extend time.Time) {
	t.Helper()
	if rec, ok, err := s.Load(ctx(t), id, extend); err != nil || ok {
		t.Fatalf("Load(%q) = %+v, %v, %v; want no record", id, rec, ok, err)
	}
}

func mustSave(t *testing.T, s Store, rec Record) {
	t.Helper()
	if err := s.Save(ctx(t), rec); err != nil {
		t.Fatalf("Save(%q): %v", rec.ID, err)
	}
}

// A record saved through one store loads through the other, is copied in
// and out, replaced by Save (expiry included), and gone after Delete.
func TestStoreRoundTrip(t *testing.T) {
	conform(t, func(t *testing.T, a, b Store) {
		state := []byte(`{"logLevel":"info"}`)
		rec := Record{ID: "s1", Principal: "token:0123456789abcdef", State: state, Expires: now().Add(time.Hour)}
		mustSave(t, a, rec)
		state[2] = 'X'
		got := mustLoad(t, b, "s1", time.Time{})
		if got.ID != "s1" || got.Principal != rec.Principal || string(got.State) != `{"logLevel":"info"}` || !got.Expires.Equal(rec.Expires) {
			t.Fatalf("Load = %+v, want %+v", got, rec)
		}
		got.State[2] = 'Y'
		if again := mustLoad(t, a, "s1", time.Time{}); string(again.State) != `{"logLevel":"info"}` {
			t.Fatalf("stored state changed through a loaded record: %s", again.State)
		}
		mustMiss(t, a, "other", time.Time{})

		mustSave(t, b, Record{ID: "s1", Principal: "p2", State: []byte(`[1]`)})
		if got := mustLoad(t, a, "s1", now().Add(time.Hour)); got.Principal != "p2" || string(got.State) != `[1]` || !got.Expires.IsZero() {
			t.Fatalf("after replacing: %+v, want principal p2, state [1], no expiry", got)
		}
		mustSave(t, a, Record{ID: "empty"})
		if got := mustLoad(t, b, "empty", time.Time{}); got.Principal != "" || got.State != nil || !got.Expires.IsZero() {
			t.Fatalf("empty record loaded as %+v", got)
		}

		if err := b.Delete(ctx(t), "s1"); err != nil {
			t.Fatal(err)
		}
		mustMiss(t, a, "s1", time.Time{})
		if err := a.Delete(ctx(t), "s1"); err != nil {
			t.Fatalf("deleting a missing record: %v", err)
		}
		if err := a.Save(ctx(t), Record{State: []byte(`{}`)}); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("Save without ID: %v, want ErrInvalidRecord", err)
		}
	})
}

// A load extends the expiry for every store, never shortens it, and never
// gives one to a record without; a lapsed record is absent.
func TestStoreExpiry(t *testing.T) {
	conform(t, func(t *testing.T, a, b Store) {
		start := now()
		mustSave(t, a, Record{ID: "s", Expires: start.Add(300 * time.Millisecond)})
		mustSave(t, a, Record{ID: "short", Expires: start.Add(300 * time.Millisecond)})
		mustSave(t, a, Record{ID: "forever"})
		mustSave(t, a, Record{ID: "lapsed", Expires: start.Add(-time.Millisecond)})
		mustSave(t, a, Record{ID: "1970", Expires: time.Unix(0, 0)})

		ext := start.Add(time.Hour)
		if rec := mustLoad(t, b, "s", ext); !rec.Expires.Equal(ext) {
			t.Fatalf("extended expiry = %v, want %v", rec.Expires, ext)
		}
		if rec := mustLoad(t, a, "s", start.Add(time.Minute)); !rec.Expires.Equal(ext) {
			t.Fatalf("expiry after an earlier extend = %v, want %v", rec.Expires, ext)
		}
		if rec := mustLoad(t, b, "forever", ext); !rec.Expires.IsZero() {
			t.Fatalf("record without expiry got %v", rec.Expires)
		}
		mustMiss(t, b, "lapsed", ext)
		mustMiss(t, b, "1970", ext)

		time.Sleep(time.Until(start.Add(300 * time.Millisecond)))
		mustMiss(t, b, "short", ext) // and not extended back to life
		mustMiss(t, a, "short", time.Time{})
		mustLoad(t, a, "s", time.Time{})
	})
}

// Redis keeps an expiry to the millisecond, rounded up, and keeps records
// under its prefix only.
func TestRedisExpiryRounding(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{})
	c := newClient(t, s)
	st := NewRedis(c, "app:")
	exp := now().Add(time.Hour)
	mustSave(t, st, Record{ID: "s", Expires: exp.Add(time.Nanosecond)})
	if rec := mustLoad(t, st, "s", time.Time{}); !rec.Expires.Equal(exp.Add(time.Millisecond)) {
		t.Fatalf("Expires = %v, want %v", rec.Expires, exp.Add(time.Millisecond))
	}
	mustLoad(t, st, "s", exp.Add(time.Minute+time.Nanosecond))
	if at, _ := c.Do(ctx(t), "pexpiretime", "app:session:s").Int64(); at != exp.Add(time.Minute+time.Millisecond).UnixMilli()-1 {
		t.Fatalf("PEXPIRETIME = %v, want the last live millisecond %d", at, exp.Add(time.Minute+time.Millisecond).UnixMilli()-1)
	}
	mustMiss(t, NewRedis(c, "other:"), "s", time.Time{})
	if err := st.Save(ctx(t), Record{ID: "bad", State: []byte(`{`)}); err == nil {
		t.Fatal("Save of a state that is not JSON succeeded")
	}
}

// A Redis store's errors name neither the session id nor the password.
func TestRedisErrorsKeepSecrets(t *testing.T) {
	t.Parallel()
	const password, id = "pw-7d1f0c", "sid-4e2a9b"
	s := redistest.Start(t, redistest.Options{Password: password})
	st := NewRedis(newClient(t, s), "app:")
	mustSave(t, st, Record{ID: id})
	s.Stop()
	_, _, lerr := st.Load(ctx(t), id, time.Time{})
	for _, err := range []error{lerr, st.Save(ctx(t), Record{ID: id}), st.Delete(ctx(t), id)} {
		if err == nil || !strings.HasPrefix(err.Error(), "sessionstore: ") {
			t.Fatalf("with the server stopped: %v, want a sessionstore error", err)
		}
		if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), id) {
			t.Fatalf("error %q names a secret", err)
		}
	}
}
