package action

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"time"
)

// App is a set of actions and their transports' shared settings. Add
// actions before serving; an App is safe for concurrent use once it
// serves.
type App struct {
	name, description string
	mu                sync.RWMutex
	actions           map[string]*Action
	logger            *slog.Logger
	authorizeChannel  ChannelAuthorizer // nil: every channel
	signIn            *SignInLimit      // nil: failed sign-ins are not limited
}

// ChannelAuthorizer decides whether the client of c may receive channel's
// messages: nil allows it. An *Error is shown to the client as is; any
// other error refuses with a forbidden error whose cause is logged.
type ChannelAuthorizer func(ctx context.Context, c *Conn, channel string) error

// SetChannelAuthorizer makes fn decide who receives which PubSub
// channel's messages, on every transport that delivers them (WebSocket
// subscriptions, the MCP surface's notifications). Call it before
// serving; without it every channel is open to every client.
func (a *App) SetChannelAuthorizer(fn ChannelAuthorizer) { a.authorizeChannel = fn }

// AuthorizeChannel reports whether the client of c may receive channel's
// messages, by the app's [ChannelAuthorizer]: nil when it may, else an
// *Error (the authorizer's own, or forbidden).
func (a *App) AuthorizeChannel(ctx context.Context, c *Conn, channel string) error {
	if a.authorizeChannel == nil {
		return nil
	}
	err := a.authorizeChannel(ctx, c, channel)
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	a.logger.Debug("channel refused", "conn", c.Type, "id", c.ID, "channel", channel, "error", err)
	return &Error{Kind: KindForbidden, Message: fmt.Sprintf("receiving channel %q is not allowed", channel), Err: err}
}

// NewApp returns an empty App that logs to slog.Default (see SetLogger).
func NewApp(name, description string) *App {
	return &App{name: name, description: description, actions: map[string]*Action{}, logger: slog.Default()}
}

// Name is the app's name.
func (a *App) Name() string { return a.name }

// Description is the app's description.
func (a *App) Description() string { return a.description }

// SetLogger sets where the app logs runs (debug) and internal errors with
// their cause and stack (error). Call it before serving.
func (a *App) SetLogger(l *slog.Logger) { a.logger = l }

// Logger is the app's logger.
func (a *App) Logger() *slog.Logger { return a.logger }

