package resp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Actions of the session tool.
const (
	ActionOpen    = "open"
	ActionList    = "list"
	ActionClose   = "close"
	ActionSend    = "send"
	ActionReceive = "receive"
)

// SessionTimeout is the session tool's own timeout: a receive may wait up
// to MaxWaitMS for a blocked command or a subscription.
const SessionTimeout = mcpcore.MaxToolTimeout

// MaxWaitMS bounds a receive's wait_ms, inside [SessionTimeout].
const MaxWaitMS = 240_000

// Receive defaults.
const (
	DefaultWaitMS       = 1000
	DefaultRawReadBytes = respengine.DefaultRawReadBytes
)

// SessionArgs are the session tool's arguments; which apply depends on
// the action.
type SessionArgs struct {
	Action  string `json:"action" jsonschema:"open, list, close, send or receive"`
	Session string `json:"session,omitempty" jsonschema:"the handle open returned (close, send, receive)"`
	// open
	Target   string `json:"target,omitempty" jsonschema:"open: a configured target name (default: the default target)"`
	Protocol int    `json:"protocol,omitempty" jsonschema:"open: 2 or 3 (default: the target's)"`
	Database *int   `json:"database,omitempty" jsonschema:"open: the database to SELECT (default: the target's)"`
	Mode     string `json:"mode,omitempty" jsonschema:"open: resp (framed commands and replies, the default) or raw (bytes)"`
	// send
	Commands   [][]json.RawMessage `json:"commands,omitempty"`
	DataBase64 string              `json:"data_base64,omitempty" jsonschema:"send on a raw session: bytes to write, base64"`
	// receive
	MaxFrames int    `json:"max_frames,omitempty" jsonschema:"receive: at most this many frames (default 1)"`
	MaxBytes  int64  `json:"max_bytes,omitempty" jsonschema:"receive on a raw session: at most this many bytes (default 65536)"`
	WaitMS    *int   `json:"wait_ms,omitempty" jsonschema:"receive: how long to wait for the first frame or byte, in milliseconds (default 1000, at most 240000); 0 returns at once"`
	Format    string `json:"format,omitempty" jsonschema:"receive on a resp session: text (the default: the frames as execute's text form writes replies) or json (session, frames in the lossless JSON form, bytes, timed_out)"`
}

// SessionInfo describes one session (open, list).
type SessionInfo = respengine.SessionInfo

// SessionListReply is list's result.
type SessionListReply struct {
	Sessions []SessionInfo `json:"sessions"`
}

// SessionCloseReply is close's result.
type SessionCloseReply struct {
	Session string `json:"session"`
	Closed  bool   `json:"closed"`
}

// SendReply is send's result: bytes written, not server acceptance or
// completion.
type SendReply struct {
	Session      string `json:"session"`
	BytesWritten int64  `json:"bytes_written"`
	Commands     int    `json:"commands,omitempty"`
}

// ReceiveReply is receive's result on a resp session.
type ReceiveReply struct {
	Session  string       `json:"session"`
	Frames   []resp.Value `json:"frames"`
	Bytes    int64        `json:"bytes"`
	TimedOut bool         `json:"timed_out"`
	// Redirects describes the frames that are MOVED or ASK replies of a
	// cluster node (pkg/respengine's cluster.go): never followed.
	Redirects []Redirect `json:"redirects,omitempty"`
}

// RawReceiveReply is receive's result on a raw session.
type RawReceiveReply struct {
	Session    string `json:"session"`
	DataBase64 string `json:"data_base64"`
	Bytes      int    `json:"bytes"`
	TimedOut   bool   `json:"timed_out"`
	EOF        bool   `json:"eof"`
}

