package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// Command is a subcommand of the binary: `mcpkit NAME [flags] [arguments]`.
// The built-in commands (serve, plugins, version, help) are Commands too; a
// plugin package contributes its own with [RegisterCommand].
//
// A command with verbs of its own (`mcpkit actions run ...`) receives the
// verb and everything after it in [Env.Args], since flag parsing stops at
// the first argument that is not a flag, and parses each verb's flags itself.
type Command struct {
	// Name follows the binary's name on the command line: a lowercase
	// letter, then lowercase letters, digits and '-'.
	Name string
	// Summary is one line for `mcpkit help`.
	Summary string
	// Usage is the synopsis after the name, e.g. "[--stdio | --http ADDR] [PATH]".
	Usage string
	// Doc, if set, is printed after the synopsis by `mcpkit help NAME` and
	// `mcpkit NAME --help`: the arguments and the rules the flags follow.
	Doc string
	// Flags, if set, defines the command's flags on a fresh FlagSet for each
	// run; [AddServeFlags] and [AddLogFlags] add the shared ones. Run reads
	// the parsed values through [Env.Flags].
	Flags func(fs *flag.FlagSet)
	// Run runs the command with its flags parsed and returns the process exit
	// code (ExitOK, ExitFailure, ExitUsage or ExitConfig). ctx ends on
	// SIGINT or SIGTERM.
	Run func(ctx context.Context, env *Env) int
}

// Env is what a running [Command] gets besides its context.
type Env struct {
	// Command is the command being run.
	Command *Command
	// Flags holds the parsed flags that Command.Flags defined.
	Flags *flag.FlagSet
	// Args are the arguments after the flags.
	Args []string
	// Stdin, Stdout and Stderr are the process's, as given to [Main].
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Logger writes to Stderr at the level and in the format of the
	// --log-level and --log-format flags when the command defines them
	// ([AddLogFlags]), and at info level as text otherwise.
	Logger *slog.Logger
}

// UsageError is a bad command line: [Env.Fail] reports it with a pointer to
// the command's help and exits with ExitUsage.
type UsageError struct{ Err error }

// Error returns the message of the wrapped error.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a [*UsageError] with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// exitCode maps an error to the process exit code: ExitOK for nil,
// ExitUsage for a [*UsageError], ExitConfig for an [mcpcore.ErrConfig],
// ExitFailure otherwise.
func exitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, mcpcore.ErrConfig):
		return ExitConfig
	}
	return ExitFailure
}

// Fail reports err and returns its exit code: a [*UsageError] goes to
// Stderr with a pointer to the command's help (ExitUsage); an
// [mcpcore.ErrConfig] is logged as an invalid configuration (ExitConfig);
// anything else is logged as a failure (ExitFailure). Fail(nil) is ExitOK.
func (e *Env) Fail(err error) int {
	code := exitCode(err)
	switch code {
	case ExitOK:
	case ExitUsage:
		fmt.Fprintf(e.Stderr, "mcpkit %s: %v\nRun 'mcpkit help %s' for usage.\n", e.Command.Name, err, e.Command.Name)
	case ExitConfig:
		e.Logger.Error("invalid configuration", "err", err)
	default:
		e.Logger.Error(e.Command.Name+" failed", "err", err)
	}
	return code
}

// Names of the shared flags.
const (
	flagStdio       = "stdio"
	flagHTTP        = "http"
	flagConfig      = "config"
	flagMetricsAddr = "metrics-addr"
	flagLogLevel    = "log-level"
	flagLogFormat   = "log-format"
)

// AddLogFlags defines --log-level and --log-format on fs. [Main] builds
// [Env.Logger] from them (a bad value is a usage error, exit code 2).
func AddLogFlags(fs *flag.FlagSet) {
	fs.String(flagLogLevel, "info", "log `level`: debug, info, warn, error")
	fs.String(flagLogFormat, "text", "log `format` on stderr: text or json")
}

// AddServeFlags defines the flags every serving command shares on fs:
// --stdio, --http ADDR, --config FILE and the log flags. [Env.ServeParams]
// reads them.
func AddServeFlags(fs *flag.FlagSet) {
	fs.Bool(flagStdio, false, "serve MCP over stdin/stdout")
	fs.String(flagHTTP, "", "serve streamable HTTP at `ADDR` (path /mcp, health at /healthz)")
	fs.String(flagConfig, "", "JSON configuration `FILE` (unknown fields are errors)")
	fs.String(flagMetricsAddr, "", "serve /metrics at `ADDR` rather than on the --http listener (HTTP only; overrides http.metrics_addr)")
	AddLogFlags(fs)
}

// FlagValue returns the parsed value of the flag called name on fs (a
// command reads its own flags with FlagValue[bool](env.Flags, "trace")).
// ok is false when fs defines no such flag or its value is not a T.
func FlagValue[T any](fs *flag.FlagSet, name string) (T, bool) {
	var zero T
	f := fs.Lookup(name)
	if f == nil {
		return zero, false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return zero, false
	}
	v, ok := g.Get().(T)
	return v, ok
}

