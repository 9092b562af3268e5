//go:build linux

package test

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// imageUser is the image's non-root user (deploy/image/passwd).
const imageUser = 65532

// imageFiles are the only regular files the image may hold: no shell, no
// package manager, nothing else to run.
var imageFiles = []string{
	"etc/group",
	"etc/mcpkit/mcpkit.json",
	"etc/passwd",
	"etc/ssl/certs/ca-certificates.crt",
	"usr/local/bin/mcpkit",
}

// imageConfig is the part of `podman image inspect` / `buildah inspect`
// the test checks.
type imageConfig struct {
	User         string
	ExposedPorts map[string]struct{}
	Entrypoint   []string
	Cmd          []string
	Volumes      map[string]struct{}
	WorkingDir   string
	Labels       map[string]string
	Healthcheck  *struct{ Test []string }
}

// TestImage builds the container image with `make image`'s script, exports
// its filesystem and, as root, runs its entrypoint there under chroot as the
// image's user (this machine cannot run containers): `version` prints the
// stamped version; the default command without a token file exits 3 and
// listens nowhere; with one it serves, in a network namespace of its own, on
// 0.0.0.0:8080 exactly as configured: /healthz, the image's HEALTHCHECK
// command, 401 without a token, tools/list and a store write landing in the
// /data volume with a token; after SIGTERM the health check fails.
func TestImage(t *testing.T) {
	if os.Getenv("MCPKIT_IMAGE_TEST") != "1" {
		t.Skip("TestImage builds the container image (about 30 s with warm caches, 5 min cold): opt in with MCPKIT_IMAGE_TEST=1, or run `make image-test`")
	}
	if os.Geteuid() != 0 {
		t.Skip("TestImage runs the image's entrypoint under chroot and in a network namespace: it needs root")
	}
	builder := imageBuilder(t)
	const version = "v0.0.0-imagetest"
	name := fmt.Sprintf("localhost/mcpkit-imagetest:%d", os.Getpid())
	build := exec.Command(filepath.Join("..", "scripts", "image.sh"), name)
	build.Env = append(os.Environ(), "VERSION="+version, "IMAGE_BUILDER="+builder)
	start := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	t.Logf("image built in %s", time.Since(start).Round(time.Second))
	t.Cleanup(func() {
		if out, err := containers(builder, "rmi", name).CombinedOutput(); err != nil {
			t.Errorf("%s rmi %s: %v\n%s", builder, name, err, out)
		}
	})

	cfg := inspectImage(t, builder, name)
	wantCmd := []string{"serve", "--http", "0.0.0.0:8080", "--config", "/etc/mcpkit/mcpkit.json"}
	wantHealth := []string{"CMD", "/usr/local/bin/mcpkit", "health", "--url", "http://127.0.0.1:8080/healthz"}
	switch {
	case cfg.User != fmt.Sprintf("%d:%d", imageUser, imageUser):
		t.Errorf("User = %q", cfg.User)
	case !slices.Equal(cfg.Entrypoint, []string{"/usr/local/bin/mcpkit"}) || !slices.Equal(cfg.Cmd, wantCmd):
		t.Errorf("Entrypoint %q, Cmd %q", cfg.Entrypoint, cfg.Cmd)
	case len(cfg.Volumes) != 1 || cfg.WorkingDir != "/data":
		t.Errorf("Volumes %v, WorkingDir %q", cfg.Volumes, cfg.WorkingDir)
	case cfg.Healthcheck == nil || !slices.Equal(cfg.Healthcheck.Test, wantHealth):
		t.Errorf("Healthcheck = %+v", cfg.Healthcheck)
	case cfg.Labels["org.opencontainers.image.version"] != version || cfg.Labels["org.opencontainers.image.title"] != "mcpkit" ||
		cfg.Labels["org.opencontainers.image.source"] == "" || cfg.Labels["org.opencontainers.image.revision"] == "":
		t.Errorf("Labels = %v", cfg.Labels)
	}
	if _, ok := cfg.ExposedPorts["8080/tcp"]; !ok || len(cfg.ExposedPorts) != 1 {
		t.Errorf("ExposedPorts = %v, want 8080/tcp", cfg.ExposedPorts)
	}
	if _, ok := cfg.Volumes["/data"]; !ok {
		t.Errorf("Volumes = %v, want /data", cfg.Volumes)
	}

	root := exportImage(t, builder, name)
	checkImageFiles(t, root)

	// version, as the image's user.
	out, err := chrootCommand(root, cfg.Entrypoint[0], "version").Output()
	if err != nil || string(out) != "mcpkit "+version+"\n" {
		t.Fatalf("version: %q, %v", out, err)
	}

	// Without a token file the default command refuses to listen at all.
	cmd := chrootCommand(root, cfg.Entrypoint[0], cfg.Cmd...)
	cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "/run/secrets/mcpkit-tokens") {
		t.Fatalf("default command without a token file: %v\n%s", err, out)
	}

	// The token, as a secret mount gives it.
	const token = "image-test-token-4b1d9e"
	secrets := filepath.Join(root, "run", "secrets")
	if err := os.MkdirAll(secrets, 0o755); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(secrets, "mcpkit-tokens")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tokenFile, imageUser, imageUser); err != nil {
		t.Fatal(err)
	}

	srv := chrootCommand(root, cfg.Entrypoint[0], cfg.Cmd...)
	srv.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	var stderr syncBuffer
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			srv.Process.Kill()
			<-exited
		}
	})
	// Hold the server's network namespace open past its exit.
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", srv.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer netns.Close()
	if out, err := inNetns(netns, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v\n%s", err, out)
	}
	eventually(t, 15*time.Second, "the image's server to listen", func() bool {
		return strings.Contains(stderr.String(), "msg=listening")
	})

	tr := &http.Transport{DialContext: netnsDialer(netns)}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://127.0.0.1:8080/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v\n%s", resp, err, stderr.String())
	}
	resp.Body.Close()
	health := func() ([]byte, error) {
		return inNetns(netns, append([]string{"--root=" + root, "-S", strconv.Itoa(imageUser), "-G", strconv.Itoa(imageUser), "--"},
			cfg.Healthcheck.Test[1:]...)...).CombinedOutput()
	}
	if out, err := health(); err != nil {
		t.Fatalf("the image's health check against the running server: %v\n%s", err, out)
	}
	resp, err = (&http.Client{Transport: tr}).Post("http://127.0.0.1:8080/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without a token: %v %v", resp, err)
	}
	resp.Body.Close()

	for _, era := range eras {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "image-test"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:8080/mcp", HTTPClient: &http.Client{Transport: bearer{token: token, base: tr}}, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatalf("connect (%s): %v\n%s", era, err, stderr.String())
		}
		checkEra(t, cs, era)
		tools, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatalf("tools/list (%s): %v", era, err)
		}
		names := map[string]bool{}
		for _, tool := range tools.Tools {
			names[tool.Name] = true
		}
		if !names["diag_echo"] || !names["store_store"] {
			t.Fatalf("tools/list (%s) lacks diag_echo or store_store: %v", era, names)
		}
		decode[map[string]any](t, callTool(t, cs, "store_store", map[string]any{"collection": "notes", "id": era, "doc": map[string]any{"era": era}}))
		cs.Close()
	}
	if st, err := os.Stat(filepath.Join(root, "data", "store.db")); err != nil || st.Sys().(*syscall.Stat_t).Uid != imageUser {
		t.Fatalf("the store file in the /data volume: %v %v", st, err)
	}
	if strings.Contains(stderr.String(), token) {
		t.Fatal("the bearer token appears in the logs")
	}

	stopped = true
	srv.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		srv.Process.Kill()
		<-exited
		t.Fatalf("the server did not exit within 15s of SIGTERM\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if out, err := health(); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "connection refused") {
		t.Fatalf("the health check with the server stopped: %v, want exit status 1 and connection refused\n%s", err, out)
	}
}

