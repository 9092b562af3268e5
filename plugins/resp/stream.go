package resp

import (
	"bytes"
	"context"
	"unicode/utf8"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/jsonesc"
	"github.com/mcpkit/mcpkit/pkg/resp"
)

// streamPartBytes is the least size of a part of a streamed result: small
// replies share a part, a large one has a part of its own, sized for it.
const streamPartBytes = 1 << 20

// replyStream takes execute's replies as the pipeline reads them
// (resp.PipelineOptions.OnReply). While they are small it keeps them, and
// execute serializes them as before (inline, with a text form). Once they
// outgrow what is served inline, it encodes each reply's JSON as it
// arrives and drops the reply: the call then holds the JSON, in parts the
// host retains as they are for paging (fastpath.EncodedJSONParts), and the
// reply being read, rather than every decoded reply, its JSON, a text copy
// and the result at once. The parts lie outside the Go heap
// (fastpath.ResultMemory), so that the collector's headroom does not double
// them while they are retained and paged.
type replyStream struct {
	p      *Plugin
	s      *session
	cmds   Commands
	inline int64  // the decoded size from which replies are streamed
	format string // the result's format: FormatJSON, or else text

	kept     []resp.Value // the replies, until streaming starts
	keptCost int64

	streaming bool
	mem       *fastpath.ResultMemory // the parts' memory, once streaming
	n         int                    // replies taken
	parts     [][]byte               // the replies' JSON, comma-separated (or their text), once streaming
	cur       []byte                 // the part being written
	isErr     bool                   // a streamed reply is a server error
	errs      int                    // streamed error replies, for telemetry
	firstErr  string                 // the first one's prefix (errorPrefix)
	redirects []Redirect
}

// newReplyStream returns the stream of one execute of cmds on s, whose
// result is in format; mem is memory for the kept replies (the session's,
// from its last call).
func (p *Plugin) newReplyStream(s *session, cmds Commands, mem []resp.Value, format string) *replyStream {
	if cap(mem) < len(cmds) {
		mem = make([]resp.Value, 0, len(cmds))
	}
	return &replyStream{p: p, s: s, cmds: cmds, inline: p.host.Limits().InlineResultBytes, kept: mem[:0], format: format}
}

// onReply takes one reply (see resp.PipelineOptions.OnReply: v may be lent).
func (st *replyStream) onReply(v *resp.Value, cost int64) error {
	if !st.streaming {
		if st.keptCost+cost <= st.inline {
			if len(v.Str) >= resp.LentBytes {
				v.Str = bytes.Clone(v.Str) // lent by the pipeline
			}
			st.kept = append(st.kept, *v)
			st.keptCost += cost
			st.n++
			return nil
		}
		st.streaming, st.mem = true, fastpath.NewResultMemory()
		for i := range st.kept {
			if err := st.encode(i, &st.kept[i], valueCost); err != nil {
				return err
			}
		}
		clear(st.kept)
		st.kept = st.kept[:0]
	}
	err := st.encode(st.n, v, cost)
	st.n++
	return err
}

// room makes room for need more bytes in the current part, or starts a
// new one sized for them.
func (st *replyStream) room(need int) {
	if cap(st.cur)-len(st.cur) < need {
		if len(st.cur) > 0 {
			st.parts = append(st.parts, st.cur)
		}
		st.cur = st.mem.Buffer(max(streamPartBytes, need))
	}
}

// encodeText is encode of a text result: reply i in its text form and a
// newline (see ExecuteReply.AppendText), after its index unless it is the
// only command's and the call goes as usual (an error reply makes the
// outcome error).
func (st *replyStream) encodeText(i int, v *resp.Value, cost int64) error {
	need := int(cost)*2 + 32
	if len(v.Elems) == 0 {
		need = 4*len(v.Str) + 64 // \xHH at most for each byte
	}
	st.room(need)
	numbered := len(st.cmds) != 1 || st.s.ID() != DefaultSession || v.IsError()
	var err error
	st.cur, err = appendTextReply(st.cur, i, v, numbered)
	return err
}

// valueCost is what a kept reply's JSON is first sized for: its part grows
// if it needs more.
const valueCost = 256

