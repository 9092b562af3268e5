package redisstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	segjson "github.com/segmentio/encoding/json"

	"github.com/mcpkit/mcpkit/pkg/action"
)

// reconnectDelay is how long a subscription waits before reading again
// after its connection failed (go-redis then reconnects and subscribes
// again).
const reconnectDelay = 100 * time.Millisecond

// PubSub is an [action.PubSub] over Redis PUBLISH and SUBSCRIBE: every
// process subscribed to a channel through the same Redis and prefix gets
// the messages any of them publishes. Channel c is the Redis channel
// prefix+c. Each subscription holds one Redis connection and one goroutine
// (stopped by its Close) that moves messages into a buffer of
// action.DefaultSubscriptionBuffer messages; when it is full, new messages
// are dropped and counted, so a slow reader never slows Redis or a
// publisher. Messages published while a subscription's connection is down
// are lost uncounted (Redis does not keep them).
type PubSub struct {
	client redis.UniversalClient
	prefix string
	mu     sync.Mutex
	subs   map[*subscription]struct{}
	closed bool
}

var _ action.PubSub = (*PubSub)(nil)

// NewPubSub returns a PubSub publishing on client's channels named
// prefix followed by the action channel name.
func NewPubSub(client redis.UniversalClient, prefix string) *PubSub {
	return &PubSub{client: client, prefix: prefix, subs: map[*subscription]struct{}{}}
}

// Publish implements [action.PubSub]: the payload is encoded as JSON once,
// here, and sent with one PUBLISH; an invalid channel is an invalid_param
// *action.Error, a closed PubSub action.ErrPubSubClosed.
func (ps *PubSub) Publish(ctx context.Context, channel string, msg action.Message) error {
	if err := action.CheckChannel(channel); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish on %q: %w", channel, err)
	}
	raw, err := segjson.Marshal(msg.Message)
	if err != nil {
		return fmt.Errorf("publish on %q: encode the message: %w", channel, err)
	}
	ps.mu.Lock()
	closed := ps.closed
	ps.mu.Unlock()
	if closed {
		return fmt.Errorf("publish on %q: %w", channel, action.ErrPubSubClosed)
	}
	if err := ps.client.Publish(ctx, ps.prefix+channel, encodeEnvelope(msg.Sender, raw)).Err(); err != nil {
		return fmt.Errorf("publish on %q: %w", channel, err)
	}
	return nil
}

// encodeEnvelope frames a message for Redis: the sender's length in
// decimal, ':', the sender, then the payload's JSON.
func encodeEnvelope(sender string, payload []byte) []byte {
	b := make([]byte, 0, 8+len(sender)+len(payload))
	b = strconv.AppendInt(b, int64(len(sender)), 10)
	b = append(b, ':')
	b = append(b, sender...)
	return append(b, payload...)
}

// decodeEnvelope is the inverse of encodeEnvelope; ok is false for a
// payload no PubSub published.
func decodeEnvelope(s string) (sender string, payload json.RawMessage, ok bool) {
	n, rest, found := strings.Cut(s, ":")
	l, err := strconv.Atoi(n)
	if !found || err != nil || l < 0 || l > len(rest) || !json.Valid([]byte(rest[l:])) {
		return "", nil, false
	}
	return rest[:l], json.RawMessage(rest[l:]), true
}

// Subscribe implements [action.PubSub]. It returns once Redis has
// confirmed the subscription, so every message published after it returns
// is delivered (buffer permitting).
func (ps *PubSub) Subscribe(ctx context.Context, channel string) (action.Subscription, error) {
	if err := action.CheckChannel(channel); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subscribe to %q: %w", channel, err)
	}
	ps.mu.Lock()
	closed := ps.closed
	ps.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("subscribe to %q: %w", channel, action.ErrPubSubClosed)
	}
	rps := ps.client.Subscribe(ctx, ps.prefix+channel)
	if _, err := rps.Receive(ctx); err != nil { // the confirmation
		_ = rps.Close()
		return nil, fmt.Errorf("subscribe to %q: %w", channel, err)
	}
	s := &subscription{ps: ps, rps: rps, ch: make(chan action.Message, action.DefaultSubscriptionBuffer), stop: make(chan struct{}), done: make(chan struct{})}
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		_ = rps.Close()
		return nil, fmt.Errorf("subscribe to %q: %w", channel, action.ErrPubSubClosed)
	}
	ps.subs[s] = struct{}{}
	ps.mu.Unlock()
	go s.read(channel)
	return s, nil
}

// Close ends every subscription (their C channels close, their
// connections and goroutines are gone when it returns) and makes later
// Publish and Subscribe calls fail with action.ErrPubSubClosed. It does
// not close the client. It is idempotent.
func (ps *PubSub) Close() error {
	ps.mu.Lock()
	ps.closed = true
	subs := ps.subs
	ps.subs = map[*subscription]struct{}{}
	ps.mu.Unlock()
	for s := range subs {
		s.end()
	}
	return nil
}

type subscription struct {
	ps      *PubSub
	rps     *redis.PubSub
	ch      chan action.Message
	dropped atomic.Uint64
	once    sync.Once
	stop    chan struct{} // closed by end
	done    chan struct{} // closed when read has returned (and closed ch)
}

// read moves messages from Redis into s.ch until s ends.
func (s *subscription) read(channel string) {
	defer close(s.done)
	defer close(s.ch)
	for {
		m, err := s.rps.Receive(context.Background())
		select {
		case <-s.stop:
			return
		default:
		}
		if err != nil {
			select {
			case <-s.stop:
				return
			case <-time.After(reconnectDelay):
			}
			continue
		}
		rm, ok := m.(*redis.Message)
		if !ok {
			continue // a subscription confirmation or a pong
		}
		sender, payload, ok := decodeEnvelope(rm.Payload)
		if !ok {
			continue // not from a PubSub: not a message of ours
		}
		select {
		case s.ch <- action.Message{Channel: channel, Message: payload, Sender: sender}:
		default:
			s.dropped.Add(1)
		}
	}
}

func (s *subscription) C() <-chan action.Message { return s.ch }

func (s *subscription) Dropped() uint64 { return s.dropped.Swap(0) }

// Close ends the subscription: its connection is closed and its goroutine
// has returned (and closed C) when Close returns, which takes no longer
// than closing a socket.
func (s *subscription) Close() error {
	s.ps.mu.Lock()
	delete(s.ps.subs, s)
	s.ps.mu.Unlock()
	s.end()
	return nil
}

// end stops s once and waits for its goroutine.
func (s *subscription) end() {
	s.once.Do(func() {
		close(s.stop)
		_ = s.rps.Close() // unblocks Receive
	})
	<-s.done
}