// imageBuilder returns podman or buildah (IMAGE_BUILDER picks one), or skips
// the test, saying why, when neither can work here.
func imageBuilder(t *testing.T) string {
	t.Helper()
	builder := os.Getenv("IMAGE_BUILDER")
	if builder == "" {
		for _, b := range []string{"podman", "buildah"} {
			if _, err := exec.LookPath(b); err == nil {
				builder = b
				break
			}
		}
	}
	if builder == "" {
		t.Skip("TestImage needs podman or buildah: apt-get install podman (`make image-test` installs it)")
	}
	if out, err := containers(builder, "info").CombinedOutput(); err != nil {
		t.Skipf("%s cannot work on this machine (`%s info`: %v):\n%s", builder, builder, err, out)
	}
	return builder
}

// containers runs builder with the storage driver scripts/image.sh uses.
func containers(builder string, args ...string) *exec.Cmd {
	driver := os.Getenv("STORAGE_DRIVER")
	if driver == "" {
		driver = "vfs"
	}
	return exec.Command(builder, append([]string{"--storage-driver", driver}, args...)...)
}

// inspectImage returns the image's configuration.
func inspectImage(t *testing.T, builder, name string) imageConfig {
	t.Helper()
	args := []string{"image", "inspect", name}
	if builder == "buildah" {
		args = []string{"inspect", "--type", "image", name}
	}
	out, err := containers(builder, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", builder, strings.Join(args, " "), err)
	}
	// podman prints [{Config, Healthcheck}], buildah {Docker: {config}}.
	var podman []struct {
		Config      imageConfig
		Healthcheck *struct{ Test []string }
	}
	var buildah struct {
		Docker struct{ Config imageConfig } `json:"Docker"`
	}
	if builder == "buildah" {
		if err := json.Unmarshal(out, &buildah); err != nil {
			t.Fatal(err)
		}
		return buildah.Docker.Config
	}
	if err := json.Unmarshal(out, &podman); err != nil || len(podman) != 1 {
		t.Fatalf("podman image inspect: %v\n%s", err, out)
	}
	cfg := podman[0].Config
	cfg.Healthcheck = podman[0].Healthcheck
	return cfg
}

