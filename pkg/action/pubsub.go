package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	segjson "github.com/segmentio/encoding/json"
)

// MaxChannelBytes bounds a PubSub channel name.
const MaxChannelBytes = 256

// DefaultSubscriptionBuffer is how many messages a [LocalPubSub]
// subscription holds for its reader before it drops new ones.
const DefaultSubscriptionBuffer = 256

// Message is one message published on a channel.
type Message struct {
	Channel string `json:"channel"`
	// Message is the payload: any JSON-encodable value when published; a
	// json.RawMessage of its JSON when received.
	Message any    `json:"message"`
	Sender  string `json:"sender"` // who published it (e.g. a Conn.ID), or ""
}

// PubSub carries messages on named channels to their subscribers. A
// publisher never waits for a subscriber: a subscriber that does not keep
// up loses messages and is told how many ([Subscription.Dropped]).
type PubSub interface {
	// Publish sends msg to every current subscriber of channel (msg.Channel
	// is set to channel). The payload is encoded as JSON once, here: a
	// payload that cannot be is an error and nothing is sent.
	Publish(ctx context.Context, channel string, msg Message) error
	// Subscribe starts a subscription to channel; the caller must Close it.
	Subscribe(ctx context.Context, channel string) (Subscription, error)
}

// Subscription is one subscriber's view of a channel.
type Subscription interface {
	// C delivers the channel's messages in publish order, each payload a
	// json.RawMessage; it is closed by Close.
	C() <-chan Message
	// Dropped returns how many messages were dropped because the buffer
	// was full since the last call, and resets the count.
	Dropped() uint64
	// Close ends the subscription; it is idempotent and never blocks.
	Close() error
}

// ErrPubSubClosed is returned by a closed [LocalPubSub].
var ErrPubSubClosed = errors.New("pubsub closed")

// LocalPubSub is an in-process [PubSub]. Each subscription has a buffer
// of DefaultSubscriptionBuffer messages; when it is full, new messages
// for that subscriber are dropped and counted. It starts no goroutines.
type LocalPubSub struct {
	mu     sync.RWMutex
	subs   map[string]map[*localSub]struct{}
	buffer int
	closed bool
}

var _ PubSub = (*LocalPubSub)(nil)

// NewLocalPubSub returns an empty in-process PubSub.
func NewLocalPubSub() *LocalPubSub {
	return &LocalPubSub{subs: map[string]map[*localSub]struct{}{}, buffer: DefaultSubscriptionBuffer}
}

// CheckChannel returns an invalid_param error (field "channel") unless
// channel is 1 to MaxChannelBytes bytes.
func CheckChannel(channel string) error {
	if channel == "" || len(channel) > MaxChannelBytes {
		return paramError(KindInvalidParam, "channel", "want a channel name of 1 to %d bytes, got %d", MaxChannelBytes, len(channel))
	}
	return nil
}

// Publish implements [PubSub]: it delivers to each subscriber whose
// buffer has room, and counts a drop for each other one.
func (ps *LocalPubSub) Publish(ctx context.Context, channel string, msg Message) error {
	if err := CheckChannel(channel); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish on %q: %w", channel, err)
	}
	raw, err := segjson.Marshal(msg.Message)
	if err != nil {
		return fmt.Errorf("publish on %q: encode the message: %w", channel, err)
	}
	msg.Channel, msg.Message = channel, json.RawMessage(raw)
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	if ps.closed {
		return fmt.Errorf("publish on %q: %w", channel, ErrPubSubClosed)
	}
	for s := range ps.subs[channel] {
		select {
		case s.ch <- msg:
		default:
			s.dropped.Add(1)
		}
	}
	return nil
}

// Subscribe implements [PubSub].
func (ps *LocalPubSub) Subscribe(ctx context.Context, channel string) (Subscription, error) {
	if err := CheckChannel(channel); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("subscribe to %q: %w", channel, err)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return nil, fmt.Errorf("subscribe to %q: %w", channel, ErrPubSubClosed)
	}
	s := &localSub{ps: ps, channel: channel, ch: make(chan Message, ps.buffer)}
	if ps.subs[channel] == nil {
		ps.subs[channel] = map[*localSub]struct{}{}
	}
	ps.subs[channel][s] = struct{}{}
	return s, nil
}

// Subscribers returns how many subscriptions channel has now.
func (ps *LocalPubSub) Subscribers(channel string) int {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.subs[channel])
}

// Close ends every subscription (their C channels close) and makes later
// Publish and Subscribe calls fail with ErrPubSubClosed.
func (ps *LocalPubSub) Close() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.closed = true
	for _, set := range ps.subs {
		for s := range set {
			s.closeLocked()
		}
	}
	ps.subs = map[string]map[*localSub]struct{}{}
	return nil
}

type localSub struct {
	ps      *LocalPubSub
	channel string
	ch      chan Message
	dropped atomic.Uint64
	done    bool // guarded by ps.mu
}

func (s *localSub) C() <-chan Message { return s.ch }

func (s *localSub) Dropped() uint64 { return s.dropped.Swap(0) }

func (s *localSub) Close() error {
	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	if set := s.ps.subs[s.channel]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(s.ps.subs, s.channel)
		}
	}
	s.closeLocked()
	return nil
}

// closeLocked closes s.ch once; ps.mu is held for writing, so no Publish
// is sending on it.
func (s *localSub) closeLocked() {
	if !s.done {
		s.done = true
		close(s.ch)
	}
}
