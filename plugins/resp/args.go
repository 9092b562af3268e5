package resp

import (
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/mcpkit/mcpkit/pkg/respengine"
	segjson "github.com/segmentio/encoding/json"
)

// execute's arguments decode themselves, on the direct path as the params
// are read: the host uses the decoder only when the type implements it, so
// a change of signature is a build error here rather than a slow path.
var _ fastpath.ArgumentsPrefixDecoder = (*ExecuteArgs)(nil)

// ExecuteArgs are execute's arguments. They decode themselves
// ([fastpath.ArgumentsDecoder]): a batch of thousands of arguments is
// checked and parsed in one pass, where the host's generic path would
// build, validate and decode a tree of them first.
type ExecuteArgs struct {
	// Commands are run in order, each an array of arguments: UTF-8
	// strings, safe JSON integers, or {"base64": "..."} for bytes.
	Commands Commands `json:"commands"`
	// Session is a handle from the session tool's open action; empty (or
	// "default") is the caller's default session.
	Session string `json:"session,omitempty"`
	// Format is the result's form: FormatText (empty is text) or
	// FormatJSON.
	Format string `json:"format,omitempty"`

	// bufs holds Commands' memory, which execute returns to batchPool
	// once the pipeline is done.
	bufs *batchBufs
}

// batchBufs is the memory of a decoded batch: the commands, their
// arguments and the arguments' bytes, reused from call to call (a batch of
// 128 commands takes about 18 KiB, most of what a call allocates).
type batchBufs struct {
	cmds Commands
	args [][]byte
	buf  []byte
}

// batchPool holds batchBufs for reuse; a batch larger than keepBatchBytes
// is not kept.
var batchPool = sync.Pool{New: func() any { return new(batchBufs) }}

const keepBatchBytes = 1 << 20

// release returns the batch's memory for reuse: Commands must not be used
// afterwards.
func (a *ExecuteArgs) release() {
	b := a.bufs
	if b == nil || cap(b.buf) > keepBatchBytes || cap(b.args) > keepBatchBytes/24 {
		return
	}
	a.bufs, a.Commands = nil, nil
	batchPool.Put(b)
}

// Commands is a batch, parsed: each command's arguments as the bytes
// sent (see [resp.ParseArgs] for their JSON forms).
type Commands [][][]byte

// DecodeArguments implements [fastpath.ArgumentsDecoder]: it refuses what
// execute's input schema refuses, with the argument's path, and more (see
// [resp.ParseArgs]: fractions and unsafe integers). Well-formed arguments
// are decoded in one pass over their JSON (decodeBatch); anything else is
// decoded again strictly, which says what is wrong.
func (a *ExecuteArgs) DecodeArguments(raw json.RawMessage) error {
	bufs := batchPool.Get().(*batchBufs)
	if cmds, opts, ok := decodeBatch(raw, bufs); ok {
		a.Commands, a.Session, a.Format, a.bufs = cmds, opts.session, opts.format, bufs
		return nil
	}
	batchPool.Put(bufs)
	return a.decodeStrictly(raw)
}

// DecodeArgumentsPrefix implements [fastpath.ArgumentsPrefixDecoder]: the
// arguments that decodeBatch takes, at the start of b.
func (a *ExecuteArgs) DecodeArgumentsPrefix(b []byte) (int, bool) {
	bufs := batchPool.Get().(*batchBufs)
	cmds, opts, end, ok := decodeBatchPrefix(b, bufs)
	if !ok {
		batchPool.Put(bufs)
		return 0, false
	}
	a.Commands, a.Session, a.Format, a.bufs = cmds, opts.session, opts.format, bufs
	return end, true
}

// decodeStrictly is DecodeArguments' second path, for the arguments
// decodeBatch does not take: the host's strict decoding, then the batch,
// each saying what is wrong with the argument's path.
func (a *ExecuteArgs) decodeStrictly(raw json.RawMessage) error {
	var w struct {
		Commands json.RawMessage `json:"commands"`
		Session  json.RawMessage `json:"session"`
		Format   json.RawMessage `json:"format"`
	}
	// The host's decoding (fastpath.DecodeArguments), but with the members
	// aliasing raw rather than copied (decodeCommands copies what it keeps,
	// the session is unmarshalled); on failure the host's says what is wrong.
	if _, err := segjson.Parse(raw, &w, segjson.DisallowUnknownFields|segjson.DontMatchCaseInsensitiveStructFields|segjson.ZeroCopy); err != nil {
		return fastpath.DecodeArguments(raw, &w)
	}
	if w.Session != nil {
		if w.Session[0] != '"' {
			return &mcpcore.ParamError{Path: "/session", Reason: "got " + jsonTypeOf(w.Session) + ", want string"}
		}
		if err := json.Unmarshal(w.Session, &a.Session); err != nil {
			return &mcpcore.ParamError{Path: "/session", Reason: err.Error()}
		}
	}
	if w.Format != nil {
		if w.Format[0] != '"' {
			return &mcpcore.ParamError{Path: "/format", Reason: "got " + jsonTypeOf(w.Format) + ", want string"}
		}
		if err := json.Unmarshal(w.Format, &a.Format); err != nil {
			return &mcpcore.ParamError{Path: "/format", Reason: err.Error()}
		}
		if !validFormat(a.Format) {
			return &mcpcore.ParamError{Path: "/format", Reason: fmt.Sprintf("%q is not %s or %s", a.Format, FormatText, FormatJSON)}
		}
	}
	if w.Commands == nil {
		return &mcpcore.ParamError{Path: "/commands", Reason: "missing required argument"}
	}
	bufs := batchPool.Get().(*batchBufs)
	cmds, err := decodeCommands(w.Commands, bufs)
	if err != nil {
		batchPool.Put(bufs)
		return err
	}
	a.Commands, a.bufs = cmds, bufs
	return nil
}

