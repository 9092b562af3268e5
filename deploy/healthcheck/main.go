// Command healthcheck is the container image's health probe: the image has
// no shell and no curl, and mcpkit has no probe command of its own yet, so
// the image's HEALTHCHECK runs this. It GETs one URL (by default
// http://127.0.0.1:8080/healthz, what the image's default command serves)
// and exits 0 when the answer is HTTP 200 within 3 seconds, 1 otherwise,
// saying why on stderr; 2 on a bad command line.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// defaultURL is the health endpoint of the image's default command.
const defaultURL = "http://127.0.0.1:8080/healthz"

// timeout bounds the whole probe: connecting, the answer and its body.
const timeout = 3 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run probes the URL in args (defaultURL without one) and returns the exit code.
func run(args []string, stderr io.Writer) int {
	url := defaultURL
	switch len(args) {
	case 0:
	case 1:
		url = args[0]
	default:
		fmt.Fprintln(stderr, "usage: healthcheck [URL]")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "healthcheck: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16)); err != nil {
		fmt.Fprintf(stderr, "healthcheck: GET %s: reading the body: %v\n", url, err)
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "healthcheck: GET %s: HTTP %d\n", url, resp.StatusCode)
		return 1
	}
	return 0
}
