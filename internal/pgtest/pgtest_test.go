package pgtest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(M(m))
}

func query(t *testing.T, url, sql string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var out string
	err = conn.QueryRow(ctx, sql).Scan(&out)
	return out, err
}

// TestStartPasswordRestart: a server with a password accepts it over TCP and
// refuses another; its data survives Stop and Restart, on the same port;
// Close removes its directory.
func TestStartPasswordRestart(t *testing.T) {
	s := Start(t, Options{Password: "pa ss'word"})
	url := s.URL(Database)
	if !strings.Contains(url, "127.0.0.1:") {
		t.Fatalf("URL %s is not on loopback", url)
	}
	if _, err := query(t, url, "CREATE TABLE kept AS SELECT 'here'::text AS v"); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	wrong := strings.Replace(url, "pa%20ss%27word", "wrong", 1)
	if wrong == url {
		t.Fatalf("no password in %s", url)
	}
	var pgErr *pgconn.PgError
	if _, err := query(t, wrong, "SELECT 'x'"); !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
		t.Fatalf("wrong password: %v, want SQLSTATE 28P01", err)
	}
	port := s.Port
	s.Stop()
	if !s.Exited() {
		t.Fatal("running after Stop")
	}
	if _, err := query(t, url, "SELECT 'x'"); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Port != port {
		t.Fatalf("restarted on port %d, was %d", s.Port, port)
	}
	if v, err := query(t, url, "SELECT v FROM kept"); err != nil || v != "here" {
		t.Fatalf("after restart: %q, %v", v, err)
	}
	s.Close()
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("directory left after Close: %v", err)
	}
}

// TestShared: one server per binary; fresh databases and store names.
func TestShared(t *testing.T) {
	s := Shared(t)
	if Shared(t) != s {
		t.Fatal("two shared servers")
	}
	db := s.CreateDatabase(t)
	if got, err := query(t, s.URL(db), "SELECT current_database()::text"); err != nil || got != db {
		t.Fatalf("current_database %q, %v; want %s", got, err, db)
	}
	a, b := s.StoreURL(), s.StoreURL()
	if a == b || !strings.Contains(a, "mcpkit_store=") {
		t.Fatalf("store URLs %s and %s", a, b)
	}
}
