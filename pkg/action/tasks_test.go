package action_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action"
)

type TaskInputs struct {
	N int `json:"n"`
}

// taskRun is one run an action saw.
type taskRun struct {
	n          int
	conn       action.Conn
	start, end time.Time
}

// runRecorder records runs and signals each on C.
type runRecorder struct {
	mu   sync.Mutex
	runs []taskRun
	C    chan taskRun
}

func newRecorder() *runRecorder { return &runRecorder{C: make(chan taskRun, 100)} }

func (r *runRecorder) add(run taskRun) {
	r.mu.Lock()
	r.runs = append(r.runs, run)
	r.mu.Unlock()
	r.C <- run
}

func (r *runRecorder) all() []taskRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]taskRun(nil), r.runs...)
}

// taskApp returns an app logging JSON to the returned buffer.
func taskApp(t *testing.T, acts ...action.Action) (*action.App, *syncBuffer) {
	t.Helper()
	app := action.NewApp("tasks", "task tests")
	logs := &syncBuffer{}
	app.SetLogger(slog.New(slog.NewJSONHandler(logs, nil)))
	for _, a := range acts {
		app.MustAdd(a)
	}
	return app, logs
}

// recordAction is a task action on queue that records its runs, taking
// d (ignoring ctx) when d > 0.
func recordAction(name, queue string, freq, d time.Duration, r *runRecorder) action.Action {
	a := action.Action{Name: name, Task: &action.Task{Queue: queue, Frequency: freq},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			start := time.Now()
			time.Sleep(d)
			run := taskRun{conn: *c, start: start, end: time.Now()}
			if in != nil {
				run.n = in.(*TaskInputs).N
			}
			r.add(run)
			return nil, nil
		}}
	if freq == 0 {
		a.Inputs = (*TaskInputs)(nil)
	}
	return a
}

