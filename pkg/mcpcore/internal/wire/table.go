package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxMarks bounds the cancellation marks a Table keeps for requests whose
// ids it does not translate. A mark is removed when the request's response
// is dropped or a new request reuses the id; one the client sent for a
// request that had already been answered stays until then, so a client that
// keeps cancelling answered requests would otherwise grow the table without
// bound. Beyond maxMarks the oldest mark is forgotten (and that request, if
// it is still running, is answered after all).
const maxMarks = 1024

// Table translates the JSON-RPC ids of one connection's requests that the
// SDK would not keep exactly, and tracks the requests the peer cancelled. It
// is safe for concurrent use. The zero value is not usable: call NewTable.
type Table struct {
	// tokenJSON is the JSON text every token starts with:
	// `"\u0000mcpkit:<16 random hex digits>:`; a token is that prefix, a
	// decimal counter and the closing quote. No peer sends it: it starts with
	// a NUL character, and the random part is never shown to the peer.
	tokenJSON []byte

	// active counts tokens and marks, so that Outbound costs nothing while
	// there are none.
	active atomic.Int64

	mu     sync.Mutex
	next   uint64
	tokens map[uint64]*token // in-flight translated requests, by counter
	byRaw  map[string]uint64 // raw id text -> latest counter with that text
	// Cancellation marks of untranslated requests, by final id; the value
	// orders them for eviction.
	markNum map[int64]uint64
	markStr map[string]uint64
	markSeq uint64
}

// token is one translated request in flight.
type token struct {
	raw       []byte // the id exactly as the peer sent it
	cancelled bool
}

// NewTable returns an empty Table with a fresh random token prefix.
func NewTable() *Table {
	var r [8]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails
	prefix := make([]byte, 0, 32)
	prefix = append(prefix, `"\u0000mcpkit:`...)
	prefix = hex.AppendEncode(prefix, r[:])
	prefix = append(prefix, ':')
	return &Table{tokenJSON: prefix}
}

// message is what the scanner found in one message: the value of the last
// top-level member of each name (the SDK's decoder keeps the last one),
// and the object's extent.
type message struct {
	idAt, idEnd    int // span of the id value; idAt < 0 when absent
	paramsAt       int // index of params in the message
	method, params []byte
	hasMethod      bool
	end, depth     int // jsonscan.Members' End and Depth
}

// scanMessage finds the members of msg that Inbound needs. It reports false
// when msg is not a complete JSON object as far as the scanner looks.
func scanMessage(msg []byte) (message, bool) {
	m := jsonscan.NewMembers(msg)
	r := message{idAt: -1}
	for m.Next() {
		switch {
		case jsonscan.KeyIs(m.Key, "id"):
			r.idAt, r.idEnd = m.ValueAt, m.ValueAt+len(m.Value)
		case jsonscan.KeyIs(m.Key, "method"):
			r.method, r.hasMethod = m.Value, true
		case jsonscan.KeyIs(m.Key, "params"):
			r.params, r.paramsAt = m.Value, m.ValueAt
		}
	}
	r.end, r.depth = m.End(), m.Depth()
	return r, r.end >= 0
}

// Scanned is one incoming message as a single pass of the scanner found
// it: the members [Table.Inbound] needs, and the object's extent. A
// transport that needs the extent too (to refuse data after the object,
// to check a depth limit) gets it with [Scan] and hands the result to
// [Table.InboundScanned], so that it passes over the message once where
// Inbound and its own checks would pass over it several times.
type Scanned struct {
	msg []byte
	m   message
	ok  bool
}

// Scan scans msg, one JSON-RPC message read from the peer, without
// decoding or validating it (see [jsonscan.Members]). It does not modify
// or keep anything but msg itself.
func Scan(msg []byte) Scanned {
	m, ok := scanMessage(msg)
	return Scanned{msg: msg, m: m, ok: ok}
}

