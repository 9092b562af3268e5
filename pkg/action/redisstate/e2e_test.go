package redisstate_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/action/redisstate"
)

// Two app instances share background jobs through Redis: jobs enqueued by
// one run once each, on the workers of both.
func TestRedisTasksAcrossInstances(t *testing.T) {
	t.Parallel()
	c1, c2 := twoClients(t)
	type in struct {
		N int `json:"n"`
	}
	var mu sync.Mutex
	runs := map[int][]string{}
	all := make(chan struct{})
	const n = 30
	var tasks []*action.Tasks
	for i, c := range []*redisstate.TaskQueue{redisstate.NewTaskQueue(c1, "app:"), redisstate.NewTaskQueue(c2, "app:")} {
		name := []string{"one", "two"}[i]
		app := action.NewApp("tasks", "an app for task tests")
		app.MustAdd(action.Action{
			Name: "record", Description: "records a run", Inputs: (*in)(nil),
			Task: &action.Task{Queue: "q"},
			Run: func(_ context.Context, _ *action.Conn, v any) (any, error) {
				time.Sleep(5 * time.Millisecond) // so neither instance can take every job alone
				mu.Lock()
				defer mu.Unlock()
				k := v.(*in).N
				runs[k] = append(runs[k], name)
				if len(runs) == n {
					select {
					case <-all:
					default:
						close(all)
					}
				}
				return nil, nil
			},
		})
		tasks = append(tasks, action.NewTasks(app, c, action.TaskOptions{PollInterval: 2 * time.Millisecond, DefaultWorkers: 2, Logger: slog.New(slog.DiscardHandler)}))
	}
	for i := range n {
		if _, err := tasks[0].Enqueue(ctx(t), "record", in{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	rctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, ts := range tasks {
		wg.Go(func() {
			if err := ts.Run(rctx); err != nil {
				t.Error(err)
			}
		})
	}
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Error("not every job ran in 10 s")
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	by := map[string]int{}
	for k, r := range runs {
		if len(r) != 1 {
			t.Errorf("job %d ran %d times", k, len(r))
		}
		by[r[0]]++
	}
	if by["one"] == 0 || by["two"] == 0 {
		t.Errorf("runs per instance: %v; want both", by)
	}
}
