package test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestOAuthConformance runs the official conformance suite's
// authorization-server scenarios (`conformance authorization`:
// authorization-server-metadata-endpoint and authorization-code-grant)
// against `mcpkit actions start --http` with OAuth. The code-grant
// scenario prints an authorize URL and waits for the redirect to its own
// callback server: the test plays the user there in headless Chromium
// (the sign-up tab filled in and submitted from the keyboard), and the
// browser follows the redirect to the suite.
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
	callback := "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
	client := registerFor(t, hp.base, callback)
	browser := headlessChromium(t, 2*time.Minute)

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
	// Chromium starts while the suite does (its output waits in the pipe).
	if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	var out strings.Builder
	signed := make(chan error, 1)
	sawURL := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if strings.HasPrefix(line, hp.base+"/oauth/authorize?") && !sawURL {
			sawURL = true
			go func() { signed <- deliver(browser, line, callback) }()
		}
	}
	waitErr := cmd.Wait()
	if !sawURL {
		t.Fatalf("the suite printed no authorize URL:\n%s", out.String())
	}
	// The suite may end as soon as the browser reaches its callback, before
	// deliver has seen the browser there: wait for deliver (bounded by the
	// browser's context).
	if err := <-signed; err != nil {
		t.Fatalf("signing on at the suite's authorize URL: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`).FindStringSubmatch(out.String())
	if waitErr != nil || m == nil || m[1] != "2" || m[2] != "0" {
		t.Fatalf("conformance authorization (%v), want both scenarios passed:\n%s", waitErr, out.String())
	}
	t.Logf("conformance authorization: %s passed, %s failed", m[1], m[2])
}

// deliver plays the user in the browser: it opens authURL, signs up and
// waits until the browser has followed the redirect to callback (the
// suite's own server).
func deliver(ctx context.Context, authURL, callback string) error {
	return chromedp.Do(ctx,
		chromedp.Navigate(authURL),
		chromedp.WaitVisible(chromedp.CSS(`form`)),
		signUpSteps("Connie", "conformance@example.com"),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			// Asked from here, not polled in the page, whose context the
			// redirect replaces.
			for {
				if loc, err := chromedp.Run(ctx, chromedp.Location()); err == nil && strings.HasPrefix(loc, callback+"?") {
					return nil
				}
				select {
				case <-ctx.Done():
					last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
					loc, _ := chromedp.Run(last, chromedp.Location())
					cancel()
					return fmt.Errorf("the browser never reached %s; it is at %s: %w", callback, loc, ctx.Err())
				case <-time.After(50 * time.Millisecond):
				}
			}
		}),
	)
}
