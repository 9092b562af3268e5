package action

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultRateWindow is a RateLimit's window when it sets none.
const DefaultRateWindow = time.Minute

// RateLimit limits the requests of each client of the HTTP transport
// ([HTTPOptions.RateLimit]) with a sliding window over two fixed windows
// (Keryx's scheme): a request at elapsed time e into the fixed window
// [start, start+Window) is refused when
//
//	previous*(1 - e/Window) + current >= limit
//
// where current counts the client's earlier requests in this fixed window
// and previous those of the one before. Every counted request is counted,
// refused ones too: a client that keeps calling while refused stays refused.
//
// A client is its principal (its credentials' by [HTTPOptions.Identify],
// else its signed-in web session's, [Session.SignIn]) when it has one, with
// the Authenticated limit, else its IP address with the Unauthenticated
// limit (an IPv6 address by its /64 network, which one host usually holds
// whole). The two are counted apart: a principal's calls do not use its
// IP's allowance.
type RateLimit struct {
	Unauthenticated int           // requests per Window for each IP without a principal; 0: not limited
	Authenticated   int           // requests per Window for each principal; 0: not limited
	Window          time.Duration // 0: DefaultRateWindow
	// Store holds the counts; nil: a new [MemoryRateStore] (per handler).
	// Give every handler of a cluster one shared store to limit across it.
	Store RateStore
	Now   func() time.Time // the clock; nil: time.Now
}

// Validate reports a limit or window that is negative. [App.HTTPHandler]
// panics on one; call Validate first to report it as an error.
func (l *RateLimit) Validate() error {
	switch {
	case l.Unauthenticated < 0:
		return fmt.Errorf("rate limit: Unauthenticated %d is negative", l.Unauthenticated)
	case l.Authenticated < 0:
		return fmt.Errorf("rate limit: Authenticated %d is negative", l.Authenticated)
	case l.Window < 0:
		return fmt.Errorf("rate limit: Window %v is negative", l.Window)
	}
	return nil
}

// RateStore counts requests per key in fixed windows: window number index
// is [index*window, (index+1)*window) in Unix time. Implementations must
// be safe for concurrent use; a shared one (Redis) makes limits hold across
// processes.
type RateStore interface {
	// Hit adds one to key's count in window index and returns that count
	// (at least 1) and key's count in window index-1 (0 when none). Counts
	// of earlier windows are never asked for again: a store may drop them.
	Hit(ctx context.Context, key string, index int64, window time.Duration) (current, previous int64, err error)
	// Peek returns what Hit would, without counting: key's count in
	// window index (0 when none) and in window index-1.
	Peek(ctx context.Context, key string, index int64, window time.Duration) (current, previous int64, err error)
}

// MemoryRateStore is an in-process [RateStore]. It keeps, per key, the
// counts of the two latest windows it was hit in, and drops a key once
// its latest window is over by a whole window (checked on the first hit
// of each new window, with no goroutine of its own): its memory is about
// 100 bytes per client seen in the last two windows.
type MemoryRateStore struct {
	mu    sync.Mutex
	keys  map[string]*rateCounts
	swept int64 // the window start (Unix ns) of the last sweep
}

type rateCounts struct {
	index         int64
	window        time.Duration
	current, prev int64
}

var _ RateStore = (*MemoryRateStore)(nil)

// NewMemoryRateStore returns an empty MemoryRateStore.
func NewMemoryRateStore() *MemoryRateStore {
	return &MemoryRateStore{keys: map[string]*rateCounts{}}
}

// Hit implements [RateStore]. It never fails; a hit of a window older than
// key's latest counts in the latest (clocks of a cluster's nodes differ).
func (s *MemoryRateStore) Hit(_ context.Context, key string, index int64, window time.Duration) (int64, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if start := index * int64(window); start > s.swept {
		s.swept = start
		for k, c := range s.keys {
			if (c.index+2)*int64(c.window) <= start {
				delete(s.keys, k)
			}
		}
	}
	c := s.keys[key]
	switch {
	case c == nil || c.window != window:
		c = &rateCounts{index: index, window: window}
		s.keys[key] = c
	case c.index == index-1:
		c.index, c.prev, c.current = index, c.current, 0
	case c.index < index-1:
		c.index, c.prev, c.current = index, 0, 0
	}
	c.current++
	return c.current, c.prev, nil
}

// Peek implements [RateStore]. It never fails.
func (s *MemoryRateStore) Peek(_ context.Context, key string, index int64, window time.Duration) (int64, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.keys[key]
	switch {
	case c == nil || c.window != window || c.index < index-1:
		return 0, 0, nil
	case c.index == index-1:
		return 0, c.current, nil
	}
	return c.current, c.prev, nil
}

