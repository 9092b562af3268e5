package respadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/mcpkit/mcpkit/pkg/resp"
)

// LiveOptions bounds the /api/live WebSocket connections. Zero fields take
// the defaults.
type LiveOptions struct {
	// MaxConnections is how many live connections may be open at once
	// (default 16); one more is refused with 429.
	MaxConnections int
	// QueueFrames is how many frames one connection may have waiting to be
	// written (default 256). A frame that finds the queue full is dropped
	// and counted, and a "dropped" frame reports the count.
	QueueFrames int
	// MaxFrameBytes bounds one frame (default 64 KiB); a larger one (a long
	// MONITOR line) is dropped and counted the same way, never cut.
	MaxFrameBytes int
	// WriteTimeout bounds writing one frame to a slow client (default
	// 10 s); beyond it the connection is closed.
	WriteTimeout time.Duration
}

func (o *LiveOptions) fill() error {
	if o.MaxConnections == 0 {
		o.MaxConnections = 16
	}
	if o.QueueFrames == 0 {
		o.QueueFrames = 256
	}
	if o.MaxFrameBytes == 0 {
		o.MaxFrameBytes = 64 << 10
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.MaxConnections < 0 || o.QueueFrames < 1 || o.MaxFrameBytes < 1024 || o.WriteTimeout < 0 {
		return errors.New("respadmin: live limits must be positive (max frame at least 1024 bytes)")
	}
	return nil
}

// liveSet counts the open live connections and waits for them at Close.
type liveSet struct {
	mu sync.Mutex
	n  int
	wg sync.WaitGroup
}

func (l *liveSet) acquire(max int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n >= max {
		return false
	}
	l.n++
	l.wg.Add(1)
	return true
}

func (l *liveSet) release() {
	l.mu.Lock()
	l.n--
	l.mu.Unlock()
	l.wg.Done()
}

func (l *liveSet) wait() { l.wg.Wait() }

// The live interval's bounds.
const (
	minLiveInterval = 100 * time.Millisecond
	maxLiveInterval = time.Minute
)

// liveStream is one live connection's frame queue.
type liveStream struct {
	frames  chan []byte
	max     int
	mu      sync.Mutex
	dropped int64 // frames dropped since the last "dropped" frame
	seq     int64
}

// push queues a frame, or drops and counts it when the queue is full or
// the frame too large. The frame gets the next sequence number.
func (ls *liveStream) push(frame map[string]any) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.seq++
	frame["seq"] = ls.seq
	frame["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(frame)
	if err != nil || len(b) > ls.max {
		ls.dropped++
		return
	}
	select {
	case ls.frames <- b:
	default:
		ls.dropped++
	}
}

// takeDropped returns and resets the dropped count.
func (ls *liveStream) takeDropped() int64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	n := ls.dropped
	ls.dropped = 0
	return n
}

// getLive serves the /api/live WebSocket: an "overview" frame (INFO, the
// database size, the keyspace-notification setting, the limits), then
// "info_delta" frames every interval_ms with the INFO fields that changed,
// "keyspace" frames for keyspace notifications (PSUBSCRIBE on a connection
// of its own; the server's notify-keyspace-events decides what it sends),
// "monitor" frames (admin, monitor=true; MONITOR on a connection of its
// own) and "dropped" frames counting what did not fit. sections= narrows
// the overview's INFO and the deltas to some sections, and deltas=fields
// sends only the changed pairs of an entry such as cmdstat_get: both are
// opt-in, so that a client of the original format keeps it. The
// subscriptions are acknowledged before the overview is read: every change
// after the overview frame is seen. Each frame has "type", "seq" and
// "time". The client sends nothing; the connection ends when the client
// closes it, a write stalls past WriteTimeout, or the gateway closes.
func getLive(s *Server, w http.ResponseWriter, r *http.Request, c caller) error {
	req, err := liveRequestOf(r, c)
	if err != nil {
		return err
	}
	if !s.live.acquire(s.opts.Live.MaxConnections) {
		return &Error{Status: http.StatusTooManyRequests, Kind: "too_many_live", Message: fmt.Sprintf("%d live connections are open (the gateway's limit)", s.opts.Live.MaxConnections)}
	}
	defer s.live.release()
	// The subscriptions are in place before the overview is read, so that
	// every change after the overview frame is seen.
	sources, err := s.liveSources(r.Context(), req)
	defer func() {
		for _, src := range sources {
			src.conn.Close()
		}
	}()
	if err != nil {
		return err
	}
	overview, prev, err := s.overview(r.Context(), req.sections)
	if err != nil {
		return err
	}
	if err := s.auditServe(r); err != nil {
		return err
	}
	ws, err := websocket.Accept(w, r, nil) // refuses a cross-origin browser
	if err != nil {
		return nil // Accept has answered
	}
	defer ws.CloseNow()
	overview["type"] = "overview"
	overview["limits"] = map[string]any{"queue_frames": s.opts.Live.QueueFrames, "max_frame_bytes": s.opts.Live.MaxFrameBytes, "interval_ms": req.interval}
	s.pumpLive(ws, overview, prev, sources, req)
	return nil
}

