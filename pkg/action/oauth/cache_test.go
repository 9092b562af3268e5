package oauth

import (
	"testing"
	"time"
)

// TestGrantCacheCoherence: a grant read before a forget is not cached
// (it may be the record the forget dropped, read before its deletion),
// one read after is; while the cache is off, nothing is kept or served.
func TestGrantCacheCoherence(t *testing.T) {
	g := grant{User: "u", Expires: time.Now().Add(time.Hour).UnixMilli()}
	c := grantCache{ttl: time.Minute}
	_, gen, _ := c.get("k")
	c.forget("other")
	c.put("k", g, gen, time.Now())
	if _, _, ok := c.get("k"); ok {
		t.Fatal("a grant read before a forget was cached")
	}
	_, gen, _ = c.get("k")
	c.put("k", g, gen, time.Now())
	if got, _, ok := c.get("k"); !ok || got.User != "u" {
		t.Fatal("a grant read after the last forget was not cached")
	}
	c.setOff(true)
	if _, _, ok := c.get("k"); ok {
		t.Fatal("the cache served an entry while off")
	}
	_, gen, _ = c.get("k")
	c.put("k", g, gen, time.Now())
	c.setOff(false)
	if _, _, ok := c.get("k"); ok {
		t.Fatal("the cache kept an entry put while off")
	}
	// An entry is trusted from its read, not from its put.
	_, gen, _ = c.get("k")
	c.put("k", g, gen, time.Now().Add(-time.Minute))
	if _, _, ok := c.get("k"); ok {
		t.Fatal("an entry read a ttl ago was served")
	}
}
