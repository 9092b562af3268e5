package telemetry

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batcher is a span processor that batches ended spans like the SDK's
// BatchSpanProcessor, with the same OTEL_BSP_* settings, but without
// waking a goroutine for every span: the SDK's hands each span to its
// export goroutine through a channel, one goroutine wake-up per call,
// which on mcpkit's stdio path (a call served on the goroutine that read
// it) cost more than the span itself. Here a span is appended under a
// mutex; the export goroutine wakes on the schedule delay, when a batch
// is full, and at flush and shutdown. A span that finds the queue full is
// dropped (and counted in the log at shutdown), as the SDK does.
type batcher struct {
	exp      sdktrace.SpanExporter
	delay    time.Duration
	timeout  time.Duration
	maxQueue int
	maxBatch int

	mu      sync.Mutex
	spans   []sdktrace.ReadOnlySpan
	dropped int64

	full    chan struct{}      // (buffer 1) a batch is ready
	flushes chan chan struct{} // ForceFlush: export all, then close
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// newBatcher starts a batcher exporting to exp, configured by the
// OTEL_BSP_* environment (the specification's defaults otherwise).
func newBatcher(exp sdktrace.SpanExporter) *batcher {
	b := &batcher{
		exp:      exp,
		delay:    envMillis("OTEL_BSP_SCHEDULE_DELAY", 5000),
		timeout:  envMillis("OTEL_BSP_EXPORT_TIMEOUT", 30000),
		maxQueue: envInt("OTEL_BSP_MAX_QUEUE_SIZE", 2048),
		maxBatch: envInt("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
		full:     make(chan struct{}, 1),
		flushes:  make(chan chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	b.maxBatch = min(b.maxBatch, b.maxQueue)
	go b.run()
	return b
}

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span; the span that fills a batch wakes the
// export goroutine.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.spans) >= b.maxQueue {
		b.dropped++
		b.mu.Unlock()
		return
	}
	b.spans = append(b.spans, s)
	ready := len(b.spans) == b.maxBatch
	b.mu.Unlock()
	if ready {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

// run is the export goroutine; it exports what is queued on each wake-up
// and everything left when stopped.
func (b *batcher) run() {
	defer close(b.done)
	tick := time.NewTicker(b.delay)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			b.export()
			return
		case <-tick.C:
		case <-b.full:
		case ack := <-b.flushes:
			b.export()
			close(ack)
			continue
		}
		b.export()
	}
}

// export sends the queued spans in batches of at most maxBatch, each
// bounded by the export timeout; a failure goes to the global error
// handler (logged) and the batch is lost, as with the SDK's processor.
func (b *batcher) export() {
	b.mu.Lock()
	spans := b.spans
	b.spans = nil
	b.mu.Unlock()
	for len(spans) > 0 {
		n := min(len(spans), b.maxBatch)
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		if err := b.exp.ExportSpans(ctx, spans[:n]); err != nil {
			otel.Handle(err)
		}
		cancel()
		spans = spans[n:]
	}
}

// ForceFlush exports every span queued so far.
func (b *batcher) ForceFlush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case b.flushes <- ack:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued, stops the goroutine and shuts the
// exporter down, bounded by ctx.
func (b *batcher) Shutdown(ctx context.Context) error {
	b.once.Do(func() { close(b.stop) })
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	b.mu.Lock()
	dropped := b.dropped
	b.mu.Unlock()
	if dropped > 0 {
		otel.Handle(&droppedSpans{n: dropped})
	}
	return b.exp.Shutdown(ctx)
}

// droppedSpans reports the spans lost to a full queue.
type droppedSpans struct{ n int64 }

func (e *droppedSpans) Error() string {
	return strconv.FormatInt(e.n, 10) + " spans dropped: the export queue was full (OTEL_BSP_MAX_QUEUE_SIZE)"
}

// envMillis reads a duration in milliseconds; a missing or invalid value
// is def, as the SDK reads it.
func envMillis(name string, def int) time.Duration {
	return time.Duration(envInt(name, def)) * time.Millisecond
}

// envInt reads a positive integer; a missing or invalid value is def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