// End returns the index in the scanned message just after its object's
// closing brace, or -1 when the message does not start (after whitespace)
// with a whole object as far as the scanner looks. Data after the object
// is not looked at. On valid JSON the end is the one a decoder finds.
func (s *Scanned) End() int { return s.m.end }

// Depth returns the deepest nesting of objects and arrays in the scanned
// object, its own braces included, as [jsonscan.Depth] counts it (see
// [jsonscan.Members.Depth]): when End is not -1 and the object is valid
// JSON, it is jsonscan.Depth of the object's text. It means nothing when
// End is -1.
func (s *Scanned) Depth() int { return s.m.depth }

// Inbound takes one JSON-RPC message read from the peer (an object; a batch
// must be split by the caller) and returns the message to hand to the SDK.
//
// A request (a message with "method") whose id is a JSON number the SDK
// would coerce through float64 — anything but a canonical integer literal
// within ±(2^53−1): big integers, fractions, exponents, -0 — gets a unique
// string token in place of its id, and the table remembers the id's exact
// text, which Outbound puts back in the response. It does so only when the
// SDK's decoder accepts the rewritten message as a call, so that every token
// is answered; otherwise msg is returned unchanged. Two requests in flight
// with the same such id get different tokens, where the SDK would have
// refused the second as a duplicate.
//
// A "notifications/cancelled" message marks the request its
// params.requestId names as cancelled, so that Outbound drops its response.
// A requestId naming a translated request is rewritten to that request's
// token; a requestId the SDK would coerce that names no translated request
// in flight is rewritten to a token that names nothing, so that the SDK
// does not cancel an unrelated request whose id it coerces to the same
// value. The requestId must be written as the request's id was (same JSON
// text for translated ids, the same number or string otherwise).
//
// Members are found as the SDK's decoder finds them: keys case-sensitively
// after unescaping, the last of duplicates winning. Requests with canonical
// integer or string ids, notifications and responses are returned unchanged
// without allocating. The returned slice may be msg itself or a new slice;
// msg is never modified.
func (t *Table) Inbound(msg []byte) []byte {
	out, _ := t.InboundScanned(Scan(msg))
	return out
}

// InboundScanned is [Table.Inbound] of the message s was scanned from
// (with [Scan]), without scanning it again. rewritten reports whether out
// is a new slice, the message with an id or a cancellation's requestId
// rewritten; s's End and Depth describe the message as read, not that
// slice. When rewritten is false, out is the message itself.
func (t *Table) InboundScanned(s Scanned) (out []byte, rewritten bool) {
	msg, m := s.msg, s.m
	if !s.ok || !m.hasMethod {
		return msg, false // a response, or not an object the SDK would accept
	}
	out = t.inbound(msg, m)
	return out, !sameSlice(out, msg)
}

// InboundPlain serves a transport that has decoded a message already,
// validating it: id is the JSON text of the message's last "id" member
// (nil if it has none), hasMethod whether it has a "method" (a request or
// a notification), cancels whether that method is
// "notifications/cancelled". It reports whether Inbound would return the
// message unchanged, and then does what Inbound does for it (a request
// reusing an id that carries a mark clears the mark), so that the caller
// need not scan the message for Inbound. Otherwise (an id the SDK would
// coerce, a cancellation) it does nothing: call Inbound.
func (t *Table) InboundPlain(id []byte, hasMethod, cancels bool) bool {
	switch {
	case !hasMethod:
		return true // a response
	case cancels || len(id) > 0 && needsToken(id):
		return false
	case len(id) > 0 && t.active.Load() > 0:
		t.marked(id, true)
	}
	return true
}

// inbound is InboundScanned of msg, a request or notification scanned as m.
func (t *Table) inbound(msg []byte, m message) []byte {
	out := msg
	if m.idAt >= 0 {
		id := msg[m.idAt:m.idEnd]
		switch {
		case needsToken(id):
			out = t.translate(msg, m.idAt, m.idEnd)
			if len(out) != len(msg) { // translated: the members moved
				m, _ = scanMessage(out)
			}
		case t.active.Load() > 0:
			t.marked(id, true) // a reused id: the earlier request was answered
		}
	}
	if isMethod(m.method, "notifications/cancelled") {
		return t.cancel(out, m)
	}
	return out
}

