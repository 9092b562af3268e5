// Package pgtest starts disposable PostgreSQL servers for tests.
//
// [Start] runs initdb in a temporary directory of its own and a postgres
// server on it, listening on 127.0.0.1 at a free port chosen by the kernel
// and on a unix socket in the same directory, with fsync off; the server is
// stopped (immediate shutdown) and its directory removed when the test ends.
// [Shared] starts one such server per test binary, for packages that open
// many stores: each test takes a fresh store name or database on it, and
// TestMain stops it after the tests (see [M]).
//
// The binaries are found through MCPKIT_PG_BINDIR, `pg_config --bindir`,
// Debian's /usr/lib/postgresql/*/bin (the newest) or PATH. When they are
// missing the test is skipped, unless MCPKIT_REQUIRE_POSTGRES is set (make
// test sets it), and then it fails: run scripts/install-deps.sh.
//
// initdb and postgres refuse to run as root: under euid 0 both run as the
// `postgres` system user (which Debian's package creates), and the
// directory is given to it.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables read by the package.
const (
	// EnvRequire, when set (to anything), turns a missing PostgreSQL
	// installation into a test failure instead of a skip.
	EnvRequire = "MCPKIT_REQUIRE_POSTGRES"
	// EnvBinDir may name the directory holding initdb and postgres.
	EnvBinDir = "MCPKIT_PG_BINDIR"
)

const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
	maxAttempts  = 5 // port-allocation attempts when the chosen port is taken
	// User is the superuser initdb creates; every URL names it.
	User = "mcpkit"
	// Database is the database created at start, for stores that share one.
	Database = "mcpkit"
)

// Options configures a server started by [Start]. The zero value gives a
// server that trusts every loopback connection.
type Options struct {
	// Password, if set, is the superuser's password, required (SCRAM) on
	// TCP connections and put in the URLs that URL returns. The unix
	// socket stays trusted, for the package's own administration.
	Password string
	// Config holds extra settings passed to postgres as -c name=value.
	Config []string
}

// Server is a running PostgreSQL server.
type Server struct {
	Port     int
	Dir      string // the server's own directory: data/, the socket, the log
	Password string // Options.Password

	bins  binaries
	opts  Options
	cred  *syscall.Credential // nil unless run as the postgres user
	mu    sync.Mutex
	p     *proc // the current postgres process
	dbSeq atomic.Int64
}

// proc is one postgres process.
type proc struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been waited for
	waitErr error         // set before done is closed
}

type binaries struct{ initdb, postgres string }

// Start starts a disposable PostgreSQL server for t and waits until it
// accepts connections; it is stopped and its directory removed at t's
// cleanup. It skips t when PostgreSQL is not installed (see the package
// documentation), and fails it on any other error.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bins := findOrSkip(t)
	s, err := start(bins, opts)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

var shared struct {
	once sync.Once
	s    *Server
	err  error
}

// Shared returns the test binary's shared server, starting it on first use
// (without a password). It lives until [StopShared], which TestMain calls
// through [M]; should the test binary die first, the kernel kills postgres
// (parent-death signal) and only its directory is left in os.TempDir().
func Shared(t testing.TB) *Server {
	t.Helper()
	bins := findOrSkip(t)
	shared.once.Do(func() { shared.s, shared.err = start(bins, Options{}) })
	if shared.err != nil {
		t.Fatalf("pgtest: shared server: %v", shared.err)
	}
	return shared.s
}

// StopShared stops the shared server, if one was started, and removes its
// directory.
func StopShared() {
	if shared.s != nil {
		shared.s.Close()
	}
}

// M wraps a test binary's *testing.M (or anything with Run) so that Run
// stops the shared server after the tests: in TestMain,
// os.Exit(pgtest.M(m).Run()), or goleak.VerifyTestMain(pgtest.M(m)) so that
// the server's goroutine is gone before goleak looks.
func M(m interface{ Run() int }) interface{ Run() int } { return mainRunner{m} }

type mainRunner struct{ m interface{ Run() int } }

func (r mainRunner) Run() int {
	defer StopShared()
	return r.m.Run()
}

// findOrSkip finds the binaries, or skips (fails, under EnvRequire) t.
func findOrSkip(t testing.TB) binaries {
	t.Helper()
	bins, err := findBinaries()
	if err != nil {
		if os.Getenv(EnvRequire) == "" {
			t.Skipf("pgtest: %v (set %s to fail instead)", err, EnvRequire)
		}
		t.Fatalf("pgtest: %v (%s is set)", err, EnvRequire)
	}
	return bins
}

// findBinaries locates initdb and postgres.
func findBinaries() (binaries, error) {
	var dirs []string
	if d := os.Getenv(EnvBinDir); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(debian, func(i, j int) bool { return versionOf(debian[i]) > versionOf(debian[j]) })
	dirs = append(dirs, debian...)
	for _, d := range dirs {
		b := binaries{initdb: filepath.Join(d, "initdb"), postgres: filepath.Join(d, "postgres")}
		if isExecutable(b.initdb) && isExecutable(b.postgres) {
			return b, nil
		}
	}
	initdb, err1 := exec.LookPath("initdb")
	postgres, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return binaries{initdb: initdb, postgres: postgres}, nil
	}
	return binaries{}, errors.New("PostgreSQL's initdb and postgres not found (" + EnvBinDir +
		", pg_config --bindir, /usr/lib/postgresql/*/bin, PATH); run scripts/install-deps.sh")
}

// versionOf is the major version in /usr/lib/postgresql/VERSION/bin.
func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// start creates the directory, runs initdb and starts the server.
func start(bins binaries, opts Options) (s *Server, err error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s = &Server{Dir: dir, Password: opts.Password, bins: bins, opts: opts}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return nil, err
		}
	}
	if err := s.initdb(); err != nil {
		return nil, err
	}
	var lastErr error
	for range maxAttempts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Port = port
		retry, err := s.run()
		if err == nil {
			return s, s.createDatabase(Database)
		}
		lastErr = err
		if !retry {
			break
		}
	}
	return nil, lastErr
}