// encode appends reply i's JSON to the current part, or to a new one sized
// for it, and takes what the session and the result need from it.
func (st *replyStream) encode(i int, v *resp.Value, cost int64) error {
	st.p.reg.ObserveOne(st.s, st.cmds[i], v)
	if v.IsError() {
		st.isErr = true
		if st.errs == 0 {
			st.firstErr = errorPrefix(v)
		}
		st.errs++
		for _, r := range st.p.redirects([]resp.Value{*v}) {
			r.Index = i
			st.redirects = append(st.redirects, r)
		}
	}
	if st.format != FormatJSON {
		return st.encodeText(i, v, cost)
	}
	st.room(jsonSizeHint(v, cost) + 1)
	if i > 0 {
		st.cur = append(st.cur, ',')
	}
	p := jsonesc.Pair{JSON: st.cur, JSONOnly: true}
	if err := resp.AppendJSONPair(&p, v); err != nil {
		return err
	}
	st.cur = p.JSON
	return nil
}

// jsonSizeHint is about the size of v's JSON: exact for a string without
// escapes (base64 when it is not UTF-8), its decoded size otherwise.
func jsonSizeHint(v *resp.Value, cost int64) int {
	if len(v.Elems) > 0 {
		return int(cost)
	}
	n := len(v.Str)
	if !utf8.Valid(v.Str) {
		n = (n + 2) / 3 * 4
	}
	return n + n/64 + 96 // a few escapes, and the type and encoding members
}

// result returns the whole reply, its replies streamed, as parts:
// reply's members but Replies, which must be empty. The parts are
// fastpath.TextParts in text format.
func (st *replyStream) result(reply ExecuteReply) (any, error) {
	if st.format != FormatJSON {
		return st.textResult(reply)
	}
	return st.jsonResult(reply)
}

// textResult is result in text format.
func (st *replyStream) textResult(reply ExecuteReply) (fastpath.TextParts, error) {
	head := reply.appendTextHead(nil)
	var tail []byte
	if reply.Unknown > 0 || len(reply.Redirects) > 0 || len(reply.Pushes) > 0 {
		var err error
		if tail, err = reply.appendTextTail(nil); err != nil {
			return fastpath.TextParts{}, err
		}
	}
	parts := make([][]byte, 0, len(st.parts)+3)
	if len(head) > 0 {
		parts = append(parts, head)
	}
	parts = append(parts, st.parts...)
	if len(st.cur) > 0 {
		parts = append(parts, st.cur)
	}
	st.parts, st.cur = nil, nil
	if len(tail) > 0 {
		parts = append(parts, tail)
	} else if last := len(parts) - 1; last >= 0 && len(parts[last]) > 0 {
		parts[last] = parts[last][:len(parts[last])-1] // the last reply's newline
	}
	return fastpath.TextParts{Parts: parts, Memory: st.mem}, nil
}

// jsonResult is result in JSON format.
func (st *replyStream) jsonResult(reply ExecuteReply) (fastpath.EncodedJSONParts, error) {
	head := jsonesc.Pair{JSONOnly: true}
	reply.appendHead(&head)
	tail := jsonesc.Pair{JSONOnly: true}
	if err := reply.appendTail(&tail); err != nil {
		return fastpath.EncodedJSONParts{}, err
	}
	parts := make([][]byte, 0, len(st.parts)+3)
	parts = append(parts, head.JSON)
	parts = append(parts, st.parts...)
	if len(st.cur) > 0 {
		parts = append(parts, st.cur)
	}
	st.parts, st.cur = nil, nil
	return fastpath.EncodedJSONParts{Parts: append(parts, tail.JSON), Memory: st.mem}, nil
}

// partial is the reply of a call that failed after dispatch: reply itself
// while the replies were kept, else its streamed parts.
func (st *replyStream) partial(reply ExecuteReply) (any, error) {
	switch {
	case st.streaming:
		return st.result(reply)
	case st.format != FormatJSON:
		return reply.text()
	}
	return reply, nil
}

// pipelineEnd describes how the pipeline whose replies st took ended,
// for its telemetry; received is the count of replies read, err the
// pipeline's failure.
func (st *replyStream) pipelineEnd(ctx context.Context, addr string, received int, err error) pipelineEnd {
	e := pipelineEnd{addr: addr, cmds: st.cmds, received: received, err: err}
	if st.streaming {
		e.errs, e.firstErr = st.errs, st.firstErr
	} else {
		e.errs, e.firstErr = errorStats(st.kept)
	}
	if err != nil {
		e.errStatus = failureOutcome(ctx, err)
	}
	return e
}
