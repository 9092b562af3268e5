package oauth

import (
	"sync"
	"time"
)

// DefaultVerifyCache is how long [Server.Verify] trusts a token it found
// valid without asking the store again (see Options.VerifyCache).
const DefaultVerifyCache = time.Second

// maxCached bounds the verification cache: past it, expired entries are
// dropped, and if that is not enough, all of them.
const maxCached = 10000

// grantCache remembers recently verified access tokens (by store key),
// so that a shared store's round trip is paid once per token per period
// rather than per request. It starts no goroutine.
//
// Revocations stay coherent: forget counts a generation, and a grant read
// from the store before the latest forget is not cached (it may be one
// that forget meant to drop, read before its record was deleted). While
// the cache is off (its store's revocation watch is not listening) it
// neither keeps nor returns anything.
type grantCache struct {
	ttl time.Duration // <= 0: no caching

	mu      sync.Mutex
	entries map[string]cachedGrant
	gen     uint64 // forgets so far
	off     bool
}

type cachedGrant struct {
	g     grant
	until time.Time
}

// get returns key's cached grant, if any, and the generation to hand to
// put for a grant read from the store now.
func (c *grantCache) get(key string) (grant, uint64, bool) {
	if c.ttl <= 0 {
		return grant{}, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.off || !time.Now().Before(e.until) {
		return grant{}, c.gen, false
	}
	return e.g, c.gen, true
}

// put caches g, read from the store from read on, unless a forget came
// since get returned gen: it is then trusted until read plus the ttl (or
// its expiry, if sooner).
func (c *grantCache) put(key string, g grant, gen uint64, read time.Time) {
	if c.ttl <= 0 {
		return
	}
	now := time.Now()
	until := read.Add(c.ttl)
	if exp := time.UnixMilli(g.Expires); exp.Before(until) {
		until = exp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off || gen != c.gen {
		return
	}
	if c.entries == nil {
		c.entries = map[string]cachedGrant{}
	}
	if len(c.entries) >= maxCached {
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCached {
			clear(c.entries)
		}
	}
	c.entries[key] = cachedGrant{g: g, until: until}
}

// forget drops keys (revoked tokens, whose records are already deleted),
// and keeps grants being read meanwhile out of the cache.
func (c *grantCache) forget(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, k := range keys {
		delete(c.entries, k)
	}
}

// setOff turns the cache off (dropping everything) or back on.
func (c *grantCache) setOff(off bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.off = off
	clear(c.entries)
}
