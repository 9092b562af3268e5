// Package diag is mcpkit's diagnostics plugin: an echo, deterministic blobs
// of any size, a cancellable sleep that reports progress, errors and panics
// on demand, the caller's identity and session, and notifications to the
// caller's sessions. It lets an operator or a client author check, against
// a running binary, how a client handles inline and paged results, output
// schemas, error kinds, the concurrency limit, timeouts, cancellation and
// server notifications. It touches no data system; it is a default plugin,
// so that `mcpkit serve` with no flags serves something useful.
//
// It also exercises every seam of the core: its own limit
// (blob_bytes_in_flight), a tool with its own timeout and an output schema
// (blob), per-session state freed when the session ends, the server's
// lifetime for background work (delayed notifications), the caller's
// principal, and a resource under its own URI scheme (<scheme>://state).
package diag

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	mcpcore.Register(mcpcore.PluginInfo{
		Name:        "diag",
		Description: "diagnostics: echo, deterministic blobs, sleeps, errors and notifications for checking a client against the core",
		Default:     true,
		New:         func() mcpcore.Plugin { return new(Plugin) },
		Limits:      Limits(),
	})
}

// Limits declares diag's own limits, for its registration and for a
// program that embeds the plugin ([mcpcore.Instance]).
func Limits() []mcpcore.LimitSpec {
	return []mcpcore.LimitSpec{{
		Name: LimitBlobBytesInFlight, Kind: mcpcore.LimitBytes, Default: 256 * mcpcore.MiB, Min: 1 * mcpcore.MiB, Max: 16 * mcpcore.GiB,
		Meaning: "sum of the sizes of the blobs being generated at once (each takes about 2.4 times its size in memory); a blob beyond it fails at once",
	}}
}

// LimitBlobBytesInFlight is diag's own limit: the bytes of blobs being
// generated at once.
const LimitBlobBytesInFlight = "blob_bytes_in_flight"

// MaxBlobBytes bounds one blob.
const MaxBlobBytes = 64 * mcpcore.MiB

// BlobTimeout is the blob tool's own timeout: a 64 MiB blob on a slow
// machine may take longer than the default tool_timeout.
const BlobTimeout = time.Minute

// Plugin is the diag plugin.
type Plugin struct {
	host *mcpcore.Host

	mu        sync.Mutex
	blobBytes int64            // bytes of blobs being generated
	calls     map[string]int64 // whoami calls per live session id

	workers sync.WaitGroup // delayed notifications
}

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

// FailArgs are fail's arguments.
type FailArgs struct {
	Kind    string `json:"kind,omitempty" jsonschema:"the error kind to report (default error)"`
	Message string `json:"message,omitempty" jsonschema:"the error message"`
	Panic   bool   `json:"panic,omitempty" jsonschema:"panic instead: the call fails with kind internal and the server carries on"`
}

// WhoamiReply is whoami's result.
type WhoamiReply struct {
	Principal string `json:"principal"`
	SessionID string `json:"session_id"`
	// Calls counts whoami calls in this session, this one included: state
	// the plugin keeps per session and frees when the session ends.
	Calls int64 `json:"calls"`
	// PrincipalSessions is the number of live sessions of this principal.
	PrincipalSessions int `json:"principal_sessions"`
}

// NotifyArgs are notify's arguments.
type NotifyArgs struct {
	Message string `json:"message" jsonschema:"the text of the log notification"`
	AfterMS int64  `json:"after_ms,omitempty" jsonschema:"send it this many milliseconds later, in the background (at most 60000)"`
}

// NotifyReply is notify's result.
type NotifyReply struct {
	// Sessions is how many of the principal's sessions the message was
	// sent to (0 when it is scheduled); a session receives it only if it
	// set a log level (logging/setLevel).
	Sessions  int  `json:"sessions"`
	Scheduled bool `json:"scheduled"`
}

