package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"

	segjson "github.com/segmentio/encoding/json"
)

// The exit codes of RunCLI.
const (
	ExitOK     = 0 // the action ran (or the list was printed)
	ExitAction = 1 // the action failed: its error is on stderr as JSON
	ExitUsage  = 2 // bad command line: a message on stderr
)

const cliUsage = `usage:
  list                                  the actions, with their descriptions
  run NAME [--input value]... [--json '{...}']
                                        run an action: one flag per input (strings and numbers as
                                        given, --flag alone is true for a boolean, JSON for any other
                                        type); --json gives inputs as one JSON object
`

// RunCLI runs a command line against the app and returns its exit code:
//
//   - "list" prints each action's name and description.
//   - "run NAME [--input value]... [--json OBJECT]" runs the action through
//     [App.Run] on a "cli" Conn and prints its result as JSON on stdout.
//     A flag is an input's JSON name ("--name v" or "--name=v"), its text
//     converted to the input's type as HTTP converts query params (a
//     repeated flag makes an array input); a boolean flag alone is true.
//     --json gives params as a JSON object; an input given both ways with
//     different values is refused.
//
// An action error, and a flag value its input refuses, is printed on
// stderr as {"error": {...}} (exit 1); a bad command line (no command,
// unknown action or flag, malformed --json) is a message on stderr
// (exit 2).
func (a *App) RunCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return usage(stderr, "no command")
	}
	switch args[0] {
	case "list":
		if len(args) > 1 {
			return usage(stderr, "list takes no arguments")
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, act := range a.Actions() {
			fmt.Fprintf(tw, "%s\t%s\n", act.Name, act.Description)
		}
		if err := tw.Flush(); err != nil {
			fmt.Fprintf(stderr, "write: %v\n", err)
			return ExitAction
		}
		return ExitOK
	case "run":
		if len(args) < 2 {
			return usage(stderr, "run: no action name")
		}
		act, ok := a.Lookup(args[1])
		if !ok {
			return usage(stderr, fmt.Sprintf("run: no action %q (see list)", args[1]))
		}
		m, err := cliParams(act, args[2:])
		if e, ok := errors.AsType[*Error](err); ok {
			_, _ = stderr.Write(append(ErrorJSON(e), '\n'))
			return ExitAction
		} else if err != nil {
			return usage(stderr, "run "+act.Name+": "+err.Error())
		}
		raw, err := segjson.Marshal(m)
		if err != nil {
			return usage(stderr, "run "+act.Name+": "+err.Error())
		}
		out, err := a.run(ctx, &Conn{Type: "cli", ID: NewID()}, act, raw, m)
		if err != nil {
			_, _ = stderr.Write(append(ErrorJSON(err), '\n'))
			return ExitAction
		}
		b, err := segjson.MarshalIndent(out, "", "  ")
		if err != nil {
			_, _ = stderr.Write(append(ErrorJSON(&Error{Kind: KindInternal, Message: "the result does not marshal: " + err.Error()}), '\n'))
			return ExitAction
		}
		if _, err := stdout.Write(append(b, '\n')); err != nil {
			fmt.Fprintf(stderr, "write: %v\n", err)
			return ExitAction
		}
		return ExitOK
	case "help", "-h", "--help":
		_, _ = io.WriteString(stdout, cliUsage)
		return ExitOK
	}
	return usage(stderr, fmt.Sprintf("unknown command %q", args[0]))
}

func usage(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "%s\n%s", msg, cliUsage)
	return ExitUsage
}

// cliParams parses run's flags into params for act.
func cliParams(act *Action, args []string) (map[string]any, error) {
	texts := map[string][]string{}
	var order []string
	var jsonArg *string
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok || name == "" {
			return nil, fmt.Errorf("unexpected argument %q: want --input value", args[i])
		}
		name, value, hasValue := strings.Cut(name, "=")
		p := act.schema.props[name]
		if name != "json" && p == nil {
			return nil, fmt.Errorf("unknown flag --%s (inputs: %s)", name, strings.Join(sortedKeys(act.schema.props), ", "))
		}
		if !hasValue {
			switch {
			case name != "json" && schemaType(p) == "boolean" && (i+1 == len(args) || strings.HasPrefix(args[i+1], "--")):
				value = "true"
			case i+1 < len(args):
				i++
				value = args[i]
			default:
				return nil, fmt.Errorf("flag --%s needs a value", name)
			}
		}
		if name == "json" {
			if jsonArg != nil {
				return nil, fmt.Errorf("--json given twice")
			}
			jsonArg = &value
			continue
		}
		if texts[name] == nil {
			order = append(order, name)
		}
		texts[name] = append(texts[name], value)
	}
	m := map[string]any{}
	if jsonArg != nil {
		var err error
		if m, err = parseParams([]byte(*jsonArg)); err != nil {
			return nil, fmt.Errorf("--json: %v", err) // a usage error, not the action's
		}
	}
	for _, name := range order {
		v, err := act.schema.coerce(name, texts[name])
		if err != nil {
			return nil, err
		}
		if prev, dup := m[name]; dup && !reflect.DeepEqual(prev, v) {
			return nil, fmt.Errorf("--%s and --json give different values", name)
		}
		m[name] = v
	}
	return m, nil
}