// sameSlice reports whether a and b are the same slice of the same array.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// translate replaces the id at msg[start:end] with a fresh token.
func (t *Table) translate(msg []byte, start, end int) []byte {
	t.mu.Lock()
	n := t.next
	t.next++
	t.mu.Unlock()
	out := splice(msg, start, end, t.appendToken(nil, n))
	if dec, err := jsonrpc.DecodeMessage(out); err != nil {
		return msg // the SDK refuses it either way
	} else if req, ok := dec.(*jsonrpc.Request); !ok || !req.IsCall() {
		return msg
	}
	raw := string(msg[start:end])
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tokens == nil {
		t.tokens = make(map[uint64]*token)
		t.byRaw = make(map[string]uint64)
	}
	t.tokens[n] = &token{raw: []byte(raw)}
	t.byRaw[raw] = n
	t.active.Add(1)
	return out
}

// cancel handles msg, a notifications/cancelled message scanned as m. It
// marks nothing unless the SDK's decoder accepts the message it returns.
func (t *Table) cancel(msg []byte, m message) []byte {
	p := jsonscan.NewMembers(m.params)
	var rid []byte
	at := -1
	for p.Next() {
		if jsonscan.KeyIs(p.Key, "requestId") {
			rid, at = p.Value, p.ValueAt
		}
	}
	if rid == nil || p.End() < 0 {
		return msg
	}
	translated := needsToken(rid)
	if _, _, ok := finalID(rid); !ok && !translated {
		return msg // names no request
	}
	out := msg
	var n uint64
	if translated {
		var known bool
		t.mu.Lock()
		n, known = t.byRaw[string(rid)]
		t.mu.Unlock()
		tok := t.tokenJSON[:len(t.tokenJSON):len(t.tokenJSON)]
		if known {
			tok = t.appendToken(nil, n)
		} else {
			tok = append(tok, `none"`...) // a token that names nothing
		}
		at += m.paramsAt
		out = splice(msg, at, at+len(rid), tok)
		if !known {
			return out
		}
	}
	if !sdkCancels(out) {
		return msg
	}
	if !translated {
		t.mark(rid)
		return out
	}
	t.mu.Lock()
	if tok := t.tokens[n]; tok != nil {
		tok.cancelled = true
	}
	t.mu.Unlock()
	return out
}

// sdkCancels reports whether the SDK accepts msg, a notifications/cancelled
// message, and decodes its params, so that it cancels the request named.
// The params are checked with encoding/json, whose case-insensitive keys may
// make it refuse what the SDK accepts (then nothing is marked and the
// response is sent, as it would be without this package).
func sdkCancels(msg []byte) bool {
	dec, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return false
	}
	req, ok := dec.(*jsonrpc.Request)
	var p mcp.CancelledParams
	return ok && json.Unmarshal(req.Params, &p) == nil
}

// mark records that the untranslated request with final id id (a canonical
// integer or a string) was cancelled.
func (t *Table) mark(id []byte) {
	num, str, ok := finalID(id)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.markNum == nil {
		t.markNum = make(map[int64]uint64)
		t.markStr = make(map[string]uint64)
	}
	if len(t.markNum)+len(t.markStr) >= maxMarks {
		t.evictOldestMark()
	}
	t.markSeq++
	before := len(t.markNum) + len(t.markStr)
	if str != nil {
		t.markStr[string(str)] = t.markSeq
	} else {
		t.markNum[num] = t.markSeq
	}
	if len(t.markNum)+len(t.markStr) > before {
		t.active.Add(1)
	}
}

