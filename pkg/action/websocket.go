package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	segjson "github.com/segmentio/encoding/json"

	"github.com/mcpkit/mcpkit/pkg/httporigin"
)

// WebSocketOptions configures [App.WebSocketHandler].
type WebSocketOptions struct {
	// PubSub carries broadcasts to subscribed connections; nil refuses
	// every subscribe with not_found.
	PubSub PubSub
	// AllowedOrigins are the browser origins allowed besides the request's
	// own host ("*" allows any), as for HTTPOptions; another is 403.
	AllowedOrigins []string
	// MaxMessageBytes bounds a client message; a bigger one closes the
	// connection with status 1009 (message too big). 0 is 64 KiB.
	MaxMessageBytes int64
	// MaxMessagesPerSecond is the sustained rate of client messages, with
	// bursts of as many; a message beyond it is answered with a
	// rate_limited error and not handled, and as many refused messages in
	// a row close the connection with status 1008 (policy violation).
	// 0 is 50.
	MaxMessagesPerSecond int
	// MaxSubscriptions bounds a connection's subscriptions; a subscribe
	// beyond it is a conflict error. 0 is 100.
	MaxSubscriptions int
	// Sessions, the HTTP transport's, gives the connection the session
	// its upgrade request's cookie names (see WebSocketHandler); nil: no
	// sessions.
	Sessions *Sessions
	Logger   *slog.Logger // nil: the app's logger
}

// The WebSocket defaults (see WebSocketOptions).
const (
	DefaultMaxMessageBytes      = 64 << 10
	DefaultMaxMessagesPerSecond = 50
	DefaultMaxSubscriptions     = 100
)

// wsWriteTimeout bounds one write to a client; a client that does not
// read for that long is disconnected.
const wsWriteTimeout = 10 * time.Second

type wsHandler struct {
	app      *App
	opts     WebSocketOptions
	origins  httporigin.Policy
	sessions *Sessions // nil: none
}

// WebSocketHandler serves the app's actions and PubSub channels over
// WebSocket with Keryx's message protocol. Each client message is a JSON
// object with a "messageType":
//
//   - {"messageType":"action","action":NAME,"params":{...},"messageId":ID}
//     runs the action through [App.Run] with Conn{Type:"websocket", ID: the
//     connection's id, Remote} and answers {"messageId":ID,"response":RESULT}
//     or {"messageId":ID,"error":{"kind","message","field"}} ([ErrorJSON]'s
//     shape);
//   - {"messageType":"subscribe","channel":C,"messageId":ID} checks
//     the app's channel authorizer ([App.AuthorizeChannel]) and subscribes (subscribing twice is one
//     subscription); {"messageType":"unsubscribe",...} ends it (not_found
//     when not subscribed). Both answer {"messageId":ID,"status":"ok"} or
//     an error.
//
// The messageId, any JSON value, is echoed when given. A malformed
// message or an unknown messageType is answered with an invalid_param
// error and the connection stays up. Messages published on a subscribed
// channel are pushed as {"messageType":"broadcast","channel","message",
// "sender"}, with "dropped": N when N earlier messages were dropped
// because the client did not keep up. A connection's messages are
// handled one at a time, in order; broadcasts are pushed as they arrive,
// between answers. Closing the socket (or the request's context ending)
// ends the connection's subscriptions and goroutines before ServeHTTP
// returns. An upgrade request from an origin not allowed is 403 with an
// error body.
//
// With Sessions, the connection has one session id: the live session its
// upgrade request's cookie names (the HTTP transport's session), else a
// new id whose cookie the upgrade response sets. Each action message's
// Conn.Session is that session as the store has it when the message is
// handled, so changes made over HTTP are seen. A session destroyed over
// the connection continues under a new id that only the connection
// knows: the upgrade's cookie cannot be changed afterwards.
func (a *App) WebSocketHandler(opts WebSocketOptions) http.Handler {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.MaxMessagesPerSecond <= 0 {
		opts.MaxMessagesPerSecond = DefaultMaxMessagesPerSecond
	}
	if opts.MaxSubscriptions <= 0 {
		opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if opts.Logger == nil {
		opts.Logger = a.logger
	}
	return &wsHandler{app: a, opts: opts, origins: httporigin.New(opts.AllowedOrigins), sessions: opts.Sessions.withDefaults()}
}

func (h *wsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !h.origins.Allowed(origin, r) {
		w.Header()["Content-Type"] = []string{"application/json"}
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write(append(ErrorJSON(&Error{Kind: KindForbidden, Message: "origin " + origin + " is not allowed"}), '\n'))
		return
	}
	r = h.origins.WithoutCookies(r) // "*" admits an origin without its cookies
	var sessionID string
	if h.sessions != nil {
		// The connection keeps one session id: the live one the cookie
		// names, else a new one whose cookie the upgrade response sets
		// (the session itself is stored when an action first sets a value).
		s, err := h.sessions.load(r.Context(), h.sessions.cookieID(r), false)
		if err != nil {
			h.opts.Logger.Error("websocket: load the session", "error", err)
			w.Header()["Content-Type"] = []string{"application/json"}
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write(append(ErrorJSON(err), '\n'))
			return
		}
		sessionID = s.ID()
		h.sessions.writeCookie(w, r, sessionID)
	}
	// The origin is checked above by the same rule as HTTPHandler's.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has written the error response
	}
	ws.SetReadLimit(h.opts.MaxMessageBytes)
	ctx, cancel := context.WithCancel(requestContext(r))
	wc := &wsConn{
		h: h, ws: ws, ctx: ctx, cancel: cancel,
		conn:      Conn{Type: "websocket", ID: NewID(), Remote: r.RemoteAddr},
		sessionID: sessionID,
		subs:      map[string]Subscription{},
		rate:      newBucket(h.opts.MaxMessagesPerSecond, time.Now()),
	}
	wc.serve()
}