// start runs tasks until the returned stop is called (or the test
// ends); stop returns Run's error once it returned.
func start(t *testing.T, tasks *action.Tasks) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tasks.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func receive[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

func fastOpts() action.TaskOptions {
	return action.TaskOptions{PollInterval: 2 * time.Millisecond}
}

// Jobs enqueued now, at a time and after a delay run in order of time,
// not before they are due, each on a "task" Conn with the job's ID.
func TestTasksRunInOrderOfTime(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	app, _ := taskApp(t, recordAction("job:record", "q", 0, 0, r))
	q := action.NewLocalQueue()
	tasks := action.NewTasks(app, q, fastOpts())
	ctx := context.Background()
	third, err := tasks.EnqueueIn(ctx, 60*time.Millisecond, "job:record", TaskInputs{N: 3})
	if err != nil {
		t.Fatal(err)
	}
	second, err := tasks.EnqueueAt(ctx, time.Now().Add(30*time.Millisecond), "job:record", map[string]any{"n": 2})
	if err != nil {
		t.Fatal(err)
	}
	first, err := tasks.Enqueue(ctx, "job:record", json.RawMessage(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if first.Queue != "q" || first.Action != "job:record" || first.Attempt != 0 || string(first.Params) != `{"n":1}` {
		t.Fatalf("job %+v", first)
	}
	stop := start(t, tasks)
	for i, job := range []action.Job{first, second, third} {
		run := receive(t, r.C)
		if run.n != i+1 || run.conn.Type != "task" || run.conn.ID != job.ID {
			t.Fatalf("run %d: n %d, conn %q %q; want n %d, conn \"task\" %q", i, run.n, run.conn.Type, run.conn.ID, i+1, job.ID)
		}
		if run.start.Before(job.RunAt) {
			t.Fatalf("run %d started %v before it was due", i, job.RunAt.Sub(run.start))
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(q.Jobs("q")); n != 0 {
		t.Fatalf("%d jobs left", n)
	}
}

// A job that could not run is refused when enqueued, with a typed error,
// and nothing is queued.
func TestTasksEnqueueRefusesBadJobs(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	app, _ := taskApp(t, recordAction("job:record", "q", 0, 0, r), action.Action{Name: "plain", Inputs: (*TaskInputs)(nil),
		Run: func(context.Context, *action.Conn, any) (any, error) { return nil, nil }})
	q := action.NewLocalQueue()
	tasks := action.NewTasks(app, q, fastOpts())
	for _, tc := range []struct {
		action string
		params any
		kind   action.Kind
		field  string
	}{
		{"nope", nil, action.KindNotFound, ""},
		{"plain", TaskInputs{N: 1}, action.KindInvalidParam, ""},
		{"job:record", map[string]any{"n": "one"}, action.KindInvalidParam, "n"},
		{"job:record", map[string]any{"n": 1, "extra": true}, action.KindInvalidParam, "extra"},
		{"job:record", nil, action.KindMissingParam, "n"},
		{"job:record", 5, action.KindInvalidParam, ""},
		{"job:record", make(chan int), action.KindInvalidParam, ""},
		{"job:record", map[string]any{"n": 1, "pad": strings.Repeat("x", action.MaxJobParamsBytes)}, action.KindTooLarge, ""},
	} {
		_, err := tasks.Enqueue(context.Background(), tc.action, tc.params)
		var ae *action.Error
		if !errors.As(err, &ae) || ae.Kind != tc.kind || ae.Field != tc.field {
			t.Errorf("enqueue %s %v: got %v; want kind %s field %q", tc.action, tc.params, err, tc.kind, tc.field)
		}
		if tc.action == "plain" && !errors.Is(err, action.ErrNotTask) {
			t.Errorf("enqueue plain: %v does not wrap ErrNotTask", err)
		}
	}
	if n := len(q.Jobs("q")); n != 0 {
		t.Fatalf("%d refused jobs queued", n)
	}
}

// A queue whose one worker is busy does not delay another queue's jobs.
func TestTasksQueuesIsolate(t *testing.T) {
	t.Parallel()
	release, started := make(chan struct{}), make(chan struct{})
	r := newRecorder()
	app, _ := taskApp(t, recordAction("fast", "fast", 0, 0, r), action.Action{Name: "slow", Task: &action.Task{Queue: "slow"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			close(started)
			<-release
			return nil, nil
		}})
	tasks := action.NewTasks(app, action.NewLocalQueue(), fastOpts())
	ctx := context.Background()
	if _, err := tasks.Enqueue(ctx, "slow", nil); err != nil {
		t.Fatal(err)
	}
	stop := start(t, tasks)
	receive(t, started)
	if _, err := tasks.Enqueue(ctx, "fast", TaskInputs{N: 7}); err != nil {
		t.Fatal(err)
	}
	if run := receive(t, r.C); run.n != 7 {
		t.Fatalf("fast ran with n %d", run.n)
	}
	close(release)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A recurring action runs when Run starts and at each later tick; a run
// longer than the frequency skips the ticks it missed; the runs stop when
// ctx ends, leaving the next tick queued.
func TestTasksRecurring(t *testing.T) {
	t.Parallel()
	const freq, took = 10 * time.Millisecond, 15 * time.Millisecond
	r := newRecorder()
	app, _ := taskApp(t, recordAction("tick", "cron", freq, took, r))
	q := action.NewLocalQueue()
	before := time.Now()
	stop := start(t, action.NewTasks(app, q, fastOpts()))
	for range 4 {
		receive(t, r.C)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	runs := r.all()
	if first := runs[0].start.Sub(before); first > 2*freq {
		t.Errorf("the first run started %v after Run", first)
	}
	for i, run := range runs {
		if run.conn.Type != "task" || run.conn.ID != "recurring:tick" {
			t.Fatalf("run %d: conn %q %q", i, run.conn.Type, run.conn.ID)
		}
		if i > 0 && run.start.Before(runs[i-1].end) {
			t.Fatalf("run %d started before run %d ended", i, i-1)
		}
	}
	jobs := q.Jobs("cron")
	if len(jobs) != 1 || jobs[0].ID != "recurring:tick" {
		t.Fatalf("queued after Run: %+v", jobs)
	}
	last, next := runs[len(runs)-1], jobs[0].RunAt
	// The worker's clock read for the run's end is between last.end and stopped.
	if !next.After(last.end) || next.After(stopped.Add(freq)) || !next.Equal(next.Truncate(freq)) {
		t.Fatalf("next run at %v: want the first multiple of %v after the last run's end %v (Run returned at %v)", next, freq, last.end, stopped)
	}
	time.Sleep(3 * freq)
	if n := len(r.all()); n != len(runs) {
		t.Fatalf("%d runs after Run returned", n-len(runs))
	}
}

// logRecords returns the JSON log records whose msg is msg.
func logRecords(t *testing.T, logs *syncBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// A failed job is logged; it is not retried unless Retries > 0, then it
// runs Retries more times with the attempt counted.
func TestTasksFailures(t *testing.T) {
	t.Parallel()
	for _, retries := range []int{0, 2} {
		calls := make(chan string, 10)
		app, logs := taskApp(t, action.Action{Name: "fail", Task: &action.Task{Queue: "q"},
			Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
				calls <- c.ID
				return nil, action.Errorf(action.KindConflict, "boom")
			}})
		q := action.NewLocalQueue()
		opts := fastOpts()
		opts.Retries, opts.RetryBackoff = retries, time.Millisecond
		tasks := action.NewTasks(app, q, opts)
		job, err := tasks.Enqueue(context.Background(), "fail", nil)
		if err != nil {
			t.Fatal(err)
		}
		stop := start(t, tasks)
		for range retries + 1 {
			if id := receive(t, calls); id != job.ID {
				t.Fatalf("ran job %q, want %q", id, job.ID)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(logRecords(t, logs, "task failed")) < retries+1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // a retry, if any, would be due and run
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if len(calls) != 0 || len(q.Jobs("q")) != 0 {
			t.Fatalf("retries %d: %d more runs, %d jobs queued", retries, len(calls), len(q.Jobs("q")))
		}
		recs := logRecords(t, logs, "task failed")
		if len(recs) != retries+1 {
			t.Fatalf("retries %d: %d failures logged: %s", retries, len(recs), logs)
		}
		for i, rec := range recs {
			if rec["level"] != "ERROR" || rec["job"] != job.ID || rec["action"] != "fail" || rec["attempt"] != float64(i) ||
				rec["error"] != "conflict: boom" || (rec["retry_at"] != nil) != (i < retries) {
				t.Fatalf("retries %d: failure %d logged as %v", retries, i, rec)
			}
		}
	}
}

// Run returns only once every worker stopped; a job interrupted by the
// shutdown is queued again as it was.
func TestTasksRunWaitsForWorkers(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var finished bool
	var mu sync.Mutex
	app, logs := taskApp(t, action.Action{Name: "long", Task: &action.Task{Queue: "q"},
		Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
			close(started)
			<-ctx.Done()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			finished = true
			mu.Unlock()
			return nil, ctx.Err()
		}})
	q := action.NewLocalQueue()
	tasks := action.NewTasks(app, q, fastOpts())
	job, err := tasks.Enqueue(context.Background(), "long", nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, tasks)
	receive(t, started)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !finished {
		t.Fatal("Run returned before its worker's job finished")
	}
	if jobs := q.Jobs("q"); len(jobs) != 1 || jobs[0].ID != job.ID || jobs[0].Attempt != 0 || !jobs[0].RunAt.Equal(job.RunAt) {
		t.Fatalf("queued after the shutdown: %+v; want %+v", jobs, job)
	}
	if n := len(logRecords(t, logs, "task interrupted by shutdown; queued again")); n != 1 {
		t.Fatalf("%d interruptions logged", n)
	}
}

// Run refuses bad options, a recurring action that needs params, and a
// second concurrent Run, before starting any worker.
func TestTasksRunRefuses(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	app, _ := taskApp(t, recordAction("job:record", "q", 0, 0, r))
	q := action.NewLocalQueue()
	for _, opts := range []action.TaskOptions{
		{Workers: map[string]int{"other": 1}},
		{Workers: map[string]int{"q": -1}},
		{Workers: map[string]int{"q": action.MaxWorkersPerQueue + 1}},
		{DefaultWorkers: -1},
		{PollInterval: -1},
		{Retries: -1},
	} {
		if err := action.NewTasks(app, q, opts).Run(context.Background()); err == nil {
			t.Errorf("options %+v: no error", opts)
		}
	}
	needy := recordAction("needy", "q", time.Second, 0, r)
	needy.Inputs = (*TaskInputs)(nil)
	app.MustAdd(needy)
	err := action.NewTasks(app, q, fastOpts()).Run(context.Background())
	var ae *action.Error
	if !errors.As(err, &ae) || ae.Kind != action.KindMissingParam || !strings.Contains(err.Error(), "recurring task needy") {
		t.Fatalf("recurring action with a required input: %v", err)
	}

	app2, _ := taskApp(t, recordAction("job:record", "q", 0, 0, r))
	tasks := action.NewTasks(app2, q, fastOpts())
	if _, err := tasks.Enqueue(context.Background(), "job:record", TaskInputs{N: 1}); err != nil {
		t.Fatal(err)
	}
	stop := start(t, tasks)
	receive(t, r.C) // the first Run is under way
	cancelled, cancel := context.WithCancel(context.Background())
	cancel() // should the second Run start, it stops at once
	if err := tasks.Run(cancelled); !errors.Is(err, action.ErrTasksRunning) {
		t.Fatalf("second Run: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// LocalQueue pops due jobs earliest first (push order among equals),
// replaces a pending job pushed again with its ID, and acks only jobs in
// flight.
func TestLocalQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := action.NewLocalQueue()
	t0 := time.Now()
	push := func(id string, at time.Time) {
		t.Helper()
		if err := q.Push(ctx, action.Job{ID: id, Action: "a", Queue: "q", RunAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	push("late", t0.Add(time.Hour))
	push("b", t0)
	push("c", t0)
	push("a", t0.Add(-time.Second))
	push("moved", t0)
	push("moved", t0.Add(2*time.Hour))
	if err := q.Push(ctx, action.Job{ID: "x", Action: "a"}); err == nil {
		t.Fatal("pushed a job without a queue")
	}
	var got []string
	for {
		job, ok, err := q.Pop(ctx, "q", t0)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, job.ID)
		if err := q.Ack(ctx, job); err != nil {
			t.Fatal(err)
		}
		if err := q.Ack(ctx, job); err == nil {
			t.Fatal("acked a job twice")
		}
	}
	if strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("popped %v", got)
	}
	var left []string
	for _, j := range q.Jobs("q") {
		left = append(left, j.ID)
	}
	if strings.Join(left, ",") != "late,moved" {
		t.Fatalf("pending %v", left)
	}
	if _, ok, _ := q.Pop(ctx, "other", t0.Add(3*time.Hour)); ok {
		t.Fatal("popped from an empty queue")
	}
}

// Concurrent pushes and pops lose and duplicate nothing.
func TestLocalQueueConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := action.NewLocalQueue()
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_ = q.Push(ctx, action.Job{ID: action.NewID(), Action: "a", Queue: "q", RunAt: time.Now().Add(time.Duration(i%7) * time.Microsecond)})
		})
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	for range 4 {
		wg.Go(func() {
			for {
				mu.Lock()
				done := len(seen) == n
				mu.Unlock()
				if done {
					return
				}
				job, ok, err := q.Pop(ctx, "q", time.Now().Add(time.Second))
				if err != nil || !ok {
					continue
				}
				mu.Lock()
				if seen[job.ID] {
					t.Errorf("job %s popped twice", job.ID)
				}
				seen[job.ID] = true
				mu.Unlock()
				if err := q.Ack(ctx, job); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