// liveRequest is what a /api/live request asks for.
type liveRequest struct {
	interval          int // ms between info_delta frames
	keyspace, monitor bool
	// sections are the INFO sections to carry, lowercase (nil: all).
	sections []string
	// fieldDeltas sends only the changed pairs of a k=v entry.
	fieldDeltas bool
}

// liveRequestOf checks a /api/live request's parameters and the caller's
// right to what they ask for (MONITOR is admin's, and audited).
func liveRequestOf(r *http.Request, c caller) (liveRequest, error) {
	interval, err := intParam(r, "interval_ms", 1000, int(maxLiveInterval/time.Millisecond))
	if err != nil {
		return liveRequest{}, err
	}
	if time.Duration(interval)*time.Millisecond < minLiveInterval {
		return liveRequest{}, badRequest("interval_ms=%d: want at least %d", interval, minLiveInterval/time.Millisecond)
	}
	keyspace, err := boolParam(r, "keyspace", true)
	if err != nil {
		return liveRequest{}, err
	}
	monitor, err := boolParam(r, "monitor", false)
	if err != nil {
		return liveRequest{}, err
	}
	sections, err := sectionsParam(r)
	if err != nil {
		return liveRequest{}, err
	}
	deltas := r.URL.Query().Get("deltas")
	if deltas != "" && deltas != "entries" && deltas != "fields" {
		return liveRequest{}, badRequest("deltas=%q: want entries or fields", deltas)
	}
	if monitor {
		auditMark(r, "monitor", "")
	}
	if monitor && c.role < RoleAdmin {
		return liveRequest{}, forbidden("monitor=true needs role admin; the token has %s", c.role)
	}
	return liveRequest{interval: interval, keyspace: keyspace, monitor: monitor, sections: sections, fieldDeltas: deltas == "fields"}, nil
}