// Len is the number of keys the store holds.
func (s *MemoryRateStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// rateLimiter applies a RateLimit.
type rateLimiter struct {
	unauth, auth int
	window       time.Duration
	store        RateStore
	now          func() time.Time
	forwarded    bool // trust X-Forwarded-For
}

// newRateLimiter returns nil when l limits nothing; it panics when l is
// invalid (see RateLimit.Validate).
func newRateLimiter(l *RateLimit, trustForwardedFor bool) *rateLimiter {
	if l == nil || l.Unauthenticated == 0 && l.Authenticated == 0 {
		return nil
	}
	if err := l.Validate(); err != nil {
		panic("action: HTTPHandler: " + err.Error())
	}
	rl := &rateLimiter{unauth: l.Unauthenticated, auth: l.Authenticated, window: l.Window, store: l.Store, now: l.Now, forwarded: trustForwardedFor}
	if rl.window == 0 {
		rl.window = DefaultRateWindow
	}
	if rl.store == nil {
		rl.store = NewMemoryRateStore()
	}
	if rl.now == nil {
		rl.now = time.Now
	}
	return rl
}

// rateHeaders are the headers a rate-limited response carries; browsers
// may read them (CORS).
const rateHeaders = "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After"

// allow counts r for its client (principal, or IP) and sets the
// X-RateLimit-* headers on hdr. A refusal is an *Error of KindRateLimited,
// with Retry-After set; a store failure or a bad X-Forwarded-For is an
// error too.
func (rl *rateLimiter) allow(r *http.Request, principal string, hdr http.Header) error {
	key, limit := "principal:"+principal, rl.auth
	if principal == "" {
		ip, err := ClientIP(r, rl.forwarded)
		if err != nil {
			return err
		}
		key, limit = "ip:"+ip, rl.unauth
	}
	if limit == 0 {
		return nil
	}
	now := rl.now().UnixNano()
	w := int64(rl.window)
	index := now / w
	start := index * w
	cur, prev, err := rl.store.Hit(r.Context(), key, index, rl.window)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", key, err)
	}
	weighted := float64(prev) * (1 - float64(now-start)/float64(w))
	after := weighted + float64(cur)
	hdr["X-Ratelimit-Limit"] = []string{strconv.Itoa(limit)}
	hdr["X-Ratelimit-Remaining"] = []string{strconv.FormatInt(int64(max(0, math.Ceil(float64(limit)-after))), 10)}
	// the counts are all gone (the whole limit is back) when the next
	// window ends
	hdr["X-Ratelimit-Reset"] = []string{strconv.FormatInt(ceilSeconds(start+2*w), 10)}
	if weighted+float64(cur-1) < float64(limit) {
		return nil
	}
	wait := rl.retryAt(start, cur, prev, limit) - now
	secs := wait/int64(time.Second) + 1 // strictly after the moment the estimate drops under the limit
	hdr["Retry-After"] = []string{strconv.FormatInt(secs, 10)}
	return Errorf(KindRateLimited, "over %d requests per %v; retry after %d s", limit, rl.window, secs)
}

// retryAt is the first Unix ns at which a request would be allowed, with
// no more requests after the cur-th of the window starting at start.
func (rl *rateLimiter) retryAt(start, cur, prev int64, limit int) int64 {
	return slidingRetryAt(rl.window, start, cur, prev, limit)
}

// slidingRetryAt is the first Unix ns at which the sliding count of a key
// (cur in the window of length window starting at start, prev in the one
// before, at least limit now) drops under limit, with no more hits.
func slidingRetryAt(window time.Duration, start, cur, prev int64, limit int) int64 {
	w, l := float64(window), float64(limit)
	if cur < int64(limit) {
		// in this window, once prev*(1-e/w) + cur < limit (prev > 0 here:
		// the count is at the limit)
		return start + int64(math.Ceil(w*(1-(l-float64(cur))/float64(prev))))
	}
	// in the next, once cur*(1-e/w) < limit
	return start + int64(window) + int64(math.Ceil(w*(1-l/float64(cur))))
}

// ceilSeconds is Unix ns t in whole seconds, rounded up.
func ceilSeconds(t int64) int64 {
	return (t + int64(time.Second) - 1) / int64(time.Second)
}

// RemoteAddr is the address of r's client as [Conn.Remote] gives it:
// r.RemoteAddr, or, when trustForwarded, the last X-Forwarded-For address
// when it is an IP address (the client the proxy in front of us saw).
func RemoteAddr(r *http.Request, trustForwarded bool) string {
	if xff := r.Header.Values("X-Forwarded-For"); trustForwarded && len(xff) > 0 {
		last := xff[len(xff)-1]
		host := strings.TrimSpace(last[strings.LastIndexByte(last, ',')+1:])
		if _, err := netip.ParseAddr(host); err == nil {
			return host
		}
	}
	return r.RemoteAddr
}

// ClientIP is r's client address for limiting by address: the host of
// r.RemoteAddr, or, when trustForwarded and X-Forwarded-For is present, its
// last address (the one the proxy in front of us saw; earlier ones are the
// client's word; one that is not an IP address is an invalid_param error).
// An IPv6 address is reduced to its /64 network, which one client holds.
func ClientIP(r *http.Request, trustForwarded bool) (string, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if xff := r.Header.Values("X-Forwarded-For"); trustForwarded && len(xff) > 0 {
		last := xff[len(xff)-1]
		host = strings.TrimSpace(last[strings.LastIndexByte(last, ',')+1:])
		if _, err := netip.ParseAddr(host); err != nil {
			return "", paramError(KindInvalidParam, "", "X-Forwarded-For: %q is not an IP address", host)
		}
	}
	return addressKey(host), nil
}

// addressKey is the key of a client's address host for limiting by
// address: an IPv4 address, an IPv6 address's /64 network (which one
// client holds), or host itself when it is not an IP address (a pipe, a
// test transport).
func addressKey(host string) string {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64) // cannot fail: 64 bits of an IPv6 address
		return p.String()
	}
	return ip.String()
}
