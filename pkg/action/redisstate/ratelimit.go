package redisstate

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/pkg/action"
)

// RateStore is an [action.RateStore] over Redis: the count of key in
// window index (of a window length) is the Redis key
// prefix+"rate:{"+key+"}:"+window-in-ms+":"+index, which expires two
// windows after its last hit. Each Hit is one round trip (a script that
// INCRs the current window's key, PEXPIREs it and GETs the previous
// one's), so processes sharing the Redis share the counts exactly.
//
// Unlike action.MemoryRateStore, a hit of a window older than a key's
// latest counts in its own (older) window.
type RateStore struct {
	client redis.UniversalClient
	prefix string
}

var _ action.RateStore = (*RateStore)(nil)

// NewRateStore returns a RateStore keeping its counts in client under
// prefix.
func NewRateStore(client redis.UniversalClient, prefix string) *RateStore {
	return &RateStore{client: client, prefix: prefix}
}

// hitScript: KEYS[1] the current window's count, KEYS[2] the previous
// one's; ARGV[1] the expiry in ms.
var hitScript = redis.NewScript(`
local c = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {c, tonumber(redis.call('GET', KEYS[2]) or '0')}
`)

// Hit implements [action.RateStore]. A window under a millisecond is an
// error.
func (s *RateStore) Hit(ctx context.Context, key string, index int64, window time.Duration) (int64, int64, error) {
	keys, ms, err := s.keys(key, index, window)
	if err != nil {
		return 0, 0, err
	}
	res, err := hitScript.Run(ctx, s.client, keys, 2*ms).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("rate count %q: %w", key, err)
	}
	return res[0], res[1], nil
}

// Peek implements [action.RateStore]: one MGET of the two windows' keys.
func (s *RateStore) Peek(ctx context.Context, key string, index int64, window time.Duration) (int64, int64, error) {
	keys, _, err := s.keys(key, index, window)
	if err != nil {
		return 0, 0, err
	}
	vals, err := s.client.MGet(ctx, keys...).Result()
	if err != nil {
		return 0, 0, fmt.Errorf("rate count %q: %w", key, err)
	}
	var out [2]int64
	for i, v := range vals {
		if str, ok := v.(string); ok {
			if out[i], err = strconv.ParseInt(str, 10, 64); err != nil {
				return 0, 0, fmt.Errorf("rate count %q: %w", key, err)
			}
		}
	}
	return out[0], out[1], nil
}

// keys are the Redis keys of key's counts in windows index and index-1,
// and the window in ms.
func (s *RateStore) keys(key string, index int64, window time.Duration) ([]string, int64, error) {
	ms := window.Milliseconds()
	if ms <= 0 {
		return nil, 0, fmt.Errorf("rate count %q: window %v is under a millisecond", key, window)
	}
	// the hash tag keeps both keys in one cluster slot
	base := s.prefix + "rate:{" + key + "}:" + strconv.FormatInt(ms, 10) + ":"
	return []string{base + strconv.FormatInt(index, 10), base + strconv.FormatInt(index-1, 10)}, ms, nil
}
