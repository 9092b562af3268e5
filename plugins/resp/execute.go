package resp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/jsonesc"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Outcomes of an execute call.
const (
	OutcomeOK      = "ok"      // every command replied without an error reply
	OutcomeError   = "error"   // at least one reply is a server error; the others may have succeeded
	OutcomeUnknown = "unknown" // the call ended after dispatch: the last Unknown commands have unknown outcomes
)

// Result formats of execute (its "format" argument).
const (
	// FormatText, the default, is one text content and no
	// structuredContent: each reply in redis-cli's style (see
	// [resp.AppendTextForm]), lossless, and labelled lines for what is not
	// the usual (see [ExecuteReply.AppendText]).
	FormatText = "text"
	// FormatJSON is the lossless JSON form, as text and as
	// structuredContent, for programs.
	FormatJSON = "json"
)

// ExecuteReply is execute's result: one reply per command, in order,
// in the lossless JSON form of package pkg/resp, and the RESP3 pushes
// that arrived meanwhile.
type ExecuteReply struct {
	Session string       `json:"session"`
	Outcome string       `json:"outcome"`
	Replies []resp.Value `json:"replies"`
	Pushes  []resp.Value `json:"pushes"`
	// Unknown counts the commands after Replies whose outcome is unknown:
	// they may or may not have run. Inspect state before retrying.
	Unknown int `json:"unknown,omitempty"`
	// Redirects describes the replies that are MOVED or ASK errors of a
	// cluster node (pkg/respengine's cluster.go): never followed.
	Redirects []Redirect `json:"redirects,omitempty"`
}

// MarshalJSON writes the reply with each value's own JSON appended as is:
// encoding/json would re-scan and compact every value's output, which
// dominates the cost of a large batch.
func (r ExecuteReply) MarshalJSON() ([]byte, error) {
	p := jsonesc.Pair{JSON: make([]byte, 0, r.sizeHint()), JSONOnly: true}
	if err := r.appendJSON(&p); err != nil {
		return nil, err
	}
	return p.JSON, nil
}

// sizeHint is about the size of the reply's JSON when its values are
// short, as most are.
func (r ExecuteReply) sizeHint() int { return 64 + 64*(len(r.Replies)+len(r.Pushes)) }

var (
	litSession  = jsonesc.Lit(`{"session":`)
	litOutcome  = jsonesc.Lit(`,"outcome":"`)
	litQuote    = jsonesc.Lit(`"`)
	litReplies  = jsonesc.Lit(`,"replies":[`)
	litPushes   = jsonesc.Lit(`],"pushes":[`)
	litComma    = jsonesc.Lit(`,`)
	litEndList  = jsonesc.Lit(`]`)
	litUnknown  = jsonesc.Lit(`,"unknown":`)
	litRedirect = jsonesc.Lit(`,"redirects":`)
	litEnd      = jsonesc.Lit(`}`)
)

// appendJSON appends the reply's JSON (MarshalJSON) to p.JSON and, unless
// p.JSONOnly, its text form to p.Text.
func (r ExecuteReply) appendJSON(p *jsonesc.Pair) error {
	r.appendHead(p)
	if err := appendValues(p, r.Replies); err != nil {
		return err
	}
	return r.appendTail(p)
}

// appendHead appends the reply's JSON up to its first reply: the session,
// the outcome and the opening of the replies.
func (r ExecuteReply) appendHead(p *jsonesc.Pair) {
	p.Lit(litSession)
	from := len(p.JSON)
	p.JSON = strconv.AppendQuote(p.JSON, r.Session) // a handle or "default": ASCII letters, digits and _
	p.Mirror(from)
	p.Lit(litOutcome)
	p.Write([]byte(r.Outcome))
	p.Lit(litQuote)
	p.Lit(litReplies)
}

// appendValues appends list's values, comma-separated.
func appendValues(p *jsonesc.Pair, list []resp.Value) error {
	for i := range list {
		if i > 0 {
			p.Lit(litComma)
		}
		if err := resp.AppendJSONPair(p, &list[i]); err != nil {
			return err
		}
	}
	return nil
}

// appendTail appends the reply's JSON after its last reply: the pushes,
// unknown, redirects.
func (r ExecuteReply) appendTail(p *jsonesc.Pair) error {
	p.Lit(litPushes)
	if err := appendValues(p, r.Pushes); err != nil {
		return err
	}
	p.Lit(litEndList)
	if r.Unknown > 0 {
		p.Lit(litUnknown)
		from := len(p.JSON)
		p.JSON = strconv.AppendInt(p.JSON, int64(r.Unknown), 10)
		p.Mirror(from)
	}
	if len(r.Redirects) > 0 {
		rb, err := json.Marshal(r.Redirects)
		if err != nil {
			return err
		}
		p.Lit(litRedirect)
		p.Write(rb)
	}
	p.Lit(litEnd)
	return nil
}