// wsConn is one WebSocket connection.
type wsConn struct {
	h      *wsHandler
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	conn   Conn // the template of each message's Conn
	// sessionID is the connection's session (see WebSocketHandler); "":
	// no sessions.
	sessionID string
	subs      map[string]Subscription
	wg        sync.WaitGroup // the broadcast pushers
	rate      *bucket
}

// wsMessage is a client message.
type wsMessage struct {
	MessageType string          `json:"messageType"`
	MessageID   json.RawMessage `json:"messageId,omitempty"`
	Action      string          `json:"action,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
	Channel     string          `json:"channel,omitempty"`
}

// wsBroadcast is a pushed channel message.
type wsBroadcast struct {
	MessageType string `json:"messageType"`
	Message
	Dropped uint64 `json:"dropped,omitempty"`
}

func (c *wsConn) serve() {
	defer func() {
		c.cancel()
		for _, s := range c.subs {
			_ = s.Close() // closes its C, ending its pusher
		}
		c.wg.Wait()
		_ = c.ws.CloseNow()
	}()
	refused := 0
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err != nil {
			return // closed by the client, the limit or c.cancel
		}
		if !c.rate.take(time.Now()) {
			refused++
			if refused >= c.h.opts.MaxMessagesPerSecond {
				_ = c.ws.Close(websocket.StatusPolicyViolation, fmt.Sprintf("over %d messages per second", c.h.opts.MaxMessagesPerSecond))
				return
			}
			c.reply(messageID(data), nil, Errorf(KindRateLimited, "over %d messages per second; message not handled", c.h.opts.MaxMessagesPerSecond))
			continue
		}
		refused = 0
		if typ != websocket.MessageText {
			c.reply(nil, nil, paramError(KindInvalidParam, "", "binary message: want a JSON text message"))
			continue
		}
		c.handle(data)
	}
}

// messageID is data's messageId, or nil, for answering a message that is
// not handled.
func messageID(data []byte) json.RawMessage {
	var m struct {
		MessageID json.RawMessage `json:"messageId"`
	}
	if segjson.Unmarshal(data, &m) != nil {
		return nil
	}
	return m.MessageID
}

func (c *wsConn) handle(data []byte) {
	var m wsMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || dec.More() {
		if err == nil {
			err = errors.New("data after the message")
		}
		c.reply(messageID(data), nil, paramError(KindInvalidParam, "", "malformed message: %v", err))
		return
	}
	switch m.MessageType {
	case "action":
		cn, err := c.connFor()
		if err != nil {
			c.reply(m.MessageID, nil, err)
			return
		}
		out, err := c.h.app.Run(c.ctx, cn, m.Action, m.Params)
		if cn.Session != nil {
			c.sessionID = cn.Session.ID() // a destroyed session's successor
		}
		if err != nil {
			c.reply(m.MessageID, nil, err)
			return
		}
		c.reply(m.MessageID, struct {
			Response any `json:"response"`
		}{out}, nil)
	case "subscribe":
		c.reply(m.MessageID, statusOK, c.subscribe(m.Channel))
	case "unsubscribe":
		c.reply(m.MessageID, statusOK, c.unsubscribe(m.Channel))
	default:
		c.reply(m.MessageID, nil, paramError(KindInvalidParam, "messageType", "unknown messageType %s: want action, subscribe or unsubscribe", echo(m.MessageType)))
	}
}

// connFor returns the Conn of one client message: the connection's, with
// its session as the store has it now.
func (c *wsConn) connFor() (*Conn, error) {
	cn := c.conn
	if c.sessionID != "" {
		s, err := c.h.sessions.load(c.ctx, c.sessionID, true)
		if err != nil {
			return nil, err
		}
		cn.Session = s
	}
	return &cn, nil
}

var statusOK = struct {
	Status string `json:"status"`
}{"ok"}

func (c *wsConn) subscribe(channel string) error {
	if err := CheckChannel(channel); err != nil {
		return err
	}
	if c.h.opts.PubSub == nil {
		return &Error{Kind: KindNotFound, Message: "this server has no channels"}
	}
	if _, ok := c.subs[channel]; ok {
		return nil
	}
	if len(c.subs) >= c.h.opts.MaxSubscriptions {
		return Errorf(KindConflict, "at the limit of %d subscriptions per connection", c.h.opts.MaxSubscriptions)
	}
	cn, err := c.connFor()
	if err != nil {
		return err
	}
	if err := c.h.app.AuthorizeChannel(c.ctx, cn, channel); err != nil {
		return err
	}
	sub, err := c.h.opts.PubSub.Subscribe(c.ctx, channel)
	if err != nil {
		return &Error{Kind: KindInternal, Message: "internal error", Err: err}
	}
	c.subs[channel] = sub
	c.wg.Go(func() { c.push(sub) })
	return nil
}

func (c *wsConn) unsubscribe(channel string) error {
	if err := CheckChannel(channel); err != nil {
		return err
	}
	sub, ok := c.subs[channel]
	if !ok {
		return &Error{Kind: KindNotFound, Message: "not subscribed to channel " + echo(channel)}
	}
	delete(c.subs, channel)
	return sub.Close()
}

// push writes sub's messages to the client until sub is closed.
func (c *wsConn) push(sub Subscription) {
	for msg := range sub.C() {
		b, err := segjson.Marshal(wsBroadcast{MessageType: "broadcast", Message: msg, Dropped: sub.Dropped()})
		if err != nil {
			c.h.opts.Logger.Error("websocket broadcast", "id", c.conn.ID, "channel", msg.Channel, "error", err)
			continue
		}
		c.write(b)
	}
}

// reply answers a message: the error when err is not nil, else body (a
// struct encoding as a JSON object), with the messageId spliced in first.
func (c *wsConn) reply(id json.RawMessage, body any, err error) {
	var b []byte
	if err != nil {
		if e, ok := errors.AsType[*Error](err); ok && e.Kind == KindInternal && e.Err != nil {
			c.h.opts.Logger.Error("websocket", "id", c.conn.ID, "error", e.Err)
		}
		b = ErrorJSON(err)
	} else if b, err = segjson.Marshal(body); err != nil {
		b = ErrorJSON(&Error{Kind: KindInternal, Message: "internal error"})
		c.h.opts.Logger.Error("websocket: encode the answer", "id", c.conn.ID, "error", err)
	}
	if len(id) > 0 {
		var buf bytes.Buffer
		buf.WriteString(`{"messageId":`)
		_ = json.Compact(&buf, id) // id was decoded as JSON, so it is valid
		buf.WriteByte(',')
		buf.Write(b[1:])
		b = buf.Bytes()
	}
	c.write(b)
}

// write sends one text message; a failed write ends the connection.
func (c *wsConn) write(b []byte) {
	ctx, cancel := context.WithTimeout(c.ctx, wsWriteTimeout)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		c.cancel()
	}
}

// bucket is a token bucket: n tokens a second, at most n held.
type bucket struct {
	rate, tokens float64
	last         time.Time
}

func newBucket(n int, now time.Time) *bucket {
	return &bucket{rate: float64(n), tokens: float64(n), last: now}
}

// take takes a token at now, reporting whether there was one.
func (b *bucket) take(now time.Time) bool {
	b.tokens = min(b.rate, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
