// Package redisstate implements the action framework's shared state over
// Redis (github.com/redis/go-redis/v9), so that several mcpkit processes
// behind a load balancer share it: [PubSub] ([action.PubSub]), [RateStore]
// ([action.RateStore]), [TaskQueue] ([action.TaskQueue]),
// [SessionStore] ([action.SessionStore]) and [OAuthStore] ([oauth.Store]:
// the authorization server's clients, codes and tokens; and
// [oauth.Revocations], which tells every instance of a revoked token
// before the revocation is answered). The in-process
// implementations are in package action (LocalPubSub, MemoryRateStore,
// LocalQueue, LocalSessionStore) and package oauth (MemoryStore); both
// kinds pass the same conformance tests.
//
// Every key and channel is under a caller-chosen prefix, so several apps
// may share one Redis. The package never creates or closes the client: the
// caller owns it (and closes it after the values built on it).
//
// The task queue's scripts touch keys of several queues, so it needs a
// single Redis (or a failover client), not Redis Cluster. The rate store
// keeps each Hit's keys in one cluster slot (for a non-empty key), the
// session store one key per call, and the pubsub uses plain
// PUBLISH/SUBSCRIBE, so these are meant to work on a cluster too, but
// only a single Redis is tested.
package redisstate