// errNoServeFlags reports a command that calls ServeParams without having
// added the serve flags: a programming error in that command.
var errNoServeFlags = errors.New("the command defines no serve flags (call cli.AddServeFlags in its Flags)")

// ServeParams reads the shared serve flags ([AddServeFlags]): it loads the
// configuration file and chooses the transport by [ChooseTransport]. The
// result serves the configuration's plugin selection with [Serve]; a
// command may change its Options (the plugins, their configuration) first.
// Errors are a [*UsageError] or an [mcpcore.ErrConfig]; pass them to
// [Env.Fail].
func (e *Env) ServeParams() (ServeParams, error) {
	stdioFlag, ok1 := FlagValue[bool](e.Flags, flagStdio)
	httpFlag, ok2 := FlagValue[string](e.Flags, flagHTTP)
	path, ok3 := FlagValue[string](e.Flags, flagConfig)
	if !ok1 || !ok2 || !ok3 {
		return ServeParams{}, errNoServeFlags
	}
	cfg := mcpcore.DefaultConfig()
	if path != "" {
		var err error
		if cfg, err = mcpcore.LoadConfig(path); err != nil {
			if !errors.Is(err, mcpcore.ErrConfig) {
				err = unreadableConfig{err}
			}
			return ServeParams{}, err
		}
	}
	if metricsAddr, _ := FlagValue[string](e.Flags, flagMetricsAddr); metricsAddr != "" {
		cfg.HTTP.MetricsAddr = metricsAddr
	}
	addr, from, err := ChooseTransport(stdioFlag, httpFlag, cfg.HTTP.Addr)
	if err != nil {
		return ServeParams{}, err
	}
	return ServeParams{
		Options:       mcpcore.Options{Config: cfg, Logger: e.Logger},
		HTTPAddr:      addr,
		TransportFrom: from,
		Stdin:         e.Stdin,
		Stdout:        e.Stdout,
	}, nil
}

// unreadableConfig is a configuration file that cannot be read: as with an
// invalid one, nothing is served (exit code 3).
type unreadableConfig struct{ err error }

func (e unreadableConfig) Error() string        { return e.err.Error() }
func (e unreadableConfig) Unwrap() error        { return e.err }
func (e unreadableConfig) Is(target error) bool { return target == mcpcore.ErrConfig }

// Where the transport choice came from, as logged in the first line.
const (
	FromStdioFlag = "--stdio"
	FromHTTPFlag  = "--http"
	FromConfig    = "config http.addr"
	FromDefault   = "default"
)

// ChooseTransport applies the transport rule of every serving command: a
// flag wins over the configuration file (--stdio and --http together are a
// usage error); without a flag, the file's http.addr serves HTTP there; with
// neither, stdio. It returns the HTTP address ("" for stdio) and where the
// choice came from (FromStdioFlag, FromHTTPFlag, FromConfig, FromDefault).
func ChooseTransport(stdioFlag bool, httpFlag, configAddr string) (addr, from string, err error) {
	switch {
	case stdioFlag && httpFlag != "":
		return "", "", Usagef("choose one of --stdio and --http")
	case stdioFlag:
		return "", FromStdioFlag, nil
	case httpFlag != "":
		return httpFlag, FromHTTPFlag, nil
	case configAddr != "":
		return configAddr, FromConfig, nil
	}
	return "", FromDefault, nil
}

var (
	commandsMu sync.RWMutex
	registered = map[string]*Command{}
)

// RegisterCommand adds a subcommand to every binary that links the calling
// package. It is meant to be called from the package's init, as
// [mcpcore.Register] is; it panics on an invalid name, the name of a
// built-in or already registered command, an empty Summary or a nil Run.
func RegisterCommand(c Command) {
	commandsMu.Lock()
	defer commandsMu.Unlock()
	switch {
	case !validCommandName(c.Name):
		panic(fmt.Sprintf("cli: RegisterCommand: invalid command name %q (want [a-z][a-z0-9-]*)", c.Name))
	case builtin(c.Name) != nil:
		panic(fmt.Sprintf("cli: RegisterCommand: %q is a built-in command", c.Name))
	case registered[c.Name] != nil:
		panic(fmt.Sprintf("cli: RegisterCommand: command %q registered twice", c.Name))
	case strings.TrimSpace(c.Summary) == "" || strings.Contains(c.Summary, "\n"):
		panic(fmt.Sprintf("cli: RegisterCommand: command %q needs a one-line Summary", c.Name))
	case c.Run == nil:
		panic(fmt.Sprintf("cli: RegisterCommand: command %q has a nil Run", c.Name))
	}
	registered[c.Name] = &c
}

func validCommandName(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// lookupCommand finds a built-in or registered command.
func lookupCommand(name string) *Command {
	if c := builtin(name); c != nil {
		return c
	}
	commandsMu.RLock()
	defer commandsMu.RUnlock()
	return registered[name]
}

// commands lists the built-in commands, then the registered ones by name.
func commands() []*Command {
	out := slices.Clone(builtins())
	commandsMu.RLock()
	defer commandsMu.RUnlock()
	for _, name := range slices.Sorted(maps.Keys(registered)) {
		out = append(out, registered[name])
	}
	return out
}