// exportImage writes the image's filesystem, owners and modes kept, to a
// new directory and returns it.
func exportImage(t *testing.T, builder, name string) string {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	ctr := fmt.Sprintf("mcpkit-imagetest-%d", os.Getpid())
	run := func(c *exec.Cmd) {
		t.Helper()
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c.Args, " "), err, out)
		}
	}
	if builder == "buildah" {
		run(containers(builder, "from", "--name", ctr, name))
		defer run(containers(builder, "rm", ctr))
		out, err := containers(builder, "mount", ctr).Output()
		if err != nil {
			t.Fatalf("buildah mount: %v", err)
		}
		defer run(containers(builder, "umount", ctr))
		run(exec.Command("cp", "-a", strings.TrimSpace(string(out))+"/.", root))
		return root
	}
	tarball := filepath.Join(dir, "fs.tar")
	run(containers(builder, "create", "--no-healthcheck", "--name", ctr, name))
	defer run(containers(builder, "rm", ctr))
	run(containers(builder, "export", "-o", tarball, ctr))
	run(exec.Command("tar", "-C", root, "--same-owner", "-xpf", tarball))
	return root
}

// checkImageFiles: exactly the expected regular files (so no shell), static
// executables, a non-root user in passwd, /data owned by it.
func checkImageFiles(t *testing.T, root string) {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	if !slices.Equal(files, imageFiles) {
		t.Fatalf("the image holds %q, want only %q", files, imageFiles)
	}
	for _, sh := range []string{"bin/sh", "usr/bin/sh", "bin/bash", "bin/busybox"} {
		if _, err := os.Lstat(filepath.Join(root, sh)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s in the image: %v", sh, err)
		}
	}
	for _, exe := range []string{"usr/local/bin/mcpkit"} {
		f, err := elf.Open(filepath.Join(root, exe))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked", exe)
			}
		}
		f.Close()
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("mcpkit:x:%d:%d:", imageUser, imageUser)
	found := false
	for sc := bufio.NewScanner(strings.NewReader(string(passwd))); sc.Scan(); {
		found = found || strings.HasPrefix(sc.Text(), want)
	}
	if !found {
		t.Fatalf("/etc/passwd has no %q entry:\n%s", want, passwd)
	}
	st, err := os.Stat(filepath.Join(root, "data"))
	if err != nil || st.Sys().(*syscall.Stat_t).Uid != imageUser {
		t.Fatalf("/data: %v %v", st, err)
	}
}

// chrootCommand runs name under chroot in root as the image's user, in /data.
func chrootCommand(root, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Path = name // looked up inside the chroot, not here
	cmd.Dir = "/data"
	cmd.Env = []string{"PATH=/usr/local/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     root,
		Credential: &syscall.Credential{Uid: imageUser, Gid: imageUser},
	}
	return cmd
}

// inNetns runs a command of this machine in the network namespace held open
// by netns (nsenter reads it as the child's fd 3).
func inNetns(netns *os.File, args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"--net=/proc/self/fd/3"}, args...)...)
	cmd.ExtraFiles = []*os.File{netns}
	return cmd
}

// netnsDialer dials from inside the network namespace netns: the socket is
// made on an OS thread switched into it, which is discarded afterwards.
func netnsDialer(netns *os.File) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			// Never unlocked: the thread ends with this goroutine.
			runtime.LockOSThread()
			if err := unix.Setns(int(netns.Fd()), unix.CLONE_NEWNET); err != nil {
				ch <- result{nil, fmt.Errorf("setns: %w", err)}
				return
			}
			c, err := new(net.Dialer).DialContext(ctx, network, addr)
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}
