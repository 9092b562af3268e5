package test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOAuthConformance runs the official conformance suite's
// authorization-server scenarios (`conformance authorization`:
// authorization-server-metadata-endpoint and authorization-code-grant)
// against `mcpkit actions start --http` with OAuth. The code-grant
// scenario prints an authorize URL and waits for the redirect to its own
// callback server: the test plays the user there (signOnPage: the page's
// CSRF token, the sign-up form) and delivers the redirect to the suite.
func TestOAuthConformance(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "test", "conformance")
	npmCI(t, dir, "@modelcontextprotocol/conformance")
	hp := startOAuth(t)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	client := registerFor(t, hp.base, "http://127.0.0.1:"+strconv.Itoa(port)+"/callback")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--import", filepath.Join(dir, "node20-shim.mjs"),
		filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"authorization", "--url", hp.base, "--client-id", client, "--resource", hp.base+"/mcp", "-p", strconv.Itoa(port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	signed := make(chan error, 1)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if strings.HasPrefix(line, hp.base+"/oauth/authorize?") {
			go func() { signed <- deliver(ctx, line) }()
		}
	}
	waitErr := cmd.Wait()
	select {
	case err := <-signed:
		if err != nil {
			t.Fatalf("signing on at the suite's authorize URL: %v\n%s", err, out.String())
		}
	default:
		t.Fatalf("the suite printed no authorize URL:\n%s", out.String())
	}
	m := regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`).FindStringSubmatch(out.String())
	if waitErr != nil || m == nil || m[1] != "2" || m[2] != "0" {
		t.Fatalf("conformance authorization (%v), want both scenarios passed:\n%s", waitErr, out.String())
	}
	t.Logf("conformance authorization: %s passed, %s failed", m[1], m[2])
}

// deliver signs up at authURL and follows the redirect to the suite's
// callback server, as the browser would.
func deliver(ctx context.Context, authURL string) error {
	back, err := signOnPage(ctx, authURL, "signup", "conformance@example.com")
	if err != nil {
		return err
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", back.String(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
