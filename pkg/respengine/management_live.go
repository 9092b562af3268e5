package respengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Bounds of the live tool.
const (
	// liveQueueFrames is how many received frames a handle holds before
	// its reader stops reading (the server's own queue then decides: the
	// gateway drops and counts).
	liveQueueFrames = 1024
	// LiveFrameBytes bounds one received frame; a larger one ends the
	// handle with an error (it is never cut). A frame larger than a
	// receive's max_bytes stays queued, and that receive fails with a
	// LimitError naming its size.
	LiveFrameBytes = 768 << 10
)

// LiveInfo describes one live handle (open, list).
type LiveInfo struct {
	Handle   string `json:"handle"`
	Target   string `json:"target"`
	Queued   int    `json:"queued" jsonschema:"frames received and not yet returned"`
	Busy     bool   `json:"busy" jsonschema:"a receive is running or queued (exempt from idle expiry)"`
	IdleMS   int64  `json:"idle_ms"`
	Closed   bool   `json:"closed" jsonschema:"the server closed the WebSocket (frames may still be queued)"`
	Overview *Body  `json:"overview,omitempty" jsonschema:"open: the initial overview frame when it arrived within a second (then receive does not repeat it; else the first receive returns it first)"`
}

// LiveListReply is list's result.
type LiveListReply struct {
	Handles []LiveInfo `json:"handles"`
}

// LiveReceiveReply is receive's result.
type LiveReceiveReply struct {
	Handle       string `json:"handle"`
	Frames       []Body `json:"frames"`
	Bytes        int64  `json:"bytes"`
	TimedOut     bool   `json:"timed_out" jsonschema:"no frame arrived within wait_ms (the handle stays open)"`
	LimitReached bool   `json:"limit_reached" jsonschema:"max_frames or max_bytes stopped the receive with more frames queued"`
	Closed       bool   `json:"closed" jsonschema:"the WebSocket has ended and every frame was returned: close the handle"`
	CloseCode    int    `json:"close_code,omitempty"`
	CloseReason  string `json:"close_reason,omitempty"`
	Error        string `json:"error,omitempty" jsonschema:"the transport error that ended the WebSocket, if any"`
	Overview     *Body  `json:"overview,omitempty"`
}

// LiveOptions configure [Live].
type LiveOptions struct {
	// MaxHandles bounds the handles open at once (LimitMaxLiveHandles).
	MaxHandles int
	// Idle is how long a handle may stay unused before it is closed (a
	// running or queued receive keeps it).
	Idle time.Duration
}

// Live holds the handles of the targets' /api/live WebSockets: at most
// MaxHandles, each of one [Scope], closed after Idle unused, by CloseScope,
// and by Close. Each handle has a reader goroutine that queues its frames;
// an idle reaper runs until Close, which closes every handle and waits for
// every goroutine.
type Live struct {
	m    *Management
	max  int
	idle time.Duration
	life context.Context // ends at Close: the readers' and the reaper's
	stop context.CancelFunc
	wg   sync.WaitGroup // readers and closers; the reaper waits for them at Close
	// stopped is closed when the reaper has closed every handle and
	// returned.
	stopped chan struct{}

	mu      sync.Mutex
	handles map[string]*liveHandle
	pending int
	closed  bool
}

// liveHandle is one open /api/live WebSocket.
type liveHandle struct {
	id     string
	scope  Scope
	target string
	ws     *websocket.Conn
	cancel context.CancelFunc
	frames chan Body     // filled by the reader
	done   chan struct{} // closed when the reader has ended
	first  chan struct{} // closed when the overview arrived (or the reader ended)
	gate   chan struct{} // one receive at a time

	// set by the reader before done or first is closed
	overview *Body
	endErr   error

	// under liveRegistry.mu
	busy     int
	lastUsed time.Time
	held     *Body // a frame taken from frames that max_bytes left for the next receive
	// overviewSent: open returned the overview, so that receive does not
	// repeat it; else the first receive after it arrived returns it first.
	overviewSent bool
}

// NewLive returns an empty set of handles whose idle reaper runs until
// Close (or until life ends); m is the client handles connect with.
func NewLive(life context.Context, m *Management, opts LiveOptions) *Live {
	l := &Live{m: m, max: opts.MaxHandles, idle: opts.Idle, handles: map[string]*liveHandle{}, stopped: make(chan struct{})}
	l.life, l.stop = context.WithCancel(life)
	l.start()
	return l
}

