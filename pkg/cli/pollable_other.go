//go:build !unix

package cli

import (
	"io"
	"log/slog"
)

// pollable leaves stdin and stdout as they are where descriptors cannot be
// put in non-blocking mode portably.
func pollable(any, *slog.Logger) (io.ReadWriter, func(), bool) {
	return nil, func() {}, false
}
