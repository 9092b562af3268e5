package redisstate

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/pkg/action/oauth"
)

// OAuthStore is an [oauth.Store] over Redis: each record is the string
// key prefix+"oauth:"+key with the record's expiry (SET PX; GET; GETDEL
// for Take, atomic in one round trip, which needs Redis 6.2 or later;
// DEL), so every process sharing the Redis verifies every token. The
// oauth server keys codes and tokens by their SHA-256: no token is
// stored in clear.
//
// It also carries revocations ([oauth.Revocations]): an announcement is
// one PUBLISH on the channel prefix+"oauth:revoked" (a random id and the
// keys), which every watcher acknowledges with an RPUSH on
// prefix+"oauth:ack:"+id; the announcer waits (BLPOP, in slices of at
// most a second) for as many acknowledgements as PUBLISH counted
// receivers. Each watcher holds one Redis connection.
type OAuthStore struct {
	client redis.UniversalClient
	prefix string
}

var (
	_ oauth.Store       = (*OAuthStore)(nil)
	_ oauth.Revocations = (*OAuthStore)(nil)
)

// ackTTL bounds the life of an acknowledgement list whose announcer
// stopped waiting.
const ackTTL = time.Minute

// NewOAuthStore returns an OAuthStore keeping records in client under
// prefix.
func NewOAuthStore(client redis.UniversalClient, prefix string) *OAuthStore {
	return &OAuthStore{client: client, prefix: prefix + "oauth:"}
}

// Put implements [oauth.Store].
func (s *OAuthStore) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return nil // already expired: absent, as the interface says
	}
	if err := s.client.Set(ctx, s.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("put oauth record: %w", err)
	}
	return nil
}

// Get implements [oauth.Store].
func (s *OAuthStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return found(s.client.Get(ctx, s.prefix+key).Bytes())
}

// Take implements [oauth.Store].
func (s *OAuthStore) Take(ctx context.Context, key string) ([]byte, bool, error) {
	return found(s.client.GetDel(ctx, s.prefix+key).Bytes())
}

// Delete implements [oauth.Store].
func (s *OAuthStore) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = s.prefix + k
	}
	// One DEL per key: the keys may live in different cluster slots.
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range full {
			p.Del(ctx, k)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete oauth records: %w", err)
	}
	return nil
}

// AnnounceRevoked implements [oauth.Revocations].
func (s *OAuthStore) AnnounceRevoked(ctx context.Context, keys []string, wait time.Duration) error {
	id := rand.Text()
	n, err := s.client.Publish(ctx, s.prefix+"revoked", id+" "+strings.Join(keys, " ")).Result()
	if err != nil {
		return fmt.Errorf("announce revoked oauth records: %w", err)
	}
	ack := s.prefix + "ack:" + id
	defer s.client.Del(context.WithoutCancel(ctx), ack)
	deadline := time.Now().Add(wait)
	for got := int64(0); got < n; {
		left := time.Until(deadline)
		if left <= 0 {
			return nil // whoever has not answered has let its cache entries lapse
		}
		// Slices of a second at most, within the client's read timeout.
		err := s.client.Do(ctx, "BLPOP", ack, strconv.FormatFloat(min(left, time.Second).Seconds(), 'f', 3, 64)).Err()
		if errors.Is(err, redis.Nil) {
			continue // the slice passed without one
		}
		if err != nil {
			return fmt.Errorf("wait for revocation acknowledgements: %w", err)
		}
		got++
	}
	return nil
}

// WatchRevoked implements [oauth.Revocations]. After its connection
// fails it waits reconnectDelay before reading again (go-redis then
// reconnects and subscribes again).
func (s *OAuthStore) WatchRevoked(ctx context.Context, drop func(keys []string), live func(bool)) error {
	ps := s.client.Subscribe(ctx, s.prefix+"revoked")
	defer ps.Close()
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() }) // ends a Receive in progress
	defer stop()
	for {
		m, err := ps.Receive(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch m := m.(type) {
		case *redis.Subscription:
			live(true)
		case *redis.Message:
			id, keys, _ := strings.Cut(m.Payload, " ")
			drop(strings.Fields(keys))
			// Unacknowledged (Redis failing), the announcer waits out
			// its bound instead.
			ack := s.prefix + "ack:" + id
			_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.RPush(ctx, ack, 1)
				p.PExpire(ctx, ack, ackTTL)
				return nil
			})
		}
		if err != nil {
			live(false)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(reconnectDelay):
			}
		}
	}
}

func found(b []byte, err error) ([]byte, bool, error) {
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read oauth record: %w", err)
	}
	return b, true, nil
}