// List describes sc's handles, in handle order.
func (l *Live) List(sc Scope) LiveListReply {
	out := LiveListReply{Handles: []LiveInfo{}}
	l.mu.Lock()
	var mine []*liveHandle
	for _, h := range l.handles {
		if h.scope == sc {
			mine = append(mine, h)
		}
	}
	l.mu.Unlock()
	slices.SortFunc(mine, func(a, b *liveHandle) int { return strings.Compare(a.id, b.id) })
	for _, h := range mine {
		out.Handles = append(out.Handles, l.info(h))
	}
	return out
}

// info describes h.
func (l *Live) info(h *liveHandle) LiveInfo {
	l.mu.Lock()
	busy, last, queued := h.busy > 0, h.lastUsed, len(h.frames)
	if h.held != nil {
		queued++
	}
	select {
	case <-h.first:
		if !h.overviewSent && h.overview != nil {
			queued++
		}
	default:
	}
	l.mu.Unlock()
	closed := false
	select {
	case <-h.done:
		closed = true
	default:
	}
	return LiveInfo{Handle: h.id, Target: h.target, Queued: queued, Busy: busy, IdleMS: time.Since(last).Milliseconds(), Closed: closed}
}

// liveNotFound is the error for a handle the caller cannot use.
func liveNotFound(id string) error {
	return errorf(ErrSessionNotFound, "live handle %q is not open for this caller (unknown, closed, expired, or another client's): open one", id)
}

// find returns sc's handle id.
func (l *Live) find(sc Scope, id string) (*liveHandle, error) {
	if id == "" {
		return nil, &ArgError{Arg: "handle", Reason: "give the handle open returned"}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.handles[id]
	if h == nil || h.scope != sc {
		return nil, liveNotFound(id)
	}
	return h, nil
}

// Open opens t's /api/live WebSocket with query (its query string) for
// sc and returns the new handle, with the initial overview frame when it
// arrived within a second.
func (l *Live) Open(ctx context.Context, sc Scope, t *Target, query string) (LiveInfo, error) {
	path := "/api/live"
	if query != "" {
		path += "?" + strings.TrimPrefix(query, "?")
	}
	u, err := managementURL(t, "query", path)
	if err != nil {
		return LiveInfo{}, err
	}
	if u.Path != "/api/live" {
		return LiveInfo{}, &ArgError{Arg: "query", Reason: "a query string only (key=value&...)"}
	}
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return LiveInfo{}, ErrClosed
	case len(l.handles)+l.pending >= l.max:
		l.mu.Unlock()
		return LiveInfo{}, &LimitError{Limit: LimitMaxLiveHandles, Max: int64(l.max), Detail: "close a live handle first"}
	}
	l.pending++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.pending--
		l.mu.Unlock()
	}()
	hdr := http.Header{}
	if tok := t.ManagementToken(); tok != "" {
		hdr.Set("Authorization", "Bearer "+tok)
	}
	ws, res, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: l.m.client(t), HTTPHeader: hdr})
	if err != nil {
		if ctx.Err() != nil {
			return LiveInfo{}, ctx.Err()
		}
		if res != nil && res.StatusCode == http.StatusBadRequest {
			return LiveInfo{}, liveArgError(errorMessage(res))
		}
		if res != nil && res.StatusCode != http.StatusSwitchingProtocols {
			return LiveInfo{}, errorf(ErrRefused, "the management API answered the live request with HTTP %d: %s", res.StatusCode, errorMessage(res))
		}
		return LiveInfo{}, errorf(ErrUnavailable, "open /api/live on %s: %v", t.Name, err)
	}
	ws.SetReadLimit(LiveFrameBytes)
	rctx, cancel := context.WithCancel(l.life)
	h := &liveHandle{id: newHandle("lv_"), scope: sc, target: t.Name, ws: ws, cancel: cancel,
		frames: make(chan Body, liveQueueFrames), done: make(chan struct{}), first: make(chan struct{}), gate: make(chan struct{}, 1), lastUsed: time.Now()}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		cancel()
		ws.CloseNow()
		return LiveInfo{}, ErrClosed
	}
	l.handles[h.id] = h
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		h.read(rctx)
	}()
	info := l.info(h)
	select {
	case <-h.first:
		info.Overview = h.overview
		l.mu.Lock()
		h.overviewSent = h.overview != nil
		l.mu.Unlock()
	case <-time.After(time.Second):
	case <-ctx.Done():
	}
	return info, nil
}

// liveArgError is the error for a live request the management API found
// bad (HTTP 400): an argument error, on sections when the gateway named
// that parameter, else on the query string.
func liveArgError(msg string) error {
	if strings.Contains(msg, ": sections=") {
		return &ArgError{Arg: "sections", Reason: msg}
	}
	return &ArgError{Arg: "query", Reason: msg}
}

