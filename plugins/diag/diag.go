// Package diag is mcpkit's diagnostics plugin: an echo, deterministic blobs
// of any size and a cancellable sleep. It lets an operator or a client author
// check, against a running binary, how a client handles inline and paged
// results, the concurrency limit, timeouts and cancellation. It touches no
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
	Milliseconds int64 `json:"ms" jsonschema:"how long to sleep, in milliseconds; cancellation and the tool timeout end it early"`
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
		func(ctx context.Context, _ *mcp.CallToolRequest, in SleepArgs) (any, error) {
			start := time.Now()
			t := time.NewTimer(time.Duration(in.Milliseconds) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return SleepReply{SleptMS: time.Since(start).Milliseconds()}, nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		})
	return nil
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
