package resp

import (
	"errors"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
)

// engineKinds maps the engine's classes of failure to this plugin's error
// kinds (the core's where they mean the same).
var engineKinds = []struct {
	class error
	kind  string
}{
	{respengine.ErrSessionNotFound, KindSessionNotFound},
	{respengine.ErrConnectionLost, KindConnectionLost},
	{respengine.ErrUnknownEffect, KindUnknownEffect},
	{respengine.ErrProcessNotFound, KindProcessNotFound},
	{respengine.ErrRefused, KindRefused},
	{respengine.ErrUnavailable, KindConnection},
}

// engineError maps an error of pkg/respengine to what the host reports:
// its class to an error kind (the message kept as it is), a limit to a
// [*mcpcore.LimitError], a refused argument to a [*mcpcore.ParamError] at
// the argument's path, and the engine's end to the core's
// (mcpcore.ErrClosed). Any other error is returned as it is.
func engineError(err error) error {
	var le *respengine.LimitError
	var ae *respengine.ArgError
	var ee *respengine.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, respengine.ErrClosed):
		return mcpcore.Errorf(mcpcore.KindUnavailable, "%w", mcpcore.ErrClosed)
	case errors.As(err, &le):
		return &mcpcore.LimitError{Limit: le.Limit, Max: le.Max, Actual: le.Actual, Detail: le.Detail}
	case errors.As(err, &ae):
		return &mcpcore.ParamError{Path: "/" + ae.Arg, Reason: ae.Reason}
	case errors.As(err, &ee):
		for _, m := range engineKinds {
			if ee.Class == m.class {
				return mcpcore.Errorf(m.kind, "%w", err)
			}
		}
	}
	return err
}
