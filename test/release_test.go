package test

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelease runs `make release`'s script for linux/amd64 alone (every
// platform would cost CI a cross-compile each; the other four differ only
// in GOOS/GOARCH) into a temporary dist: the binary is static, prints the
// stamped version, and SHA256SUMS, in sha256sum's format, verifies it.
func TestRelease(t *testing.T) {
	const version = "v0.0.0-releasetest"
	dist := filepath.Join(t.TempDir(), "dist")
	cmd := exec.Command(filepath.Join("..", "scripts", "release.sh"), "--only", "linux/amd64")
	cmd.Env = append(os.Environ(), "VERSION="+version, "DIST="+dist)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release.sh: %v\n%s", err, out)
	}
	name := fmt.Sprintf("mcpkit_%s_linux_amd64", version)
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Name() != "SHA256SUMS" || entries[1].Name() != name {
		t.Fatalf("dist holds %v, want SHA256SUMS and %s", entries, name)
	}
	bin := filepath.Join(dist, name)

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		t.Fatalf("%s is for %v", name, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%s is dynamically linked", name)
		}
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || string(out) != "mcpkit "+version+"\n" {
		t.Fatalf("%s version: %q, %v", name, out, err)
	}

	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Fatalf("SHA256SUMS = %q, want %q", sums, want)
	}
	check := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	check.Dir = dist
	if out, err := check.CombinedOutput(); err != nil || !strings.Contains(string(out), name+": OK") {
		t.Fatalf("sha256sum --check: %v\n%s", err, out)
	}
}