// postgresUser is the credential of the postgres system user.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb refuses root: %w (install Debian's postgresql package)", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }
func (s *Server) logFile() string { return filepath.Join(s.Dir, "postgres.log") }

// command is exec.Command running as the server's user, in its own process
// group, killed with the test binary.
func (s *Server) command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.cred}
	return cmd
}

// initdb creates the cluster: superuser User, SCRAM on TCP when a password
// is set, the socket trusted.
func (s *Server) initdb() error {
	args := []string{"-D", s.dataDir(), "-U", User, "-E", "UTF8", "--locale=C", "--no-sync",
		"--auth-local=trust"}
	if s.Password != "" {
		pwfile := filepath.Join(s.Dir, "pwfile")
		if err := s.writeFile(pwfile, s.Password+"\n"); err != nil {
			return err
		}
		defer os.Remove(pwfile)
		args = append(args, "--auth-host=scram-sha-256", "--pwfile="+pwfile)
	} else {
		args = append(args, "--auth-host=trust")
	}
	out, err := s.command(s.bins.initdb, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb (%s): %v\n%s", s.bins.initdb, err, tail(string(out)))
	}
	return nil
}

// writeFile writes a file in Dir readable by the server's user only.
func (s *Server) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if s.cred != nil {
		return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

// run starts postgres on s.Port and waits until it accepts connections.
// retry reports whether the failure looks like a port clash.
func (s *Server) run() (retry bool, err error) {
	args := []string{"-D", s.dataDir(), "-p", strconv.Itoa(s.Port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + s.Dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=64MB",
		"-c", "logging_collector=off", "-c", "log_min_messages=warning"}
	for _, c := range s.opts.Config {
		args = append(args, "-c", c)
	}
	out, err := os.OpenFile(s.logFile(), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return false, err
	}
	defer out.Close() // the child has its own copy
	cmd := s.command(s.bins.postgres, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("starting %s: %w", s.bins.postgres, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	s.mu.Lock()
	s.p = p
	s.mu.Unlock()
	if err := s.waitReady(p); err != nil {
		s.Kill()
		log, _ := os.ReadFile(s.logFile())
		return strings.Contains(string(log), "Address already in use"),
			fmt.Errorf("postgres (%s, port %d): %v\n--- log (%s) ---\n%s", s.bins.postgres, s.Port, err, s.Dir, tail(string(log)))
	}
	return false, nil
}

// waitReady connects over the socket until the server answers, the process
// exits or readyTimeout passes.
func (s *Server) waitReady(p *proc) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.socketURL("postgres"))
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections after %v: %v", readyTimeout, err)
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before accepting connections (%v)", p.waitErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// socketURL is the URL of db over the unix socket (trusted, no password).
func (s *Server) socketURL(db string) string {
	q := url.Values{"host": {s.Dir}, "port": {strconv.Itoa(s.Port)}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User(User), Path: "/" + db, RawQuery: q.Encode()}).String()
}

// URL is the URL of database db over TCP on 127.0.0.1, with the password
// when one is set, and sslmode=disable.
func (s *Server) URL(db string) string {
	u := &url.URL{Scheme: "postgres", User: url.User(User), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	if s.Password != "" {
		u.User = url.UserPassword(User, s.Password)
	}
	return u.String()
}

// StoreURL returns the URL of a store of its own, on the server's Database,
// named uniquely (mcpkit_store=tN), for kv.OpenPostgres.
func (s *Server) StoreURL() string {
	return s.URL(Database) + "&mcpkit_store=t" + strconv.FormatInt(s.dbSeq.Add(1), 10)
}

// CreateDatabase creates a database of its own (named dbN) and returns its
// name; it is dropped at t's cleanup.
func (s *Server) CreateDatabase(t testing.TB) string {
	t.Helper()
	name := "db" + strconv.FormatInt(s.dbSeq.Add(1), 10)
	if err := s.createDatabase(name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil && !s.Exited() {
			t.Errorf("pgtest: %v", err)
		}
	})
	return name
}

func (s *Server) createDatabase(name string) error {
	return s.Exec("CREATE DATABASE " + name)
}

// Exec runs one SQL statement on the postgres database over the socket.
func (s *Server) Exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.socketURL("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// current is the current process, or nil.
func (s *Server) current() *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// signal sends sig to the current process and waits for it to exit, with
// SIGKILL after stopTimeout.
func (s *Server) signal(sig syscall.Signal) {
	p := s.current()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return
	case <-time.After(stopTimeout):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // its process group: the backends too
	<-p.done
}

// Stop shuts the server down (fast shutdown: clients disconnected, a
// checkpoint written) and waits for it to exit; Restart starts it again.
func (s *Server) Stop() { s.signal(syscall.SIGINT) }

// Kill stops the server at once as a crash would (immediate shutdown, as
// pg_ctl stop -m immediate; crash recovery at the next start).
func (s *Server) Kill() { s.signal(syscall.SIGQUIT) }

// Restart stops the server if it still runs and starts it again on the
// same port and data.
func (s *Server) Restart() error {
	s.Stop()
	if _, err := s.run(); err != nil {
		return fmt.Errorf("pgtest: restart: %w", err)
	}
	return nil
}

// Exited reports whether the server process has exited.
func (s *Server) Exited() bool {
	p := s.current()
	if p == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Close kills the server and removes its directory.
func (s *Server) Close() {
	s.Kill()
	_ = os.RemoveAll(s.Dir)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the last 30 lines of a log.
func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}
