package httpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
)

// The log level of a shared legacy session is set by the client through
// whichever instance serves its logging/setLevel, but the SDK filters log
// messages by the level its own session copy last saw: a copy on another
// instance (the one holding the client's GET stream, say) would go on
// dropping or sending by a stale level. So for a session in the
// SessionStore, the SDK copy's level is pinned at "debug" (the level of a
// setLevel on its way to the SDK is rewritten, after the record saved the
// client's own), and each log message on its way out is checked against
// the level in the session's record.

// pinnedLevel is the level the SDK copy of a shared session keeps: the
// lowest, so that the SDK passes every message to the check here.
const pinnedLevel mcp.LoggingLevel = "debug"

// levelRank orders the levels of RFC 5424 as the SDK does; a level it does
// not know ranks as debug.
func levelRank(l mcp.LoggingLevel) int {
	switch l {
	case "info":
		return 1
	case "notice":
		return 2
	case "warning":
		return 3
	case "error":
		return 4
	case "critical":
		return 5
	case "alert":
		return 6
	case "emergency":
		return 7
	}
	return 0
}

// pinLevel rewrites the level of each logging/setLevel request among msgs
// (decoded is msgs as the SDK decodes them) to pinnedLevel, so that the
// SDK copy keeps passing every message; the response is the same. A
// request whose params the SDK would refuse anyway is left alone.
func pinLevel(msgs [][]byte, decoded []jsonrpc.Message) {
	for i, m := range decoded {
		req, ok := m.(*jsonrpc.Request)
		if !ok || req.Method != "logging/setLevel" || !req.IsCall() {
			continue
		}
		var params map[string]json.RawMessage
		if json.Unmarshal(req.Params, &params) != nil || params["level"] == nil {
			continue
		}
		params["level"] = json.RawMessage(`"` + pinnedLevel + `"`)
		p, err := json.Marshal(params)
		if err != nil {
			continue
		}
		pinned := *req
		pinned.Params = p
		if out, err := jsonrpc.EncodeMessage(&pinned); err == nil {
			msgs[i] = out
		}
	}
}

// admits reports whether the client wants a log message of level now: the
// level in the session's record is set and level is at or above it, or it
// is not set and the message is sent by default (byDefault: its _meta
// has wire.DefaultLogMeta, see mcpcore's Session.LogByDefault). The
// record is read for every message (without extending it), so a level set
// through any instance applies at once; a session whose record is gone, or
// a store that fails, gets no log messages.
func (s *session) admits(ctx context.Context, level mcp.LoggingLevel, byDefault bool) bool {
	rec, found, err := s.h.opts.SessionStore.Load(ctx, s.id, time.Time{})
	if err != nil {
		s.h.logger.Warn("session store: load failed; log message dropped", "session", s.id, "error", err)
		return false
	}
	if !found {
		return false
	}
	var st struct {
		LogLevel mcp.LoggingLevel `json:"logLevel"`
	}
	if err := json.Unmarshal(rec.State, &st); err != nil {
		s.h.logger.Warn("session store: undecodable state; log message dropped", "session", s.id, "error", err)
		return false
	}
	s.mu.Lock()
	s.state.LogLevel = st.LogLevel // so that a save from this copy keeps it
	s.mu.Unlock()
	if st.LogLevel == "" {
		return byDefault
	}
	return levelRank(level) >= levelRank(st.LogLevel)
}

// logLevelOf returns the level of msg if it is a log notification, and
// whether it is sent by default (its _meta has wire.DefaultLogMeta true).
func logLevelOf(msg []byte) (level mcp.LoggingLevel, byDefault, ok bool) {
	if !bytes.Contains(msg, []byte(`"notifications/message"`)) {
		return "", false, false
	}
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return "", false, false
	}
	req, isReq := m.(*jsonrpc.Request)
	if !isReq || req.Method != "notifications/message" || req.IsCall() {
		return "", false, false
	}
	var params struct {
		Level mcp.LoggingLevel `json:"level"`
		Meta  map[string]any   `json:"_meta"`
	}
	json.Unmarshal(req.Params, &params) // a level missing or malformed ranks as debug
	return params.Level, params.Meta[wire.DefaultLogMeta] == true, true
}
