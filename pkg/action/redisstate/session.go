package redisstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/pkg/action"
)

// SessionStore is an [action.SessionStore] over Redis: session id's data
// is the string key prefix+"web_session:"+id, whose expiry is the
// session's (SET PX to save, GETEX PX to load and extend, in one round
// trip each; GETEX needs Redis 6.2 or later), so every process sharing
// the Redis serves every session.
type SessionStore struct {
	client redis.UniversalClient
	prefix string
}

var _ action.SessionStore = (*SessionStore)(nil)

// NewSessionStore returns a SessionStore keeping sessions in client under
// prefix.
func NewSessionStore(client redis.UniversalClient, prefix string) *SessionStore {
	return &SessionStore{client: client, prefix: prefix}
}

func (s *SessionStore) key(id string) string { return s.prefix + "web_session:" + id }

// Load implements [action.SessionStore].
func (s *SessionStore) Load(ctx context.Context, id string, ttl time.Duration) ([]byte, bool, error) {
	b, err := s.client.GetEx(ctx, s.key(id), ttl).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("load session: %w", err)
	}
	return b, true, nil
}

// Save implements [action.SessionStore].
func (s *SessionStore) Save(ctx context.Context, id string, data []byte, ttl time.Duration) error {
	if err := s.client.Set(ctx, s.key(id), data, ttl).Err(); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	return nil
}

// Delete implements [action.SessionStore].
func (s *SessionStore) Delete(ctx context.Context, id string) error {
	if err := s.client.Del(ctx, s.key(id)).Err(); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}
