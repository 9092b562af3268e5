package respadmin

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// route is one entry of the route table, which both the handler and the
// OpenAPI document are built from.
type route struct {
	method, path string
	summary      string
	role         Role // the least role that may call it (POST: see the body's rules too)
	params       []param
	body         map[string]any // POST: the JSON Schema of the body
	produces     string         // the success content type (default application/json)
	audit        string         // GET: the action every request is audited as (see auditMark), or ""
	get          func(s *Server, w http.ResponseWriter, r *http.Request, c caller) error
	post         func(s *Server, ctx context.Context, c caller, body json.RawMessage, rec *auditEntry) (any, error)
}

// param is a path or query parameter.
type param struct {
	name, in, typ, desc string
	required            bool
}

// Bounds of the paging parameters.
const (
	defaultCount  = 100
	maxCount      = 1000
	maxValueBytes = 1 << 20 // a string value larger than this is refused (too_large), never cut
)

// routeTable is every route the gateway serves.
func (s *Server) routeTable() []*route {
	q := func(name, typ, desc string) param { return param{name: name, in: "query", typ: typ, desc: desc} }
	return []*route{
		{method: "GET", path: "/api/openapi.json", role: RoleViewer, summary: "this document",
			get: func(s *Server, w http.ResponseWriter, _ *http.Request, _ caller) error {
				w.Header().Set("Content-Type", "application/json")
				w.Write(s.openapi)
				return nil
			}},
		{method: "GET", path: "/api/info", role: RoleViewer, summary: "INFO as typed sections",
			params: []param{q("section", "string", "one INFO section (default: all)")}, get: getInfo},
		{method: "GET", path: "/api/keys", role: RoleViewer, summary: "SCAN with each key's type, TTL and memory usage; string values when revealed",
			params: []param{q("match", "string", "SCAN MATCH pattern"), q("type", "string", "SCAN TYPE (string, list, hash, set, zset, stream)"),
				q("count", "integer", "SCAN COUNT hint, 1..1000 (default 100)"), q("cursor", "string", "the cursor of the previous page (default 0)"),
				q("reveal", "boolean", "add string values (needs the reveal role)")}, get: getKeys},
		{method: "GET", path: "/api/keys/{key}", role: RoleViewer, summary: "one key: type, TTL, memory, length and a page of its value when revealed",
			params: []param{{name: "key", in: "path", typ: "string", desc: "the key (URL-escaped)", required: true},
				q("cursor", "string", "where the page starts: an index (list, zset), a SCAN cursor (hash, set) or an exclusive stream id (default: the start)"),
				q("count", "integer", "elements per page, 1..1000 (default 100)")}, get: getKey},
		{method: "GET", path: "/api/clients", role: RoleViewer, summary: "CLIENT LIST, one object per client", get: getClients},
		{method: "GET", path: "/api/slowlog", role: RoleViewer, summary: "SLOWLOG GET",
			params: []param{q("count", "integer", "entries, 1..1000 (default 100)")}, get: getSlowlog},
		{method: "GET", path: "/api/latency", role: RoleViewer, summary: "LATENCY LATEST", get: getLatency},
		{method: "GET", path: "/api/memory", role: RoleViewer, summary: "MEMORY STATS", get: getMemory},
		{method: "GET", path: "/api/config", role: RoleViewer, summary: "CONFIG GET, secrets masked",
			params: []param{q("pattern", "string", "CONFIG GET pattern (default *)")}, get: getConfig},
		{method: "GET", path: "/api/audit", role: RoleOperator, summary: "the latest audit entries, oldest first",
			params: []param{q("limit", "integer", "entries, 1..1000 (default 100)")}, get: getAudit},
		{method: "POST", path: "/api/config", role: RoleOperator, summary: "CONFIG SET one parameter (secret parameters: admin)",
			body: configBodySchema, post: postConfig},
		{method: "POST", path: "/api/storage/action", role: RoleOperator, summary: "a storage action; destructive ones need confirmed: true",
			body: actionBodySchema(), post: postAction},
		{method: "GET", path: "/metrics", role: RoleViewer, summary: "Prometheus text exposition of INFO", produces: "text/plain", get: getMetrics},
		{method: "GET", path: "/api/replication/snapshot", role: RoleAdmin, summary: "an RDB snapshot over the replication protocol (when enabled)",
			produces: "application/octet-stream", get: getSnapshot, audit: "snapshot"},
		{method: "GET", path: "/api/live", role: RoleViewer, summary: "WebSocket: overview, INFO deltas, keyspace notifications, MONITOR (admin)",
			params: []param{q("interval_ms", "integer", "INFO delta period, 100..60000 (default 1000)"),
				q("keyspace", "boolean", "subscribe to keyspace notifications (default true)"),
				q("monitor", "boolean", "stream MONITOR lines (admin; default false)"),
				q("sections", "string", "comma-separated INFO sections the overview and the deltas carry, e.g. commandstats,clients (default: all; an unknown one is a 400)"),
				q("deltas", "string", "entries (default): a changed INFO entry whole; fields: of an entry of k=v pairs (cmdstat_get, db0), only the pairs that changed")}, get: getLive},
	}
}

