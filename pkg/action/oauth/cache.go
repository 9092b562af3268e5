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
type grantCache struct {
	ttl time.Duration // <= 0: no caching

	mu      sync.Mutex
	entries map[string]cachedGrant
}

type cachedGrant struct {
	g     grant
	until time.Time
}

func (c *grantCache) get(key string) (grant, bool) {
	if c.ttl <= 0 {
		return grant{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !time.Now().Before(e.until) {
		return grant{}, false
	}
	return e.g, true
}

func (c *grantCache) put(key string, g grant) {
	if c.ttl <= 0 {
		return
	}
	now := time.Now()
	until := now.Add(c.ttl)
	if exp := time.UnixMilli(g.Expires); exp.Before(until) {
		until = exp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
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

// forget drops keys: tokens this instance revoked are refused at once.
func (c *grantCache) forget(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		delete(c.entries, k)
	}
}