// raw serializes the reply once, with its text form, for the host to serve
// as they are: its encoder writes only valid JSON (TestExecuteReplyJSON;
// FuzzReader checks every value's JSON) and the text as the host escapes
// it (pkg/resp's TestMarshalJSON and FuzzReader). The memory is the
// host's (fastpath.ResultBuffer), reused from call to call where the host
// can.
func (r ExecuteReply) raw(ctx context.Context) (fastpath.EncodedJSONText, error) {
	n := r.sizeHint()
	p := jsonesc.Pair{JSON: fastpath.ResultBuffer(ctx, n), Text: fastpath.ResultBuffer(ctx, n+n/4)}
	if err := r.appendJSON(&p); err != nil {
		return fastpath.EncodedJSONText{}, err
	}
	return fastpath.EncodedJSONText{JSON: p.JSON, Text: p.Text}, nil
}

// AppendText appends the reply's text form (FormatText) to b:
//
//	session: NAME          when the session is not the default one
//	outcome: error         when the outcome is not ok
//	[1] REPLY              each reply in resp.AppendTextForm's form; the
//	[2] REPLY              [N] index only with several commands or a line above
//	redirect: [N] moved slot S to ADDR (target T)
//	unknown: N ...          the commands after the last reply
//	push: PUSH              each push, in resp.AppendTextForm's form
//
// A reply's lines after its first are indented past its index, so that
// every line of the text that starts in the first column is an index or a
// label. A call of one command that went as usual is the reply alone: OK.
func (r ExecuteReply) AppendText(b []byte) ([]byte, error) {
	b = r.appendTextHead(b)
	numbered := r.numbered(len(r.Replies))
	var err error
	for i := range r.Replies {
		if b, err = appendTextReply(b, i, &r.Replies[i], numbered); err != nil {
			return nil, err
		}
	}
	return r.appendTextTail(b)
}

// numbered reports whether the text form of the reply, with n commands,
// gives each reply its index.
func (r ExecuteReply) numbered(n int) bool {
	return n != 1 || r.Session != DefaultSession || r.Outcome != OutcomeOK
}

// appendTextHead appends the labelled lines before the replies.
func (r ExecuteReply) appendTextHead(b []byte) []byte {
	if r.Session != DefaultSession {
		b = append(append(append(b, "session: "...), r.Session...), '\n')
	}
	if r.Outcome != OutcomeOK {
		b = append(append(append(b, "outcome: "...), r.Outcome...), '\n')
	}
	return b
}