// intParam reads an integer query parameter within [1, max].
func intParam(r *http.Request, name string, def, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, badRequest("%s=%q: want an integer in [1, %d]", name, v, max)
	}
	return n, nil
}

// boolParam reads a boolean query parameter.
func boolParam(r *http.Request, name string, def bool) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("%s=%q: want true or false", name, v)
	}
	return b, nil
}

func getInfo(s *Server, w http.ResponseWriter, r *http.Request, _ caller) error {
	ctx, cancel := s.ctx(r)
	defer cancel()
	cmd := []string{"INFO"}
	if sec := r.URL.Query().Get("section"); sec != "" {
		cmd = append(cmd, sec)
	}
	v, err := s.pool.one(ctx, cmd...)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, parseInfo(string(v.Str)))
	return nil
}

// keyInfo is one key of GET /api/keys.
type keyInfo struct {
	Key    any    `json:"key"` // a string, or {"base64"} for bytes that are not UTF-8
	Type   string `json:"type"`
	TTLms  int64  `json:"ttl_ms"` // -1: no expiry
	Memory *int64 `json:"memory_bytes"`
	Value  any    `json:"value,omitempty"`
}

func getKeys(s *Server, w http.ResponseWriter, r *http.Request, c caller) error {
	qv := r.URL.Query()
	count, err := intParam(r, "count", defaultCount, maxCount)
	if err != nil {
		return err
	}
	reveal, err := boolParam(r, "reveal", false)
	if err != nil {
		return err
	}
	if reveal {
		auditMark(r, "reveal", qv.Get("match"))
		if err := s.mayReveal(c); err != nil {
			return err
		}
	}
	cursor := qv.Get("cursor")
	if cursor == "" {
		cursor = "0"
	}
	if _, err := strconv.ParseUint(cursor, 10, 64); err != nil {
		return badRequest("cursor=%q: want the decimal cursor of the previous page", cursor)
	}
	cmd := []string{"SCAN", cursor, "COUNT", strconv.Itoa(count)}
	if m := qv.Get("match"); m != "" {
		cmd = append(cmd, "MATCH", m)
	}
	if t := qv.Get("type"); t != "" {
		cmd = append(cmd, "TYPE", t)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	v, err := s.pool.one(ctx, cmd...)
	if err != nil {
		return err
	}
	if len(v.Elems) != 2 {
		return unavailable(errUnexpected("SCAN"))
	}
	next, names := string(v.Elems[0].Str), v.Elems[1].Elems
	keys := make([]keyInfo, len(names))
	if len(names) > 0 {
		var cmds [][]string
		for _, k := range names {
			key := string(k.Str)
			cmds = append(cmds, []string{"TYPE", key}, []string{"PTTL", key}, []string{"MEMORY", "USAGE", key})
			if reveal {
				cmds = append(cmds, []string{"STRLEN", key})
			}
		}
		per := 3
		if reveal {
			per = 4
		}
		replies, err := s.pool.run(ctx, cmds...)
		if err != nil {
			return err
		}
		var gets [][]string
		var getAt []int
		for i, k := range names {
			rs := replies[i*per:]
			keys[i] = keyInfo{Key: text(k.Str), Type: string(rs[0].Str), TTLms: rs[1].Int}
			if rs[2].Kind == resp.KindInteger {
				m := rs[2].Int
				keys[i].Memory = &m
			}
			if reveal && keys[i].Type == "string" && rs[3].Int <= maxValueBytes {
				gets = append(gets, []string{"GET", string(k.Str)})
				getAt = append(getAt, i)
			}
		}
		if len(gets) > 0 {
			vals, err := s.pool.run(ctx, gets...)
			if err != nil {
				return err
			}
			for j, i := range getAt {
				keys[i].Value = vals[j]
			}
		}
	}
	if err := s.auditServe(r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"cursor": next, "keys": keys, "values_revealed": reveal})
	return nil
}