// State is the content of the <scheme>://state resource.
type State struct {
	SessionsTracked   int   `json:"sessions_tracked"`
	BlobBytesInFlight int64 `json:"blob_bytes_in_flight"`
}

// Attach implements mcpcore.Plugin.
func (p *Plugin) Attach(ctx context.Context, h *mcpcore.Host) error {
	p.host, p.calls = h, map[string]int64{}
	blobSchema, err := jsonschema.For[BlobReply](nil)
	if err != nil {
		return fmt.Errorf("blob output schema: %w", err)
	}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	mcpcore.AddTool(h, &mcp.Tool{Name: "echo", Description: "Return the message unchanged (a no-op round trip).", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in EchoArgs) (any, error) {
			return EchoReply{Message: in.Message}, nil
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "blob", Description: "Return a deterministic pseudo-random blob of the given size, base64-encoded, with its SHA-256. Large sizes exercise result paging; the tool declares an output schema.",
		Annotations: readOnly, OutputSchema: blobSchema}, p.blob, mcpcore.ToolOptions{Timeout: BlobTimeout})
	mcpcore.AddTool(h, &mcp.Tool{Name: "sleep", Description: "Sleep for the given time, returning early with an error when cancelled or timed out.", Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, in SleepArgs) (any, error) {
			return sleep(ctx, req, in)
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "fail", Description: "Fail on purpose with an error of the given kind, or panic, to check how a client shows errors. The server carries on.", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in FailArgs) (any, error) {
			if in.Panic {
				panic("diag_fail: panic on request: " + in.Message)
			}
			kind := in.Kind
			if kind == "" {
				kind = mcpcore.KindOther
			}
			return nil, mcpcore.Errorf(kind, "%s", in.Message)
		})
	mcpcore.AddTool(h, &mcp.Tool{Name: "whoami", Description: "Return the caller's principal (the authenticated identity, empty without authentication), its session id, the calls of this tool in this session, and the principal's live sessions."},
		p.whoami)
	mcpcore.AddTool(h, &mcp.Tool{Name: "notify", Description: "Send a log notification to every live session of the caller's principal (sessions that set a log level), now or later in the background."},
		p.notify)
	h.AddResource(&mcp.Resource{URI: h.ResourceURI("state"), Name: "diag-state", MIMEType: "application/json",
		Description: "The plugin's state: sessions with per-session state, blob bytes being generated."}, p.state)
	h.HandleHTTP("GET /"+h.Name()+"/state", http.HandlerFunc(p.serveState))
	h.OnSessionEnd(func(s *mcpcore.Session) {
		p.mu.Lock()
		delete(p.calls, s.ID())
		p.mu.Unlock()
	})
	return nil
}

// blob generates under the blob_bytes_in_flight budget and serializes the
// reply itself, so that the budget covers what it allocates.
func (p *Plugin) blob(ctx context.Context, _ *mcp.CallToolRequest, in BlobArgs) (any, error) {
	if in.Bytes < 0 || in.Bytes > MaxBlobBytes {
		return nil, &mcpcore.ParamError{Path: "/bytes", Reason: fmt.Sprintf("%d is outside [0, %d]", in.Bytes, MaxBlobBytes)}
	}
	limit := p.host.Limit(LimitBlobBytesInFlight)
	p.mu.Lock()
	if p.blobBytes+in.Bytes > limit {
		busy := p.blobBytes
		p.mu.Unlock()
		return nil, &mcpcore.LimitError{Limit: LimitBlobBytesInFlight, Max: limit, Actual: busy + in.Bytes,
			Detail: fmt.Sprintf("%d bytes of blobs are being generated; nothing was done: retry when they finish, or ask for less", busy)}
	}
	p.blobBytes += in.Bytes
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.blobBytes -= in.Bytes
		p.mu.Unlock()
	}()
	return blobJSON(in.Seed, in.Bytes), nil
}