// sectionsParam reads sections= (comma-separated INFO section names,
// case-insensitive); whether the target has them is checked against its
// INFO (see [Server.overview]).
func sectionsParam(r *http.Request) ([]string, error) {
	v, ok := r.URL.Query()["sections"]
	if !ok {
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(strings.Join(v, ","), ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			return nil, badRequest("sections=%q: want INFO section names separated by commas", strings.Join(v, ","))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// liveSources subscribes, each on a connection of its own, to what req
// asks for: keyspace notifications, MONITOR. The caller closes what it
// returns, on error too.
func (s *Server) liveSources(ctx context.Context, req liveRequest) ([]*liveSource, error) {
	var sources []*liveSource
	if req.keyspace {
		src, err := s.subscribe(ctx, "keyspace", 2, "PSUBSCRIBE", "__keyspace@*__:*", "__keyevent@*__:*")
		if err != nil {
			return sources, err
		}
		sources = append(sources, src)
	}
	if req.monitor {
		src, err := s.subscribe(ctx, "monitor", 1, "MONITOR")
		if err != nil {
			return sources, err
		}
		sources = append(sources, src)
	}
	return sources, nil
}

// pumpLive sends the overview, then the frames of the INFO deltas (every
// req.interval) and of the sources, on ws until the client closes it, a
// write stalls, or the gateway closes.
func (s *Server) pumpLive(ws *websocket.Conn, overview, prev map[string]any, sources []*liveSource, req liveRequest) {
	ws.SetReadLimit(1024)
	// peer ends when the client closes or sends anything. It must not
	// derive from s.life: the library drops the connection when a read's
	// context ends, and a closing gateway sends a close frame instead.
	peer := ws.CloseRead(context.Background())
	ctx, cancel := context.WithCancel(s.life)
	defer cancel()
	defer context.AfterFunc(peer, cancel)()
	ls := &liveStream{frames: make(chan []byte, s.opts.Live.QueueFrames), max: s.opts.Live.MaxFrameBytes}
	ls.push(overview)

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { s.liveInfo(ctx, ls, prev, req) })
	for _, src := range sources {
		wg.Go(func() { src.forward(ctx, ls) })
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// A write is bounded by its own timeout, not by ctx: the library drops
	// the connection when a write's context ends, and a closing gateway
	// lets the frame in flight finish, then sends its close frame.
	write := func(b []byte) bool {
		wctx, wcancel := context.WithTimeout(context.Background(), s.opts.Live.WriteTimeout)
		defer wcancel()
		return ws.Write(wctx, websocket.MessageText, b) == nil
	}
	for {
		select {
		case <-ctx.Done():
			if peer.Err() == nil {
				ws.Close(websocket.StatusGoingAway, "the gateway is closing")
			}
			return
		case b := <-ls.frames:
			if ctx.Err() != nil {
				continue // ending: the close frame, not more data
			}
			if !write(b) {
				return
			}
		case <-tick.C:
			if n := ls.takeDropped(); n > 0 {
				ls.push(map[string]any{"type": "dropped", "count": n})
			}
		}
	}
}

// overview reads what the first live frame carries, and INFO flattened for
// the deltas; with sections, INFO is narrowed to them, and a name the
// target's INFO ALL has no header for is a bad request naming those it has.
func (s *Server) overview(ctx context.Context, sections []string) (map[string]any, map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CommandTimeout)
	defer cancel()
	rs, err := s.pool.run(ctx, []string{"INFO", "ALL"}, []string{"DBSIZE"}, []string{"CONFIG", "GET", "notify-keyspace-events"})
	if err != nil {
		return nil, nil, err
	}
	for i, v := range rs {
		if v.IsError() {
			return nil, nil, targetError([]string{"INFO", "DBSIZE", "CONFIG GET"}[i], v)
		}
	}
	if have := infoSections(string(rs[0].Str)); len(sections) > 0 {
		for _, name := range sections {
			if !slices.Contains(have, name) {
				return nil, nil, badRequest("sections=%s: %q is not an INFO section of the target (it has %s)", strings.Join(sections, ","), name, strings.Join(have, ", "))
			}
		}
	}
	info := only(parseInfo(string(rs[0].Str)), sections)
	notify := ""
	if len(rs[2].Elems) == 2 {
		notify = string(rs[2].Elems[1].Str)
	}
	return map[string]any{"info": info, "dbsize": rs[1].Int, "keyspace_notifications": notify}, flatten(info), nil
}

// infoSections lists the section headers of INFO's text, lowercase, in
// order: empty sections included (Keyspace on an empty server), which
// [parseInfo] leaves out.
func infoSections(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "#"); ok {
			out = append(out, strings.ToLower(strings.TrimSpace(name)))
		}
	}
	return out
}

// only narrows info to sections (all of it when sections is empty).
func only(info Info, sections []string) Info {
	if len(sections) == 0 {
		return info
	}
	out := Info{}
	for _, name := range sections {
		if fields, ok := info[name]; ok {
			out[name] = fields
		}
	}
	return out
}

// flatten maps "section.field" to INFO's values.
func flatten(info Info) map[string]any {
	out := map[string]any{}
	for sec, fields := range info {
		for k, v := range fields {
			out[sec+"."+k] = v
		}
	}
	return out
}

// liveInfo sends an "info_delta" frame every req.interval when INFO (its
// req.sections) changed: "changed" (section.field to its new value) and
// "removed" (the keys gone). With req.fieldDeltas, an entry of k=v pairs
// that was there before changes by the pairs that moved only, and a pair
// gone is removed as section.field.pair.
func (s *Server) liveInfo(ctx context.Context, ls *liveStream, prev map[string]any, req liveRequest) {
	t := time.NewTicker(time.Duration(req.interval) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, s.opts.CommandTimeout)
		v, err := s.pool.one(cctx, "INFO", "ALL")
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			ls.push(map[string]any{"type": "error", "source": "info", "message": err.Error()})
			continue
		}
		cur := flatten(only(parseInfo(string(v.Str)), req.sections))
		changed, removed := infoDelta(prev, cur, req.fieldDeltas)
		prev = cur
		if len(changed) > 0 || len(removed) > 0 {
			ls.push(map[string]any{"type": "info_delta", "changed": changed, "removed": removed})
		}
	}
}

