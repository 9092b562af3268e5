//go:build !unix

package cli

import (
	"io"
	"log/slog"
)

// pollable leaves stdin as it is where descriptors cannot be put in
// non-blocking mode portably.
func pollable(stdin io.Reader, _ *slog.Logger) (io.Reader, func(), bool) {
	return stdin, func() {}, false
}
