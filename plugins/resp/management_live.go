package resp

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
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the live tool.
const (
	// liveQueueFrames is how many received frames a handle holds before
	// its reader stops reading (the server's own queue then decides: the
	// gateway drops and counts).
	liveQueueFrames = 1024
	// liveFrameBytes bounds one received frame, so that any frame fits in
	// the least max_bytes even as base64; a larger one ends the handle with
	// an error (it is never cut).
	liveFrameBytes = 768 * mcpcore.KiB
	// Receive defaults and bounds.
	defaultLiveFrames   = 16
	maxLiveFrames       = 1024
	defaultLiveMaxBytes = 1 * mcpcore.MiB
	maxLiveMaxBytes     = 64 * mcpcore.MiB
)

// LiveArgs are the live tool's arguments; which apply depends on the action.
type LiveArgs struct {
	Action string `json:"action" jsonschema:"open, receive, list or close"`
	Handle string `json:"handle,omitempty" jsonschema:"the handle open returned (receive, close)"`
	// open
	Target string `json:"target,omitempty" jsonschema:"open: a configured target with a management_url (default: the default target)"`
	Query  string `json:"query,omitempty" jsonschema:"open: the query string of /api/live, e.g. interval_ms=500&monitor=true"`
	// receive
	MaxFrames       int   `json:"max_frames,omitempty" jsonschema:"receive: at most this many frames (default 16, at most 1024)"`
	MaxBytes        int64 `json:"max_bytes,omitempty" jsonschema:"receive: at most this many bytes of frames (default and minimum 1048576, at most 67108864)"`
	WaitMS          *int  `json:"wait_ms,omitempty" jsonschema:"receive: how long to wait for the first frame, in milliseconds (default 1000, at most 240000); 0 returns at once"`
	IncludeOverview bool  `json:"include_overview,omitempty" jsonschema:"receive: also return the retained initial overview frame"`
}

