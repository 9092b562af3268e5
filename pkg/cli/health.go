package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// healthCommand probes a running server's /healthz: the health check of
// images and orchestrators that have no shell or curl.
var healthCommand = Command{
	Name:    "health",
	Summary: "probe a running mcpkit's /healthz (exit 0 when it answers 200)",
	Usage:   "[--url URL] [--timeout D]",
	Doc: `GETs URL (default http://127.0.0.1:8080/healthz, the container image's
address) and exits 0 when it answers HTTP 200 within the timeout, 1
otherwise (saying why on stderr), 2 on a bad command line. HTTPS URLs are
checked against the system's certificate authorities.`,
	Flags: func(fs *flag.FlagSet) {
		fs.String("url", "http://127.0.0.1:8080/healthz", "the health endpoint to probe")
		fs.Duration("timeout", 3*time.Second, "the longest the probe (connection, answer and body) may take")
	},
	Run: runHealth,
}

func runHealth(ctx context.Context, env *Env) int {
	if len(env.Args) > 0 {
		return env.Fail(Usagef("unexpected argument %q", env.Args[0]))
	}
	url, _ := FlagValue[string](env.Flags, "url")
	timeout, _ := FlagValue[time.Duration](env.Flags, "timeout")
	if timeout <= 0 {
		return env.Fail(Usagef("--timeout %v must be positive", timeout))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return env.Fail(Usagef("--url %q: %v", url, err))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpkit health: %v\n", err)
		return ExitFailure
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16)); err != nil {
		fmt.Fprintf(env.Stderr, "mcpkit health: GET %s: reading the answer: %v\n", url, err)
		return ExitFailure
	}
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(env.Stderr, "mcpkit health: GET %s: HTTP %d\n", url, resp.StatusCode)
		return ExitFailure
	}
	return ExitOK
}
