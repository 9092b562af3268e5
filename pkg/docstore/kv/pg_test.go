package kv_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpkit/mcpkit/internal/pgtest"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// openURL opens the store at url and closes it at the end of the test.
func openURL(t testing.TB, url string, opts kv.Options) kv.DB {
	t.Helper()
	db, err := kv.OpenPostgres(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeDB(t, db) })
	return db
}

// sqlExec runs statements on the database of url (without mcpkit_store).
func sqlExec(t testing.TB, rawURL string, stmts ...string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("mcpkit_store")
	u.RawQuery = q.Encode()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// storeOf is the mcpkit_store name in url.
func storeOf(t testing.TB, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("mcpkit_store")
}

func u64(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// TestPostgresTwoHandles: two DBs on one store, as two processes would
// be: a write on one is seen by a View begun after it on the other,
// buckets and the epoch too; writers serialize (concurrent increments of
// one key lose none) and sequences never collide.
func TestPostgresTwoHandles(t *testing.T) {
	url := pgtest.Shared(t).StoreURL()
	a, b := openURL(t, url, kv.Options{NoSync: true}), openURL(t, url, kv.Options{NoSync: true})
	view(t, b, func(tx kv.Tx) error { return nil }) // b holds the empty bucket set
	update(t, a, func(tx kv.Tx) error {
		mustPut(t, mustBucket(t, tx, "n"), "k", "1")
		return tx.BumpEpoch()
	})
	view(t, b, func(tx kv.Tx) error {
		bk := tx.Bucket([]byte("n"))
		if bk == nil {
			t.Fatal("b does not see the bucket a created")
		}
		if got := bk.Get([]byte("k")); string(got) != "1" {
			t.Errorf("b reads %q", got)
		}
		if tx.Epoch() != 1 {
			t.Errorf("b sees epoch %d", tx.Epoch())
		}
		return nil
	})

	const perWorker = 25
	var wg sync.WaitGroup
	var seqMu sync.Mutex
	var seqs []uint64
	for _, db := range []kv.DB{a, b, a, b} {
		wg.Go(func() {
			for range perWorker {
				err := db.Update(func(tx kv.Tx) error {
					bk := tx.Bucket([]byte("n"))
					n := u64(bk.Get([]byte("counter")))
					if err := bk.Put([]byte("counter"), binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
						return err
					}
					s, err := bk.NextSequence()
					seqMu.Lock()
					seqs = append(seqs, s)
					seqMu.Unlock()
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	view(t, a, func(tx kv.Tx) error {
		bk := tx.Bucket([]byte("n"))
		if n := u64(bk.Get([]byte("counter"))); n != 4*perWorker {
			t.Errorf("counter %d after %d increments", n, 4*perWorker)
		}
		if s := bk.Sequence(); s != 4*perWorker {
			t.Errorf("sequence %d after %d NextSequence", s, 4*perWorker)
		}
		return nil
	})
	slices.Sort(seqs)
	if len(slices.Compact(seqs)) != 4*perWorker {
		t.Errorf("sequences collided: %d distinct of %d", len(slices.Compact(seqs)), 4*perWorker)
	}

	update(t, b, func(tx kv.Tx) error { return tx.DeleteBucket([]byte("n")) })
	view(t, a, func(tx kv.Tx) error {
		if tx.Bucket([]byte("n")) != nil {
			t.Error("a still sees the bucket b deleted")
		}
		return nil
	})
}

// TestPostgresServerRestart: while the server is down every transaction
// fails with ErrUnavailable, a read that loses the server mid-transaction
// too, and the same DB works again once it is back.
func TestPostgresServerRestart(t *testing.T) {
	s := pgtest.Start(t, pgtest.Options{})
	url := s.StoreURL()
	db := openURL(t, url, kv.Options{NoSync: true, Timeout: 2 * time.Second})
	// Written by another instance: db's read cache knows none of it, so
	// that its reads go to the server.
	fill(t, openURL(t, url, kv.Options{NoSync: true, Timeout: 2 * time.Second}), "b", 10)

	err := db.View(func(tx kv.Tx) error {
		tx.Bucket([]byte("b")).Get([]byte(key(1)))
		s.Stop()
		tx.Bucket([]byte("b")).Get([]byte(key(5)))
		t.Error("a read went on after the server stopped")
		return nil
	})
	wantErr(t, err, kv.ErrUnavailable)
	wantErr(t, db.View(func(kv.Tx) error { return nil }), kv.ErrUnavailable)
	ran := false
	wantErr(t, db.Update(func(kv.Tx) error { ran = true; return nil }), kv.ErrUnavailable)
	wantErr(t, db.Batch(func(kv.Tx) error { ran = true; return nil }), kv.ErrUnavailable)
	if ran {
		t.Error("a write function ran with the server down")
	}
	if _, err := db.Backup(new(strings.Builder)); !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("backup: %v", err)
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	// A batched function whose read loses the server: the batch fails
	// with ErrUnavailable (not as a panic of the function, re-run alone).
	runs := 0
	err = db.Batch(func(tx kv.Tx) error {
		runs++
		s.Stop()
		tx.Bucket([]byte("b")).Get([]byte(key(7)))
		return nil
	})
	wantErr(t, err, kv.ErrUnavailable)
	if runs != 1 {
		t.Errorf("the batched function ran %d times", runs)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	update(t, db, func(tx kv.Tx) error {
		mustPut(t, tx.Bucket([]byte("b")), "after", "restart")
		return nil
	})
	view(t, db, func(tx kv.Tx) error {
		if n := tx.Bucket([]byte("b")).KeyN(); n != 11 {
			t.Errorf("%d keys after the restart, want 11", n)
		}
		return nil
	})

	// A restart that no transaction saw leaves idle connections to the
	// old server: the next transaction must not fail on them.
	var wg sync.WaitGroup
	hold := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			view(t, db, func(kv.Tx) error { <-hold; return nil })
		})
	}
	time.Sleep(100 * time.Millisecond)
	close(hold)
	wg.Wait()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		view(t, db, func(kv.Tx) error { return nil })
	}
}

// TestPostgresCommitLost: the server killed while a commit is under way
// makes the outcome unknown, and the error says so.
func TestPostgresCommitLost(t *testing.T) {
	s := pgtest.Start(t, pgtest.Options{})
	url := s.StoreURL()
	db := openURL(t, url, kv.Options{Timeout: 2 * time.Second})
	sqlExec(t, url,
		`CREATE FUNCTION slow() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(5); RETURN NEW; END $$ LANGUAGE plpgsql`,
		fmt.Sprintf(`CREATE TRIGGER slow BEFORE INSERT ON mcpkit_%s_kv FOR EACH ROW EXECUTE FUNCTION slow()`, storeOf(t, url)))
	done := make(chan error, 1)
	go func() {
		done <- db.Update(func(tx kv.Tx) error {
			return mustBucket(t, tx, "b").Put([]byte("k"), []byte("v"))
		})
	}()
	time.Sleep(500 * time.Millisecond)
	s.Kill()
	err := <-done
	wantErr(t, err, kv.ErrUnavailable)
	if !strings.Contains(err.Error(), "outcome is unknown") {
		t.Errorf("the error does not say the outcome is unknown: %v", err)
	}
}

// TestPostgresConflict: a serialization failure at commit (injected by a
// trigger that raises SQLSTATE 40001 twice, as CockroachDB raises it) fails
// an Update with ErrConflict after running its function once, and nothing
// is committed; a Batch re-runs its function and commits.
func TestPostgresConflict(t *testing.T) {
	url := pgtest.Shared(t).StoreURL()
	db := openURL(t, url, kv.Options{NoSync: true})
	update(t, db, func(tx kv.Tx) error { mustBucket(t, tx, "b"); return nil })
	store := storeOf(t, url)
	sqlExec(t, url,
		fmt.Sprintf(`CREATE SEQUENCE conflicts_%s`, store),
		fmt.Sprintf(`CREATE FUNCTION conflict_%[1]s() RETURNS trigger AS $$ BEGIN
			IF nextval('conflicts_%[1]s') <= 2 THEN RAISE EXCEPTION 'injected' USING ERRCODE = '40001'; END IF;
			RETURN NEW; END $$ LANGUAGE plpgsql`, store),
		fmt.Sprintf(`CREATE TRIGGER conflict BEFORE INSERT ON mcpkit_%[1]s_kv FOR EACH ROW EXECUTE FUNCTION conflict_%[1]s()`, store))
	runs := 0
	err := db.Update(func(tx kv.Tx) error {
		runs++
		return tx.Bucket([]byte("b")).Put([]byte("u"), []byte("v"))
	})
	wantErr(t, err, kv.ErrConflict)
	if runs != 1 {
		t.Errorf("the Update's function ran %d times", runs)
	}
	view(t, db, func(tx kv.Tx) error {
		if tx.Bucket([]byte("b")).Get([]byte("u")) != nil {
			t.Error("the conflicting Update committed")
		}
		return nil
	})
	runs = 0
	if err := db.Batch(func(tx kv.Tx) error {
		runs++
		return tx.Bucket([]byte("b")).Put([]byte("b"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Errorf("the Batch function ran %d times, want 2 (once more after the conflict)", runs)
	}
}

// TestPostgresSecrets: the password, from the URL or PGPASSWORD, is in no
// error and not in Path, even when the URL does not parse or the password
// is wrong.
func TestPostgresSecrets(t *testing.T) {
	const password = "Zq9-s3cr3t:pw"
	s := pgtest.Start(t, pgtest.Options{Password: password})
	good := s.URL(pgtest.Database) + "&mcpkit_store=secret"
	clean := func(what, text string) {
		t.Helper()
		if strings.Contains(text, "s3cr3t") || strings.Contains(text, url.QueryEscape(password)) {
			t.Errorf("%s shows the password: %s", what, text)
		}
	}
	db := openURL(t, good, kv.Options{Timeout: 2 * time.Second})
	clean("Path", db.Path())
	if !strings.Contains(db.Path(), "mcpkit_store=secret") || !strings.Contains(db.Path(), "mcpkit@127.0.0.1") {
		t.Errorf("Path %s", db.Path())
	}

	wrong := strings.Replace(good, url.QueryEscape(password), "Zq9-s3cr3t-wrong", 1)
	if _, err := kv.OpenPostgres(context.Background(), wrong, kv.Options{}); err == nil {
		t.Error("a wrong password opened the store")
	} else {
		clean("wrong password", err.Error())
	}
	for _, bad := range []string{
		"postgres://mcpkit:Zq9/s3cr3t@127.0.0.1:1/db", // '/' not encoded
		"postgres://mcpkit:Zq9-s3cr3t@127.0.0.1:port/db",
		"postgres://mcpkit@127.0.0.1/db?password=Zq9-s3cr3t&mcpkit_store=Bad-Name",
		"postgres://mcpkit@127.0.0.1/db?password=Zq9-s3cr3t&connect_timeout=x",
	} {
		if _, err := kv.OpenPostgres(context.Background(), bad, kv.Options{}); err == nil {
			t.Errorf("%s opened", bad)
		} else {
			clean("bad URL", err.Error())
		}
	}

	s.Stop()
	err := db.View(func(kv.Tx) error { return nil })
	wantErr(t, err, kv.ErrUnavailable)
	clean("server down", err.Error())
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}

	// From the password file, then PGPASSWORD: the URL without it.
	bare := strings.Replace(good, ":"+url.QueryEscape(password)+"@", "@", 1)
	if bare == good {
		t.Fatalf("no password in %s", good)
	}
	passfile := filepath.Join(t.TempDir(), "pgpass")
	line := fmt.Sprintf("127.0.0.1:%d:%s:%s:%s\n", s.Port, pgtest.Database, pgtest.User, strings.ReplaceAll(password, ":", `\:`))
	if err := os.WriteFile(passfile, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", passfile)
	view(t, openURL(t, bare, kv.Options{Timeout: 2 * time.Second}), func(kv.Tx) error { return nil })
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("PGPASSWORD", password)
	other := openURL(t, bare, kv.Options{Timeout: 2 * time.Second})
	view(t, other, func(kv.Tx) error { return nil })
	s.Stop()
	err = other.View(func(kv.Tx) error { return nil })
	wantErr(t, err, kv.ErrUnavailable)
	clean("server down, PGPASSWORD", err.Error())
}

// TestPostgresOpen: store names are validated, a read-only open of a
// missing store fails without creating it, a read-only DB refuses writes,
// and a server that is not there is ErrUnavailable.
func TestPostgresOpen(t *testing.T) {
	srv := pgtest.Shared(t)
	base := srv.URL(pgtest.Database)
	for _, name := range []string{"", "UPPER", "a-b", strings.Repeat("x", 41)} {
		if _, err := kv.OpenPostgres(context.Background(), base+"&mcpkit_store="+name, kv.Options{}); err == nil {
			t.Errorf("store name %q accepted", name)
		}
	}
	url := srv.StoreURL()
	_, err := kv.OpenPostgres(context.Background(), url, kv.Options{ReadOnly: true})
	wantErr(t, err, kv.ErrInvalidFile)

	// Processes opening a new store at once all create it.
	fresh := srv.StoreURL()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			db, err := kv.OpenPostgres(context.Background(), fresh, kv.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			closeDB(t, db)
		})
	}
	wg.Wait()

	db := openURL(t, url, kv.Options{})
	fill(t, db, "b", 3)
	ro := openURL(t, url, kv.Options{ReadOnly: true})
	wantErr(t, ro.Update(func(kv.Tx) error { return nil }), kv.ErrReadOnly)
	wantErr(t, ro.Batch(func(kv.Tx) error { return nil }), kv.ErrReadOnly)
	view(t, ro, func(tx kv.Tx) error {
		if n := tx.Bucket([]byte("b")).KeyN(); n != 3 {
			t.Errorf("read-only sees %d keys", n)
		}
		return nil
	})
	if err := ro.Check(); err != nil {
		t.Errorf("check: %v", err)
	}
	if !kv.IsURL(url) || !kv.IsURL("POSTGRESQL://h/db") || kv.IsURL("/var/lib/postgres://x") || kv.IsURL("store.db") {
		t.Error("IsURL")
	}

	start := time.Now()
	_, err = kv.OpenPostgres(context.Background(), "postgres://mcpkit@127.0.0.1:1/db?sslmode=disable", kv.Options{Timeout: time.Second})
	wantErr(t, err, kv.ErrUnavailable)
	if time.Since(start) > 5*time.Second {
		t.Errorf("open of an absent server took %v", time.Since(start))
	}
}

// TestPostgresCheck: Check finds keys of no bucket.
func TestPostgresCheck(t *testing.T) {
	url := pgtest.Shared(t).StoreURL()
	db := openURL(t, url, kv.Options{NoSync: true})
	fill(t, openURL(t, url, kv.Options{NoSync: true}), "b", 3) // another instance: db's reads go to the server
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, url, fmt.Sprintf(`INSERT INTO mcpkit_%s_kv VALUES (999, '\x01', '\x02')`, storeOf(t, url)))
	err := db.Check()
	var de *kv.DamageError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "1 keys belong to no bucket") {
		t.Errorf("check: %v", err)
	}

	// A table gone: Check, and every transaction, say so.
	sqlExec(t, url, fmt.Sprintf(`DROP TABLE mcpkit_%s_kv`, storeOf(t, url)))
	wantErr(t, db.Check(), kv.ErrInvalidFile)
	err = db.View(func(tx kv.Tx) error {
		tx.Bucket([]byte("b")).Get([]byte(key(1)))
		return nil
	})
	wantErr(t, err, kv.ErrInvalidFile)

	// A table of another shape under the store's name: opening fails.
	other := pgtest.Shared(t).StoreURL()
	sqlExec(t, other, fmt.Sprintf(`CREATE TABLE mcpkit_%s_meta (id integer PRIMARY KEY, note text)`, storeOf(t, other)))
	if _, err := kv.OpenPostgres(context.Background(), other, kv.Options{}); err == nil || !strings.Contains(err.Error(), "column") {
		t.Errorf("open over a foreign table: %v", err)
	}
}

// TestPostgresUpdateOfKeyGone: a put of a key the transaction read as
// present is an UPDATE at the commit (cheaper than an upsert); if the row
// was deleted outside mcpkit in the meantime, the put is never lost
// silently: the commit fails with ErrInvalidFile and writes nothing, and a
// later transaction, which no longer trusts the process's cache, writes
// the key again.
func TestPostgresUpdateOfKeyGone(t *testing.T) {
	url := pgtest.Shared(t).StoreURL()
	db := openURL(t, url, kv.Options{NoSync: true})
	fill(t, db, "b", 3)
	err := db.Update(func(tx kv.Tx) error {
		b := tx.Bucket([]byte("b"))
		if b.Get([]byte(key(1))) == nil || b.Get([]byte(key(2))) == nil {
			t.Fatal("the keys filled are missing")
		}
		sqlExec(t, url, fmt.Sprintf(`DELETE FROM mcpkit_%s_kv WHERE k = '\x%x'`, storeOf(t, url), key(1)))
		mustPut(t, b, key(1), "new 1")
		mustPut(t, b, key(2), "new 2")
		return nil
	})
	other := openURL(t, url, kv.Options{NoSync: true})
	read := func(db kv.DB, k string) (v string) {
		t.Helper()
		if err := db.View(func(tx kv.Tx) error { v = string(tx.Bucket([]byte("b")).Get([]byte(k))); return nil }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	switch {
	case err == nil && read(other, key(1)) != "new 1":
		t.Fatalf("the commit succeeded but the put of a key deleted outside is lost: %q", read(other, key(1)))
	case err == nil:
		t.Fatal("the commit of an update of a vanished key succeeded: it must fail (the store changed outside mcpkit)")
	}
	wantErr(t, err, kv.ErrInvalidFile)
	if got := read(other, key(2)); got != fmt.Sprintf("%0100d", 2) {
		t.Errorf("the failed commit wrote key 2: %q", got)
	}
	if got := read(db, key(1)); got != "" {
		t.Errorf("after the failed commit, the handle still reads the key deleted outside: %q", got)
	}
	update(t, db, func(tx kv.Tx) error { mustPut(t, tx.Bucket([]byte("b")), key(1), "again"); return nil })
	if got := read(other, key(1)); got != "again" {
		t.Errorf("a put after the failure: %q", got)
	}
}