// LiveInfo describes one live handle (open, list).
type LiveInfo struct {
	Handle   string `json:"handle"`
	Target   string `json:"target"`
	Queued   int    `json:"queued" jsonschema:"frames received and not yet returned"`
	Busy     bool   `json:"busy" jsonschema:"a receive is running or queued (exempt from idle expiry)"`
	IdleMS   int64  `json:"idle_ms"`
	Closed   bool   `json:"closed" jsonschema:"the server closed the WebSocket (frames may still be queued)"`
	Overview *Body  `json:"overview,omitempty" jsonschema:"open: the initial overview frame when it arrived within a second (receive returns it too)"`
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

// liveRegistry holds the live handles: at most max_live_handles, apart
// from RESP sessions, scoped like sessions, closed after session_idle
// unused (a running or queued receive keeps a handle), when their client
// session ends, and when the server's lifetime ends.
type liveRegistry struct {
	host *mcpcore.Host
	m    *management
	max  int
	idle time.Duration
	wg   sync.WaitGroup // readers and closers; the reaper waits for them when the server's lifetime ends
	// stopped is closed when the reaper has closed every handle and
	// returned (Plugin.Close waits for it).
	stopped chan struct{}

	mu      sync.Mutex
	handles map[string]*liveHandle
	pending int
	closed  bool
}

// liveHandle is one open /api/live WebSocket.
type liveHandle struct {
	id     string
	scope  scope
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
}

func newLiveRegistry(h *mcpcore.Host, m *management) *liveRegistry {
	return &liveRegistry{host: h, m: m, max: int(h.Limit(LimitMaxLiveHandles)), idle: time.Duration(h.Limit(LimitSessionIdle)), handles: map[string]*liveHandle{}, stopped: make(chan struct{})}
}

func (l *liveRegistry) addTool() error {
	schema, err := jsonschema.For[LiveArgs](nil)
	if err != nil {
		return fmt.Errorf("management_live schema: %w", err)
	}
	schema.Properties["action"].Enum = []any{ActionOpen, ActionReceive, ActionList, ActionClose}
	mcpcore.AddTool(l.host, &mcp.Tool{Name: "management_live", InputSchema: schema,
		Description: "The target's authenticated /api/live WebSocket (mcpkit resp admin: overview, INFO deltas, keyspace notifications, MONITOR for admins). " +
			"open {target?, query?} returns a handle (echo it; never invent one) and the initial overview, which stays retrievable (receive include_overview). " +
			"receive {handle, max_frames?, max_bytes?, wait_ms?} returns bounded frames {encoding: json|text|base64, value} with timed_out, limit_reached and closed; " +
			"cancelling a receive closes its handle. list; close {handle}. Handles are apart from RESP sessions and expire when idle."},
		l.call, mcpcore.ToolOptions{Timeout: SessionTimeout, Direct: true})
	return nil
}

func (l *liveRegistry) call(ctx context.Context, req *mcp.CallToolRequest, in LiveArgs) (any, error) {
	sc := l.m.p.reg.scopeOf(req)
	switch in.Action {
	case ActionOpen:
		return l.open(ctx, sc, in)
	case ActionReceive:
		return l.receive(ctx, sc, in)
	case ActionList:
		return l.list(sc), nil
	case ActionClose:
		h, err := l.find(sc, in.Handle)
		if err != nil {
			return nil, err
		}
		l.closeHandle(h, websocket.StatusNormalClosure, "closed by the client")
		return map[string]any{"handle": h.id, "closed": true}, nil
	}
	return nil, &mcpcore.ParamError{Path: "/action", Reason: fmt.Sprintf("%q is not open, receive, list or close", in.Action)}
}

// list describes the caller's handles, in handle order.
func (l *liveRegistry) list(sc scope) LiveListReply {
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
func (l *liveRegistry) info(h *liveHandle) LiveInfo {
	l.mu.Lock()
	busy, last, queued := h.busy > 0, h.lastUsed, len(h.frames)
	if h.held != nil {
		queued++
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
	return mcpcore.Errorf(KindSessionNotFound, "live handle %q is not open for this caller (unknown, closed, expired, or another client's): open one", id)
}

// find returns the caller's handle.
func (l *liveRegistry) find(sc scope, id string) (*liveHandle, error) {
	if id == "" {
		return nil, &mcpcore.ParamError{Path: "/handle", Reason: "give the handle open returned"}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.handles[id]
	if h == nil || h.scope != sc {
		return nil, liveNotFound(id)
	}
	return h, nil
}

func (l *liveRegistry) open(ctx context.Context, sc scope, in LiveArgs) (any, error) {
	t, err := l.m.endpoint(in.Target)
	if err != nil {
		return nil, err
	}
	path := "/api/live"
	if in.Query != "" {
		path += "?" + strings.TrimPrefix(in.Query, "?")
	}
	u, err := managementURL(t, "/query", path)
	if err != nil {
		return nil, err
	}
	if u.Path != "/api/live" {
		return nil, &mcpcore.ParamError{Path: "/query", Reason: "a query string only (key=value&...)"}
	}
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return nil, mcpcore.Errorf(mcpcore.KindUnavailable, "%w", mcpcore.ErrClosed)
	case len(l.handles)+l.pending >= l.max:
		l.mu.Unlock()
		return nil, &mcpcore.LimitError{Limit: LimitMaxLiveHandles, Max: int64(l.max), Detail: "close a live handle first"}
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
			return nil, ctx.Err()
		}
		if res != nil && res.StatusCode != http.StatusSwitchingProtocols {
			return nil, mcpcore.Errorf(KindRefused, "the management API answered the live request with HTTP %d: %s", res.StatusCode, errorMessage(res))
		}
		return nil, mcpcore.Errorf(KindConnection, "open /api/live on %s: %v", t.Name, err)
	}
	ws.SetReadLimit(liveFrameBytes)
	rctx, cancel := context.WithCancel(l.host.Context())
	h := &liveHandle{id: "lv_" + newHandle()[3:], scope: sc, target: t.Name, ws: ws, cancel: cancel,
		frames: make(chan Body, liveQueueFrames), done: make(chan struct{}), first: make(chan struct{}), gate: make(chan struct{}, 1), lastUsed: time.Now()}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		cancel()
		ws.CloseNow()
		return nil, mcpcore.Errorf(mcpcore.KindUnavailable, "%w", mcpcore.ErrClosed)
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
	case <-time.After(time.Second):
	case <-ctx.Done():
	}
	return info, nil
}

// errorMessage reads a refusal's {"error": {"message"}} (or its status
// text): what the management API said, never more than its message.
func errorMessage(res *http.Response) string {
	var e struct {
		Error struct{ Kind, Message string } `json:"error"`
	}
	if res.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64*mcpcore.KiB))
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return e.Error.Kind + ": " + e.Error.Message
		}
	}
	return http.StatusText(res.StatusCode)
}

// read receives frames into h.frames until the WebSocket ends or ctx
// does; a full queue stops reading (backpressure on the server).
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

// liveBounds are a receive's checked bounds.
type liveBounds struct {
	frames int
	bytes  int64
	wait   time.Duration
}

