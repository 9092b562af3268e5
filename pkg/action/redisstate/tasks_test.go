package redisstate_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/action/redisstate"
)

// taskQueues are the implementations under test: each makes two queues
// sharing jobs (two processes for Redis; one value twice in process).
var taskQueues = impls(func() action.TaskQueue { return action.NewLocalQueue() },
	func(_ *testing.T, c redis.UniversalClient, prefix string) action.TaskQueue {
		return redisstate.NewTaskQueue(c, prefix)
	})

func push(t *testing.T, q action.TaskQueue, job action.Job) {
	t.Helper()
	if job.Action == "" {
		job.Action = "a"
	}
	if job.Queue == "" {
		job.Queue = "q"
	}
	if err := q.Push(ctx(t), job); err != nil {
		t.Fatal(err)
	}
}

// popAll pops and acks queue's jobs due at now, alternating a and b, and
// returns their IDs.
func popAll(t *testing.T, a, b action.TaskQueue, queue string, now time.Time) string {
	t.Helper()
	var got []string
	for i := 0; ; i++ {
		q := a
		if i%2 == 1 {
			q = b
		}
		job, ok, err := q.Pop(ctx(t), queue, now)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return strings.Join(got, ",")
		}
		got = append(got, job.ID)
		if err := q.Ack(ctx(t), job); err != nil {
			t.Fatal(err)
		}
		if err := q.Ack(ctx(t), job); err == nil {
			t.Fatal("acked a job twice")
		}
	}
}

// A queue pops due jobs earliest first (push order among equals, to the
// nanosecond), replaces a pending job pushed again with its ID (from any
// queue), and acks only jobs in flight.
func TestTaskQueueOrder(t *testing.T) {
	conform(t, taskQueues, func(t *testing.T, a, b action.TaskQueue) {
		t0 := time.Unix(1_800_000_000, 123_456_789)
		push(t, a, action.Job{ID: "late", RunAt: t0.Add(time.Hour)})
		push(t, b, action.Job{ID: "c", RunAt: t0})
		push(t, a, action.Job{ID: "b", RunAt: t0})
		push(t, b, action.Job{ID: "a", RunAt: t0.Add(-time.Second)})
		push(t, a, action.Job{ID: "moved", RunAt: t0})
		push(t, b, action.Job{ID: "moved", RunAt: t0.Add(2 * time.Hour)})
		push(t, a, action.Job{ID: "elsewhere", RunAt: t0})
		push(t, b, action.Job{ID: "elsewhere", Queue: "other", RunAt: t0})
		push(t, a, action.Job{ID: "ns+1", RunAt: t0.Add(time.Nanosecond)})
		push(t, b, action.Job{ID: "old", RunAt: time.Time{}})
		push(t, a, action.Job{ID: "ns-1", RunAt: t0.Add(-time.Nanosecond)})
		if err := a.Push(ctx(t), action.Job{ID: "x", Action: "a"}); err == nil {
			t.Fatal("pushed a job without a queue")
		}
		if got := popAll(t, a, b, "q", t0); got != "old,a,ns-1,c,b" {
			t.Fatalf("popped %v", got)
		}
		if got := popAll(t, a, b, "other", t0); got != "elsewhere" {
			t.Fatalf("popped %v from other", got)
		}
		if got := popAll(t, b, a, "q", t0.Add(3*time.Hour)); got != "ns+1,late,moved" {
			t.Fatalf("popped %v later", got)
		}
		if _, ok, err := a.Pop(ctx(t), "empty", t0.Add(3*time.Hour)); ok || err != nil {
			t.Fatalf("popped from an empty queue: %v %v", ok, err)
		}
		if err := a.Ack(ctx(t), action.Job{ID: "never", Action: "a", Queue: "q"}); err == nil {
			t.Fatal("acked a job never popped")
		}
	})
}

