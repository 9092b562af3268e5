package httpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
)

// The legacy era is served here rather than by the SDK's stateful
// StreamableHTTPHandler, whose session table is closed to the outside: this
// package must count every session it opens, resume sessions from the
// SessionStore and see each message on its way in and out. What the SDK's
// handler does around its transports is done the same way here (header and
// method checks, the idle timer, the principal binding, closing a session
// whose initialize failed); the transports (mcp.StreamableServerTransport)
// do the rest.

// serveMCP serves /mcp: it reads the body, then sends the request to the
// handler of its era. A session header means a legacy session; an
// MCP-Protocol-Version of 2026-07-28 or later means the stateless era (the
// SDK client sets it on server/discover and on every later request);
// anything else is legacy (initialize, GET, DELETE).
func (h *Handler) serveMCP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		b, release, ok := h.readBody(w, r)
		if !ok {
			return
		}
		defer release()
		body = b
	}
	wire.StripRequestInfo(r.Header)
	if h.opts.RequestInfo {
		requestInfo(r, body)
	}
	switch {
	case r.Header.Get(headerSessionID) != "":
		h.serveLegacy(w, r, body)
	case r.Header.Get(headerProtocolVersion) >= statelessVersion:
		if h.refuseMistake(w, r, body, routeStateless) {
			return
		}
		h.serveStateless(w, r, body)
	default:
		h.serveLegacy(w, r, body)
	}
}

// requestInfo sets the headers of Options.RequestInfo on r, whose body
// is body: the id of a request sent alone (a batch's are not set).
func requestInfo(r *http.Request, body []byte) {
	r.Header.Set(wire.HeaderClientAddr, r.RemoteAddr)
	r.Header.Set(wire.HeaderHTTPVersion, wire.HTTPVersion(r.ProtoMajor, r.ProtoMinor))
	if id, ok := wire.RequestID(body); ok {
		r.Header.Set(wire.HeaderRequestID, id)
	}
}

// serveStateless serves a request of the stateless era through the SDK's
// stateless handler, with an id table for this request alone.
func (h *Handler) serveStateless(w http.ResponseWriter, r *http.Request, body []byte) {
	ids := wire.NewTable()
	if r.Method == http.MethodPost {
		msgs, isBatch := splitBody(body)
		inbound(ids, msgs)
		setBody(r, joinBody(msgs, isBatch))
	}
	h.stateless.ServeHTTP(newReplyWriter(w, r, ids), r)
}

// serveLegacy serves a request of the legacy era, checking what the SDK's
// stateful handler checks before it reaches a session.
func (h *Handler) serveLegacy(w http.ResponseWriter, r *http.Request, body []byte) {
	if v := r.Header.Get(headerProtocolVersion); v != "" && v < statelessVersion && !slices.Contains(h.versions, v) {
		http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (supported versions: %s)", strings.Join(h.versions, ",")), http.StatusBadRequest)
		return
	}
	id := r.Header.Get(headerSessionID)
	switch r.Method {
	case http.MethodPost:
		if mediaType(r.Header.Get("Content-Type")) != "application/json" {
			http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
			return
		}
		if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
			http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
			return
		}
		h.servePOST(w, r, id, body)
	case http.MethodGet:
		if _, streamOK := accepts(r.Header.Values("Accept")); !streamOK {
			http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
			return
		}
		if id == "" {
			http.Error(w, "Bad Request: GET requires an Mcp-Session-Id header", http.StatusBadRequest)
			return
		}
		if s, ok := h.lookup(w, r, id, true); ok {
			rw := newReplyWriter(w, r, s.ids)
			rw.setSession(s)
			s.transport.ServeHTTP(rw, r)
		}
	case http.MethodDelete:
		if id == "" {
			http.Error(w, "Bad Request: DELETE requires an Mcp-Session-Id header", http.StatusBadRequest)
			return
		}
		h.serveDELETE(w, r, id)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// serveDELETE ends a session everywhere: its store record goes first (so
// that every other instance refuses it from its next request on), then this
// instance's copy.
func (h *Handler) serveDELETE(w http.ResponseWriter, r *http.Request, id string) {
	s, ok := h.lookup(w, r, id, false)
	if !ok {
		return
	}
	if store := h.opts.SessionStore; store != nil {
		if err := store.Delete(r.Context(), id); err != nil {
			h.logger.Error("session store: delete failed", "session", id, "error", err)
			http.Error(w, "session store unavailable", http.StatusServiceUnavailable)
			return
		}
	}
	if s != nil {
		s.close()
	}
	w.WriteHeader(http.StatusNoContent)
}

// servePOST serves a legacy POST. Without a session id, it opens a session
// for it, as the SDK does: one that holds an initialize takes a slot under
// MaxSessions and stays if the initialize succeeds; any other is closed
// with the request. Which is which is decided with the SDK's own decoder,
// so that no session the SDK initializes goes uncounted (and whatever the
// decoding, only a session that took a slot outlives its request).
func (h *Handler) servePOST(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	msgs, isBatch := splitBody(body)
	if v := r.Header.Get(headerProtocolVersion); isBatch && v >= "2025-06-18" {
		http.Error(w, fmt.Sprintf("JSON-RPC batching is not supported in 2025-06-18 and later (request version: %s)", v), http.StatusBadRequest)
		return
	}
	var (
		s       *session
		rw      *replyWriter
		decoded []jsonrpc.Message
	)
	if id != "" {
		var ok bool
		if s, ok = h.lookup(w, r, id, true); !ok {
			return
		}
		if s.ss.InitializeParams() != nil && h.refuseMistake(w, r, body, routeSession) {
			return
		}
		rw = newReplyWriter(w, r, s.ids)
		inbound(s.ids, msgs)
		if h.opts.SessionStore != nil {
			decoded, _ = decodeMessages(msgs, isBatch) // the SDK answers a malformed body
		}
	} else {
		if h.refuseMistake(w, r, body, routeNoSession) {
			return
		}
		ids := wire.NewTable()
		rw = newReplyWriter(w, r, ids)
		inbound(ids, msgs)
		decoded, _ = decodeMessages(msgs, isBatch)
		initID, isInit := findInitialize(decoded)
		var err error
		if s, err = h.open(r.Context(), newSessionID(), principal(r), isInit, nil, ids); err != nil {
			h.refuseSession(rw, initID, err)
			return
		}
		var kept atomic.Bool
		if isInit {
			kept.Store(h.opts.SessionStore == nil)
			if !kept.Load() {
				h.saveOnInitialize(r.Context(), s, rw, initID, &kept)
			}
		}
		defer func() {
			if !kept.Load() || s.ss.InitializeParams() == nil {
				s.close() // not an initialize, or a failed one (as in the SDK)
			}
		}()
	}
	if h.opts.SessionStore != nil {
		if err := h.saveOnChange(r.Context(), s, rw, decoded); err != nil {
			h.logger.Error("session store: save failed", "session", s.id, "error", err)
			abandon(s.ids, msgs)
			http.Error(w, "session store unavailable", http.StatusServiceUnavailable)
			return
		}
	}
	if s.shared {
		pinLevel(msgs, decoded)
	}
	rw.setSession(s)
	setBody(r, joinBody(msgs, isBatch))
	s.startPOST()
	defer s.endPOST()
	s.transport.ServeHTTP(rw, r)
	if rw.refused() {
		// Nothing will answer these requests: give their ids back, or a
		// client sending refused requests would grow the table for the
		// session's life.
		abandon(s.ids, msgs)
	}
}

// abandon forgets the translated ids of msgs, which inbound rewrote.
func abandon(ids *wire.Table, msgs [][]byte) {
	for _, m := range msgs {
		ids.Abandon(m)
	}
}

// findInitialize returns the id of the first initialize request among msgs.
func findInitialize(msgs []jsonrpc.Message) (jsonrpc.ID, bool) {
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == "initialize" {
			return req.ID, true
		}
	}
	return jsonrpc.ID{}, false
}

