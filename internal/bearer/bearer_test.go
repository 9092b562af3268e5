package bearer

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestMatch: a listed token matches with an identity derived from its
// digest (stable, not the token); anything else, a prefix or a case
// variant included, does not.
func TestMatch(t *testing.T) {
	set := NewSet([]string{"alpha-token-0123456789", "beta-token-0123456789"})
	sum := sha256.Sum256([]byte("beta-token-0123456789"))
	if id, ok := set.Match("beta-token-0123456789"); !ok || id != "token:"+hex.EncodeToString(sum[:8]) {
		t.Fatalf("listed token: %q %v", id, ok)
	}
	for _, bad := range []string{"", "beta-token", "BETA-token-0123456789", "gamma-token-0123456789"} {
		if id, ok := set.Match(bad); ok || id != "" {
			t.Errorf("%q matched as %q", bad, id)
		}
	}
	if _, ok := NewSet(nil).Match("anything"); ok {
		t.Error("an empty set matched")
	}
}
