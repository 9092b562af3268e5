package action

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Background tasks' limits and defaults.
const (
	MaxJobParamsBytes   = 1 << 20                // a job's params, as JSON
	MaxWorkersPerQueue  = 1024                   // TaskOptions.Workers and DefaultWorkers
	DefaultPollInterval = 100 * time.Millisecond // TaskOptions.PollInterval
	DefaultRetryBackoff = time.Second            // TaskOptions.RetryBackoff
	maxRetryDelay       = time.Hour              // the backoff doubles up to this
	recurringPrefix     = "recurring:"           // a recurring action's job ID is this and its name
)

// ErrNotTask is wrapped by the error Enqueue returns for an action that
// declares no [Task].
var ErrNotTask = errors.New("the action declares no task")

// ErrTasksRunning is returned by [Tasks.Run] while another Run of the
// same Tasks is under way.
var ErrTasksRunning = errors.New("the task workers are already running")

// Job is one run of an action in the background.
type Job struct {
	ID      string          // unique among pending jobs; a recurring action's is "recurring:" and its name
	Action  string          // the action's name
	Params  json.RawMessage // the action's params (validated when enqueued)
	Queue   string          // the action's Task.Queue
	RunAt   time.Time       // due at or after this time
	Attempt int             // how many times the job ran before and failed (0 for a new job)
}

// TaskQueue holds jobs until they are due. Implementations are safe for
// concurrent use. LocalQueue is the in-process one; a shared one (Redis)
// lets several processes' workers share queues.
type TaskQueue interface {
	// Push adds job to job.Queue, due at job.RunAt. A pending job with the
	// same ID is replaced (so a recurring action is queued once however
	// often it is pushed). A job popped and not yet acked is not pending.
	Push(ctx context.Context, job Job) error
	// Pop removes and returns the job of queue that is due at now (RunAt
	// not after now) with the earliest RunAt (the first pushed among
	// equals); ok is false when none is due. The caller must Ack it.
	Pop(ctx context.Context, queue string, now time.Time) (job Job, ok bool, err error)
	// Ack reports that a popped job is finished, whatever its outcome
	// (a retry or the next run is a new Push). A shared queue may give a
	// popped job that is never acked to another worker.
	Ack(ctx context.Context, job Job) error
}

// TaskOptions configure [Tasks.Run]'s workers. The zero value is one
// worker per queue polling every DefaultPollInterval, no retries, logging
// to the app's logger.
type TaskOptions struct {
	// Workers is how many workers run each named queue (0: none in this
	// process); a queue not named has DefaultWorkers. Every name must be
	// a queue some action's Task declares.
	Workers        map[string]int
	DefaultWorkers int           // 0: 1
	PollInterval   time.Duration // how long an idle worker waits before asking its queue again; 0: DefaultPollInterval
	// Retries is how many more times a failed one-off job runs (0: never
	// again), each after RetryBackoff doubled per earlier retry (at most an
	// hour). A recurring job is not retried: its next run is its next tick.
	Retries      int
	RetryBackoff time.Duration // 0: DefaultRetryBackoff
	Logger       *slog.Logger  // nil: the app's logger
}

// Tasks enqueues actions as background jobs on a TaskQueue and runs them
// with workers ([Tasks.Run]) through [App.Run], each with a [Conn] of
// Type "task" whose ID is the job's.
type Tasks struct {
	app     *App
	q       TaskQueue
	opts    TaskOptions
	running atomic.Bool
}

// NewTasks returns the background tasks of app's actions, queued on q.
// Options are checked by Run.
func NewTasks(app *App, q TaskQueue, opts TaskOptions) *Tasks {
	if opts.PollInterval == 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = DefaultRetryBackoff
	}
	if opts.Logger == nil {
		opts.Logger = app.Logger()
	}
	if opts.DefaultWorkers == 0 {
		opts.DefaultWorkers = 1
	}
	return &Tasks{app: app, q: q, opts: opts}
}

