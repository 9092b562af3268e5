// Package respadmin is the management gateway mcpkit puts in front of one
// Redis-protocol server (Redis, Valkey, any RESP server), which has no
// management HTTP API of its own: `mcpkit resp admin` serves it.
//
// [Server] is an http.Handler with JSON routes over the target's own
// commands (INFO, SCAN with TYPE/PTTL/MEMORY USAGE, CLIENT LIST, SLOWLOG,
// LATENCY, MEMORY STATS, CONFIG GET/SET, SAVE, FLUSHDB, ...), a Prometheus
// exposition of INFO at /metrics, an RDB snapshot taken over the
// replication protocol (SYNC, as `redis-cli --rdb` does) when enabled, and
// the /api/live WebSocket (an overview, INFO deltas, keyspace notifications
// and, for admins, MONITOR lines). [Server.OpenAPI] is generated from the
// same route table the handler serves, so the two cannot drift apart.
//
// Access: bearer tokens carry a role (viewer < operator < admin; see
// [ParseTokens]); without tokens every caller acts as admin, and the
// gateway must then listen on loopback only ([Server.Authenticated] tells
// httpserve.ListenAndServe). Values of keys are hidden unless the server's
// reveal setting ([Options.Reveal]) admits the caller's role. Every POST
// is written to an append-only audit file (who, what, when, outcome) before
// its answer is sent, refusals included; without an audit file POSTs are
// refused. The file also records every refused request (401 and 403 on
// any route) and the reads that disclose data (revealed values, snapshot
// downloads, MONITOR on the live feed) before their first byte.
// Destructive actions need "confirmed": true.
//
// It never retries a command, never follows the target elsewhere, and
// holds no MCP code: the MCP tools that talk to it are in plugins/resp.
package respadmin
