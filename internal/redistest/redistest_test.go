package redistest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

// Silence go-redis's own logging of the connection failures these tests
// provoke on purpose.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func client(t *testing.T, o *redis.Options) *redis.Client {
	t.Helper()
	o.MaxRetries = -1
	o.DialTimeout = 2 * time.Second
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPlainSetGet(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{})
	if s.Addr != net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) || s.Port == 6379 {
		t.Fatalf("unexpected address %q / port %d", s.Addr, s.Port)
	}
	if s.TLSConfig() != nil {
		t.Error("TLSConfig() should be nil for a plaintext server")
	}
	c := client(t, &redis.Options{Addr: s.Addr})
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx(t), "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET = %q, %v", v, err)
	}
	// No persistence.
	if v, err := c.ConfigGet(ctx(t), "save").Result(); err != nil || v["save"] != "" {
		t.Errorf("CONFIG GET save = %v, %v", v, err)
	}
	if v, err := c.ConfigGet(ctx(t), "appendonly").Result(); err != nil || v["appendonly"] != "no" {
		t.Errorf("CONFIG GET appendonly = %v, %v", v, err)
	}
}

func TestPassword(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{Password: `p"w \secret`})
	if s.Password != `p"w \secret` {
		t.Fatalf("Password = %q", s.Password)
	}
	anon := client(t, &redis.Options{Addr: s.Addr})
	if err := anon.Set(ctx(t), "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("unauthenticated SET: err = %v, want NOAUTH", err)
	}
	wrong := client(t, &redis.Options{Addr: s.Addr, Password: "nope"})
	if err := wrong.Ping(ctx(t)).Err(); err == nil {
		t.Fatal("wrong password accepted")
	}
	c := client(t, &redis.Options{Addr: s.Addr, Password: s.Password})
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx(t), "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET = %q, %v", v, err)
	}
}

func TestACL(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{ACL: []string{
		"user default off",
		"user admin on >adminpw ~* &* +@all",
		"user reader on >pw ~* +get",
	}})
	anon := client(t, &redis.Options{Addr: s.Addr})
	if err := anon.Get(ctx(t), "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("anonymous GET: err = %v, want NOAUTH", err)
	}
	admin := client(t, &redis.Options{Addr: s.Addr, Username: "admin", Password: "adminpw"})
	if err := admin.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	reader := client(t, &redis.Options{Addr: s.Addr, Username: "reader", Password: "pw"})
	if v, err := reader.Get(ctx(t), "k").Result(); err != nil || v != "v" {
		t.Fatalf("reader GET = %q, %v", v, err)
	}
	if err := reader.Set(ctx(t), "k", "w", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("reader SET: err = %v, want NOPERM", err)
	}
}