// Add validates act (name, Run, inputs type and schema, web route, task,
// MCP options) and its fit with the actions already added (unique name,
// route and login/signup markers), then adds a copy of it.
func (a *App) Add(act Action) error {
	if err := act.check(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.actions[act.Name]; dup {
		return fmt.Errorf("action %s: added twice", act.Name)
	}
	for _, o := range a.actions {
		if act.Web != nil && o.Web != nil && act.Web.Method == o.Web.Method && sameShape(act.Web.Route, o.Web.Route) {
			return fmt.Errorf("action %s: route %s %s is also action %s's (%s)", act.Name, act.Web.Method, act.Web.Route, o.Name, o.Web.Route)
		}
		if act.MCP.LoginAction && o.MCP.LoginAction || act.MCP.SignupAction && o.MCP.SignupAction {
			return fmt.Errorf("action %s: action %s is already the login or signup action", act.Name, o.Name)
		}
	}
	a.actions[act.Name] = &act
	return nil
}

// MustAdd is Add that panics on an error, for init-time registration.
func (a *App) MustAdd(act Action) {
	if err := a.Add(act); err != nil {
		panic(err)
	}
}

// Actions returns the actions in name order. Callers must not modify them.
func (a *App) Actions() []*Action {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]*Action, 0, len(a.actions))
	for _, act := range a.actions {
		out = append(out, act)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the named action.
func (a *App) Lookup(name string) (*Action, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	act, ok := a.actions[name]
	return act, ok
}

// Run runs the named action through the one path every transport uses:
// parse params (a JSON object; empty or null is none), set c.Params to
// them with secrets redacted, validate them against the input schema and
// decode them strictly into a fresh inputs struct, run the Before
// middlewares, Run under the action's timeout, then the After
// middlewares. The error, if any, is always an *Error: a Run or
// middleware error that is not one (and a panic, logged with its stack)
// becomes KindInternal with the message "internal error", its cause
// logged but not shown; an expired timeout (the action's or ctx's
// deadline) is KindTimeout. Secret values are scrubbed from error
// messages. Run does not start goroutines: the action runs on the
// caller's, and its timeout works by cancelling its context.
func (a *App) Run(ctx context.Context, c *Conn, name string, params json.RawMessage) (any, error) {
	if c == nil {
		c = &Conn{}
	}
	act, ok := a.Lookup(name)
	if !ok {
		return nil, &Error{Kind: KindNotFound, Message: "no action " + echo(name)}
	}
	m, err := parseParams(params)
	if err != nil {
		return nil, err
	}
	return a.run(ctx, c, act, params, m)
}

// run is Run once the action is found and its params parsed into m.
func (a *App) run(ctx context.Context, c *Conn, act *Action, raw json.RawMessage, m map[string]any) (out any, err error) {
	start := time.Now()
	c.Params = act.Redacted(m)
	secrets := act.schema.secretValues(m)
	ctx, span := tel.runSpan(ctx, c, act)
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &Error{Kind: KindInternal, Message: "internal error", Err: fmt.Errorf("panic: %v", p)}
			a.logger.Error("action panicked", "action", act.Name, "conn", c.Type, "id", c.ID,
				"panic", scrub(fmt.Sprint(p), secrets), "stack", string(debug.Stack()))
		}
		err = a.finish(act, c, err, secrets)
		tel.endRun(ctx, span, c, act, start, err)
		if a.logger.Enabled(ctx, slog.LevelDebug) {
			a.logger.Debug("action", "action", act.Name, "conn", c.Type, "id", c.ID, "params", c.Params,
				"took", time.Since(start), "error", err)
		}
	}()
	in, err := act.schema.decode(raw, m)
	if err != nil {
		return nil, err
	}
	if act.MCP.LoginAction && a.signIn != nil {
		var attempt *signInAttempt
		if attempt, err = a.signIn.begin(ctx, c, m); err != nil {
			return nil, err
		}
		// Runs before the deferred finish (last in, first out), on the
		// call's own error.
		defer func() { err = attempt.end(ctx, err) }()
	}
	for _, mw := range act.Before {
		if mw.Before == nil {
			continue
		}
		if err := mw.Before(ctx, c, in); err != nil {
			return nil, err
		}
	}
	out, err = runTimed(ctx, c, act, in)
	for _, mw := range act.After {
		if mw.After != nil {
			out, err = mw.After(ctx, c, in, out, err)
		}
	}
	return out, err
}

// runTimed runs act.Run under the action's timeout; when the deadline
// has passed by the time Run returns, the call is KindTimeout whatever
// Run returned.
func runTimed(ctx context.Context, c *Conn, act *Action, in any) (any, error) {
	tctx, cancel := context.WithTimeout(ctx, act.EffectiveTimeout())
	defer cancel()
	out, err := act.Run(tctx, c, in)
	if errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return nil, &Error{Kind: KindTimeout, Message: fmt.Sprintf("the action did not finish within its timeout (%v)", act.EffectiveTimeout()), Err: err}
	}
	return out, err
}

// finish makes err an *Error (see Run), logs an internal one with its
// cause, and scrubs secrets from the message.
func (a *App) finish(act *Action, c *Conn, err error, secrets []string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Kind: KindInternal, Message: "internal error", Err: err}
	}
	if e.Kind == KindInternal && e.Err != nil {
		a.logger.Error("action failed", "action", act.Name, "conn", c.Type, "id", c.ID, "error", scrub(e.Err.Error(), secrets))
	}
	if len(secrets) > 0 {
		cp := *e
		cp.Message = scrub(cp.Message, secrets)
		e = &cp
	}
	return e
}

// NewID returns a random 128-bit identifier in hex, for connection and
// request ids.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return hex.EncodeToString(b[:])
}