// evictOldestMark forgets the oldest mark; t.mu is held.
func (t *Table) evictOldestMark() {
	var (
		oldest       uint64 = ^uint64(0)
		oldNum       int64
		oldStr       string
		isNum, isStr bool
	)
	for k, v := range t.markNum {
		if v < oldest {
			oldest, oldNum, isNum, isStr = v, k, true, false
		}
	}
	for k, v := range t.markStr {
		if v < oldest {
			oldest, oldStr, isNum, isStr = v, k, false, true
		}
	}
	switch {
	case isNum:
		delete(t.markNum, oldNum)
	case isStr:
		delete(t.markStr, oldStr)
	default:
		return
	}
	t.active.Add(-1)
}

// marked reports whether id, an untranslated final id, carries a mark, and
// removes the mark if remove is set.
func (t *Table) marked(id []byte, remove bool) bool {
	num, str, ok := finalID(id)
	if !ok {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var found bool
	if str != nil {
		_, found = t.markStr[string(str)]
		if found && remove {
			delete(t.markStr, string(str))
		}
	} else {
		_, found = t.markNum[num]
		if found && remove {
			delete(t.markNum, num)
		}
	}
	if found && remove {
		t.active.Add(-1)
	}
	return found
}

// Outbound takes one encoded message about to be written to the peer and
// returns the bytes to write. For a response (it has "result" or "error" and
// no "method") whose id is a token, it restores the id's exact original
// text and forgets the token; if the peer cancelled that request (by token
// or, for an untranslated id, by a mark), it reports drop and the message
// must not be written. Requests and notifications, and responses to other
// requests, are returned unchanged without allocating; while the table
// holds no token and no mark, Outbound does not even look at msg.
//
// msg is expected to come from an encoder (one "id" member). Outbound may
// rewrite msg in place and return a prefix of it.
func (t *Table) Outbound(msg []byte) (out []byte, drop bool) {
	if t.active.Load() == 0 {
		return msg, false
	}
	m := jsonscan.NewMembers(msg)
	var (
		id                    []byte
		idAt                  int
		n                     uint64
		isToken               bool
		hasMethod, isResponse bool
	)
	for m.Next() {
		switch {
		case jsonscan.KeyIs(m.Key, "id"):
			id, idAt = m.Value, m.ValueAt
			n, isToken = t.tokenNumber(id)
			if !isToken && !t.marked(id, false) {
				return msg, false // neither translated nor cancelled
			}
		case jsonscan.KeyIs(m.Key, "method"):
			hasMethod = true
		case jsonscan.KeyIs(m.Key, "result"), jsonscan.KeyIs(m.Key, "error"):
			isResponse = true
		}
	}
	if id == nil || hasMethod || !isResponse {
		return msg, false
	}
	if isToken {
		tok := t.forget(n)
		if tok == nil {
			return msg, false
		}
		if tok.cancelled {
			return nil, true
		}
		return spliceInPlace(msg, idAt, idAt+len(id), tok.raw), false
	}
	if t.marked(id, true) {
		return nil, true
	}
	return msg, false
}

// Len reports how many translated requests and cancellation marks the
// table holds.
func (t *Table) Len() int { return int(t.active.Load()) }

// Abandon forgets the token of msg, a message Inbound returned, when the
// request will never be answered (its carrier was refused before the SDK
// handled it): otherwise the token would stay for the table's life. A
// message without a token of this table is ignored.
func (t *Table) Abandon(msg []byte) {
	if t.active.Load() == 0 {
		return
	}
	m, ok := scanMessage(msg)
	if !ok || m.idAt < 0 {
		return
	}
	n, isToken := t.tokenNumber(msg[m.idAt:m.idEnd])
	if !isToken {
		return
	}
	t.forget(n)
}

// forget removes token n and returns it, or nil when it is not in flight.
func (t *Table) forget(n uint64) *token {
	t.mu.Lock()
	defer t.mu.Unlock()
	tok := t.tokens[n]
	if tok != nil {
		delete(t.tokens, n)
		if t.byRaw[string(tok.raw)] == n {
			delete(t.byRaw, string(tok.raw))
		}
		t.active.Add(-1)
	}
	return tok
}

// appendToken appends the JSON text of token n to b.
func (t *Table) appendToken(b []byte, n uint64) []byte {
	b = append(b, t.tokenJSON...)
	b = strconv.AppendUint(b, n, 10)
	return append(b, '"')
}

// tokenNumber returns the counter of id, the JSON text of one of this
// table's tokens.
func (t *Table) tokenNumber(id []byte) (uint64, bool) {
	p := len(t.tokenJSON)
	if len(id) < p+2 || string(id[:p]) != string(t.tokenJSON) || id[len(id)-1] != '"' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(id[p:len(id)-1]), 10, 64)
	return n, err == nil
}