// Enqueue queues the named action to run now with params (any value
// encoding to a JSON object, or nil). See EnqueueAt.
func (t *Tasks) Enqueue(ctx context.Context, action string, params any) (Job, error) {
	return t.EnqueueAt(ctx, time.Now(), action, params)
}

// EnqueueIn queues the named action to run after d (now when d <= 0).
// See EnqueueAt.
func (t *Tasks) EnqueueIn(ctx context.Context, d time.Duration, action string, params any) (Job, error) {
	return t.EnqueueAt(ctx, time.Now().Add(d), action, params)
}

// EnqueueAt queues the named action to run at at (a past time is due
// now) on its Task's queue, with a new random ID. A job that could not
// run is refused here, as an *Error: an unknown action (KindNotFound), one
// declaring no Task (KindInvalidParam wrapping ErrNotTask), params that
// do not encode (KindInvalidParam), are over MaxJobParamsBytes
// (KindTooLarge) or do not validate against the action's input schema
// (the kind and field App.Run would give).
func (t *Tasks) EnqueueAt(ctx context.Context, at time.Time, action string, params any) (Job, error) {
	job, err := t.newJob(NewID(), at, action, params)
	if err != nil {
		return Job{}, err
	}
	if err := t.q.Push(ctx, job); err != nil {
		return Job{}, fmt.Errorf("enqueue %s: %w", action, err)
	}
	return job, nil
}

// newJob checks that the named action can run in the background with
// params and returns its job.
func (t *Tasks) newJob(id string, at time.Time, action string, params any) (Job, error) {
	act, ok := t.app.Lookup(action)
	if !ok {
		return Job{}, &Error{Kind: KindNotFound, Message: fmt.Sprintf("no action %q", action)}
	}
	if act.Task == nil {
		return Job{}, Errorf(KindInvalidParam, "action %s: %w", action, ErrNotTask)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return Job{}, paramError(KindInvalidParam, "", "cannot encode the params: %v", err)
	}
	if len(raw) > MaxJobParamsBytes {
		return Job{}, paramError(KindTooLarge, "", "the params are %d bytes; at most %d", len(raw), MaxJobParamsBytes)
	}
	m, err := parseParams(raw)
	if err != nil {
		return Job{}, err
	}
	if _, err := act.schema.decode(raw, m); err != nil {
		return Job{}, err
	}
	return Job{ID: id, Action: action, Params: raw, Queue: act.Task.Queue, RunAt: at}, nil
}

// Run queues every recurring action (Task.Frequency > 0) to run now, then
// runs workers on every queue some action's Task declares (how many per
// queue: TaskOptions) until ctx ends, and returns nil once every worker
// has returned. A worker pops a due job, runs it through App.Run under
// ctx, logs its outcome (info when it succeeds, error when it fails),
// then pushes what follows and acks it:
//   - a job interrupted by ctx's end (it failed after ctx ended) is pushed
//     back unchanged, to run again when workers next run;
//   - a failed one-off job is retried as TaskOptions says;
//   - a recurring job is pushed again for the first multiple of its
//     Frequency (counted from Go's zero time, so every process agrees)
//     after the run ended: ticks missed while it ran are skipped, never
//     run in a burst.
//
// An error from the queue is logged and the worker asks again after
// PollInterval. Run returns an error without starting a worker when the
// options are invalid, a recurring action's no params do not validate,
// a push fails, or another Run of t is under way.
func (t *Tasks) Run(ctx context.Context) error {
	if !t.running.CompareAndSwap(false, true) {
		return ErrTasksRunning
	}
	defer t.running.Store(false)
	workers, err := t.workers()
	if err != nil {
		return err
	}
	for _, act := range t.app.Actions() {
		if act.Task == nil || act.Task.Frequency == 0 {
			continue
		}
		job, err := t.newJob(recurringPrefix+act.Name, time.Now(), act.Name, nil)
		if err != nil {
			return fmt.Errorf("recurring task %s: %w", act.Name, err)
		}
		if err := t.q.Push(ctx, job); err != nil {
			return fmt.Errorf("recurring task %s: %w", act.Name, err)
		}
	}
	var wg sync.WaitGroup
	for _, queue := range sortedKeys(workers) {
		for range workers[queue] {
			wg.Go(func() { t.work(ctx, queue) })
		}
	}
	wg.Wait()
	return nil
}

