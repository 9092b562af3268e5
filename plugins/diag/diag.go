// Package diag is mcpkit's diagnostics plugin: an echo, deterministic blobs
// of any size and a cancellable sleep that reports progress. It lets an
// operator or a client author check, against a running binary, how a client
// handles inline and paged results, the concurrency limit, timeouts,
// cancellation and server notifications. It touches no
// data system and is not served unless selected (--plugins diag).
package diag

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	mcpcore.Register(mcpcore.PluginInfo{
		Name:        "diag",
		Description: "diagnostics: echo, deterministic blobs and sleeps for checking paging, limits and cancellation",
		New:         func() mcpcore.Plugin { return new(Plugin) },
	})
}

// MaxBlobBytes bounds one blob, so that the plugin cannot be used to exhaust memory.
const MaxBlobBytes = 64 * mcpcore.MiB

// Plugin is the diag plugin.
type Plugin struct{}

var _ mcpcore.Plugin = (*Plugin)(nil)

// EchoArgs are echo's arguments.
type EchoArgs struct {
	Message string `json:"message" jsonschema:"text to return unchanged"`
}

// EchoReply is echo's result.
type EchoReply struct {
	Message string `json:"message"`
}

// BlobArgs are blob's arguments.
type BlobArgs struct {
	Bytes int64  `json:"bytes" jsonschema:"number of random bytes to generate (at most 64 MiB)"`
	Seed  uint64 `json:"seed,omitempty" jsonschema:"seed of the generator; the same seed gives the same bytes"`
}

// BlobReply is blob's result: Bytes bytes from [Blob], base64-encoded.
type BlobReply struct {
	Bytes      int64  `json:"bytes"`
	Seed       uint64 `json:"seed"`
	SHA256     string `json:"sha256"`
	DataBase64 string `json:"data_base64"`
}

// SleepArgs are sleep's arguments.
type SleepArgs struct {
	Milliseconds    int64 `json:"ms" jsonschema:"how long to sleep, in milliseconds; cancellation and the tool timeout end it early"`
	ProgressEveryMS int64 `json:"progress_every_ms,omitempty" jsonschema:"interval of progress notifications when the request has a progress token (default 100)"`
}

// SleepReply is sleep's result.
type SleepReply struct {
	SleptMS int64 `json:"slept_ms"`
}

// Attach implements mcpcore.Plugin.
func (p *Plugin) Attach(ctx context.Context, h *mcpcore.Host) error {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	mcpcore.AddTool(h, &mcp.Tool{Name: "echo", Description: "Return the message unchanged (a no-op round trip).", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in EchoArgs) (any, error) {
			return EchoReply{Message: in.Message}, nil
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "blob", Description: "Return a deterministic pseudo-random blob of the given size, base64-encoded, with its SHA-256. Large sizes exercise result paging.", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in BlobArgs) (any, error) {
			if in.Bytes < 0 || in.Bytes > MaxBlobBytes {
				return nil, fmt.Errorf("bytes %d is outside [0, %d]", in.Bytes, MaxBlobBytes)
			}
			data := Blob(in.Seed, in.Bytes)
			sum := sha256.Sum256(data)
			return BlobReply{Bytes: in.Bytes, Seed: in.Seed, SHA256: hex.EncodeToString(sum[:]), DataBase64: base64.StdEncoding.EncodeToString(data)}, nil
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "sleep", Description: "Sleep for the given time, returning early with an error when cancelled or timed out.", Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, in SleepArgs) (any, error) {
			return sleep(ctx, req, in)
		})
	return nil
}

// sleep waits, sending a log message (when the client set a level) and
// progress notifications (when the request carries a progress token), so
// that a client can check that server notifications reach it.
func sleep(ctx context.Context, req *mcp.CallToolRequest, in SleepArgs) (any, error) {
	start := time.Now()
	total := time.Duration(in.Milliseconds) * time.Millisecond
	every := time.Duration(in.ProgressEveryMS) * time.Millisecond
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	token := req.Params.GetProgressToken()
	req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "diag", Data: fmt.Sprintf("sleeping %v", total)})
	done := time.NewTimer(total)
	defer done.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done.C:
			return SleepReply{SleptMS: time.Since(start).Milliseconds()}, nil
		case <-tick.C:
			if token != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: float64(time.Since(start).Milliseconds()), Total: float64(in.Milliseconds), Message: "sleeping"})
			}
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Close implements mcpcore.Plugin.
func (p *Plugin) Close(context.Context) error { return nil }

// Blob returns n deterministic pseudo-random bytes for seed (ChaCha8).
func Blob(seed uint64, n int64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	out := make([]byte, n)
	rand.NewChaCha8(key).Read(out)
	return out
}
