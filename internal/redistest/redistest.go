// Package redistest starts disposable redis-server processes for tests.
//
// Each call to [Start] launches a private redis-server bound to 127.0.0.1 on a
// free port chosen by the kernel, with its configuration, log and (optional)
// ACL file and TLS material in its own temporary directory (t.TempDir()).
// Persistence is disabled. The server is stopped when the test ends (via
// t.Cleanup) or earlier by [Server.Stop].
//
// It never connects to, configures or stops a shared server: in particular it
// never uses the conventional port 6379.
//
// The redis-server binary is taken from the MCPKIT_REDIS_SERVER environment
// variable if set, otherwise from PATH. When it is missing the test fails
// (it is not skipped); run scripts/install-deps.sh to install it.
//
// TLS certificates are generated in Go (ECDSA P-256), so openssl is not needed.
package redistest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvServerBinary names the environment variable that may point at the
// redis-server binary to use (a path, or a name looked up in PATH).
const EnvServerBinary = "MCPKIT_REDIS_SERVER"

const (
	readyTimeout = 10 * time.Second
	stopTimeout  = 5 * time.Second
	maxAttempts  = 5 // port-allocation attempts when the chosen port is taken
	sharedPort   = 6379
)

// Options configures a server started by [Start]. The zero value gives a
// plaintext server without authentication.
type Options struct {
	// Password, if set, is required by the default user (requirepass).
	// Combined with ACL, a "user default on >Password ~* &* +@all" line is
	// added to the ACL file; the ACL lines must then not define "default".
	Password string

	// ACL holds ACL file lines, e.g. "user agent on >secret ~* +@all". They
	// are written to an aclfile in the server's directory. If "default" is not
	// defined (and Password is empty) the default user keeps Redis's defaults
	// (nopass, all commands); use "user default off" to disable it.
	ACL []string

	// TLS makes the server serve TLS only (plaintext port 0, tls-port on the
	// free port) with a freshly generated CA, server certificate and client
	// certificate. Client certificates are optional unless RequireClientCert.
	TLS bool

	// RequireClientCert sets "tls-auth-clients yes" (default "optional").
	// Only meaningful with TLS.
	RequireClientCert bool

	// Config holds extra redis.conf lines, e.g. "enable-debug-command yes".
	// They are appended last, so they override the helper's defaults; do not
	// override bind, port, tls-port or dir.
	Config []string
}

// Server is a running redis-server owned by one test.
type Server struct {
	Addr     string // "127.0.0.1:PORT"
	Port     int
	Dir      string // the server's own temporary directory (t.TempDir())
	Password string // Options.Password
	TLS      bool   // Options.TLS

	ConfigFile string // Dir/redis.conf
	LogFile    string // Dir/redis.log

	// Set when TLS: PEM files in Dir/tls.
	CAFile, CertFile, KeyFile, ClientCertFile, ClientKeyFile string

	tlsConfig *tls.Config
	bin       string  // the redis-server binary, for Restart
	opts      Options // as given to Start, for Restart
	p         *proc   // the current redis-server process
}

// proc is one redis-server process.
type proc struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been waited for
	waitErr error         // set before done is closed
	once    sync.Once
}

// Start starts a disposable redis-server for t and waits until it answers.
// It fails the test with t.Fatal on any error (including a missing
// redis-server binary). The server is stopped automatically at t's cleanup.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := start(t.TempDir(), opts, t.Cleanup)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

// BinaryPath returns the redis-server binary that [Start] would use.
func BinaryPath() (string, error) {
	name := "redis-server"
	if v := os.Getenv(EnvServerBinary); v != "" {
		name = v
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("redis-server not found (%v); run scripts/install-deps.sh "+
			"or set %s to the redis-server binary", err, EnvServerBinary)
	}
	return p, nil
}

// start does the work of Start; register (if non-nil) receives s.Stop as soon
// as a process is running.
func start(dir string, opts Options, register func(func())) (*Server, error) {
	bin, err := BinaryPath()
	if err != nil {
		return nil, err
	}
	for _, l := range append(append([]string(nil), opts.ACL...), opts.Config...) {
		if strings.ContainsAny(l, "\r\n") {
			return nil, fmt.Errorf("config/ACL line %q contains a newline", l)
		}
	}
	s := &Server{
		bin:        bin,
		opts:       opts,
		Dir:        dir,
		Password:   opts.Password,
		TLS:        opts.TLS,
		ConfigFile: filepath.Join(dir, "redis.conf"),
		LogFile:    filepath.Join(dir, "redis.log"),
	}
	if opts.TLS {
		if err := s.writeCerts(); err != nil {
			return nil, fmt.Errorf("generating TLS material: %w", err)
		}
	}
	if len(opts.ACL) > 0 {
		if err := s.writeACL(opts); err != nil {
			return nil, err
		}
	}

	var lastErr error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		port, err := pickPort()
		if err != nil {
			return nil, err
		}
		retry, err := s.run(bin, port, opts, register)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !retry {
			break
		}
	}
	return nil, lastErr
}