// decodeCommands parses a batch's JSON, which decodeStrictly's strict
// parse has validated, into bufs (grown as needed). A first scan sizes it,
// so that three buffers hold it all: the commands, their arguments, and
// the arguments' bytes.
func decodeCommands(raw json.RawMessage, bufs *batchBufs) (Commands, error) {
	if raw[0] != '[' {
		return nil, &mcpcore.ParamError{Path: "/commands", Reason: "got " + jsonTypeOf(raw) + ", want array"}
	}
	var ncmds, nargs int
	for cmds := jsonscan.NewElements(raw); cmds.Next(); ncmds++ {
		if cmds.Value[0] != '[' {
			return nil, &mcpcore.ParamError{Path: fmt.Sprintf("/commands/%d", ncmds), Reason: "got " + jsonTypeOf(cmds.Value) + ", want array"}
		}
		n := 0
		for args := jsonscan.NewElements(cmds.Value); args.Next(); n++ {
		}
		if n == 0 {
			return nil, &mcpcore.ParamError{Path: fmt.Sprintf("/commands/%d", ncmds), Reason: "a command needs at least its name"}
		}
		nargs += n
	}
	out, args, buf := grow(bufs.cmds, ncmds), grow(bufs.args, nargs), grow(bufs.buf, len(raw))
	defer func() { bufs.cmds, bufs.args, bufs.buf = out, args, buf }()
	i := 0
	for cmds := jsonscan.NewElements(raw); cmds.Next(); i++ {
		first := len(args)
		j := 0
		for e := jsonscan.NewElements(cmds.Value); e.Next(); j++ {
			start := len(buf)
			var ae *resp.ArgError
			if buf, ae = resp.AppendArg(buf, e.Value); ae != nil {
				ae.Index = j
				return nil, engineError(respengine.CommandArgError(i, ae))
			}
			args = append(args, buf[start:len(buf):len(buf)])
		}
		out = append(out, args[first:len(args):len(args)])
	}
	return out, nil
}

// grow returns s emptied, with room for n elements.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// jsonTypeOf names the JSON type of the valid JSON value v.
func jsonTypeOf(v json.RawMessage) string {
	switch {
	case len(v) == 0:
		return "nothing"
	case v[0] == '"':
		return "string"
	case v[0] == '{':
		return "object"
	case v[0] == '[':
		return "array"
	case v[0] == 't' || v[0] == 'f':
		return "boolean"
	case v[0] == 'n':
		return "null"
	}
	return "number"
}

// decodeBatch decodes execute's arguments in one pass over raw (a JSON
// object, without surrounding space) into bufs: it validates the JSON as
// it goes and appends each argument's bytes, where the strict path scans
// the batch five times. It takes only what the strict path takes, with the
// same result: exactly the members "commands" (each command a non-empty
// array of arguments) and, optionally, "session" (a string) and "format"
// (text or json), each once, with keys and the session as plain ASCII text; arguments as
// [resp.AppendArg] takes them. For anything else it reports false,
// keeping nothing, and the strict path decodes raw and says what is wrong
// (FuzzDecodeBatch compares the two).
func decodeBatch(raw []byte, bufs *batchBufs) (cmds Commands, opts batchOptions, ok bool) {
	cmds, opts, end, ok := decodeBatchPrefix(raw, bufs)
	if !ok || jsonscan.SkipWS(raw, end) != len(raw) {
		return nil, batchOptions{}, false
	}
	return cmds, opts, true
}

// batchOptions are execute's arguments beside the commands.
type batchOptions struct{ session, format string }

// decodeBatchPrefix is decodeBatch of the object b begins with, whatever
// follows it: it returns the index just after the object.
func decodeBatchPrefix(b []byte, bufs *batchBufs) (cmds Commands, opts batchOptions, end int, ok bool) {
	s := batchScanner{b: b}
	if !s.expect('{') {
		return nil, opts, 0, false
	}
	var seenCommands, seenSession, seenFormat bool
	for closed := s.expect('}'); !closed; {
		key, ok := s.plainString()
		if !ok || !s.expect(':') {
			return nil, opts, 0, false
		}
		switch string(key) {
		case "commands":
			if seenCommands {
				return nil, opts, 0, false
			}
			seenCommands = true
			if cmds, ok = s.commands(bufs); !ok {
				return nil, opts, 0, false
			}
		case "session":
			if seenSession {
				return nil, opts, 0, false
			}
			seenSession = true
			sess, ok := s.plainString()
			if !ok {
				return nil, opts, 0, false
			}
			opts.session = string(sess)
		case "format":
			format, ok := s.plainString()
			if seenFormat || !ok || !validFormat(string(format)) {
				return nil, opts, 0, false
			}
			seenFormat = true
			opts.format = formatName(format)
		default:
			return nil, opts, 0, false
		}
		if !s.expect(',') {
			if !s.expect('}') {
				return nil, opts, 0, false
			}
			closed = true
		}
	}
	if !seenCommands {
		return nil, opts, 0, false
	}
	return cmds, opts, s.i, true
}