// needsToken reports whether v, a JSON value, is a number the SDK would not
// keep exactly: a valid JSON number that is not a canonical integer within
// ±(2^53−1).
func needsToken(v []byte) bool {
	return len(v) > 0 && (v[0] == '-' || ('0' <= v[0] && v[0] <= '9')) && validNumber(v) && !canonicalInt(v)
}

// canonicalInt reports whether v is an integer literal without sign
// ambiguity, leading zeros, fraction or exponent, within ±(2^53−1): the ids
// that survive the SDK's float64 decoding and int64 encoding unchanged.
func canonicalInt(v []byte) bool {
	s := v
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 16 {
		return false
	}
	if s[0] == '0' {
		return len(v) == 1 // "0", but not "-0" or "01"
	}
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + uint64(c-'0')
	}
	return n <= 1<<53-1
}

// validNumber reports whether v is exactly one JSON number.
func validNumber(v []byte) bool {
	i := 0
	if i < len(v) && v[i] == '-' {
		i++
	}
	switch {
	case i < len(v) && v[i] == '0':
		i++
	case i < len(v) && '1' <= v[i] && v[i] <= '9':
		i = digits(v, i)
	default:
		return false
	}
	if i < len(v) && v[i] == '.' {
		j := digits(v, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		j := digits(v, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(v)
}

func digits(v []byte, i int) int {
	for i < len(v) && '0' <= v[i] && v[i] <= '9' {
		i++
	}
	return i
}

// finalID returns the value of an untranslated id as the SDK holds it: a
// canonical integer (num) or a string (str, decoded; non-nil). ok is false
// for anything else.
func finalID(id []byte) (num int64, str []byte, ok bool) {
	switch {
	case len(id) >= 2 && id[0] == '"':
		if bytes.IndexByte(id, '\\') >= 0 {
			var s string
			if json.Unmarshal(id, &s) != nil {
				return 0, nil, false
			}
			return 0, []byte(s), true
		}
		return 0, id[1 : len(id)-1], true
	case canonicalInt(id):
		n, err := strconv.ParseInt(string(id), 10, 64)
		return n, nil, err == nil
	}
	return 0, nil, false
}

// isMethod reports whether v, a raw JSON value, is the string name.
func isMethod(v []byte, name string) bool {
	return len(v) > 0 && v[0] == '"' && jsonscan.KeyIs(v, name)
}

// splice returns a new slice: msg with msg[start:end] replaced by repl.
func splice(msg []byte, start, end int, repl []byte) []byte {
	out := make([]byte, 0, len(msg)-(end-start)+len(repl))
	out = append(out, msg[:start]...)
	out = append(out, repl...)
	return append(out, msg[end:]...)
}

// spliceInPlace is splice, reusing msg's array when repl is no longer than
// what it replaces.
func spliceInPlace(msg []byte, start, end int, repl []byte) []byte {
	if len(repl) > end-start {
		return splice(msg, start, end, repl)
	}
	n := copy(msg[start:], repl)
	n += copy(msg[start+n:], msg[end:])
	return msg[:start+n]
}