// workers returns how many workers each declared queue gets.
func (t *Tasks) workers() (map[string]int, error) {
	out := map[string]int{}
	for _, act := range t.app.Actions() {
		if act.Task != nil {
			out[act.Task.Queue] = t.opts.DefaultWorkers
		}
	}
	for q, n := range t.opts.Workers {
		if _, ok := out[q]; !ok {
			return nil, fmt.Errorf("task workers: queue %q: no action's task uses it", q)
		}
		out[q] = n
	}
	for q, n := range out {
		if n < 0 || n > MaxWorkersPerQueue {
			return nil, fmt.Errorf("task workers: queue %q: %d workers; want 0 to %d", q, n, MaxWorkersPerQueue)
		}
	}
	if t.opts.PollInterval < 0 || t.opts.Retries < 0 || t.opts.RetryBackoff < 0 {
		return nil, errors.New("task workers: negative poll interval, retries or retry backoff")
	}
	return out, nil
}

// work runs queue's due jobs one at a time until ctx ends.
func (t *Tasks) work(ctx context.Context, queue string) {
	for ctx.Err() == nil {
		job, ok, err := t.q.Pop(ctx, queue, time.Now())
		if err != nil && ctx.Err() == nil {
			t.opts.Logger.Error("task queue: pop failed", "queue", queue, "error", err)
		}
		if ok {
			t.runJob(ctx, job)
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(t.opts.PollInterval):
		}
	}
}

// runJob runs a popped job, logs its outcome, pushes what follows it (see
// Run) and acks it. The queue calls outlive ctx: the job's bookkeeping
// must finish even at shutdown.
func (t *Tasks) runJob(ctx context.Context, job Job) {
	log := t.opts.Logger.With("job", job.ID, "action", job.Action, "queue", job.Queue, "attempt", job.Attempt)
	start := time.Now()
	_, err := t.app.Run(ctx, &Conn{Type: "task", ID: job.ID}, job.Action, job.Params)
	end := time.Now()
	qctx := context.WithoutCancel(ctx)
	var next *Job
	switch act, _ := t.app.Lookup(job.Action); {
	case err != nil && ctx.Err() != nil:
		log.Warn("task interrupted by shutdown; queued again", "took", end.Sub(start), "error", err)
		next = &job
	case act != nil && act.Task != nil && act.Task.Frequency > 0 && job.ID == recurringPrefix+act.Name:
		n := job
		n.RunAt, n.Attempt = end.Truncate(act.Task.Frequency).Add(act.Task.Frequency), 0
		next = &n
		logOutcome(log, err, end.Sub(start), "next", n.RunAt)
	case err != nil && job.Attempt < t.opts.Retries:
		n := job
		n.RunAt, n.Attempt = end.Add(min(t.opts.RetryBackoff<<job.Attempt, maxRetryDelay)), job.Attempt+1
		next = &n
		logOutcome(log, err, end.Sub(start), "retry_at", n.RunAt)
	default:
		logOutcome(log, err, end.Sub(start))
	}
	if next != nil {
		if perr := t.q.Push(qctx, *next); perr != nil {
			log.Error("task queue: push failed; the job is lost", "run_at", next.RunAt, "error", perr)
		}
	}
	if aerr := t.q.Ack(qctx, job); aerr != nil {
		log.Error("task queue: ack failed", "error", aerr)
	}
}