func (p *Plugin) addSession() error {
	schema, err := schemaFor[SessionArgs]("send: the commands to write, each an array of arguments (as execute takes them)")
	if err != nil {
		return fmt.Errorf("session schema: %w", err)
	}
	schema.Properties["action"].Enum = []any{ActionOpen, ActionList, ActionClose, ActionSend, ActionReceive}
	schema.Properties["mode"].Enum = []any{ModeRESP, ModeRaw}
	schema.Properties["format"].Enum = []any{FormatText, FormatJSON}
	mcpcore.AddTool(p.host, &mcp.Tool{Name: "session", InputSchema: schema,
		Description: "Explicit RESP connections. open {target?, protocol?, database?, mode?: resp|raw} returns a session handle to echo in later calls (never invent one); " +
			"list; close {session}. send {session, commands} writes commands without reading (blocking commands, SUBSCRIBE, MONITOR) and reports bytes written; " +
			"receive {session, max_frames?, wait_ms?, format?} returns the frames that arrived, as text like execute's ([N] before each of several; format json for the lossless JSON form). After send/receive a session stays manual: " + p.host.ToolName("execute") +
			" no longer runs on it. A raw session sends data_base64 (or framed commands) and receives data_base64 with bytes, timed_out and eof."},
		p.session, fastpath.Direct(mcpcore.ToolOptions{Timeout: SessionTimeout}))
	return nil
}

// statelessEra is the first MCP protocol version whose clients send every
// request on its own (no session that outlives it over HTTP).
const statelessEra = "2026-07-28"

// scopeOf returns the scope of a request: its principal and its client
// session, except for a client of the 2026-07-28 era, whose session does
// not outlive a request over HTTP: its scope is its principal alone.
func (p *Plugin) scopeOf(req *mcp.CallToolRequest) scope {
	sc := scope{Principal: mcpcore.Principal(req)}
	if s := p.host.SessionOf(req); s != nil {
		if ip := s.ServerSession().InitializeParams(); ip != nil && ip.ProtocolVersion < statelessEra {
			sc.Owner = s.ID()
		}
	}
	return sc
}

func (p *Plugin) session(ctx context.Context, req *mcp.CallToolRequest, in SessionArgs) (any, error) {
	if !validFormat(in.Format) { // the schema's enum, for a caller that skips it
		return nil, &mcpcore.ParamError{Path: "/format", Reason: fmt.Sprintf("%q is not %s or %s", in.Format, FormatText, FormatJSON)}
	}
	out, err := p.sessionAction(ctx, p.scopeOf(req), in)
	if err != nil {
		return nil, engineError(err)
	}
	return out, nil
}

// sessionAction runs one action of the session tool for sc.
func (p *Plugin) sessionAction(ctx context.Context, sc scope, in SessionArgs) (any, error) {
	switch in.Action {
	case ActionOpen:
		return p.open(ctx, sc, in)
	case ActionList:
		return SessionListReply{Sessions: p.reg.List(sc)}, nil
	case ActionClose:
		if in.Session == "" {
			return nil, &mcpcore.ParamError{Path: "/session", Reason: "close needs the session to close"}
		}
		if err := p.reg.CloseSession(sc, in.Session); err != nil {
			return nil, err
		}
		return SessionCloseReply{Session: in.Session, Closed: true}, nil
	case ActionSend:
		return p.send(ctx, sc, in)
	case ActionReceive:
		return p.receive(ctx, sc, in)
	}
	return nil, &mcpcore.ParamError{Path: "/action", Reason: fmt.Sprintf("%q is not open, list, close, send or receive", in.Action)}
}

func (p *Plugin) open(ctx context.Context, sc scope, in SessionArgs) (any, error) {
	name := in.Target
	if name == "" {
		name = p.cfg.defaultTarget
	}
	t := p.cfg.targets[name]
	if t == nil {
		return nil, &mcpcore.ParamError{Path: "/target", Reason: fmt.Sprintf("%q is not a configured target (configured: %v)", name, p.cfg.names())}
	}
	s, err := p.reg.Open(ctx, sc, t, respengine.OpenOptions{Protocol: in.Protocol, Database: in.Database, Mode: in.Mode})
	if err != nil {
		return nil, err
	}
	return p.reg.Info(s), nil
}

