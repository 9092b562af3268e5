package hello

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpkit/mcpkit/pkg/cli"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// The hello command shows a plugin contributing a subcommand that serves
// the plugin alone, configured from its arguments, with the same transports,
// flags, logs and exit codes as `serve`.
func init() {
	cli.RegisterCommand(cli.Command{
		Name:    "hello",
		Summary: "serve the hello plugin alone, greeting with GREETING",
		Usage:   "[--stdio | --http ADDR] [--config FILE] [--log-level L] [--log-format F] [GREETING]",
		Doc: `Serves only the hello plugin. GREETING, when given, replaces the configuration's
plugins.hello.config ("Hello" by default). The transport follows 'serve': a
flag wins over the file's http.addr; stdio otherwise.`,
		Flags: cli.AddServeFlags,
		Run:   runCommand,
	})
}

func runCommand(ctx context.Context, env *cli.Env) int {
	if len(env.Args) > 1 {
		return env.Fail(cli.Usagef("unexpected argument %q (one GREETING at most)", env.Args[1]))
	}
	p, err := env.ServeParams()
	if err != nil {
		return env.Fail(err)
	}
	p.Options.Plugins = []string{"hello"}
	if len(env.Args) == 1 {
		raw, err := json.Marshal(Plugin{Greeting: env.Args[0]})
		if err != nil {
			return env.Fail(fmt.Errorf("encode the greeting: %w", err))
		}
		cfg := &p.Options.Config
		pc := cfg.Plugins["hello"]
		pc.Config = raw
		if cfg.Plugins == nil {
			cfg.Plugins = map[string]mcpcore.PluginConfig{}
		}
		cfg.Plugins["hello"] = pc
	}
	return cli.Serve(ctx, p)
}
