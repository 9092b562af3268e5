package action

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Defaults of a [SignInLimit].
const (
	DefaultSignInWindow       = 15 * time.Minute
	DefaultSignInAccountInput = "email"
)

// SignInLimit bounds the failed sign-ins of each account and of each
// client address, whichever transport they come through: HTTP (PUT
// /api/session), the OAuth authorize page (package oauth runs the same
// action), WebSocket, MCP or the command line all run the app's login
// action (MCP.LoginAction) through [App.Run], where the limit applies.
// A run of the login action that fails with [KindUnauthorized] is a
// failed attempt: it counts once for its account and once for its
// address, in a sliding window over two fixed windows (as [RateLimit]).
// An attempt made while either count is at its limit is refused before
// the action runs, with [KindRateLimited] and the seconds until the
// count drops. Successful sign-ins count nothing and reset nothing.
//
// The counts live in Store: give every instance of an app one shared
// store (Redis, package redisstate) so that the limit holds across them.
type SignInLimit struct {
	PerAccount int           // failed sign-ins per account per Window; 0: not limited
	PerAddress int           // failed sign-ins per client address per Window; 0: not limited
	Window     time.Duration // 0: DefaultSignInWindow
	// AccountInput is the login action's input naming the account,
	// compared without case or surrounding space; "" is
	// DefaultSignInAccountInput. An attempt without it counts for its
	// address only.
	AccountInput string
	Store        RateStore        // nil: a new MemoryRateStore
	Now          func() time.Time // nil: time.Now
}

// SetSignInLimit makes l bound the failed runs of the app's login action
// (see [SignInLimit]). Call it before serving. A negative limit or window
// is an error.
func (a *App) SetSignInLimit(l SignInLimit) error {
	if l.PerAccount < 0 || l.PerAddress < 0 || l.Window < 0 {
		return fmt.Errorf("sign-in limit: negative limit or window (%d per account, %d per address, %v)", l.PerAccount, l.PerAddress, l.Window)
	}
	if l.Window == 0 {
		l.Window = DefaultSignInWindow
	}
	if l.AccountInput == "" {
		l.AccountInput = DefaultSignInAccountInput
	}
	if l.Store == nil {
		l.Store = NewMemoryRateStore()
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	a.signIn = &l
	return nil
}

// signInCount is one of an attempt's counts: its key, its limit and what
// the refusal says it is.
type signInCount struct {
	key, what string
	limit     int
}

// signInAttempt is a run of the login action under the limit.
type signInAttempt struct {
	l      *SignInLimit
	counts []signInCount
}

// begin checks the limit for a run of the login action by c with
// params m, and returns the attempt, whose end counts it if it fails.
func (l *SignInLimit) begin(ctx context.Context, c *Conn, m map[string]any) (*signInAttempt, error) {
	at := &signInAttempt{l: l}
	if acct, ok := m[l.AccountInput].(string); ok && l.PerAccount > 0 {
		sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(acct))))
		at.counts = append(at.counts, signInCount{"signin:account:" + hex.EncodeToString(sum[:16]), "for this account", l.PerAccount})
	}
	if c.Remote != "" && l.PerAddress > 0 {
		host, _, err := net.SplitHostPort(c.Remote)
		if err != nil {
			host = c.Remote
		}
		at.counts = append(at.counts, signInCount{"signin:ip:" + addressKey(host), "from this address", l.PerAddress})
	}
	now := l.Now().UnixNano()
	w := int64(l.Window)
	index := now / w
	start := index * w
	for _, n := range at.counts {
		cur, prev, err := l.Store.Peek(ctx, n.key, index, l.Window)
		if err != nil {
			return nil, fmt.Errorf("sign-in limit: %w", err)
		}
		if float64(prev)*(1-float64(now-start)/float64(w))+float64(cur) < float64(n.limit) {
			continue
		}
		secs := (slidingRetryAt(l.Window, start, cur, prev, n.limit)-now)/int64(time.Second) + 1
		return nil, Errorf(KindRateLimited, "too many failed sign-ins %s (over %d per %v); retry after %d s", n.what, n.limit, l.Window, secs)
	}
	return at, nil
}

// end counts the attempt as failed when err is unauthorized, and returns
// err (joined with a failure to count, which makes the call internal).
func (at *signInAttempt) end(ctx context.Context, err error) error {
	if e, ok := errors.AsType[*Error](err); !ok || e.Kind != KindUnauthorized {
		return err
	}
	index := at.l.Now().UnixNano() / int64(at.l.Window)
	for _, n := range at.counts {
		if _, _, herr := at.l.Store.Hit(ctx, n.key, index, at.l.Window); herr != nil {
			return fmt.Errorf("sign-in limit: count a failed sign-in: %w", herr)
		}
	}
	return err
}
