package resp

import (
	"errors"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/mcpkit/mcpkit/pkg/respengine"
)

// The engine's session registry and its results.
type (
	session = respengine.Session
	scope   = respengine.Scope
)

// DefaultSession is the session name of a caller's default session, as
// execute reports it and accepts it.
const DefaultSession = respengine.DefaultSession

// Session modes.
const (
	ModeRESP = respengine.ModeRESP
	ModeRaw  = respengine.ModeRaw
)

// engineKinds maps the engine's classes of failure to this plugin's error
// kinds (the core's where they mean the same).
var engineKinds = []struct {
	class error
	kind  string
}{
	{respengine.ErrSessionNotFound, KindSessionNotFound},
	{respengine.ErrSessionReset, KindSessionReset},
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

// batchError is engineError for a batch's checks, with a command that
// execute does not run refused in words that name the session tool,
// which runs it.
func (p *Plugin) batchError(err error) error {
	var ce *respengine.CommandRefusedError
	if errors.As(err, &ce) {
		return mcpcore.Errorf(KindRefused, "command %d (%s) has no ordinary one-reply shape, so execute does not run it; nothing was sent: open a session with %s and use its send and receive actions",
			ce.Index, ce.Name, p.host.ToolName("session"))
	}
	return engineError(err)
}

// Error kinds of this plugin, besides the core's.
const (
	// KindSessionNotFound: an unknown, closed or expired session handle, or
	// one that belongs to another caller or client session.
	KindSessionNotFound = "session_not_found"
	// KindConnection: the target could not be reached (or failed a
	// read-only registry query); nothing was written.
	KindConnection = "unavailable"
	// KindConnectionLost: the connection failed after commands were written
	// to it: what reached the server has unknown outcomes (the partial
	// result says how many), the connection is closed, nothing is retried.
	KindConnectionLost = "connection_lost"
	// KindRefused: a command that execute does not run (unusual reply
	// shape), or an operation the session's mode does not allow.
	KindRefused = "refused"
	// KindSessionReset: the session's connection was closed by the sidecar
	// (a call cancelled or timed out after dispatch, a failed connection,
	// idle expiry), and with it its state (database, protocol, MULTI,
	// WATCH, CLIENT settings, subscriptions); nothing was sent. The default
	// session reports it to its next call only, and the call after that
	// runs on a new connection; a handle reports it until it is forgotten
	// (session_idle later), and is never reconnected.
	KindSessionReset = "session_reset"
)

// Redirect describes a MOVED or ASK error reply of a cluster node: never
// followed (see pkg/respengine's cluster.go).
type Redirect = respengine.Redirect

// Kinds of a [Redirect].
const (
	RedirectMoved = respengine.RedirectMoved
	RedirectAsk   = respengine.RedirectAsk
)

// redirects finds the MOVED and ASK error replies among values.
func (p *Plugin) redirects(values []resp.Value) []Redirect {
	return respengine.Redirects(values, p.cfg.targets)
}