// logOutcome logs a finished run: info when it succeeded, error when it
// failed.
func logOutcome(log *slog.Logger, err error, took time.Duration, attrs ...any) {
	attrs = append(attrs, "took", took)
	if err != nil {
		log.Error("task failed", append(attrs, "error", err)...)
		return
	}
	log.Info("task done", attrs...)
}

// LocalQueue is an in-process [TaskQueue]: per queue, a heap of pending
// jobs ordered by RunAt, then push order. It is safe for concurrent use,
// never blocks, starts no goroutines and ignores contexts; its jobs live
// as long as it does.
type LocalQueue struct {
	mu       sync.Mutex
	queues   map[string]*jobHeap
	pending  map[string]*queued // by job ID
	inFlight map[string]int     // popped and not acked, by job ID
	seq      uint64
}

var _ TaskQueue = (*LocalQueue)(nil)

// NewLocalQueue returns an empty in-process queue.
func NewLocalQueue() *LocalQueue {
	return &LocalQueue{queues: map[string]*jobHeap{}, pending: map[string]*queued{}, inFlight: map[string]int{}}
}

// Push implements [TaskQueue]; a job without an ID, action or queue is an
// error.
func (lq *LocalQueue) Push(_ context.Context, job Job) error {
	if job.ID == "" || job.Action == "" || job.Queue == "" {
		return fmt.Errorf("push job %q: want an ID, an action and a queue", job.ID)
	}
	lq.mu.Lock()
	defer lq.mu.Unlock()
	if old := lq.pending[job.ID]; old != nil {
		heap.Remove(lq.queues[old.job.Queue], old.index)
	}
	h := lq.queues[job.Queue]
	if h == nil {
		h = &jobHeap{}
		lq.queues[job.Queue] = h
	}
	lq.seq++
	q := &queued{job: job, seq: lq.seq}
	heap.Push(h, q)
	lq.pending[job.ID] = q
	return nil
}

// Pop implements [TaskQueue].
func (lq *LocalQueue) Pop(_ context.Context, queue string, now time.Time) (Job, bool, error) {
	lq.mu.Lock()
	defer lq.mu.Unlock()
	h := lq.queues[queue]
	if h == nil || h.Len() == 0 || (*h)[0].job.RunAt.After(now) {
		return Job{}, false, nil
	}
	q := heap.Pop(h).(*queued)
	delete(lq.pending, q.job.ID)
	lq.inFlight[q.job.ID]++
	return q.job, true, nil
}

// Ack implements [TaskQueue]; acking a job that is not in flight is an
// error.
func (lq *LocalQueue) Ack(_ context.Context, job Job) error {
	lq.mu.Lock()
	defer lq.mu.Unlock()
	switch lq.inFlight[job.ID] {
	case 0:
		return fmt.Errorf("ack job %q: not in flight", job.ID)
	case 1:
		delete(lq.inFlight, job.ID)
	default:
		lq.inFlight[job.ID]--
	}
	return nil
}

// Jobs returns queue's pending jobs in the order they will run.
func (lq *LocalQueue) Jobs(queue string) []Job {
	lq.mu.Lock()
	defer lq.mu.Unlock()
	var qs []*queued
	if h := lq.queues[queue]; h != nil {
		qs = append(qs, *h...)
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].before(qs[j]) })
	out := make([]Job, len(qs))
	for i, q := range qs {
		out[i] = q.job
	}
	return out
}

// queued is a pending job in a jobHeap.
type queued struct {
	job   Job
	seq   uint64 // push order, breaking RunAt ties
	index int    // in its heap
}

func (q *queued) before(o *queued) bool {
	if !q.job.RunAt.Equal(o.job.RunAt) {
		return q.job.RunAt.Before(o.job.RunAt)
	}
	return q.seq < o.seq
}

// jobHeap implements heap.Interface, earliest first.
type jobHeap []*queued

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h jobHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *jobHeap) Push(x any) {
	q := x.(*queued)
	q.index = len(*h)
	*h = append(*h, q)
}
func (h *jobHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return q
}
