package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/pkg/action"
)

// DefaultLease is how long a popped job stays in flight before a Pop of
// its queue queues it again (see TaskQueue).
const DefaultLease = 10 * time.Minute

// maxRunAtMicros bounds a job's RunAt in µs since 1970: scores beyond
// 2^53 lose precision in Redis (about the year 2255).
const maxRunAtMicros = 1 << 53

// ErrNotInFlight is wrapped by the error Ack returns for a job that is not
// in flight: never popped, acked already, or queued again after its lease
// expired.
var ErrNotInFlight = errors.New("the job is not in flight")

// TaskQueue is an [action.TaskQueue] over Redis, so that the workers of
// several processes share queues: a job is popped by exactly one of them.
//
// Queue q is the sorted set prefix+"tasks:"+q+":due", ordered by RunAt in
// µs since 1970 (a RunAt before 1970 counts as 1970) then, through the
// member, by the sub-µs rest of RunAt and push order; the pending jobs of
// every queue are the hash prefix+"tasks:pending" by ID. Push, Pop and Ack
// are each one script, so atomic.
//
// A popped job is in flight, with a lease of Lease on the Redis server's
// clock, until it is acked. A job whose lease expires (the process that
// popped it died, or its run took longer than Lease) is queued again,
// unchanged and due at once, by the next Pop of its queue from any
// process, unless a job of the same ID is pending then (that one replaces
// it); its late Ack then fails with ErrNotInFlight, unless the job was
// popped again and is still in flight (Ack counts the unacked pops of an
// ID, not who made them: the late Ack ends the new pop's lease). So a job
// runs at least once, and twice only if its lease expires: set Lease
// above the longest run.
type TaskQueue struct {
	client redis.UniversalClient
	prefix string
	// Lease is how long a popped job may stay unacked (DefaultLease when
	// made by NewTaskQueue); set it before the queue is used.
	Lease time.Duration
}

var _ action.TaskQueue = (*TaskQueue)(nil)

// NewTaskQueue returns a TaskQueue keeping its jobs in client under
// prefix, with a lease of DefaultLease.
func NewTaskQueue(client redis.UniversalClient, prefix string) *TaskQueue {
	return &TaskQueue{client: client, prefix: prefix, Lease: DefaultLease}
}

// pushLua defines push(pending, id, dueKey, seqKey, score, rest, body):
// it removes the pending job id (from whatever queue), then adds body to
// dueKey at score with a member ordering it by rest (the 3-digit ns under
// the µs) then push order. A record is {k = due key, m = member, s =
// score, r = rest, j = body}.
const pushLua = `
local function push(pending, id, dueKey, seqKey, score, rest, body)
  local old = redis.call('HGET', pending, id)
  if old then
    local o = cjson.decode(old)
    redis.call('ZREM', o.k, o.m)
  end
  local member = rest .. string.format('%016x', redis.call('INCR', seqKey)) .. ':' .. id
  redis.call('ZADD', dueKey, score, member)
  redis.call('HSET', pending, id, cjson.encode({k = dueKey, m = member, s = score, r = rest, j = body}))
end
`

// pushScript: KEYS pending, due, seq; ARGV id, score, rest, body.
var pushScript = redis.NewScript(pushLua + `
push(KEYS[1], ARGV[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3], ARGV[4])
return 1
`)