// pickPort is freePort; a variable so tests can simulate a port clash.
var pickPort = freePort

// freePort asks the kernel for a free loopback port (never 6379).
func freePort() (int, error) {
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port != sharedPort {
			return port, nil
		}
	}
	return 0, errors.New("finding a free port: kernel kept returning 6379")
}

// run writes the config for port, starts the process and waits until it is
// ready. retry reports whether the failure looks like a port clash.
func (s *Server) run(bin string, port int, opts Options, register func(func())) (retry bool, err error) {
	s.Port = port
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := os.WriteFile(s.ConfigFile, s.config(opts), 0o600); err != nil {
		return false, err
	}
	os.Remove(s.LogFile)
	outPath := filepath.Join(s.Dir, "redis.stdout")
	out, err := os.OpenFile(outPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return false, err
	}
	defer out.Close() // the child has its own copy

	cmd := exec.Command(bin, s.ConfigFile)
	cmd.Dir = s.Dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	if s.p == nil && register != nil {
		register(s.Stop) // once; Stop acts on whichever process is current
	}
	s.p = p

	err = s.waitReady(!setsLogLevel(opts.Config))
	if err == nil {
		return false, nil
	}
	s.Stop()
	tail := s.logTail(outPath)
	retry = strings.Contains(tail, "Address already in use")
	return retry, fmt.Errorf("redis-server (%s, %s): %v\n--- log tail (%s) ---\n%s",
		bin, s.Addr, err, s.Dir, tail)
}

// config renders redis.conf.
func (s *Server) config(opts Options) []byte {
	var b bytes.Buffer
	line := func(args ...string) {
		b.WriteString(strings.Join(args, " "))
		b.WriteByte('\n')
	}
	line("# generated by github.com/mcpkit/mcpkit/internal/redistest")
	line("bind", "127.0.0.1")
	line("protected-mode", "yes")
	if opts.TLS {
		line("port", "0")
		line("tls-port", strconv.Itoa(s.Port))
		line("tls-cert-file", quote(s.CertFile))
		line("tls-key-file", quote(s.KeyFile))
		line("tls-ca-cert-file", quote(s.CAFile))
		if opts.RequireClientCert {
			line("tls-auth-clients", "yes")
		} else {
			line("tls-auth-clients", "optional")
		}
	} else {
		line("port", strconv.Itoa(s.Port))
	}
	line("dir", quote(s.Dir))
	line("logfile", quote(s.LogFile))
	line("daemonize", "no")
	line("supervised", "no")
	line("save", `""`)
	line("appendonly", "no")
	line("always-show-logo", "no")
	if len(opts.ACL) > 0 {
		line("aclfile", quote(filepath.Join(s.Dir, "users.acl")))
	} else if opts.Password != "" {
		line("requirepass", quote(opts.Password))
	}
	for _, l := range opts.Config {
		line(l)
	}
	return b.Bytes()
}

func (s *Server) writeACL(opts Options) error {
	var b bytes.Buffer
	if opts.Password != "" {
		for _, l := range opts.ACL {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "user" && f[1] == "default" {
				return errors.New("Options.Password and an ACL line for user default are both set; " +
					"set the default user's password in the ACL line only")
			}
		}
		// "#<sha256>" form: ACL files cannot quote spaces in passwords.
		fmt.Fprintf(&b, "user default on #%x ~* &* +@all\n", sha256.Sum256([]byte(opts.Password)))
	}
	for _, l := range opts.ACL {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return os.WriteFile(filepath.Join(s.Dir, "users.acl"), b.Bytes(), 0o600)
}

// quote quotes v for redis.conf (sdssplitargs syntax).
func quote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// readyLine is what redis-server logs (at loglevel notice) once it listens.
const readyLine = "Ready to accept connections"

// setsLogLevel reports whether the extra config lines change the log level
// (which may hide readyLine).
func setsLogLevel(config []string) bool {
	for _, l := range config {
		if f := strings.Fields(l); len(f) > 0 && strings.EqualFold(f[0], "loglevel") {
			return true
		}
	}
	return false
}

// waitReady polls the server until it answers PING (or the process exits, or
// readyTimeout passes). If checkLog, it first waits for readyLine in the log,
// so that a foreign listener that grabbed the port cannot pass for the server.
func (s *Server) waitReady(checkLog bool) error {
	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for {
		select {
		case <-s.p.done:
			return fmt.Errorf("exited before answering (%v)", s.p.waitErr)
		default:
		}
		var err error
		if checkLog {
			if data, rerr := os.ReadFile(s.LogFile); rerr == nil && bytes.Contains(data, []byte(readyLine)) {
				checkLog = false
			} else {
				err = fmt.Errorf("no %q in %s yet", readyLine, s.LogFile)
			}
		}
		if !checkLog {
			err = s.probe()
		}
		if err == nil {
			return nil
		}
		var fatal *fatalProbeError
		if errors.As(err, &fatal) {
			return err
		}
		lastErr = err
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering PING after %v (last error: %v)", readyTimeout, lastErr)
		}
		select {
		case <-s.p.done:
		case <-time.After(25 * time.Millisecond):
		}
	}
}

