package diag

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/mcpkit/mcpkit/pkg/cli"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The diag command serves this plugin alone, which is what checking a
// client needs: no other plugin's tools, the core's real limits and
// transports, and, with --trace, a log line for every message the client
// sends, so that a client author sees what their client did (its requests,
// cancellations, progress tokens) without a proxy in between.
func init() {
	cli.RegisterCommand(cli.Command{
		Name:    "diag",
		Summary: "serve the diag plugin alone to check a client, optionally tracing what it sends",
		Usage:   "[--stdio | --http ADDR] [--trace] [--config FILE] [--log-level L] [--log-format F]",
		Doc: `Serves only the diag plugin, whatever the configuration's "enable" says (its
limits, plugins.diag.prefix and http settings apply), so that a client can be
checked against mcpkit's core: inline and paged results (diag_blob), timeouts,
the concurrency limit, cancellation and progress (diag_sleep). The transport
follows 'mcpkit serve': a flag wins over the file's http.addr; stdio otherwise.

With --trace, every request and notification the client sends is logged on
stderr as "trace" once answered: its method, tool, resource or prompt, the
session, how long it took and whether it failed.`,
		Flags: func(fs *flag.FlagSet) {
			cli.AddServeFlags(fs)
			fs.Bool("trace", false, "log every message the client sends, once answered")
		},
		Run: runCommand,
	})
}

func runCommand(ctx context.Context, env *cli.Env) int {
	if len(env.Args) > 0 {
		return env.Fail(cli.Usagef("unexpected argument %q", env.Args[0]))
	}
	p, err := env.ServeParams()
	if err != nil {
		return env.Fail(err)
	}
	p.Options.Plugins = []string{"diag"}
	if on, _ := cli.FlagValue[bool](env.Flags, "trace"); on {
		p.Options.Middleware = append(p.Options.Middleware, trace(env.Logger))
	}
	return cli.Serve(ctx, p)
}

// trace returns receiving middleware that logs, at info level, every
// message a server receives once its handler returns: the method; the tool
// name, resource URI or prompt name; the session ID when there is one; the
// duration; and "is_error" for a tool's error result or "err" for a failed
// request. It never logs arguments or results, which may hold data.
func trace(logger *slog.Logger) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			start := time.Now()
			res, err := next(ctx, method, req)
			attrs := []any{"method", method}
			switch p := req.GetParams().(type) {
			case *mcp.CallToolParamsRaw:
				attrs = append(attrs, "tool", p.Name)
			case *mcp.ReadResourceParams:
				attrs = append(attrs, "uri", p.URI)
			case *mcp.GetPromptParams:
				attrs = append(attrs, "prompt", p.Name)
			}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && ss.ID() != "" {
				attrs = append(attrs, "session", ss.ID())
			}
			attrs = append(attrs, "took", time.Since(start))
			if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				attrs = append(attrs, "is_error", true)
			}
			if err != nil {
				attrs = append(attrs, "err", err)
			}
			logger.InfoContext(ctx, "trace", attrs...)
			return res, err
		}
	}
}