// saveOnInitialize has the response to the initialize request id save the
// new session's record before the client sees it, so that the client's next
// request finds the session on any instance. If the record cannot be saved,
// the client gets an error in place of the result and the session is
// closed; *saved reports whether it was.
func (h *Handler) saveOnInitialize(ctx context.Context, s *session, rw *replyWriter, id jsonrpc.ID, saved *atomic.Bool) {
	rw.watchResponse(id, func(resp *jsonrpc.Response) []byte {
		if resp.Error != nil {
			return nil
		}
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(resp.Result, &res) // the SDK's own encoding of an InitializeResult
		err := s.save(ctx, func(st *mcp.ServerSessionState) {
			st.InitializeParams = s.ss.InitializeParams()
			st.NegotiatedProtocolVersion = res.ProtocolVersion
		})
		if err != nil {
			h.logger.Error("session store: save failed", "session", s.id, "error", err)
			return storeError(resp.ID, err)
		}
		saved.Store(true)
		return nil
	})
}

// saveOnChange saves the session state the messages of a POST change: at
// notifications/initialized before the SDK sees it (the client gets 202
// only once it is saved), at a successful logging/setLevel before the
// client sees the response (which becomes an error if the save fails).
func (h *Handler) saveOnChange(ctx context.Context, s *session, rw *replyWriter, msgs []jsonrpc.Message) error {
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		switch {
		case req.Method == "notifications/initialized" && !req.IsCall():
			params := new(mcp.InitializedParams)
			json.Unmarshal(req.Params, params) // the SDK accepts absent params
			err := s.save(ctx, func(st *mcp.ServerSessionState) {
				if st.InitializeParams != nil && st.InitializedParams == nil {
					st.InitializedParams = params
				}
			})
			if err != nil {
				return err
			}
		case req.Method == "logging/setLevel" && req.IsCall():
			var params mcp.SetLoggingLevelParams
			if json.Unmarshal(req.Params, &params) != nil {
				continue // the SDK refuses it
			}
			rw.watchResponse(req.ID, func(resp *jsonrpc.Response) []byte {
				if resp.Error != nil {
					return nil
				}
				if err := s.save(ctx, func(st *mcp.ServerSessionState) { st.LogLevel = params.Level }); err != nil {
					h.logger.Error("session store: save failed", "session", s.id, "error", err)
					return storeError(resp.ID, err)
				}
				return nil
			})
		}
	}
	return nil
}

// storeError is the JSON-RPC error response that replaces a response whose
// state change could not be saved.
func storeError(id jsonrpc.ID, err error) []byte {
	msg, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code: jsonrpc.CodeInternalError, Message: "session store unavailable: " + err.Error(),
	}})
	return msg
}

// accepts reports whether Accept headers admit JSON and SSE, as the SDK's
// handler reads them.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// mediaType returns the media type of a Content-Type ("" if malformed).
func mediaType(contentType string) string {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return t
}