// blobJSON returns the JSON of the [BlobReply] for seed and n, written
// directly: the base64 alphabet needs no JSON escaping.
func blobJSON(seed uint64, n int64) json.RawMessage {
	data := Blob(seed, n)
	sum := sha256.Sum256(data)
	head := fmt.Sprintf(`{"bytes":%d,"seed":%d,"sha256":"%x","data_base64":"`, n, seed, sum)
	out := make([]byte, 0, len(head)+base64.StdEncoding.EncodedLen(len(data))+2)
	out = append(out, head...)
	out = base64.StdEncoding.AppendEncode(out, data)
	return append(out, `"}`...)
}

func (p *Plugin) whoami(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (any, error) {
	reply := WhoamiReply{Principal: mcpcore.Principal(req)}
	if s := p.host.SessionOf(req); s != nil {
		reply.SessionID = s.ID()
		p.mu.Lock()
		p.calls[s.ID()]++
		reply.Calls = p.calls[s.ID()]
		p.mu.Unlock()
	}
	reply.PrincipalSessions = len(p.sessionsOf(reply.Principal))
	return reply, nil
}

func (p *Plugin) sessionsOf(principal string) []*mcpcore.Session {
	var out []*mcpcore.Session
	for _, s := range p.host.Sessions() {
		if s.Principal() == principal {
			out = append(out, s)
		}
	}
	return out
}

// notify logs message to the principal's sessions, at once or, with
// after_ms, from a worker that the server's lifetime ends.
func (p *Plugin) notify(ctx context.Context, req *mcp.CallToolRequest, in NotifyArgs) (any, error) {
	if in.AfterMS < 0 || in.AfterMS > 60_000 {
		return nil, &mcpcore.ParamError{Path: "/after_ms", Reason: fmt.Sprintf("%d is outside [0, 60000]", in.AfterMS)}
	}
	// Send under the server's lifetime, not the request's context: the SDK
	// reads a request's own log level from it.
	principal, life := mcpcore.Principal(req), p.host.Context()
	if in.AfterMS == 0 {
		return NotifyReply{Sessions: p.send(life, principal, in.Message)}, nil
	}
	p.workers.Go(func() {
		t := time.NewTimer(time.Duration(in.AfterMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			p.send(life, principal, in.Message)
		case <-life.Done():
		}
	})
	return NotifyReply{Scheduled: true}, nil
}

func (p *Plugin) send(ctx context.Context, principal, message string) int {
	n := 0
	for _, s := range p.sessionsOf(principal) {
		err := s.ServerSession().Log(ctx, &mcp.LoggingMessageParams{Level: "notice", Logger: "diag", Data: message})
		if err != nil {
			p.host.Logger().Debug("notify: session gone", "session", s.ID(), "err", err)
			continue
		}
		n++
	}
	return n
}

// stateJSON is the plugin's State, served as a resource and over HTTP.
func (p *Plugin) stateJSON() ([]byte, error) {
	p.mu.Lock()
	st := State{SessionsTracked: len(p.calls), BlobBytesInFlight: p.blobBytes}
	p.mu.Unlock()
	return json.Marshal(st)
}

func (p *Plugin) state(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	data, err := p.stateJSON()
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(data)}}}, nil
}

// serveState answers GET /diag/state: the same State as the resource, for
// a probe or a person with curl (the HTTP route seam's first user).
func (p *Plugin) serveState(w http.ResponseWriter, _ *http.Request) {
	data, err := p.stateJSON()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(data, '\n'))
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

// Close implements mcpcore.Plugin: the server's lifetime has ended, so the
// delayed notifications stop; Close waits for them.
func (p *Plugin) Close(context.Context) error {
	p.workers.Wait()
	return nil
}

// Blob returns n deterministic pseudo-random bytes for seed (ChaCha8).
func Blob(seed uint64, n int64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	out := make([]byte, n)
	rand.NewChaCha8(key).Read(out)
	return out
}