// errorMessage reads a refusal's {"error": {"message"}} (or its status
// text): what the management API said, never more than its message.
func errorMessage(res *http.Response) string {
	var e struct {
		Error struct{ Kind, Message string } `json:"error"`
	}
	if res.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return e.Error.Kind + ": " + e.Error.Message
		}
	}
	return http.StatusText(res.StatusCode)
}

// read receives frames until the WebSocket ends or ctx does: the first
// (the overview) into h.overview, the others into h.frames; a full queue
// stops reading (backpressure on the server).
func (h *liveHandle) read(ctx context.Context) {
	defer close(h.done)
	firstDone := false
	defer func() {
		if !firstDone {
			close(h.first)
		}
	}()
	for {
		typ, data, err := h.ws.Read(ctx)
		if err != nil {
			h.endErr = err
			return
		}
		b := liveBody(typ, data)
		if !firstDone {
			h.overview = &b
			firstDone = true
			close(h.first)
			continue
		}
		select {
		case h.frames <- b:
		case <-ctx.Done():
			h.endErr = ctx.Err()
			return
		}
	}
}

// liveBody encodes a frame: JSON text as json, other text as text, binary
// as base64.
func liveBody(typ websocket.MessageType, data []byte) Body {
	if typ == websocket.MessageText {
		return *encodeBody("application/json", data)
	}
	return *encodeBody("application/octet-stream", data)
}

// bodySize is a frame's size as counted against max_bytes.
func bodySize(b Body) int64 {
	switch v := b.Value.(type) {
	case json.RawMessage:
		return int64(len(v))
	case string:
		return int64(len(v))
	}
	return 0
}

// LiveReceive are the bounds of one receive.
type LiveReceive struct {
	MaxFrames int           // at least 1
	MaxBytes  int64         // at least 1: a larger first frame fails the receive, queued
	Wait      time.Duration // for the first frame; 0 returns at once
	// IncludeOverview also returns the retained initial overview frame.
	IncludeOverview bool
}

// Receive returns the frames sc's handle id received, within in's bounds:
// it waits up to in.Wait for the first frame, then takes what is queued
// without waiting. One receive runs on a handle at a time; a ctx that ends
// while it waits closes the handle (its frames are lost with it).
func (l *Live) Receive(ctx context.Context, sc Scope, id string, in LiveReceive) (LiveReceiveReply, error) {
	h, err := l.find(sc, id)
	if err != nil {
		return LiveReceiveReply{}, err
	}
	// Busy from here (waiting for the gate included) until the receive
	// completes: exempt from idle expiry; the idle timer restarts after.
	l.mu.Lock()
	h.busy++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		h.busy--
		h.lastUsed = time.Now()
		l.mu.Unlock()
	}()
	select {
	case h.gate <- struct{}{}:
		defer func() { <-h.gate }()
	case <-ctx.Done():
		l.closeHandle(h, websocket.StatusNormalClosure, "receive cancelled")
		return LiveReceiveReply{}, ctx.Err()
	}
	out := LiveReceiveReply{Handle: h.id, Frames: []Body{}}
	if in.IncludeOverview {
		select {
		case <-h.first:
			out.Overview = h.overview
		default:
		}
	}
	if err := l.collect(ctx, h, in, &out); err != nil {
		var le *LimitError
		if !errors.As(err, &le) {
			l.closeHandle(h, websocket.StatusNormalClosure, "receive cancelled")
		}
		return LiveReceiveReply{}, err
	}
	return out, nil
}