func TestACLWithPassword(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{
		Password: `def pw"\`,
		ACL:      []string{"user reader on >pw ~* +get"},
	})
	c := client(t, &redis.Options{Addr: s.Addr, Password: s.Password})
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	anon := client(t, &redis.Options{Addr: s.Addr})
	if err := anon.Get(ctx(t), "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("anonymous GET: err = %v, want NOAUTH", err)
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{TLS: true, Password: "pw"})
	for _, f := range []string{s.CAFile, s.CertFile, s.KeyFile, s.ClientCertFile, s.ClientKeyFile} {
		if f == "" || !strings.HasPrefix(f, s.Dir) {
			t.Fatalf("TLS file %q not in %q", f, s.Dir)
		}
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t, &redis.Options{Addr: s.Addr, Password: s.Password, TLSConfig: s.TLSConfig()})
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx(t), "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET over TLS = %q, %v", v, err)
	}

	// Client certificates are optional by default.
	noCert := s.TLSConfig()
	noCert.Certificates = nil
	c2 := client(t, &redis.Options{Addr: s.Addr, Password: s.Password, TLSConfig: noCert})
	if err := c2.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("TLS without client cert: %v", err)
	}

	// A client that does not trust the CA is refused.
	untrusting := &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	c3 := client(t, &redis.Options{Addr: s.Addr, Password: s.Password, TLSConfig: untrusting})
	if err := c3.Ping(ctx(t)).Err(); err == nil {
		t.Fatal("TLS client without the CA connected")
	}

	// Plaintext on the TLS port fails.
	plain := client(t, &redis.Options{Addr: s.Addr, Password: s.Password, ReadTimeout: time.Second, WriteTimeout: time.Second})
	if err := plain.Ping(ctx(t)).Err(); err == nil {
		t.Fatal("plaintext PING on the TLS port succeeded")
	}
}

func TestTLSRequireClientCert(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{TLS: true, RequireClientCert: true})
	c := client(t, &redis.Options{Addr: s.Addr, TLSConfig: s.TLSConfig()})
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("with client cert: %v", err)
	}
	noCert := s.TLSConfig()
	noCert.Certificates = nil
	c2 := client(t, &redis.Options{Addr: s.Addr, TLSConfig: noCert})
	if err := c2.Ping(ctx(t)).Err(); err == nil {
		t.Fatal("connected without a client certificate")
	}
}

func TestExtraConfig(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{Config: []string{
		"enable-debug-command yes",
		"maxmemory-policy allkeys-lru",
	}})
	c := client(t, &redis.Options{Addr: s.Addr})
	if v, err := c.ConfigGet(ctx(t), "maxmemory-policy").Result(); err != nil || v["maxmemory-policy"] != "allkeys-lru" {
		t.Fatalf("CONFIG GET maxmemory-policy = %v, %v", v, err)
	}
	if v, err := c.ConfigGet(ctx(t), "enable-debug-command").Result(); err != nil || v["enable-debug-command"] != "yes" {
		t.Fatalf("CONFIG GET enable-debug-command = %v, %v", v, err)
	}
	if err := c.Do(ctx(t), "DEBUG", "SLEEP", "0").Err(); err != nil {
		t.Fatalf("DEBUG SLEEP 0: %v", err)
	}

	// Without the line, DEBUG is refused.
	s2 := redistest.Start(t, redistest.Options{})
	c2 := client(t, &redis.Options{Addr: s2.Addr})
	if err := c2.Do(ctx(t), "DEBUG", "SLEEP", "0").Err(); err == nil {
		t.Fatal("DEBUG allowed without enable-debug-command")
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{})
	c := client(t, &redis.Options{Addr: s.Addr})
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	if s.Exited() {
		t.Fatal("Exited() before Stop")
	}
	start := time.Now()
	s.Stop()
	t.Logf("Stop took %v", time.Since(start))
	if !s.Exited() {
		t.Fatal("process not reaped after Stop")
	}
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err == nil {
		conn.Close()
		t.Fatal("port still accepts connections after Stop")
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) && !strings.Contains(err.Error(), "refused") {
		t.Logf("dial after Stop: %v", err)
	}
	s.Stop() // idempotent
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("second Stop blocked")
	}
}

func TestTwoServers(t *testing.T) {
	t.Parallel()
	a := redistest.Start(t, redistest.Options{})
	b := redistest.Start(t, redistest.Options{})
	if a.Port == b.Port || a.Addr == b.Addr {
		t.Fatalf("same port: %d", a.Port)
	}
	if a.Dir == b.Dir {
		t.Fatalf("same dir: %s", a.Dir)
	}
	ca := client(t, &redis.Options{Addr: a.Addr})
	cb := client(t, &redis.Options{Addr: b.Addr})
	if err := ca.Set(ctx(t), "k", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cb.Get(ctx(t), "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("key leaked between servers: %v", err)
	}
}

func TestStoppedAtCleanup(t *testing.T) {
	t.Parallel()
	var s *redistest.Server
	t.Run("sub", func(t *testing.T) {
		s = redistest.Start(t, redistest.Options{})
	})
	if !s.Exited() {
		t.Fatal("server still running after its test ended")
	}
	if conn, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		conn.Close()
		t.Fatal("port still accepts connections after cleanup")
	}
}

// With the log level changed, readiness falls back to PING alone.
func TestQuietLogLevel(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{Password: "pw", Config: []string{"loglevel warning"}})
	c := client(t, &redis.Options{Addr: s.Addr, Password: "pw"})
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestKillRestart: a killed server is gone at once; Restart brings it back
// on the same address with the same configuration (the password), and
// without the data (no persistence).
func TestKillRestart(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{Password: "pw-restart"})
	c := client(t, &redis.Options{Addr: s.Addr, Password: s.Password})
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr
	s.Kill()
	if !s.Exited() {
		t.Fatal("Exited() = false after Kill")
	}
	if err := c.Ping(ctx(t)).Err(); err == nil {
		t.Fatal("PING succeeded on a killed server")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Addr != addr || s.Exited() {
		t.Fatalf("restarted at %s (exited %v), want %s", s.Addr, s.Exited(), addr)
	}
	if n, err := c.Exists(ctx(t), "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS k after restart = %d, %v; want 0 (no persistence)", n, err)
	}
	if err := client(t, &redis.Options{Addr: s.Addr}).Ping(ctx(t)).Err(); err == nil {
		t.Fatal("the restarted server accepts a client without the password")
	}
}
