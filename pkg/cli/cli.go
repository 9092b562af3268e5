// Package cli is the mcpkit command line: the built-in commands (serve,
// plugins, version, help), the subcommands that plugin packages register
// with [RegisterCommand], and [Serve], which every serving command shares.
// It wires flags and configuration to the host (pkg/mcpcore) and its
// transports and holds no protocol logic itself.
//
// A third party builds its own binary with a main that blank-imports its
// plugins and calls [Main], exactly as cmd/mcpkit does:
//
//	func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// Version is set at build time with -ldflags "-X github.com/mcpkit/mcpkit/pkg/cli.Version=v1.2.3".
var Version = ""

// Exit codes.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the server failed while running
	ExitUsage   = 2 // bad command line
	ExitConfig  = 3 // invalid configuration: nothing was served
)

// Main runs the command line and returns the process exit code. The context
// given to a command ends on SIGINT or SIGTERM.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printOverview(stderr)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		args = []string{"help"}
	case "--version":
		args = []string{"version"}
	}
	cmd := lookupCommand(args[0])
	if cmd == nil {
		return unknownCommand(stderr, args[0])
	}
	fs := newFlagSet(cmd, stderr)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(stdout, cmd, fs)
			return ExitOK
		}
		printCommandUsage(stderr, cmd, fs) // after the flag package's own message
		return ExitUsage
	}
	env := &Env{Command: cmd, Flags: fs, Args: fs.Args(), Stdin: stdin, Stdout: stdout, Stderr: stderr}
	logger, err := loggerFromFlags(fs, stderr)
	if err != nil {
		return env.Fail(err)
	}
	env.Logger = logger
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cmd.Run(ctx, env)
}

// unknownCommand reports a command that is neither built in nor registered.
func unknownCommand(stderr io.Writer, name string) int {
	fmt.Fprintf(stderr, "mcpkit: unknown command %q\n\n", name)
	printOverview(stderr)
	return ExitUsage
}

// newFlagSet returns cmd's flags, unparsed. Errors go to stderr; help is
// printed by Main, not by the flag package.
func newFlagSet(cmd *Command, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpkit "+cmd.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	if cmd.Flags != nil {
		cmd.Flags(fs)
	}
	return fs
}

// loggerFromFlags builds the logger of --log-level and --log-format when fs
// defines them, and an info-level text logger otherwise.
func loggerFromFlags(fs *flag.FlagSet, w io.Writer) (*slog.Logger, error) {
	level, ok := FlagValue[string](fs, flagLogLevel)
	if !ok {
		level = "info"
	}
	format, ok := FlagValue[string](fs, flagLogFormat)
	if !ok {
		format = "text"
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, Usagef("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, Usagef("--log-format %q: want text or json", format)
}

const overviewHead = `mcpkit serves the Model Context Protocol (MCP) for data systems, as plugins
on one core, over stdio or streamable HTTP.

Usage:
  mcpkit COMMAND [flags] [arguments]

Commands:
`

const overviewTail = `
Examples:
  mcpkit serve --stdio                         an MCP client launches this over stdio
  mcpkit serve --http 127.0.0.1:8080           streamable HTTP at http://127.0.0.1:8080/mcp
  mcpkit serve --http 0.0.0.0:8080 --config mcpkit.json
                                               beyond loopback: needs http.bearer_tokens_file in the config

Run 'mcpkit help COMMAND' (or 'mcpkit COMMAND --help') for its flags.
Exit codes: 0 success, 1 the server failed, 2 bad command line, 3 invalid configuration or an unusable file (nothing was served or done).
Logs go to stderr; over stdio, stdout carries JSON-RPC only.
`

// printOverview prints the usage of the binary: every command with its
// summary.
func printOverview(w io.Writer) {
	fmt.Fprint(w, overviewHead)
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.Name, c.Summary)
	}
	tw.Flush()
	fmt.Fprint(w, overviewTail)
}

// printCommandUsage prints one command's synopsis, summary, doc and flags.
func printCommandUsage(w io.Writer, cmd *Command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n", strings.TrimSpace("mcpkit "+cmd.Name+" "+cmd.Usage), upperFirst(cmd.Summary))
	if cmd.Doc != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.Doc)
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		out := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
}

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// builtins are the commands of every binary, in the order help lists them.
func builtins() []*Command {
	return []*Command{&serveCommand, &pluginsCommand, &healthCommand, &versionCommand, &helpCommand}
}

// builtin returns the built-in command called name, or nil.
func builtin(name string) *Command {
	for _, c := range builtins() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

var pluginsCommand = Command{
	Name:    "plugins",
	Summary: "list the plugins built into this binary",
	Run: func(ctx context.Context, env *Env) int {
		if len(env.Args) > 0 {
			return env.Fail(Usagef("unexpected argument %q", env.Args[0]))
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tDEFAULT\tDESCRIPTION")
		for _, p := range mcpcore.Plugins() {
			def := "no"
			if p.Default {
				def = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, def, p.Description)
		}
		tw.Flush()
		return ExitOK
	},
}

var versionCommand = Command{
	Name:    "version",
	Summary: "print the version",
	Run: func(ctx context.Context, env *Env) int {
		fmt.Fprintf(env.Stdout, "mcpkit %s\n", version())
		return ExitOK
	},
}

// helpCommand's Run is set in init: it lists the commands, itself included.
var helpCommand = Command{
	Name:    "help",
	Summary: "list the commands, or print one command's usage and flags",
	Usage:   "[COMMAND]",
}

func init() { helpCommand.Run = runHelp }

func runHelp(ctx context.Context, env *Env) int {
	switch len(env.Args) {
	case 0:
		printOverview(env.Stdout)
		return ExitOK
	case 1:
		cmd := lookupCommand(env.Args[0])
		if cmd == nil {
			return unknownCommand(env.Stderr, env.Args[0])
		}
		printCommandUsage(env.Stdout, cmd, newFlagSet(cmd, env.Stderr))
		return ExitOK
	}
	return env.Fail(Usagef("help takes at most one command"))
}

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}