// appendTextReply appends reply i and a newline, after its index when
// numbered.
func appendTextReply(b []byte, i int, v *resp.Value, numbered bool) ([]byte, error) {
	indent := 0
	if numbered {
		from := len(b)
		b = append(strconv.AppendInt(append(b, '['), int64(i+1), 10), "] "...)
		indent = len(b) - from
	}
	b, err := resp.AppendTextFormIndent(b, v, indent)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// appendTextTail appends the labelled lines after the replies, and drops
// the last newline.
func (r ExecuteReply) appendTextTail(b []byte) ([]byte, error) {
	b = appendRedirects(b, r.Redirects)
	if r.Unknown > 0 {
		b = fmt.Appendf(b, "unknown: %d (the last %d commands may or may not have run: inspect state before retrying)\n", r.Unknown, r.Unknown)
	}
	const pushLabel = "push: "
	for i := range r.Pushes {
		var err error
		if b, err = resp.AppendTextFormIndent(append(b, pushLabel...), &r.Pushes[i], len(pushLabel)); err != nil {
			return nil, err
		}
		b = append(b, '\n')
	}
	if len(b) == 0 {
		return append(b, "(no commands)"...), nil
	}
	return b[:len(b)-1], nil
}

// appendRedirects appends a labelled line for each redirect, its index
// counted from 1 as the replies' are.
func appendRedirects(b []byte, redirects []Redirect) []byte {
	for _, rd := range redirects {
		b = fmt.Appendf(b, "redirect: [%d] %s slot %d to %s", rd.Index+1, rd.Kind, rd.Slot, rd.Address)
		if rd.Target != "" {
			b = fmt.Appendf(b, " (target %q)", rd.Target)
		} else {
			b = append(b, " (no configured target)"...)
		}
		b = append(b, '\n')
	}
	return b
}

// text returns the reply's text form as a result (FormatText).
func (r ExecuteReply) text() (mcpcore.Text, error) {
	b, err := r.AppendText(make([]byte, 0, r.sizeHint()/2))
	if err != nil {
		return "", err
	}
	return mcpcore.Text(unsafe.String(unsafe.SliceData(b), len(b))), nil // b is the result's alone
}

// result returns the reply in format.
func (r ExecuteReply) result(ctx context.Context, format string) (any, error) {
	if format == FormatJSON {
		return r.raw(ctx)
	}
	return r.text()
}

// commandsSchema is the schema of a batch: an array of commands, each a
// non-empty array of arguments.
func commandsSchema(desc string) *jsonschema.Schema {
	// One type list rather than anyOf: the object keywords apply to objects
	// only, and a validator need not try (and fail) a branch per argument.
	arg := &jsonschema.Schema{Types: []string{"string", "integer", "object"},
		Description:          "a UTF-8 string; a safe integer (beyond ±9007199254740991 use a decimal string); or {\"base64\": \"...\"} for arbitrary bytes",
		Required:             []string{"base64"},
		Properties:           map[string]*jsonschema.Schema{"base64": {Type: "string", Description: "standard base64"}},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	return &jsonschema.Schema{Type: "array", Description: desc,
		Items: &jsonschema.Schema{Type: "array", MinItems: new(1), Items: arg, Description: "one command: its name, then its arguments"}}
}

// schemaFor derives In's schema and gives its "commands" property the
// batch schema (a json.RawMessage argument has no schema of its own).
func schemaFor[In any](commandsDesc string) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, err
	}
	s.Properties["commands"] = commandsSchema(commandsDesc)
	return s, nil
}

// executeSchema is execute's input schema.
func executeSchema() (*jsonschema.Schema, error) {
	s, err := schemaFor[ExecuteArgs]("the commands to run in order, e.g. [[\"SET\",\"k\",\"v\"],[\"GET\",\"k\"]]")
	if err != nil {
		return nil, err
	}
	s.Properties["format"].Enum = []any{FormatText, FormatJSON}
	s.Properties["format"].Description = "text (the default): one text block, each reply in redis-cli's style (value as it is, quoted with \\xHH for other bytes when it could be misread, " +
		"(status) OK, (integer) 5, (nil), (error) ERR ..., 1) ... for arrays, 1# k => v for maps), lossless, [N] before each reply of several; " +
		"json: the lossless JSON form (type, encoding, value) as text and structuredContent, for programs"
	return s, nil
}

func (p *Plugin) addExecute() error {
	schema, err := executeSchema()
	if err != nil {
		return fmt.Errorf("execute schema: %w", err)
	}
	mcpcore.AddTool(p.host, &mcp.Tool{Name: "execute", InputSchema: schema,
		Description: "Run an ordered pipeline of RESP commands on a persistent connection (the caller's default session, or an explicit one from " +
			p.host.ToolName("session") + "). Returns the replies in order in redis-cli's style (value, (status) OK, (integer) 5, (nil), (error) ...), " +
			"[N] before each when there are several, and labelled lines only when there is more to say (session, outcome: error|unknown, unknown, redirect, push); " +
			"format \"json\" returns session, outcome, replies in lossless RESP3 JSON (type, encoding utf8|base64, value) and pushes instead. Not a transaction: use MULTI/EXEC. " +
			"Arguments are UTF-8 strings, safe integers or {\"base64\":...}. Subscriptions, MONITOR, CLIENT REPLY/TRACKING, SCRIPT DEBUG, " +
			"SHUTDOWN, QUIT and replication handshakes are refused: use " + p.host.ToolName("session") + " send/receive."},
		p.execute, fastpath.Direct(mcpcore.ToolOptions{}))
	return nil
}