// mayReveal refuses a caller whose role the reveal setting does not admit.
func (s *Server) mayReveal(c caller) error {
	if s.opts.Reveal == RoleNone {
		return forbidden("values are hidden: the gateway's reveal setting is off")
	}
	if c.role < s.opts.Reveal {
		return forbidden("values are shown to role %s and above; the token has %s", s.opts.Reveal, c.role)
	}
	return nil
}

func getKey(s *Server, w http.ResponseWriter, r *http.Request, c caller) error {
	key := r.PathValue("key")
	count, err := intParam(r, "count", defaultCount, maxCount)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	rs, err := s.pool.run(ctx, []string{"TYPE", key}, []string{"PTTL", key}, []string{"MEMORY", "USAGE", key})
	if err != nil {
		return err
	}
	typ := string(rs[0].Str)
	if typ == "none" {
		return &Error{Status: http.StatusNotFound, Kind: "not_found", Message: "no such key"}
	}
	out := map[string]any{"key": key, "type": typ, "ttl_ms": rs[1].Int, "memory_bytes": plain(rs[2])}
	if s.mayReveal(c) != nil {
		out["value_hidden"] = true
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	auditMark(r, "reveal", key)
	page, err := s.valuePage(ctx, key, typ, r.URL.Query().Get("cursor"), count)
	if err != nil {
		return err
	}
	for k, v := range page {
		out[k] = v
	}
	if err := s.auditServe(r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// valuePage reads a page of key's value: "length", "value" (the lossless
// JSON of the reply) and, for collections, "next_cursor" ("" at the end).
func (s *Server) valuePage(ctx context.Context, key, typ, cursor string, count int) (map[string]any, error) {
	index := func() (int, error) {
		if cursor == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return 0, badRequest("cursor=%q: want an index for a %s", cursor, typ)
		}
		return n, nil
	}
	var cmds [][]string
	var next func(reply resp.Value, length int64) string
	switch typ {
	case "string":
		cmds = [][]string{{"STRLEN", key}, {"GET", key}}
	case "list", "zset":
		i, err := index()
		if err != nil {
			return nil, err
		}
		lenCmd, rng := "LLEN", []string{"LRANGE", key, strconv.Itoa(i), strconv.Itoa(i + count - 1)}
		if typ == "zset" {
			lenCmd, rng = "ZCARD", []string{"ZRANGE", key, strconv.Itoa(i), strconv.Itoa(i + count - 1), "WITHSCORES"}
		}
		cmds = [][]string{{lenCmd, key}, rng}
		next = func(_ resp.Value, length int64) string {
			if int64(i+count) < length {
				return strconv.Itoa(i + count)
			}
			return ""
		}
	case "hash", "set":
		if cursor == "" {
			cursor = "0"
		}
		lenCmd, scan := "HLEN", "HSCAN"
		if typ == "set" {
			lenCmd, scan = "SCARD", "SSCAN"
		}
		cmds = [][]string{{lenCmd, key}, {scan, key, cursor, "COUNT", strconv.Itoa(count)}}
		next = func(reply resp.Value, _ int64) string {
			if len(reply.Elems) == 2 && string(reply.Elems[0].Str) != "0" {
				return string(reply.Elems[0].Str)
			}
			return ""
		}
	case "stream":
		start := "-"
		if cursor != "" {
			start = "(" + cursor
		}
		cmds = [][]string{{"XLEN", key}, {"XRANGE", key, start, "+", "COUNT", strconv.Itoa(count)}}
		next = func(reply resp.Value, _ int64) string {
			if len(reply.Elems) == count {
				last := reply.Elems[len(reply.Elems)-1]
				if len(last.Elems) > 0 {
					return string(last.Elems[0].Str)
				}
			}
			return ""
		}
	default:
		return map[string]any{"value_unsupported": "the gateway reads strings, lists, hashes, sets, sorted sets and streams; use the RESP tools for " + typ}, nil
	}
	if typ == "string" {
		n, err := s.pool.one(ctx, "STRLEN", key)
		if err != nil {
			return nil, err
		}
		if n.Int > maxValueBytes {
			return nil, &Error{Status: http.StatusRequestEntityTooLarge, Kind: "too_large",
				Message: "the value has " + strconv.FormatInt(n.Int, 10) + " bytes; the gateway returns at most " + strconv.Itoa(maxValueBytes) + " (use GETRANGE through the RESP tools)"}
		}
	}
	rs, err := s.pool.run(ctx, cmds...)
	if err != nil {
		return nil, err
	}
	for i, v := range rs {
		if v.IsError() {
			return nil, targetError(cmds[i][0], v)
		}
	}
	out := map[string]any{"length": rs[0].Int, "value": rs[1]}
	if next != nil {
		out["next_cursor"] = next(rs[1], rs[0].Int)
	}
	return out, nil
}

// errUnexpected reports a reply of an unexpected shape.
type errUnexpected string

func (e errUnexpected) Error() string { return "unexpected reply shape to " + string(e) }

func getClients(s *Server, w http.ResponseWriter, r *http.Request, _ caller) error {
	ctx, cancel := s.ctx(r)
	defer cancel()
	v, err := s.pool.one(ctx, "CLIENT", "LIST")
	if err != nil {
		return err
	}
	var clients []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(v.Str)), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		c := map[string]any{}
		for _, f := range strings.Fields(line) {
			k, val, _ := strings.Cut(f, "=")
			if n, err := strconv.ParseInt(val, 10, 64); err == nil {
				c[k] = n
			} else {
				c[k] = val
			}
		}
		clients = append(clients, c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"clients": clients})
	return nil
}