// collect moves h's frames into out within bounds, by the receive that holds
// h's gate: it waits up to bounds.Wait for the first frame, then takes what
// is queued without waiting; a frame that would overrun bounds.MaxBytes is
// held for the next receive. A first frame larger than bounds.MaxBytes is
// held too, and collect fails with a [LimitError] naming its size: a frame
// is never cut. Otherwise it fails only when ctx ends while it waits.
func (l *Live) collect(ctx context.Context, h *liveHandle, bounds LiveReceive, out *LiveReceiveReply) error {
	timer := time.NewTimer(bounds.Wait)
	defer timer.Stop()
	add := func(b Body) {
		out.Frames = append(out.Frames, b)
		out.Bytes += bodySize(b)
	}
	b, ok := l.take(h)
wait:
	for !ok {
		select {
		case f := <-h.frames:
			b, ok = f, true
		case <-l.overviewDue(h):
			b, ok = l.take(h)
		case <-h.done:
			b, ok = l.take(h)
			break wait
		case <-timer.C:
			out.TimedOut = true
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if ok {
		if size := bodySize(b); size > bounds.MaxBytes {
			l.mu.Lock()
			h.held = &b
			l.mu.Unlock()
			return &LimitError{Limit: "max_bytes", Max: bounds.MaxBytes, Actual: size,
				Detail: fmt.Sprintf("the next frame is never cut and stays queued: receive it with max_bytes of at least %d", size)}
		}
		add(b)
	}
	for len(out.Frames) < bounds.MaxFrames {
		b, ok := l.take(h)
		if !ok {
			break
		}
		if out.Bytes+bodySize(b) > bounds.MaxBytes {
			l.mu.Lock()
			h.held = &b
			l.mu.Unlock()
			out.LimitReached = true
			return nil
		}
		add(b)
	}
	if len(out.Frames) == bounds.MaxFrames && len(h.frames) > 0 {
		out.LimitReached = true
	}
	select {
	case <-h.done:
		if len(h.frames) == 0 {
			out.Closed = true
			var ce websocket.CloseError
			if errors.As(h.endErr, &ce) {
				out.CloseCode, out.CloseReason = int(ce.Code), ce.Reason
			} else if h.endErr != nil {
				out.Error = h.endErr.Error()
			}
		}
	default:
	}
	return nil
}

// take returns h's held frame, else the overview when it arrived and open
// did not return it, else a queued one, without waiting; only the receive
// holding h's gate takes frames.
func (l *Live) take(h *liveHandle) (Body, bool) {
	l.mu.Lock()
	b := h.held
	h.held = nil
	if b == nil && !h.overviewSent {
		select {
		case <-h.first:
			b, h.overviewSent = h.overview, true // nil when the WebSocket ended first
		default:
		}
	}
	l.mu.Unlock()
	if b != nil {
		return *b, true
	}
	select {
	case b := <-h.frames:
		return b, true
	default:
		return Body{}, false
	}
}

// overviewDue returns what closes when h's overview arrives, while it is
// still to be returned by a receive (open did not return it); else nil,
// which never fires.
func (l *Live) overviewDue(h *liveHandle) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h.overviewSent {
		return nil
	}
	return h.first
}

// closeHandle removes h, closes its WebSocket (a close frame with code),
// stops its reader and waits for it.
func (l *Live) closeHandle(h *liveHandle, code websocket.StatusCode, reason string) {
	l.mu.Lock()
	if l.handles[h.id] != h {
		l.mu.Unlock()
		return
	}
	delete(l.handles, h.id)
	l.mu.Unlock()
	// The close frame goes out first; the handshake would need the reader,
	// which may be blocked on a full queue, so it is not waited for: the
	// reader is stopped and the connection dropped, which ends Close too.
	l.wg.Go(func() { h.ws.Close(code, reason) })
	h.cancel()
	<-h.done
	h.ws.CloseNow()
}

// CloseHandle closes sc's handle id.
func (l *Live) CloseHandle(sc Scope, id string) error {
	h, err := l.find(sc, id)
	if err != nil {
		return err
	}
	l.closeHandle(h, websocket.StatusNormalClosure, "closed by the client")
	return nil
}

// CloseOwner closes the handles of the client session owner of principal
// (the session ended); principal-wide handles stay.
func (l *Live) CloseOwner(principal, owner string) {
	l.closeWhere(func(h *liveHandle) bool {
		return h.scope.Owner != "" && h.scope.Owner == owner && h.scope.Principal == principal
	})
}

// closeWhere closes the handles for which match is true.
func (l *Live) closeWhere(match func(*liveHandle) bool) {
	l.mu.Lock()
	var hs []*liveHandle
	for _, h := range l.handles {
		if match(h) {
			hs = append(hs, h)
		}
	}
	l.mu.Unlock()
	for _, h := range hs {
		l.closeHandle(h, websocket.StatusGoingAway, "closed by mcpkit")
	}
}

// Close closes every handle and waits for every goroutine, or until ctx
// ends; later calls fail with [ErrClosed]. A nil l has nothing to close.
func (l *Live) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.stop()
	select {
	case <-l.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("management live handles still closing: %w", ctx.Err())
	}
}

// start runs the idle reaper until l.life ends (Close); it then closes
// every handle, waits for their goroutines, closes the idle HTTP
// connections and closes stopped.
func (l *Live) start() {
	ctx := l.life
	every := min(max(l.idle/4, 50*time.Millisecond), 30*time.Second)
	go func() {
		defer close(l.stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				l.mu.Lock()
				l.closed = true
				l.mu.Unlock()
				l.closeWhere(func(*liveHandle) bool { return true })
				l.wg.Wait()
				l.m.CloseIdle()
				return
			case now := <-t.C:
				l.closeWhere(func(h *liveHandle) bool { return h.busy == 0 && now.Sub(h.lastUsed) >= l.idle })
			}
		}
	}()
}