// popScript: KEYS pending, due, seq, flight (lease deadlines by ID),
// flightjob (records by ID, with n: how many pops of the ID are unacked);
// ARGV now in µs, the ns rest of now, the lease in ms. It first queues the
// queue's expired jobs again, then pops the earliest due job, if any.
var popScript = redis.NewScript(pushLua + `
local t = redis.call('TIME')
local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', nowms)) do
  local rec = cjson.decode(redis.call('HGET', KEYS[5], id))
  redis.call('ZREM', KEYS[4], id)
  redis.call('HDEL', KEYS[5], id)
  if redis.call('HEXISTS', KEYS[1], id) == 0 then
    push(KEYS[1], id, KEYS[2], KEYS[3], rec.s, rec.r, rec.j)
  end
end
local top = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #top == 0 then return false end
local member, score = top[1], tonumber(top[2])
local now = tonumber(ARGV[1])
if score > now or (score == now and string.sub(member, 1, 3) > ARGV[2]) then return false end
local id = string.sub(member, 21)
local rec = cjson.decode(redis.call('HGET', KEYS[1], id))
redis.call('ZREM', KEYS[2], member)
redis.call('HDEL', KEYS[1], id)
local n = 1
local f = redis.call('HGET', KEYS[5], id)
if f then n = cjson.decode(f).n + 1 end
redis.call('HSET', KEYS[5], id, cjson.encode({s = rec.s, r = rec.r, j = rec.j, n = n}))
redis.call('ZADD', KEYS[4], nowms + tonumber(ARGV[3]), id)
return rec.j
`)

// ackScript: KEYS flight, flightjob; ARGV id. It returns 0 when the job
// is not in flight.
var ackScript = redis.NewScript(`
local f = redis.call('HGET', KEYS[2], ARGV[1])
if not f then return 0 end
local rec = cjson.decode(f)
if rec.n > 1 then
  rec.n = rec.n - 1
  redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(rec))
else
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[1], ARGV[1])
end
return 1
`)

// keys are a queue's keys, in the scripts' order.
func (q *TaskQueue) keys(queue string) []string {
	base := q.prefix + "tasks:" + queue
	return []string{q.prefix + "tasks:pending", base + ":due", base + ":seq", base + ":flight", base + ":flightjob"}
}

// Push implements [action.TaskQueue]; a job without an ID, action or
// queue, or due after about the year 2255, is an error.
func (q *TaskQueue) Push(ctx context.Context, job action.Job) error {
	if job.ID == "" || job.Action == "" || job.Queue == "" {
		return fmt.Errorf("push job %q: want an ID, an action and a queue", job.ID)
	}
	us, rest := max(job.RunAt.UnixMicro(), 0), job.RunAt.Nanosecond()%1000
	if job.RunAt.Unix() < 0 {
		rest = 0
	}
	if us >= maxRunAtMicros {
		return fmt.Errorf("push job %q: RunAt %v is too far ahead", job.ID, job.RunAt)
	}
	body, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("push job %q: encode: %w", job.ID, err)
	}
	if err := pushScript.Run(ctx, q.client, q.keys(job.Queue)[:3], job.ID, us, fmt.Sprintf("%03d", rest), body).Err(); err != nil {
		return fmt.Errorf("push job %q: %w", job.ID, err)
	}
	return nil
}

// Pop implements [action.TaskQueue]; first it queues again the jobs of
// queue whose lease has expired.
func (q *TaskQueue) Pop(ctx context.Context, queue string, now time.Time) (action.Job, bool, error) {
	rest := now.Nanosecond() % 1000
	if now.Unix() < 0 {
		rest = 0
	}
	res, err := popScript.Run(ctx, q.client, q.keys(queue), max(now.UnixMicro(), 0), fmt.Sprintf("%03d", rest), max(q.Lease.Milliseconds(), 1)).Text()
	if errors.Is(err, redis.Nil) {
		return action.Job{}, false, nil
	}
	if err != nil {
		return action.Job{}, false, fmt.Errorf("pop queue %q: %w", queue, err)
	}
	var job action.Job
	if err := json.Unmarshal([]byte(res), &job); err != nil {
		return action.Job{}, false, fmt.Errorf("pop queue %q: decode the job: %w", queue, err)
	}
	return job, true, nil
}

// Ack implements [action.TaskQueue]; acking a job that is not in flight is
// an error wrapping ErrNotInFlight.
func (q *TaskQueue) Ack(ctx context.Context, job action.Job) error {
	k := q.keys(job.Queue)
	n, err := ackScript.Run(ctx, q.client, k[3:], job.ID).Int()
	if err != nil {
		return fmt.Errorf("ack job %q: %w", job.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("ack job %q: %w", job.ID, ErrNotInFlight)
	}
	return nil
}
