package redisstate

import (
	"context"
	"errors"
	"fmt"
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
type OAuthStore struct {
	client redis.UniversalClient
	prefix string
}

var _ oauth.Store = (*OAuthStore)(nil)

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

func found(b []byte, err error) ([]byte, bool, error) {
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read oauth record: %w", err)
	}
	return b, true, nil
}
