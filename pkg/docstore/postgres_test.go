package docstore

import (
	"os"
	"testing"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// The engine's tests that run on every backend (backends, sharedBackends)
// run on PostgreSQL too, each on a store of its own in the test binary's
// shared server (internal/pgtest: skipped when PostgreSQL is not
// installed, unless MCPKIT_REQUIRE_POSTGRES is set, as make test does).

func TestMain(m *testing.M) { os.Exit(pgtest.M(m).Run()) }

func init() {
	pgShared = func(t *testing.T) (a, b *Store) {
		url := pgtest.Shared(t).StoreURL()
		return openShared(t, openPostgres(t, url)), openShared(t, openPostgres(t, url))
	}
}

// openPostgres opens the kv store at url, closed when the test ends.
func openPostgres(t *testing.T, url string) kv.DB {
	t.Helper()
	db, err := kv.OpenPostgres(t.Context(), url, kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
