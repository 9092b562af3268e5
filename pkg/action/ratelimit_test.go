package action_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// w0 starts a fixed window of one minute (6000 s is 100 minutes).
var w0 = time.Unix(6000, 0)

// rateApp serves an app whose GET /api/who returns the caller's principal;
// Identify takes it from X-User.
func rateApp(t *testing.T, rl *action.RateLimit, mod ...func(*action.HTTPOptions)) http.Handler {
	t.Helper()
	app := action.NewApp("rateapp", "an app for rate limit tests")
	app.MustAdd(action.Action{
		Name: "who", Description: "the caller's principal",
		Web: &action.Web{Method: "GET", Route: "/who"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) { return c.Principal, nil },
	})
	opts := action.HTTPOptions{
		RateLimit: rl,
		Identify:  func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil },
	}
	for _, m := range mod {
		m(&opts)
	}
	return app.HTTPHandler(opts)
}

// call serves one request from remote (an "ip:port"), with header pairs.
func call(h http.Handler, method, path, remote string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// wantRate checks a response's status and rate headers (retry 0: no
// Retry-After).
func wantRate(t *testing.T, w *httptest.ResponseRecorder, status, limit, remaining int, reset int64, retry int) {
	t.Helper()
	h := w.Header()
	got := fmt.Sprintf("%d limit=%s remaining=%s reset=%s retry=%q", w.Code, h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset"), h.Get("Retry-After"))
	want := fmt.Sprintf("%d limit=%d remaining=%d reset=%d retry=%q", status, limit, remaining, reset, "")
	if retry > 0 {
		want = fmt.Sprintf("%d limit=%d remaining=%d reset=%d retry=%q", status, limit, remaining, reset, strconv.Itoa(retry))
	}
	if got != want {
		t.Fatalf("got %s (body %s), want %s", got, w.Body, want)
	}
	if status == http.StatusTooManyRequests {
		var body struct {
			Error struct{ Kind, Message string }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error.Kind != string(action.KindRateLimited) || !strings.Contains(body.Error.Message, "retry after "+strconv.Itoa(retry)+" s") {
			t.Fatalf("429 body %s (%v): want kind rate_limited naming the retry", w.Body, err)
		}
	}
}

func TestRateLimitPerIP(t *testing.T) {
	clk := &clock{t: w0.Add(10 * time.Second)}
	h := rateApp(t, &action.RateLimit{Unauthenticated: 3, Authenticated: 100, Now: clk.Now})
	reset := w0.Unix() + 120
	for i := range 3 {
		wantRate(t, call(h, "GET", "/api/who", "192.0.2.1:1000"), 200, 3, 2-i, reset, 0)
	}
	// the 4th is refused until the next window: 4*(1-e/60) < 3 at e > 15 s,
	// 65 s from now; any port of the same IP is the same client
	wantRate(t, call(h, "GET", "/api/who", "192.0.2.1:2000"), 429, 3, 0, reset, 66)
	// another IP has its own count; routes that do not exist count too
	wantRate(t, call(h, "GET", "/api/who", "192.0.2.2:1000"), 200, 3, 2, reset, 0)
	wantRate(t, call(h, "GET", "/api/nope", "192.0.2.2:1000"), 404, 3, 1, reset, 0)
	// X-Forwarded-For is not trusted unless the options say so
	// (a 5th call: 5*(1-e/60) < 3 at e > 24 s)
	wantRate(t, call(h, "GET", "/api/who", "192.0.2.1:1000", "X-Forwarded-For", "198.51.100.9"), 429, 3, 0, reset, 75)
}

func TestRateLimitPerPrincipal(t *testing.T) {
	clk := &clock{t: w0}
	h := rateApp(t, &action.RateLimit{Unauthenticated: 1, Authenticated: 2, Now: clk.Now})
	const ip = "192.0.2.1:1000"
	reset := w0.Unix() + 120
	for _, user := range []string{"alice", "bob"} {
		w := call(h, "GET", "/api/who", ip, "X-User", user)
		wantRate(t, w, 200, 2, 1, reset, 0)
		if w.Body.String() != `"`+user+`"`+"\n" {
			t.Errorf("Conn.Principal: got %s, want %q", w.Body, user)
		}
		wantRate(t, call(h, "GET", "/api/who", ip, "X-User", user), 200, 2, 0, reset, 0)
		wantRate(t, call(h, "GET", "/api/who", ip, "X-User", user), 429, 2, 0, reset, 81)
	}
	// the principals' calls did not use their IP's allowance, which is
	// counted apart (a principal named like a key prefix is still a
	// principal)
	wantRate(t, call(h, "GET", "/api/who", ip), 200, 1, 0, reset, 0)
	wantRate(t, call(h, "GET", "/api/who", ip), 429, 1, 0, reset, 91)
	wantRate(t, call(h, "GET", "/api/who", ip, "X-User", "ip:192.0.2.1"), 200, 2, 1, reset, 0)
}

func TestRateLimitOneClassOnly(t *testing.T) {
	clk := &clock{t: w0}
	h := rateApp(t, &action.RateLimit{Authenticated: 1, Now: clk.Now})
	// no Unauthenticated limit: anonymous calls carry no rate headers
	for range 3 {
		if w := call(h, "GET", "/api/who", "192.0.2.1:1"); w.Code != 200 || w.Header().Get("X-RateLimit-Limit") != "" {
			t.Fatalf("unlimited class: %d %v", w.Code, w.Header())
		}
	}
	wantRate(t, call(h, "GET", "/api/who", "192.0.2.1:1", "X-User", "u"), 200, 1, 0, w0.Unix()+120, 0)
	wantRate(t, call(h, "GET", "/api/who", "192.0.2.1:1", "X-User", "u"), 429, 1, 0, w0.Unix()+120, 91)
}

// TestRateLimitSlidingEstimate checks estimate = prev*(1-e/window) + current
// against limit 10 at the edges of fixed windows, each case a new client
// that made 10 calls at the start of window 0.
func TestRateLimitSlidingEstimate(t *testing.T) {
	w1 := w0.Add(time.Minute)
	cases := []struct {
		name       string
		at         []time.Duration // probes after w1 (the last is checked)
		status     int
		remaining  int
		reset      int64
		retryAfter int
	}{
		// 10*(1-0) + 0 = 10: refused; then 10*(1-e/60) + 1 < 10 once e > 6 s
		{"window start", []time.Duration{0}, 429, 0, w1.Unix() + 120, 7},
		{"at Retry-After", []time.Duration{0, 7 * time.Second}, 200, 0, w1.Unix() + 120, 0},
		// exactly at 6 s: 9 + 1 is not under 10; refused calls count, so
		// the wait is longer now: 10*(1-e/60) + 2 < 10 once e > 12 s
		{"at the edge", []time.Duration{0, 6 * time.Second}, 429, 0, w1.Unix() + 120, 7},
		// 10*(1-0.001/60) + 0 < 10: allowed, and then none left
		{"just after the start", []time.Duration{time.Millisecond}, 200, 0, w1.Unix() + 120, 0},
		// halfway the previous window weighs 5: 6 after this call, 4 left
		{"halfway", []time.Duration{30 * time.Second}, 200, 4, w1.Unix() + 120, 0},
		// window 2 does not see window 0
		{"two windows on", []time.Duration{time.Minute}, 200, 9, w1.Unix() + 180, 0},
		// window 0 seen from its last instant is still current
		// (11*(1-e/60) < 10 once e > 5.45 s into window 1)
		{"last instant of window 0", []time.Duration{-time.Nanosecond}, 429, 0, w0.Unix() + 120, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: w0}
			h := rateApp(t, &action.RateLimit{Unauthenticated: 10, Now: clk.Now})
			const ip = "192.0.2.7:1"
			for range 10 {
				if w := call(h, "GET", "/api/who", ip); w.Code != 200 {
					t.Fatalf("filling window 0: %d %s", w.Code, w.Body)
				}
			}
			var w *httptest.ResponseRecorder
			for _, d := range tc.at {
				clk.set(w1.Add(d))
				w = call(h, "GET", "/api/who", ip)
			}
			wantRate(t, w, tc.status, 10, tc.remaining, tc.reset, tc.retryAfter)
		})
	}
}

func TestRateLimitNotCounted(t *testing.T) {
	clk := &clock{t: w0}
	h := rateApp(t, &action.RateLimit{Unauthenticated: 1, Now: clk.Now}, func(o *action.HTTPOptions) {
		o.AllowedOrigins = []string{"https://app.example"}
	})
	const ip = "192.0.2.1:1"
	for range 3 {
		w := call(h, "GET", "/api/swagger", ip)
		if w.Code != 200 || w.Header().Get("X-RateLimit-Limit") != "" {
			t.Fatalf("swagger: %d %v", w.Code, w.Header())
		}
		w = call(h, "OPTIONS", "/api/who", ip, "Origin", "https://app.example", "Access-Control-Request-Method", "GET")
		if w.Code != 204 || w.Header().Get("X-RateLimit-Limit") != "" {
			t.Fatalf("preflight: %d %v", w.Code, w.Header())
		}
	}
	// an origin refused is not counted either
	if w := call(h, "GET", "/api/who", ip, "Origin", "https://evil.example"); w.Code != 403 {
		t.Fatalf("bad origin: %d", w.Code)
	}
	w := call(h, "GET", "/api/who", ip, "Origin", "https://app.example")
	wantRate(t, w, 200, 1, 0, w0.Unix()+120, 0)
	if got := w.Header().Get("Access-Control-Expose-Headers"); !strings.Contains(got, "X-RateLimit-Remaining") || !strings.Contains(got, "Retry-After") {
		t.Errorf("Access-Control-Expose-Headers %q: want the rate headers", got)
	}
	// a plain OPTIONS is a request like any other
	wantRate(t, call(h, "OPTIONS", "/api/who", ip), 429, 1, 0, w0.Unix()+120, 91)
}

func TestRateLimitForwardedFor(t *testing.T) {
	clk := &clock{t: w0}
	h := rateApp(t, &action.RateLimit{Unauthenticated: 1, Now: clk.Now}, func(o *action.HTTPOptions) { o.TrustForwardedFor = true })
	const proxy = "10.0.0.1:5000"
	reset := w0.Unix() + 120
	// the last address is the one our proxy saw; earlier ones are the client's word
	wantRate(t, call(h, "GET", "/api/who", proxy, "X-Forwarded-For", "203.0.113.5, 198.51.100.1"), 200, 1, 0, reset, 0)
	wantRate(t, call(h, "GET", "/api/who", proxy, "X-Forwarded-For", "203.0.113.6, 198.51.100.1"), 429, 1, 0, reset, 91)
	wantRate(t, call(h, "GET", "/api/who", proxy, "X-Forwarded-For", "198.51.100.2"), 200, 1, 0, reset, 0)
	// without the header, the connection's address
	wantRate(t, call(h, "GET", "/api/who", proxy), 200, 1, 0, reset, 0)
	// an IPv6 client is its /64; an IPv4-mapped one its IPv4 address
	wantRate(t, call(h, "GET", "/api/who", proxy, "X-Forwarded-For", "2001:db8:1:2::1"), 200, 1, 0, reset, 0)
	wantRate(t, call(h, "GET", "/api/who", proxy, "X-Forwarded-For", "2001:db8:1:2:ffff::9"), 429, 1, 0, reset, 91)
	wantRate(t, call(h, "GET", "/api/who", proxy, "X-Forwarded-For", "2001:db8:1:3::1"), 200, 1, 0, reset, 0)
	wantRate(t, call(h, "GET", "/api/who", proxy, "X-Forwarded-For", "::ffff:198.51.100.2"), 429, 1, 0, reset, 91)
	// a bad one is refused
	w := call(h, "GET", "/api/who", proxy, "X-Forwarded-For", "not-an-ip")
	if w.Code != 400 || !strings.Contains(w.Body.String(), `"kind":"invalid_param"`) || !strings.Contains(w.Body.String(), "X-Forwarded-For") {
		t.Errorf("bad X-Forwarded-For: %d %s", w.Code, w.Body)
	}
}

func TestMemoryRateStoreDropsOldWindows(t *testing.T) {
	s := action.NewMemoryRateStore()
	ctx := context.Background()
	const n = 1000
	for i := range n {
		if cur, prev, err := s.Hit(ctx, strconv.Itoa(i), 100, time.Minute); cur != 1 || prev != 0 || err != nil {
			t.Fatalf("first hit: %d %d %v", cur, prev, err)
		}
	}
	// window 101 still needs window 100's counts
	if cur, prev, _ := s.Hit(ctx, "0", 101, time.Minute); cur != 1 || prev != 1 || s.Len() != n {
		t.Fatalf("next window: cur %d prev %d len %d", cur, prev, s.Len())
	}
	// window 102 does not: all but key 0 (last hit in 101) are dropped
	if cur, prev, _ := s.Hit(ctx, "1", 102, time.Minute); cur != 1 || prev != 0 || s.Len() != 2 {
		t.Fatalf("two windows on: cur %d prev %d len %d, want 1 0 2", cur, prev, s.Len())
	}
	if cur, prev, _ := s.Hit(ctx, "0", 102, time.Minute); cur != 1 || prev != 1 {
		t.Fatalf("key 0 in 102: cur %d prev %d, want 1 1", cur, prev)
	}
	// through the handler: a minute of many clients, then one call two
	// windows later, leaves one key
	clk := &clock{t: w0}
	store := action.NewMemoryRateStore()
	h := rateApp(t, &action.RateLimit{Unauthenticated: 5, Store: store, Now: clk.Now})
	for i := range 300 {
		call(h, "GET", "/api/who", fmt.Sprintf("192.0.2.%d:1", i%250))
	}
	if store.Len() != 250 {
		t.Fatalf("%d keys, want 250", store.Len())
	}
	clk.set(w0.Add(2 * time.Minute))
	call(h, "GET", "/api/who", "198.51.100.1:1")
	if store.Len() != 1 {
		t.Fatalf("%d keys after two windows, want 1", store.Len())
	}
}

func TestRateLimitConcurrent(t *testing.T) {
	clk := &clock{t: w0}
	h := rateApp(t, &action.RateLimit{Unauthenticated: 100, Authenticated: 50, Now: clk.Now})
	var mu sync.Mutex
	codes := map[string]int{}
	var wg sync.WaitGroup
	for g := range 40 {
		wg.Go(func() {
			for range 10 {
				var w *httptest.ResponseRecorder
				client := "ip"
				if g%2 == 0 {
					w = call(h, "GET", "/api/who", "192.0.2.1:1")
				} else {
					client = "user"
					w = call(h, "GET", "/api/who", "192.0.2.1:1", "X-User", "u")
				}
				mu.Lock()
				codes[fmt.Sprintf("%s %d", client, w.Code)]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	want := map[string]int{"ip 200": 100, "ip 429": 100, "user 200": 50, "user 429": 150}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
}

// failingStore is a store whose backend is down (a fault the in-process
// store cannot produce).
type failingStore struct{}

var errStoreDown = errors.New("store down")

func (failingStore) Hit(context.Context, string, int64, time.Duration) (int64, int64, error) {
	return 0, 0, errStoreDown
}

func (failingStore) Peek(context.Context, string, int64, time.Duration) (int64, int64, error) {
	return 0, 0, errStoreDown
}

func TestRateLimitStoreFailure(t *testing.T) {
	app := action.NewApp("rateapp", "")
	logs := &syncBuffer{}
	app.MustAdd(action.Action{Name: "who", Description: "x", Web: &action.Web{Method: "GET", Route: "/who"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) { return nil, nil }})
	h := app.HTTPHandler(action.HTTPOptions{RateLimit: &action.RateLimit{Unauthenticated: 5, Store: failingStore{}}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	w := call(h, "GET", "/api/who", "192.0.2.1:1")
	if w.Code != 500 || !strings.Contains(w.Body.String(), `"kind":"internal"`) || strings.Contains(w.Body.String(), "store down") {
		t.Fatalf("store failure: %d %s: want 500 internal, cause not shown", w.Code, w.Body)
	}
	if !strings.Contains(logs.String(), "store down") {
		t.Errorf("store failure not logged: %s", logs)
	}
}

func TestRateLimitValidate(t *testing.T) {
	for _, rl := range []action.RateLimit{{Unauthenticated: -1}, {Authenticated: -1}, {Unauthenticated: 1, Window: -time.Second}} {
		if err := rl.Validate(); err == nil {
			t.Errorf("%+v: Validate passed", rl)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v: HTTPHandler did not panic", rl)
				}
			}()
			action.NewApp("x", "").HTTPHandler(action.HTTPOptions{RateLimit: &rl})
		}()
	}
	if err := (&action.RateLimit{Unauthenticated: 20, Authenticated: 200}).Validate(); err != nil {
		t.Errorf("Keryx's limits: %v", err)
	}
	// no RateLimit: no rate headers
	if w := call(action.NewApp("x", "").HTTPHandler(action.HTTPOptions{}), "GET", "/api/swagger", "192.0.2.1:1"); w.Header().Get("X-RateLimit-Limit") != "" {
		t.Errorf("no RateLimit: %v", w.Header())
	}
}