// receiveBounds checks a receive's bounds and fills in their defaults.
func receiveBounds(in LiveArgs) (liveBounds, error) {
	b := liveBounds{frames: in.MaxFrames, bytes: in.MaxBytes}
	switch {
	case b.frames == 0:
		b.frames = defaultLiveFrames
	case b.frames < 1 || b.frames > maxLiveFrames:
		return b, &mcpcore.ParamError{Path: "/max_frames", Reason: fmt.Sprintf("%d is outside [1, %d]", in.MaxFrames, maxLiveFrames)}
	}
	switch {
	case b.bytes == 0:
		b.bytes = defaultLiveMaxBytes
	case b.bytes < defaultLiveMaxBytes || b.bytes > maxLiveMaxBytes:
		return b, &mcpcore.ParamError{Path: "/max_bytes", Reason: fmt.Sprintf("%d is outside [%d, %d] (one frame may be %d bytes)", in.MaxBytes, defaultLiveMaxBytes, maxLiveMaxBytes, liveFrameBytes)}
	}
	wait := DefaultWaitMS
	if in.WaitMS != nil {
		wait = *in.WaitMS
	}
	if wait < 0 || wait > MaxWaitMS {
		return b, &mcpcore.ParamError{Path: "/wait_ms", Reason: fmt.Sprintf("%d is outside [0, %d]", wait, MaxWaitMS)}
	}
	b.wait = time.Duration(wait) * time.Millisecond
	return b, nil
}

func (l *liveRegistry) receive(ctx context.Context, sc scope, in LiveArgs) (any, error) {
	bounds, err := receiveBounds(in)
	if err != nil {
		return nil, err
	}
	h, err := l.find(sc, in.Handle)
	if err != nil {
		return nil, err
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
		return nil, ctx.Err()
	}
	out := LiveReceiveReply{Handle: h.id, Frames: []Body{}}
	if in.IncludeOverview {
		select {
		case <-h.first:
			out.Overview = h.overview
		default:
		}
	}
	if err := l.collect(ctx, h, bounds, &out); err != nil {
		l.closeHandle(h, websocket.StatusNormalClosure, "receive cancelled")
		return nil, err
	}
	return out, nil
}

// collect moves h's frames into out within bounds, by the receive that holds
// h's gate: it waits up to bounds.wait for the first frame, then takes what
// is queued without waiting; a frame that would overrun bounds.bytes is held
// for the next receive. It fails only when ctx ends while it waits.
func (l *liveRegistry) collect(ctx context.Context, h *liveHandle, bounds liveBounds, out *LiveReceiveReply) error {
	timer := time.NewTimer(bounds.wait)
	defer timer.Stop()
	add := func(b Body) {
		out.Frames = append(out.Frames, b)
		out.Bytes += bodySize(b)
	}
	if b, ok := l.take(h); ok {
		add(b)
	} else {
		select {
		case b := <-h.frames:
			add(b)
		case <-h.done:
		case <-timer.C:
			out.TimedOut = true
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for len(out.Frames) < bounds.frames {
		b, ok := l.take(h)
		if !ok {
			break
		}
		if out.Bytes+bodySize(b) > bounds.bytes {
			l.mu.Lock()
			h.held = &b
			l.mu.Unlock()
			out.LimitReached = true
			return nil
		}
		add(b)
	}
	if len(out.Frames) == bounds.frames && len(h.frames) > 0 {
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

// take returns h's held frame, else a queued one, without waiting; only the
// receive holding h's gate takes frames.
func (l *liveRegistry) take(h *liveHandle) (Body, bool) {
	l.mu.Lock()
	b := h.held
	h.held = nil
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

// closeHandle removes h, closes its WebSocket (a close frame with code),
// stops its reader and waits for it.
func (l *liveRegistry) closeHandle(h *liveHandle, code websocket.StatusCode, reason string) {
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

// endClientSession closes the handles of an MCP client session that ended.
func (l *liveRegistry) endClientSession(cs *mcpcore.Session) {
	l.closeWhere(func(h *liveHandle) bool {
		return h.scope.owner != "" && h.scope.owner == cs.ID() && h.scope.principal == cs.Principal()
	})
}

// closeWhere closes the handles for which match is true.
func (l *liveRegistry) closeWhere(match func(*liveHandle) bool) {
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

// wait waits until the reaper has stopped, or ctx ends.
func (l *liveRegistry) wait(ctx context.Context) error {
	select {
	case <-l.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("management live handles still closing: %w", ctx.Err())
	}
}

// start runs the idle reaper until ctx (the server's lifetime) ends; it
// then closes every handle, waits for their goroutines, closes the idle
// HTTP connections and closes stopped.
func (l *liveRegistry) start(ctx context.Context) {
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
				l.m.closeIdle()
				return
			case now := <-t.C:
				l.closeWhere(func(h *liveHandle) bool { return h.busy == 0 && now.Sub(h.lastUsed) >= l.idle })
			}
		}
	}()
}