// infoDelta compares two flattened INFOs: what changed or appeared, and
// the keys that are gone. With fields, an entry of k=v pairs (an object in
// both) changes by its moved pairs only.
func infoDelta(prev, cur map[string]any, fields bool) (map[string]any, []string) {
	changed := map[string]any{}
	var removed []string
	for k, val := range cur {
		old, ok := prev[k]
		if !ok {
			changed[k] = val
			continue
		}
		oldObj, wasObj := old.(map[string]any)
		obj, isObj := val.(map[string]any)
		if !fields || !wasObj || !isObj {
			if !reflect.DeepEqual(old, val) {
				changed[k] = val
			}
			continue
		}
		moved := map[string]any{}
		for pk, pv := range obj {
			if ov, ok := oldObj[pk]; !ok || !reflect.DeepEqual(ov, pv) {
				moved[pk] = pv
			}
		}
		for pk := range oldObj {
			if _, ok := obj[pk]; !ok {
				removed = append(removed, k+"."+pk)
			}
		}
		if len(moved) > 0 {
			changed[k] = moved
		}
	}
	for k := range prev {
		if _, ok := cur[k]; !ok {
			removed = append(removed, k)
		}
	}
	slices.Sort(removed)
	return changed, removed
}

// liveSource is a connection of its own on which the target pushes
// events: keyspace notifications (PSUBSCRIBE) or MONITOR lines.
type liveSource struct {
	kind string // "keyspace" or "monitor"
	conn *resp.Conn
}

// subscribe dials a connection, sends cmd and reads its acks
// acknowledgements, so that events are flowing when it returns.
func (s *Server) subscribe(ctx context.Context, kind string, acks int, cmd ...string) (*liveSource, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CommandTimeout)
	defer cancel()
	conn, err := s.pool.dial(ctx)
	if err != nil {
		return nil, err
	}
	args := make([][]byte, len(cmd))
	for i, a := range cmd {
		args[i] = []byte(a)
	}
	if _, err := conn.Send(ctx, [][][]byte{args}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", cmd[0], err)
	}
	for got := 0; got < acks; {
		res, err := conn.Receive(ctx, resp.ReceiveOptions{MaxFrames: 1, Wait: s.opts.CommandTimeout})
		switch {
		case err != nil:
			conn.Close()
			return nil, fmt.Errorf("%s: %w", cmd[0], err)
		case res.TimedOut:
			conn.Close()
			return nil, fmt.Errorf("%s: no acknowledgement", cmd[0])
		case res.Frames[0].IsError():
			conn.Close()
			return nil, targetError(cmd[0], res.Frames[0])
		}
		got++
	}
	return &liveSource{kind: kind, conn: conn}, nil
}

// forward turns what the target pushes into frames: "keyspace" {pattern,
// channel, message}, "monitor" {line}. It ends with ctx; a failure sends
// an "error" frame.
func (src *liveSource) forward(ctx context.Context, ls *liveStream) {
	for {
		res, err := src.conn.Receive(ctx, resp.ReceiveOptions{MaxFrames: 64, Wait: time.Second, MaxBytes: maxReplyBytes})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			ls.push(map[string]any{"type": "error", "source": src.kind, "message": err.Error()})
			return
		}
		for _, f := range res.Frames {
			if frame := liveFrame(src.kind, f); frame != nil {
				ls.push(frame)
			}
		}
	}
}

// liveFrame converts a pushed RESP frame (nil for any other).
func liveFrame(kind string, f resp.Value) map[string]any {
	if kind == "monitor" {
		if f.Kind == resp.KindSimpleString {
			return map[string]any{"type": "monitor", "line": text(f.Str)}
		}
		return nil
	}
	if len(f.Elems) == 4 && string(f.Elems[0].Str) == "pmessage" {
		return map[string]any{"type": "keyspace", "pattern": text(f.Elems[1].Str), "channel": text(f.Elems[2].Str), "message": text(f.Elems[3].Str)}
	}
	return nil
}
