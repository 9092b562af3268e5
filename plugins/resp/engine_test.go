package resp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
)

// TestEngineErrorKinds: every class of the engine's errors reaches the
// host as this plugin's error kind, wrapped or not, with its message as it
// is; limits, refused arguments and the engine's end become the core's.
func TestEngineErrorKinds(t *testing.T) {
	kindOf := func(err error) string {
		var k interface{ ErrorKind() string }
		if !errors.As(err, &k) {
			return ""
		}
		return k.ErrorKind()
	}
	for class, want := range map[error]string{
		respengine.ErrSessionNotFound: KindSessionNotFound,
		respengine.ErrSessionReset:    KindSessionReset,
		respengine.ErrRefused:         KindRefused,
		respengine.ErrUnavailable:     KindConnection,
		respengine.ErrConnectionLost:  KindConnectionLost,
		respengine.ErrUnknownEffect:   KindUnknownEffect,
		respengine.ErrProcessNotFound: KindProcessNotFound,
	} {
		err := fmt.Errorf("outer: %w", &respengine.Error{Class: class})
		if got := engineError(err); kindOf(got) != want || got.Error() != err.Error() {
			t.Errorf("%v: kind %q message %q, want %q %q", class, kindOf(got), got, want, err)
		}
	}
	if got := engineError(respengine.ErrClosed); kindOf(got) != mcpcore.KindUnavailable || !errors.Is(got, mcpcore.ErrClosed) {
		t.Errorf("ErrClosed: %v", got)
	}
	var le *mcpcore.LimitError
	if got := engineError(&respengine.LimitError{Limit: LimitMaxSessions, Max: 2, Actual: 3, Detail: "d"}); !errors.As(got, &le) || le.Limit != LimitMaxSessions || le.Max != 2 || le.Actual != 3 {
		t.Errorf("LimitError: %v", got)
	}
	var pe *mcpcore.ParamError
	if got := engineError(&respengine.ArgError{Arg: "args/3", Reason: "r"}); !errors.As(got, &pe) || pe.Path != "/args/3" || pe.Reason != "r" {
		t.Errorf("ArgError: %v", got)
	}
	if got := engineError(context.Canceled); got != context.Canceled {
		t.Errorf("another error: %v", got)
	}
}
