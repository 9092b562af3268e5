package actions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/action/oauth"
	"github.com/mcpkit/mcpkit/pkg/action/redisstate"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/sessionstore"
	"github.com/redis/go-redis/v9"
)

// sharedState is where an app's PubSub, rate-limit counts, task queue,
// web sessions and OAuth records live, and the server's legacy MCP HTTP sessions: in process, or in Redis for
// several instances.
type sharedState struct {
	pubsub   action.PubSub
	relay    action.PubSub    // carries every message to every instance's MCP sessions (notify.go)
	rates    action.RateStore // nil: the rate limiter's own, in process
	queue    action.TaskQueue
	web      action.SessionStore // the app's web sessions
	sessions sessionstore.Store  // MCP sessions; nil: the HTTP handler's own, in process
	oauth    oauth.Store         // the OAuth server's clients, codes and tokens
	close    func() error
}

// openState opens the shared state cfg names (nil: in process).
func openState(ctx context.Context, cfg *RedisConfig) (sharedState, error) {
	if cfg == nil {
		ps, relay := action.NewLocalPubSub(), action.NewLocalPubSub()
		return sharedState{pubsub: ps, relay: relay, queue: action.NewLocalQueue(), web: action.NewLocalSessionStore(), oauth: oauth.NewMemoryStore(),
			close: func() error { return errors.Join(relay.Close(), ps.Close()) }}, nil
	}
	password := os.Getenv(EnvRedisPassword)
	if cfg.PasswordFile != "" {
		b, err := os.ReadFile(cfg.PasswordFile)
		if err != nil {
			return sharedState{}, fmt.Errorf("redis password_file: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
	}
	client := redis.NewClient(&redis.Options{Addr: cfg.Addr, Username: cfg.Username, Password: password, DB: cfg.DB})
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return sharedState{}, fmt.Errorf("redis at %s: %w", cfg.Addr, err) // the password is not in the error
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "mcpkit:actions:"
	}
	// The app's channels and the relay are apart: no channel name a
	// WebSocket client subscribes to reaches the relay.
	ps, relay := redisstate.NewPubSub(client, prefix+"channel:"), redisstate.NewPubSub(client, prefix+"mcp:")
	return sharedState{pubsub: ps, relay: relay, rates: redisstate.NewRateStore(client, prefix), queue: redisstate.NewTaskQueue(client, prefix),
		web: redisstate.NewSessionStore(client, prefix), sessions: sessionstore.NewRedis(client, prefix), oauth: redisstate.NewOAuthStore(client, prefix),
		close: func() error { return errors.Join(relay.Close(), ps.Close(), client.Close()) }}, nil
}

// checkSharedData refuses c's Redis (shared state) beside app data that
// only this process sees: memory or a file, not a PostgreSQL store URL.
func (c Config) checkSharedData() error {
	if c.Redis != nil && !kv.IsURL(c.DataPath) {
		return localDataError(c.DataPath)
	}
	return nil
}

// localDataError is the refusal of shared Redis state beside the
// process-local data at path ("" in memory, else a file; only a
// PostgreSQL store URL, kv.IsURL, is shared), naming the fix. That split
// lets one user act as another: each instance numbers its own users from
// 1, while a web session or an OAuth token naming "user:1" is honoured by
// every instance, and so is the inbox channel "inbox:user:1". A file's
// path is shown; nothing of a URL is, since it may hold a password.
func localDataError(path string) error {
	where := "in this process's memory"
	if path != "" {
		where = fmt.Sprintf("in the file %q, which only this process opens", path)
	}
	return &mcpcore.ConfigError{Field: "data_path", Reason: fmt.Sprintf(`"redis" shares web sessions, OAuth tokens and PubSub among the app's instances, `+
		`but its data (users, messages) is %s: each instance would number its own users, and one user's session or token would act as another user on the next instance. `+
		`Set data_path (or --data) to a PostgreSQL store that every instance shares, postgres://USER@HOST:PORT/DB?sslmode=require&mcpkit_store=NAME `+
		`(the password in PGPASSWORD, not the configuration), or remove "redis" to serve one instance alone`, where)}
}