func (p *Plugin) send(ctx context.Context, sc scope, in SessionArgs) (any, error) {
	var cmds [][][]byte
	var data []byte
	switch {
	case in.DataBase64 != "" && len(in.Commands) > 0:
		return nil, &mcpcore.ParamError{Path: "/data_base64", Reason: "give commands or data_base64, not both"}
	case in.DataBase64 != "":
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.DataBase64); err != nil {
			return nil, &mcpcore.ParamError{Path: "/data_base64", Reason: "not standard base64: " + err.Error()}
		}
	default:
		var err error
		if cmds, err = respengine.ParseCommands(in.Commands); err != nil {
			return nil, err
		}
	}
	// The engine checks the batch or data against the batch limits before
	// anything else.
	n, err := p.reg.Send(ctx, sc, in.Session, cmds, data)
	if err != nil {
		if errors.Is(err, respengine.ErrConnectionLost) && ended(ctx, err) {
			return nil, mcpcore.ErrorResult(SendReply{Session: in.Session, BytesWritten: n})
		}
		return nil, err
	}
	return SendReply{Session: in.Session, BytesWritten: n, Commands: len(cmds)}, nil
}

func (p *Plugin) receive(ctx context.Context, sc scope, in SessionArgs) (any, error) {
	wait := time.Duration(DefaultWaitMS) * time.Millisecond
	if in.WaitMS != nil {
		if *in.WaitMS < 0 || *in.WaitMS > MaxWaitMS {
			return nil, &mcpcore.ParamError{Path: "/wait_ms", Reason: fmt.Sprintf("%d is outside [0, %d]", *in.WaitMS, MaxWaitMS)}
		}
		wait = time.Duration(*in.WaitMS) * time.Millisecond
	}
	rec, err := p.reg.Receive(ctx, sc, in.Session, respengine.ReceiveOptions{Wait: wait, MaxFrames: in.MaxFrames, FrameLimit: p.host.Limit(LimitBatchCommands),
		MaxBytes: in.MaxBytes, ReplyLimit: p.host.Limit(LimitReplyBytes)})
	if rec.Session == nil {
		return nil, err
	}
	if rec.Raw {
		reply := RawReceiveReply{Session: in.Session, DataBase64: base64.StdEncoding.EncodeToString(rec.Data), Bytes: len(rec.Data), TimedOut: rec.TimedOut, EOF: rec.EOF}
		if err != nil {
			return nil, mcpcore.ErrorResult(reply)
		}
		return reply, nil
	}
	reply := ReceiveReply{Session: in.Session, Frames: rec.Frames.Frames, Bytes: rec.Frames.Bytes, TimedOut: rec.TimedOut, Redirects: p.redirects(rec.Frames.Frames)}
	if reply.Frames == nil {
		reply.Frames = []resp.Value{}
	}
	out, ferr := reply.result(in.Format)
	if ferr != nil {
		return nil, fmt.Errorf("serialize the frames: %w", ferr)
	}
	if err != nil {
		if ended(ctx, err) {
			// The parser state and queued frames are kept: a later receive
			// continues.
			return nil, mcpcore.ErrorResult(out)
		}
		return nil, mcpcore.ErrorResult(mcpcore.ToolErrorReply{Error: p.failure(rec.Session, err), Partial: out})
	}
	return out, nil
}

// AppendText appends the reply's text form (FormatText) to b: each frame
// as execute's text form writes a reply ([ExecuteReply.AppendText]), [N]
// before each when there are several or a redirect line, then the
// redirect lines, and "timed_out: ..." when no frame arrived in time.
func (r ReceiveReply) AppendText(b []byte) ([]byte, error) {
	numbered := len(r.Frames) != 1 || len(r.Redirects) > 0
	var err error
	for i := range r.Frames {
		if b, err = appendTextReply(b, i, &r.Frames[i], numbered); err != nil {
			return nil, err
		}
	}
	b = appendRedirects(b, r.Redirects)
	if r.TimedOut {
		b = append(b, "timed_out: no frame arrived within wait_ms\n"...)
	}
	if len(b) == 0 {
		return append(b, "(no frames)"...), nil
	}
	return b[:len(b)-1], nil
}

// result returns the reply in format: the reply itself for FormatJSON,
// else its text form.
func (r ReceiveReply) result(format string) (any, error) {
	if format == FormatJSON {
		return r, nil
	}
	b, err := r.AppendText(nil)
	return mcpcore.Text(b), err
}
