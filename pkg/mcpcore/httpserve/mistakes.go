package httpserve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client mistakes: requests any client can send that the SDK refuses while
// logging them at ERROR, as if the server had failed (a 2026-07-28 ping,
// a second initialize, a call before initialize). The handler answers
// them itself, before the SDK sees them, with an error that says what to
// do instead, and logs them at Info with the client's address: they are
// the client's doing, and must not let any client fill the operator's
// error log.

// removedMethods are the methods the 2026-07-28 protocol does not have (a
// request declaring it in its _meta may not call them; see the SDK's
// ServerSession.handle).
var removedMethods = []string{"initialize", "ping", "notifications/initialized", "notifications/roots/list_changed",
	"logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// beforeInitialize are the calls the SDK accepts on a legacy session that
// is not initialized (its ServerSession.handle), server/discover included.
var beforeInitialize = []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "server/discover"}

// call is what the mistake checks read of a POST body: one JSON-RPC call's
// method, its id as sent and its params.
type call struct {
	method string
	id     []byte
	params []byte
}

// parseCall reads body as one JSON-RPC call without decoding its params;
// false for anything else (a notification, a batch, a response, a body
// that is not a call the SDK could read), which is left to the SDK.
func parseCall(body []byte) (call, bool) {
	var c call
	m := jsonscan.NewMembers(body)
	for m.Next() {
		switch {
		case jsonscan.KeyIs(m.Key, "method"):
			if json.Unmarshal(m.Value, &c.method) != nil {
				return call{}, false
			}
		case jsonscan.KeyIs(m.Key, "id"):
			c.id = m.Value
		case jsonscan.KeyIs(m.Key, "params"):
			c.params = m.Value
		}
	}
	if m.End() < 0 || c.method == "" || !validID(c.id) {
		return call{}, false
	}
	c.method = shortMethod(c.method)
	return c, true
}

// maxMethodBytes is the most of a method name that an answer or a log line
// repeats: any client chooses it, and the log must not grow by what it
// sends.
const maxMethodBytes = 64

// shortMethod returns method, cut to maxMethodBytes (on a character
// boundary, marked with "...") when it is longer. A cut name is no method
// of the lists above, so it is still told apart from them.
func shortMethod(method string) string {
	if len(method) <= maxMethodBytes {
		return method
	}
	cut := maxMethodBytes
	for cut > 0 && !utf8.RuneStart(method[cut]) {
		cut--
	}
	return method[:cut] + "..."
}

// validID reports whether id is the JSON text of a string or a number.
func validID(id []byte) bool {
	if len(id) == 0 || !json.Valid(id) {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || '0' <= c && c <= '9'
}

// declaredVersion returns the protocol version params' _meta declares for
// the request (io.modelcontextprotocol/protocolVersion), or "".
func declaredVersion(params []byte) string {
	p := jsonscan.NewMembers(params)
	for p.Next() {
		if !jsonscan.KeyIs(p.Key, "_meta") {
			continue
		}
		meta := jsonscan.NewMembers(p.Value)
		for meta.Next() {
			if jsonscan.KeyIs(meta.Key, mcp.MetaKeyProtocolVersion) {
				var v string
				json.Unmarshal(meta.Value, &v)
				return v
			}
		}
	}
	return ""
}

// route says where a POST goes, for the mistake checks.
type route uint8

const (
	routeStateless route = iota // the stateless era's handler
	routeSession                // an initialized legacy session
	routeNoSession              // a legacy POST without a session id
)

// mistake returns, when body is a call that is a client mistake on its
// route, the JSON-RPC error code and message to answer it with.
// A method the 2026-07-28 protocol removed is answered with HTTP 404, as
// that protocol asks (SEP-2575); the others with 200, as the SDK answers a
// JSON-RPC error.
func mistake(body []byte, rt route) (c call, code int64, message string, ok bool) {
	c, ok = parseCall(body)
	if !ok {
		return call{}, 0, "", false
	}
	removed := slices.Contains(removedMethods, c.method)
	if !removed && !(rt == routeSession && c.method == "initialize") &&
		!(rt == routeNoSession && !slices.Contains(beforeInitialize, c.method)) {
		// The common case (a call the route serves): no mistake whatever
		// the _meta says, so the params are not scanned for it.
		return call{}, 0, "", false
	}
	version := declaredVersion(c.params)
	switch {
	case version >= statelessVersion && removed:
		return c, jsonrpc.CodeMethodNotFound, fmt.Sprintf(
			"method %q does not exist in protocol %s, which this request declares in its _meta: that protocol has no %s (use server/discover to learn the server)",
			c.method, version, "initialize, ping, logging/setLevel or resources/subscribe"), true
	case version >= statelessVersion:
		return call{}, 0, "", false
	case rt == routeSession && c.method == "initialize":
		return c, jsonrpc.CodeInvalidRequest,
			"this session is already initialized: initialize opens a new session, so send it without the Mcp-Session-Id header", true
	case rt == routeNoSession && !slices.Contains(beforeInitialize, c.method):
		return c, jsonrpc.CodeInvalidRequest, fmt.Sprintf(
			"%q needs an initialized session: send initialize without an Mcp-Session-Id header first, then this request with the Mcp-Session-Id it returns (or declare protocol %s in the request's _meta)",
			c.method, statelessVersion), true
	}
	return call{}, 0, "", false
}

// refuseMistake answers body, a POST body, itself when it is a client
// mistake (see mistake), logging it at Info with the client's address, and
// reports whether it did.
func (h *Handler) refuseMistake(w http.ResponseWriter, r *http.Request, body []byte, rt route) bool {
	if r.Method != http.MethodPost {
		return false
	}
	c, code, message, ok := mistake(body, rt)
	if !ok {
		return false
	}
	h.logger.Info("refused a client's mistaken request", "remote_addr", r.RemoteAddr, "method", c.method, "reason", message)
	msg, _ := json.Marshal(message) // a string always marshals
	status := http.StatusOK         // a JSON-RPC error, as the SDK answers one
	if code == jsonrpc.CodeMethodNotFound {
		status = http.StatusNotFound // a removed method (see mistake)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, c.id, code, msg)
	return true
}
