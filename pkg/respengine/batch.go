package respengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// BatchLimits bound what one call may send (LimitBatchCommands,
// LimitCommandBytes, LimitBatchBytes): a batch is checked whole before its
// first byte is written, so a refused batch sends nothing. A zero limit
// refuses every batch, as a zero MaxSessions refuses every session.
type BatchLimits struct {
	Commands     int64 // most commands in one batch
	CommandBytes int64 // most bytes of one command, framed
	BatchBytes   int64 // most bytes of a batch, framed, or of raw data
}

// CommandRefusedError reports a command whose replies do not follow the
// one-command-one-reply shape of a pipeline ([RefusedName]): a pipeline
// refuses it before sending anything, send/receive on an explicit session
// runs it. It is of class [ErrRefused] (errors.Is); a caller words the
// refusal from Index and Name, naming where to run the command instead.
type CommandRefusedError struct {
	Index int    // the command's position in the batch, from 0
	Name  string // the command or subcommand, in upper case (RefusedName)
}

func (e *CommandRefusedError) Error() string {
	return fmt.Sprintf("respengine: command %d (%s) has no ordinary one-reply shape, so a pipeline does not run it; nothing was sent", e.Index, e.Name)
}

// Is makes errors.Is(e, ErrRefused) true.
func (e *CommandRefusedError) Is(target error) bool { return target == ErrRefused }

// ParseCommands converts a batch's JSON arguments to the bytes sent: each
// command a non-empty array of arguments as [resp.ParseArgs] takes them. A
// refused one is an [*ArgError] at its path below "commands" (commands/3
// for command 3, commands/3/1 for its argument 1, commands/3/1/x for a
// member x of that argument).
func ParseCommands(raw [][]json.RawMessage) ([][][]byte, error) {
	cmds := make([][][]byte, len(raw))
	for i, c := range raw {
		if len(c) == 0 {
			return nil, &ArgError{Arg: fmt.Sprintf("commands/%d", i), Reason: "a command needs at least its name"}
		}
		args, err := resp.ParseArgs(c)
		if err != nil {
			var ae *resp.ArgError
			if errors.As(err, &ae) {
				return nil, CommandArgError(i, ae)
			}
			return nil, &ArgError{Arg: fmt.Sprintf("commands/%d", i), Reason: err.Error()}
		}
		cmds[i] = args
	}
	return cmds, nil
}

// CommandArgError is the [*ArgError] of command i's refused argument ae,
// for a caller that decodes a batch itself: its path is
// commands/<i>/<ae.Index>, then ae.Member escaped as a JSON pointer's
// token (~ as ~0, / as ~1).
func CommandArgError(i int, ae *resp.ArgError) *ArgError {
	path := fmt.Sprintf("commands/%d/%d", i, ae.Index)
	if ae.Member != "" {
		path += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(ae.Member)
	}
	return &ArgError{Arg: path, Reason: ae.Reason}
}

// CheckPipeline checks cmds, a batch for a pipeline, before anything is
// sent: they are within l, and none is refused ([*CommandRefusedError]).
func (l BatchLimits) CheckPipeline(cmds [][][]byte) error { return l.check(cmds, true) }

// CheckSend checks what a send writes before anything is sent: cmds within
// l (commands a pipeline refuses included), or, when data is not nil, data
// within BatchBytes.
func (l BatchLimits) CheckSend(cmds [][][]byte, data []byte) error {
	if data != nil {
		if int64(len(data)) > l.BatchBytes {
			return &LimitError{Limit: LimitBatchBytes, Max: l.BatchBytes, Actual: int64(len(data)), Detail: "nothing was sent"}
		}
		return nil
	}
	return l.check(cmds, false)
}

// check checks cmds against l, and with pipeline refuses the commands
// with unusual reply shapes; commands are checked in order, the first at
// fault reported. Its failures are an [*ArgError] for an empty batch, an
// [*LimitError] and a [*CommandRefusedError].
func (l BatchLimits) check(cmds [][][]byte, pipeline bool) error {
	if len(cmds) == 0 {
		return &ArgError{Arg: "commands", Reason: "no command given"}
	}
	if int64(len(cmds)) > l.Commands {
		return &LimitError{Limit: LimitBatchCommands, Max: l.Commands, Actual: int64(len(cmds)), Detail: "nothing was sent; split the batch"}
	}
	var total int64
	for i, args := range cmds {
		if pipeline {
			if name := RefusedName(args); name != "" {
				return &CommandRefusedError{Index: i, Name: name}
			}
		}
		size := resp.CommandSize(args)
		if size > l.CommandBytes {
			return &LimitError{Limit: LimitCommandBytes, Max: l.CommandBytes, Actual: size, Detail: fmt.Sprintf("command %d; nothing was sent", i)}
		}
		total += size
	}
	if total > l.BatchBytes {
		return &LimitError{Limit: LimitBatchBytes, Max: l.BatchBytes, Actual: total, Detail: "nothing was sent; split the batch"}
	}
	return nil
}
