package respadmin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"time"
)

// maxBodyBytes bounds a POST body.
const maxBodyBytes = 64 << 10

// servePost runs a POST route: the audit file must exist; the body must be
// JSON; the role and the route's own rules are checked; the outcome is
// recorded in the audit file before the answer is sent.
func (s *Server) servePost(w http.ResponseWriter, r *http.Request, rt *route, c caller) {
	if s.audit == nil {
		writeError(w, noAudit())
		return
	}
	rec := auditEntry{Time: time.Now().UTC(), Who: c.id, Role: c.role.String(), Method: r.Method, Path: rt.path}
	result, err := func() (any, error) {
		if c.role < rt.role {
			return nil, forbidden("%s %s needs role %s; the token has %s", rt.method, rt.path, rt.role, c.role)
		}
		body, err := readJSONBody(r)
		if err != nil {
			return nil, err
		}
		ctx, cancel := s.ctx(r)
		defer cancel()
		return rt.post(s, ctx, c, body, &rec)
	}()
	e := (*Error)(nil)
	rec.Outcome, rec.Status = "ok", http.StatusOK
	if err != nil {
		e = asError(err)
		rec.Outcome, rec.Status, rec.Error = "failed", e.Status, e.Message
		if e.Status < 500 {
			rec.Outcome = "refused"
		}
	}
	if aerr := s.audit.append(rec, true); aerr != nil {
		s.logger.Error("audit entry not written", "path", rt.path, "err", aerr)
		msg := "the audit entry could not be written: " + aerr.Error()
		if err == nil {
			msg += " (the action itself succeeded)"
		}
		writeError(w, &Error{Status: http.StatusInternalServerError, Kind: "internal", Message: msg})
		return
	}
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, result)
}

// readJSONBody reads a POST body: Content-Type application/json (which a
// browser cannot send cross-site without a preflight), at most 64 KiB.
func readJSONBody(r *http.Request) (json.RawMessage, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/json" {
		return nil, &Error{Status: http.StatusUnsupportedMediaType, Kind: "bad_request", Message: "the body must be application/json"}
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, badRequest("read the body: %v", err)
	}
	if len(b) > maxBodyBytes {
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Kind: "too_large", Message: "the body exceeds 64 KiB"}
	}
	return b, nil
}

// decodeBody decodes body strictly into v.
func decodeBody(body json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("body: %v", err)
	}
	if dec.More() {
		return badRequest("body: trailing data after the JSON object")
	}
	return nil
}

var configBodySchema = map[string]any{
	"type": "object", "additionalProperties": false, "required": []string{"parameter", "value"},
	"properties": map[string]any{
		"parameter": map[string]any{"type": "string", "description": "the configuration parameter (CONFIG SET name)"},
		"value":     map[string]any{"type": "string", "description": "its new value"},
	},
}

func postConfig(s *Server, ctx context.Context, c caller, body json.RawMessage, rec *auditEntry) (any, error) {
	var req struct {
		Parameter *string `json:"parameter"`
		Value     *string `json:"value"`
	}
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if req.Parameter == nil || *req.Parameter == "" || req.Value == nil {
		return nil, badRequest("body: parameter and value are required")
	}
	rec.Parameter, rec.Value = *req.Parameter, maskConfig(*req.Parameter, *req.Value)
	if secretConfig(*req.Parameter) && c.role < RoleAdmin {
		return nil, forbidden("%s holds a secret: setting it needs role admin", *req.Parameter)
	}
	if _, err := s.pool.one(ctx, "CONFIG", "SET", *req.Parameter, *req.Value); err != nil {
		return nil, err
	}
	return map[string]any{"parameter": *req.Parameter, "value": rec.Value, "ok": true}, nil
}

// storageAction is one action of POST /api/storage/action.
type storageAction struct {
	cmd         []string
	destructive bool // needs "confirmed": true
	role        Role
	doc         string
}

// storageActions are the actions POST /api/storage/action runs.
var storageActions = map[string]storageAction{
	"save":             {cmd: []string{"SAVE"}, role: RoleOperator, doc: "synchronous RDB save"},
	"bgsave":           {cmd: []string{"BGSAVE"}, role: RoleOperator, doc: "background RDB save"},
	"bgrewriteaof":     {cmd: []string{"BGREWRITEAOF"}, role: RoleOperator, doc: "background AOF rewrite"},
	"config_rewrite":   {cmd: []string{"CONFIG", "REWRITE"}, role: RoleOperator, doc: "write the running configuration to the config file"},
	"memory_purge":     {cmd: []string{"MEMORY", "PURGE"}, role: RoleOperator, doc: "ask the allocator to release memory"},
	"config_resetstat": {cmd: []string{"CONFIG", "RESETSTAT"}, destructive: true, role: RoleOperator, doc: "reset INFO statistics"},
	"slowlog_reset":    {cmd: []string{"SLOWLOG", "RESET"}, destructive: true, role: RoleOperator, doc: "clear the slow log"},
	"latency_reset":    {cmd: []string{"LATENCY", "RESET"}, destructive: true, role: RoleOperator, doc: "clear the latency events"},
	"flushdb":          {cmd: []string{"FLUSHDB"}, destructive: true, role: RoleOperator, doc: "delete every key of the gateway's database"},
	"flushall":         {cmd: []string{"FLUSHALL"}, destructive: true, role: RoleAdmin, doc: "delete every key of every database"},
}

// actionNames lists the storage actions, sorted.
func actionNames() []string {
	names := make([]string, 0, len(storageActions))
	for n := range storageActions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func actionBodySchema() map[string]any {
	var docs []string
	for _, n := range actionNames() {
		a := storageActions[n]
		d := n + ": " + a.doc
		if a.destructive {
			d += " (destructive: confirmed)"
		}
		if a.role == RoleAdmin {
			d += " (admin)"
		}
		docs = append(docs, d)
	}
	return map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"action"},
		"properties": map[string]any{
			"action":    map[string]any{"type": "string", "enum": actionNames(), "description": strings.Join(docs, "; ")},
			"confirmed": map[string]any{"type": "boolean", "description": "must be true for a destructive action"},
		},
	}
}

func postAction(s *Server, ctx context.Context, c caller, body json.RawMessage, rec *auditEntry) (any, error) {
	var req struct {
		Action    string `json:"action"`
		Confirmed bool   `json:"confirmed"`
	}
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	rec.Action, rec.Confirmed = req.Action, req.Confirmed
	a, ok := storageActions[req.Action]
	if !ok {
		return nil, badRequest("unknown action %q: want one of %s", req.Action, strings.Join(actionNames(), ", "))
	}
	if c.role < a.role {
		return nil, forbidden("%s needs role %s; the token has %s", req.Action, a.role, c.role)
	}
	if a.destructive && !req.Confirmed {
		return nil, &Error{Status: http.StatusConflict, Kind: "confirmation_required", Message: req.Action + " is destructive: send \"confirmed\": true"}
	}
	v, err := s.pool.one(ctx, a.cmd...)
	if err != nil {
		return nil, err
	}
	return map[string]any{"action": req.Action, "reply": plain(v)}, nil
}