type fatalProbeError struct{ msg string }

func (e *fatalProbeError) Error() string { return e.msg }

// probe connects once, authenticates with Password if set, and sends PING.
// +PONG, or -NOAUTH/-NOPERM without a password, mean the server is serving.
func (s *Server) probe() error {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.Dial("tcp", s.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Give up at once if the process exits while we wait for an answer.
	probeDone := make(chan struct{})
	defer close(probeDone)
	raw, exited := conn, s.p.done // read s.p here: Restart replaces it
	go func() {
		select {
		case <-exited:
			raw.Close()
		case <-probeDone:
		}
	}()
	if s.TLS {
		tc := tls.Client(conn, s.TLSConfig())
		tc.SetDeadline(time.Now().Add(2 * time.Second))
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("TLS handshake: %w", err)
		}
		conn = tc
	}
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(conn)
	if s.Password != "" {
		reply, err := command(conn, r, "AUTH", s.Password)
		if err != nil {
			return err
		}
		if reply != "+OK" {
			return &fatalProbeError{fmt.Sprintf("AUTH with Options.Password answered %q", reply)}
		}
	}
	reply, err := command(conn, r, "PING")
	if err != nil {
		return err
	}
	switch {
	case reply == "+PONG":
		return nil
	case s.Password == "" && (strings.HasPrefix(reply, "-NOAUTH") || strings.HasPrefix(reply, "-NOPERM")):
		return nil
	}
	return fmt.Errorf("PING answered %q", reply)
}

// command sends a RESP array command and reads a one-line reply.
func command(conn net.Conn, r *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// logTail returns the last lines of the log file and of the captured
// stdout/stderr (where configuration errors are reported).
func (s *Server) logTail(outPath string) string {
	var parts []string
	for _, p := range []string{s.LogFile, outPath} {
		data, err := os.ReadFile(p)
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		parts = append(parts, "["+filepath.Base(p)+"]\n"+strings.Join(lines, "\n"))
	}
	if len(parts) == 0 {
		return "(empty)"
	}
	return strings.Join(parts, "\n")
}

// TLSConfig returns a new client configuration that trusts the server's CA
// and presents the generated client certificate. It returns nil for a
// plaintext server.
func (s *Server) TLSConfig() *tls.Config {
	if s.tlsConfig == nil {
		return nil
	}
	return s.tlsConfig.Clone()
}

// Stop stops the server: SIGTERM, then SIGKILL after 5 s, and waits for the
// process to exit, so no zombie is left. It is idempotent and safe to call
// concurrently; Start also registers it with t.Cleanup.
func (s *Server) Stop() {
	if s.p != nil {
		s.p.stop()
	}
}

func (p *proc) stop() {
	p.once.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(stopTimeout):
		}
		_ = p.cmd.Process.Kill()
	})
	<-p.done
}

// Kill kills the server at once (SIGKILL), as a crash would, and waits
// for the process to exit.
func (s *Server) Kill() {
	if s.p == nil {
		return
	}
	_ = s.p.cmd.Process.Kill()
	<-s.p.done
}

// Restart stops the server if it still runs, then starts it again on the
// same port with the same configuration and directory, and waits until it
// answers. The test's cleanup stops the new process too.
func (s *Server) Restart() error {
	s.Stop()
	if _, err := s.run(s.bin, s.Port, s.opts, nil); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// Exited reports whether the server process has exited and been reaped.
func (s *Server) Exited() bool {
	if s.p == nil {
		return true
	}
	select {
	case <-s.p.done:
		return true
	default:
		return false
	}
}