func getSlowlog(s *Server, w http.ResponseWriter, r *http.Request, _ caller) error {
	count, err := intParam(r, "count", defaultCount, maxCount)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	rs, err := s.pool.run(ctx, []string{"SLOWLOG", "GET", strconv.Itoa(count)}, []string{"SLOWLOG", "LEN"})
	if err != nil {
		return err
	}
	if rs[0].IsError() {
		return targetError("SLOWLOG", rs[0])
	}
	entries := []map[string]any{}
	for _, e := range rs[0].Elems {
		if len(e.Elems) < 4 {
			continue
		}
		m := map[string]any{"id": e.Elems[0].Int, "time": e.Elems[1].Int, "duration_us": e.Elems[2].Int, "args": plain(e.Elems[3])}
		if len(e.Elems) >= 6 {
			m["client_addr"], m["client_name"] = string(e.Elems[4].Str), string(e.Elems[5].Str)
		}
		entries = append(entries, m)
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries, "length": rs[1].Int})
	return nil
}

func getLatency(s *Server, w http.ResponseWriter, r *http.Request, _ caller) error {
	ctx, cancel := s.ctx(r)
	defer cancel()
	v, err := s.pool.one(ctx, "LATENCY", "LATEST")
	if err != nil {
		return err
	}
	events := []map[string]any{}
	for _, e := range v.Elems {
		if len(e.Elems) >= 4 {
			events = append(events, map[string]any{"event": string(e.Elems[0].Str), "time": e.Elems[1].Int, "latest_ms": e.Elems[2].Int, "max_ms": e.Elems[3].Int})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": events})
	return nil
}

func getMemory(s *Server, w http.ResponseWriter, r *http.Request, _ caller) error {
	ctx, cancel := s.ctx(r)
	defer cancel()
	v, err := s.pool.one(ctx, "MEMORY", "STATS")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, plain(v))
	return nil
}

func getConfig(s *Server, w http.ResponseWriter, r *http.Request, _ caller) error {
	pattern := r.URL.Query().Get("pattern")
	if pattern == "" {
		pattern = "*"
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	v, err := s.pool.one(ctx, "CONFIG", "GET", pattern)
	if err != nil {
		return err
	}
	cfg := map[string]any{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		name, val := string(v.Elems[i].Str), string(v.Elems[i+1].Str)
		cfg[name] = maskConfig(name, val)
	}
	writeJSON(w, http.StatusOK, map[string]any{"config": cfg})
	return nil
}

// secretConfig reports whether a configuration parameter holds a secret:
// its value is masked in replies and audit entries, and only admins set it.
func secretConfig(name string) bool {
	name = strings.ToLower(name)
	return strings.Contains(name, "pass") || strings.Contains(name, "auth") || strings.Contains(name, "secret")
}

// maskConfig returns "***" for a non-empty secret value.
func maskConfig(name, val string) string {
	if secretConfig(name) && val != "" {
		return "***"
	}
	return val
}

func getAudit(s *Server, w http.ResponseWriter, r *http.Request, _ caller) error {
	limit, err := intParam(r, "limit", defaultCount, maxCount)
	if err != nil {
		return err
	}
	if s.audit == nil {
		return noAudit()
	}
	entries, err := s.audit.tail(limit)
	if err != nil {
		return &Error{Status: http.StatusInternalServerError, Kind: "internal", Message: err.Error()}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
	return nil
}