// validFormat reports whether f is a result format execute takes (empty
// is the default, text).
func validFormat(f string) bool { return f == "" || f == FormatText || f == FormatJSON }

// formatName returns the format f names (valid), without allocating.
func formatName(f []byte) string {
	switch string(f) {
	case FormatText:
		return FormatText
	case FormatJSON:
		return FormatJSON
	}
	return ""
}

// batchScanner is decodeBatch's position in its JSON.
type batchScanner struct {
	b []byte
	i int
}

// skipSpace moves past JSON whitespace and returns the position.
func (s *batchScanner) skipSpace() int {
	s.i = jsonscan.SkipWS(s.b, s.i)
	return s.i
}

// peek returns the next byte after whitespace, or 0 at the end.
func (s *batchScanner) peek() byte {
	if s.skipSpace() < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// expect moves past c, after whitespace, when it comes next.
func (s *batchScanner) expect(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

// plainString moves past a JSON string of printable ASCII without
// escapes ([jsonscan.PlainString]), returning its content (a view of the
// JSON).
func (s *batchScanner) plainString() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	content, end := jsonscan.PlainString(s.b, s.i)
	if end < 0 {
		return nil, false
	}
	s.i = end
	return content, true
}

// commands moves past the batch, an array of commands, appending it to
// bufs' memory, which it keeps (grown) whatever the outcome.
func (s *batchScanner) commands(bufs *batchBufs) (Commands, bool) {
	if !s.expect('[') {
		return nil, false
	}
	// An argument's bytes are never more than its JSON but where invalid
	// UTF-8 is replaced (append copes): one buffer the size of the
	// arguments' JSON holds them all.
	out, args, buf := bufs.cmds[:0], bufs.args[:0], grow(bufs.buf, len(s.b)-s.i)
	defer func() { bufs.cmds, bufs.args, bufs.buf = out, args, buf }()
	if s.expect(']') {
		return out, true
	}
	for {
		if !s.expect('[') || s.peek() == ']' {
			return nil, false // not a command, or one without its name
		}
		first := len(args)
		for {
			start := len(buf)
			if content, end := jsonscan.PlainString(s.b, s.i); end > 0 {
				// The common argument, a plain string right after the
				// bracket or comma, without arg's checks for the others.
				buf, s.i = append(buf, content...), end
			} else {
				var ok bool
				if buf, ok = s.arg(buf); !ok {
					return nil, false
				}
			}
			args = append(args, buf[start:len(buf):len(buf)])
			if s.i < len(s.b) && s.b[s.i] == ',' { // the common separator, without space
				s.i++
				continue
			}
			if !s.expect(',') {
				break
			}
		}
		if !s.expect(']') {
			return nil, false
		}
		out = append(out, args[first:len(args):len(args)])
		if !s.expect(',') {
			return out, s.expect(']')
		}
	}
}

// arg moves past one argument, appending its bytes to buf.
func (s *batchScanner) arg(buf []byte) ([]byte, bool) {
	start := s.skipSpace()
	if start == len(s.b) {
		return buf, false
	}
	var end int
	switch c := s.b[start]; {
	case c == '"':
		if content, ok := s.plainString(); ok {
			return append(buf, content...), true
		}
		// Escapes or non-ASCII: AppendArg decodes the string and rejects
		// what is not JSON; invalid UTF-8 is left to the strict path.
		if end = jsonscan.SkipValue(s.b, start); end < 0 || !utf8.Valid(s.b[start:end]) {
			return buf, false
		}
	case c == '{':
		// {"base64": ...}: AppendArg decodes it with encoding/json, which
		// rejects what is not JSON.
		if end = jsonscan.SkipValue(s.b, start); end < 0 {
			return buf, false
		}
	case c == '-' || '0' <= c && c <= '9':
		// An integer, in JSON's grammar (AppendArg would take "007");
		// fractions and exponents are left to the strict path.
		end = start
		if c == '-' {
			end++
		}
		switch {
		case end < len(s.b) && s.b[end] == '0':
			end++
		case end < len(s.b) && '1' <= s.b[end] && s.b[end] <= '9':
			for end < len(s.b) && '0' <= s.b[end] && s.b[end] <= '9' {
				end++
			}
		default:
			return buf, false
		}
	default:
		return buf, false
	}
	out, ae := resp.AppendArg(buf, s.b[start:end])
	if ae != nil {
		return buf, false
	}
	s.i = end
	return out, true
}
