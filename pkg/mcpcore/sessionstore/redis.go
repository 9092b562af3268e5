package sessionstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a [Store] shared by every instance using the same Redis and
// prefix: the record of session id is the string key prefix+"session:"+id
// holding the JSON {"principal", "state"}, and the record's expiry is the
// key's own (PEXPIREAT), so Redis drops lapsed records by itself. Each
// method is one round trip; Load's extension is a script, atomic with the
// read.
//
// Expiry is kept to the millisecond, on the Redis server's clock: a record
// is live while the server's millisecond clock is before Expires rounded up
// to the millisecond, and Load returns that rounded Expires. The state is
// stored as JSON, so Save fails for a State that is not valid JSON, and
// Load returns it compacted. Errors never carry the session id or the
// client's credentials. Redis 7.0 or later (PEXPIRETIME, PEXPIREAT GT).
type Redis struct {
	client redis.UniversalClient
	prefix string
}

var _ Store = (*Redis)(nil)

// NewRedis returns a store keeping its records in client under prefix.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// redisValue is the JSON held by a record's key.
type redisValue struct {
	Principal string          `json:"principal,omitempty"`
	State     json.RawMessage `json:"state,omitempty"`
}

func (s *Redis) key(id string) string { return s.prefix + "session:" + id }

// lastLiveMilli is the last server millisecond at which a record expiring
// at t is live (Redis drops a key once its clock is past the key's expiry):
// t rounded up to the millisecond, less one.
func lastLiveMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms - 1
}

// loadScript: KEYS[1] the record; ARGV[1] the extension as lastLiveMilli
// ("0": none). PEXPIREAT GT leaves a key without expiry alone. It returns
// the value and the key's expiry in ms (-1: none), or nil.
var loadScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return false end
if ARGV[1] ~= '0' then redis.call('PEXPIREAT', KEYS[1], ARGV[1], 'GT') end
return {v, redis.call('PEXPIRETIME', KEYS[1])}
`)

// Load implements [Store].
func (s *Redis) Load(ctx context.Context, id string, extend time.Time) (Record, bool, error) {
	ext := int64(0)
	if !extend.IsZero() {
		ext = max(lastLiveMilli(extend), 1) // PEXPIREAT needs a positive time
	}
	res, err := loadScript.Run(ctx, s.client, []string{s.key(id)}, ext).Slice()
	if errors.Is(err, redis.Nil) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("sessionstore: load a session from Redis: %w", err)
	}
	raw, _ := res[0].(string)
	exp, _ := res[1].(int64)
	var v redisValue
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return Record{}, false, fmt.Errorf("sessionstore: a session record in Redis is not valid JSON: %w", err)
	}
	rec := Record{ID: id, Principal: v.Principal, State: v.State}
	if exp >= 0 {
		rec.Expires = time.UnixMilli(exp + 1)
	}
	return rec, true, nil
}

// Save implements [Store].
func (s *Redis) Save(ctx context.Context, rec Record) error {
	if rec.ID == "" {
		return ErrInvalidRecord
	}
	b, err := json.Marshal(redisValue{Principal: rec.Principal, State: rec.State})
	if err != nil {
		return fmt.Errorf("sessionstore: session state is not valid JSON: %w", err)
	}
	args := []any{"set", s.key(rec.ID), b} // SET without expiry clears an earlier one
	if !rec.Expires.IsZero() {
		// PXAT needs a positive time; one in the past is lapsed at once
		args = append(args, "pxat", max(lastLiveMilli(rec.Expires), 1))
	}
	if err := s.client.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("sessionstore: save a session to Redis: %w", err)
	}
	return nil
}

// Delete implements [Store].
func (s *Redis) Delete(ctx context.Context, id string) error {
	if err := s.client.Del(ctx, s.key(id)).Err(); err != nil {
		return fmt.Errorf("sessionstore: delete a session from Redis: %w", err)
	}
	return nil
}