func (p *Plugin) execute(ctx context.Context, req *mcp.CallToolRequest, in ExecuteArgs) (any, error) {
	defer in.release() // nothing below keeps the commands: the pipeline has written them when it returns
	if err := p.reg.CheckPipeline(in.Commands); err != nil {
		return nil, p.batchError(err)
	}
	s, err := p.reg.Use(ctx, p.scopeOf(req), in.Session)
	if err != nil {
		return nil, engineError(err)
	}
	defer p.reg.Release(s)
	switch {
	case s.Mode() == ModeRaw:
		return nil, mcpcore.Errorf(KindRefused, "session %q is a raw session: use the session tool's send and receive; nothing was sent", s.ID())
	case p.reg.IsManual(s):
		return nil, mcpcore.Errorf(KindRefused, "session %q is in manual mode (send/receive were used): unread replies could be mistaken for this batch's, so only send and receive run on it; nothing was sent", s.ID())
	}
	conn, err := p.reg.Conn(ctx, s)
	if err != nil {
		return nil, engineError(err)
	}
	st := p.newReplyStream(s, in.Commands, s.TakeReplies(), in.Format) // given back below once the replies are serialized
	pctx, ps := tel.startPipeline(ctx, s.Target().Addr, in.Commands)
	res, err := conn.Pipeline(pctx, in.Commands, resp.PipelineOptions{MaxReplyBytes: p.host.Limit(LimitReplyBytes), OnReply: st.onReply})
	if ps.active() {
		tel.end(ctx, ps, st.pipelineEnd(ctx, s.Target().Addr, res.Received, err))
	}
	reply := ExecuteReply{Session: s.ID(), Outcome: OutcomeOK, Replies: st.kept, Pushes: res.Pushes}
	if reply.Replies == nil {
		reply.Replies = []resp.Value{}
	}
	if reply.Pushes == nil {
		reply.Pushes = []resp.Value{}
	}
	if st.streaming {
		if st.isErr {
			reply.Outcome, reply.Redirects = OutcomeError, st.redirects
		}
	} else {
		p.reg.Observe(s, in.Commands, reply.Replies) // streamed replies were observed as they came
		for _, v := range reply.Replies {
			if v.IsError() {
				reply.Outcome = OutcomeError
				reply.Redirects = p.redirects(reply.Replies)
				break
			}
		}
	}
	if err != nil {
		// After dispatch: the connection is closed, the state of the session
		// unknown; nothing is retried, and the next call on the session is
		// told (KindSessionReset).
		why := respengine.ResetFailed
		if ended(ctx, err) {
			why = respengine.ResetEnded
		}
		p.reg.Broken(s, why)
		reply.Outcome, reply.Unknown = OutcomeUnknown, len(in.Commands)-res.Received
		partial, perr := st.partial(reply)
		if perr != nil {
			return nil, perr
		}
		if ended(ctx, err) {
			return nil, mcpcore.ErrorResult(partial) // the host reports the timeout or cancellation
		}
		return nil, mcpcore.ErrorResult(mcpcore.ToolErrorReply{Error: p.failure(s, err), Partial: partial})
	}
	var out any
	if st.streaming {
		out, err = st.result(reply)
	} else {
		out, err = reply.result(ctx, in.Format)
	}
	if err != nil {
		return nil, fmt.Errorf("serialize the replies: %w", err)
	}
	if cap(st.kept) <= keepReplies {
		clear(st.kept) // holds no reply's bytes while kept
		s.KeepReplies(st.kept[:0])
	}
	if reply.Outcome == OutcomeError {
		return nil, mcpcore.ErrorResult(out)
	}
	return out, nil
}

// keepReplies is the most replies whose memory a session keeps for its
// next execute.
const keepReplies = 1024

// ended reports whether err is the end of ctx (see [respengine.Ended]):
// the host then reports the call as timed out or cancelled.
func ended(ctx context.Context, err error) bool { return respengine.Ended(ctx, err) }

// failure describes a connection that failed after dispatch.
func (p *Plugin) failure(s *session, err error) mcpcore.ToolErrorDetail {
	suffix := "; the connection was closed, the commands without a reply have unknown outcomes (nothing is retried)"
	if s.ID() == DefaultSession {
		suffix += "; the next call on the default session fails with " + KindSessionReset + " (nothing sent) and the one after it opens a new default session (database and transaction state are reset)"
	} else {
		suffix += fmt.Sprintf("; session %q is closed (its next call fails with %s)", s.ID(), KindSessionReset)
	}
	var le *resp.LimitError
	if errors.As(err, &le) {
		limit := le.Limit
		if limit == "reply_bytes" || limit == "" {
			limit = LimitReplyBytes
		}
		return mcpcore.ToolErrorDetail{Kind: mcpcore.KindLimit, Limit: limit, Max: le.Max, Message: err.Error() + suffix}
	}
	return mcpcore.ToolErrorDetail{Kind: KindConnectionLost, Message: fmt.Sprintf("target %q (%s): %v%s", s.Target().Name, s.Target().Addr, err, suffix)}
}