// A job comes back as pushed; a job pushed again while in flight is
// pending again, and each pop of it is acked once.
func TestTaskQueueJobsAndInFlight(t *testing.T) {
	conform(t, taskQueues, func(t *testing.T, a, b action.TaskQueue) {
		now := time.Now()
		job := action.Job{ID: "recurring:tick", Action: "tick", Params: json.RawMessage(`{"n":[1,"\u00e9"]}`), Queue: "q", RunAt: now, Attempt: 3}
		push(t, a, job)
		got, ok, err := b.Pop(ctx(t), "q", now)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if got.ID != job.ID || got.Action != job.Action || string(got.Params) != string(job.Params) || got.Queue != job.Queue || !got.RunAt.Equal(job.RunAt) || got.Attempt != job.Attempt {
			t.Fatalf("popped %+v, pushed %+v", got, job)
		}
		push(t, b, job) // the next run, pushed before the ack
		again, ok, err := a.Pop(ctx(t), "q", now)
		if err != nil || !ok || again.ID != job.ID {
			t.Fatal(again, ok, err)
		}
		for range 2 {
			if err := a.Ack(ctx(t), job); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Ack(ctx(t), job); err == nil {
			t.Fatal("acked three pops of two")
		}
	})
}

// Concurrent pushes and pops through two queues lose and duplicate
// nothing.
func TestTaskQueueConcurrent(t *testing.T) {
	conform(t, taskQueues, func(t *testing.T, a, b action.TaskQueue) {
		const n = 200
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				q := []action.TaskQueue{a, b}[i%2]
				if err := q.Push(ctx(t), action.Job{ID: action.NewID(), Action: "a", Queue: "q", RunAt: time.Now().Add(time.Duration(i%7) * time.Microsecond)}); err != nil {
					t.Error(err)
				}
			})
		}
		var mu sync.Mutex
		seen := map[string]bool{}
		for w := range 4 {
			wg.Go(func() {
				q := []action.TaskQueue{a, b}[w%2]
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
					mu.Lock()
					done := len(seen) == n
					mu.Unlock()
					if done {
						return
					}
					job, ok, err := q.Pop(ctx(t), "q", time.Now().Add(time.Second))
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						continue
					}
					mu.Lock()
					if seen[job.ID] {
						t.Errorf("job %s popped twice", job.ID)
					}
					seen[job.ID] = true
					mu.Unlock()
					if err := q.Ack(ctx(t), job); err != nil {
						t.Error(err)
					}
				}
				t.Error("not every job popped in 10 s")
			})
		}
		wg.Wait()
	})
}

// A job popped by a process that died (never acked) is queued again, due
// at once, by a Pop after its lease; the late Ack fails with
// ErrNotInFlight. A job of the same ID pending then replaces it.
func TestRedisTaskQueueLease(t *testing.T) {
	t.Parallel()
	c1, c2 := twoClients(t)
	dead, live := redisstate.NewTaskQueue(c1, "app:"), redisstate.NewTaskQueue(c2, "app:")
	if dead.Lease != redisstate.DefaultLease {
		t.Fatalf("Lease %v, want DefaultLease", dead.Lease)
	}
	dead.Lease = 30 * time.Millisecond
	now := time.Now()
	push(t, dead, action.Job{ID: "j", RunAt: now.Add(-time.Minute), Attempt: 1})
	push(t, dead, action.Job{ID: "k", RunAt: now.Add(-time.Minute)})
	push(t, dead, action.Job{ID: "l", RunAt: now.Add(time.Minute)})
	j, ok, err := dead.Pop(ctx(t), "q", now)
	if err != nil || !ok || j.ID != "j" {
		t.Fatal(j, ok, err)
	}
	k, ok, err := dead.Pop(ctx(t), "q", now)
	if err != nil || !ok || k.ID != "k" {
		t.Fatal(k, ok, err)
	}
	push(t, live, action.Job{ID: "k", RunAt: now.Add(time.Hour)}) // k's next run
	if _, ok, _ := live.Pop(ctx(t), "q", now); ok {
		t.Fatal("popped a job in flight before its lease ended")
	}
	time.Sleep(50 * time.Millisecond)
	got, ok, err := live.Pop(ctx(t), "q", now)
	if err != nil || !ok || got.ID != "j" || got.Attempt != 1 || !got.RunAt.Equal(j.RunAt) {
		t.Fatalf("after the lease: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := live.Pop(ctx(t), "q", now); ok {
		t.Fatal("popped k again though its next run was pending")
	}
	if err := live.Ack(ctx(t), got); err != nil {
		t.Fatal(err)
	}
	if err := dead.Ack(ctx(t), j); !errors.Is(err, redisstate.ErrNotInFlight) {
		t.Fatalf("late ack: %v", err)
	}
	if got := popAll(t, live, live, "q", now.Add(2*time.Hour)); got != "l,k" {
		t.Fatalf("left %s", got)
	}
	if err := live.Push(ctx(t), action.Job{ID: "far", Action: "a", Queue: "q", RunAt: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Fatal("pushed a job due in 2300")
	}
}
