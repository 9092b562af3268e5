package telemetry

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// batcher is a span processor that batches ended spans like the SDK's
// BatchSpanProcessor, with the same OTEL_BSP_* settings, and exports them
// over OTLP through the exporter's client, with two differences that
// matter on a small, busy server:
//
//   - It wakes no goroutine per span: the SDK's hands each span to its
//     export goroutine through a channel, one goroutine wake-up per call,
//     which on mcpkit's stdio path (a call served on the goroutine that
//     read it) cost more than the span itself. Here a span is appended
//     under a mutex; the export goroutine wakes on the schedule delay,
//     when a batch is full, and at flush and shutdown.
//   - It queues a span as the OTLP bytes it will be sent as (otlpspan.go),
//     written when the span ends, not as the SDK's snapshot: a few hundred
//     bytes without pointers instead of some 2 KB of pointer-rich structs
//     per span. Whatever stays alive shortens the allocation between two
//     collections of a server whose heap is at the runtime's minimum: with
//     the snapshots queued it collected a quarter more often than with
//     telemetry off, with the bytes a sixth
//     (docs/design/telemetry-overhead.md). The export sends the queued
//     bytes as they are: a ResourceSpans whose fields (the resource, then
//     a ScopeSpans per instrumentation scope) are raw protobuf fields of
//     the message, which the client's marshalling writes out unchanged.
//
// A span that finds the queue full is dropped (and counted in the log at
// shutdown), as the SDK does.
type batcher struct {
	client   otlptrace.Client
	resource []byte // the head of each ResourceSpans: the resource's fields
	delay    time.Duration
	timeout  time.Duration
	maxQueue int
	maxBatch int

	mu      sync.Mutex
	queue   spanQueue
	scopes  map[instrumentation.Scope]uint32
	heads   [][]byte // by scope index: the head of its ScopeSpans
	dropped int64

	full    chan struct{}      // (buffer 1) a batch is ready
	flushes chan chan struct{} // ForceFlush: export all, then close
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// spanQueue is the ended spans waiting for export: their encodings
// (each a ScopeSpans.spans field) one after the other, and where each
// ends with its scope's index. Neither holds a pointer. An export takes
// the queue and drops it once sent, rather than keeping its memory for
// the next: at a small server's heap size every byte kept alive
// shortens the allocation between two collections by as much.
type spanQueue struct {
	buf   []byte
	spans []queuedSpan
}

type queuedSpan struct{ scope, end uint32 }

// newBatcher starts a batcher exporting through client, a started OTLP
// trace client, the spans of a provider with resource res; it is
// configured by the OTEL_BSP_* environment (the specification's defaults
// otherwise).
func newBatcher(client otlptrace.Client, res *resource.Resource) *batcher {
	b := &batcher{
		client:   client,
		resource: appendResource(nil, res),
		delay:    envMillis("OTEL_BSP_SCHEDULE_DELAY", 5000),
		timeout:  envMillis("OTEL_BSP_EXPORT_TIMEOUT", 30000),
		maxQueue: envInt("OTEL_BSP_MAX_QUEUE_SIZE", 2048),
		maxBatch: envInt("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
		scopes:   map[instrumentation.Scope]uint32{},
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

// OnEnd queues a sampled span, encoded; the span that fills a batch
// wakes the export goroutine.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	q := &b.queue
	if len(q.spans) >= b.maxQueue {
		b.dropped++
		b.mu.Unlock()
		return
	}
	scope, ok := b.scopes[s.InstrumentationScope()]
	if !ok {
		scope = uint32(len(b.heads))
		b.scopes[s.InstrumentationScope()] = scope
		b.heads = append(b.heads, appendScope(nil, s.InstrumentationScope()))
	}
	q.buf = appendSpan(q.buf, s)
	q.spans = append(q.spans, queuedSpan{scope: scope, end: uint32(len(q.buf))})
	ready := len(q.spans) == b.maxBatch
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
	q := b.queue
	b.queue = spanQueue{}
	heads := b.heads
	b.mu.Unlock()
	for start := 0; start < len(q.spans); start += b.maxBatch {
		batch := q.spans[start:min(start+b.maxBatch, len(q.spans))]
		from := uint32(0)
		if start > 0 {
			from = q.spans[start-1].end
		}
		rs := &tracepb.ResourceSpans{}
		rs.ProtoReflect().SetUnknown(protoreflect.RawFields(b.resourceSpans(heads, q.buf, from, batch)))
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		if err := b.client.UploadTraces(ctx, []*tracepb.ResourceSpans{rs}); err != nil {
			otel.Handle(fmt.Errorf("traces export: %w", err))
		}
		cancel()
	}
}

// resourceSpans returns the fields of a ResourceSpans holding batch,
// whose encodings are buf[from:batch's last end]: the resource, then one
// ScopeSpans per scope, in the order the scopes first appear.
func (b *batcher) resourceSpans(heads [][]byte, buf []byte, from uint32, batch []queuedSpan) []byte {
	size := len(b.resource) + int(batch[len(batch)-1].end-from)
	for _, h := range heads {
		size += len(h) + 2*binaryMaxVarint // a ScopeSpans' tag, length and head, at most
	}
	out := append(make([]byte, 0, size), b.resource...)
	done := make(map[uint32]bool, 4)
	for i, first := range batch {
		if done[first.scope] {
			continue
		}
		done[first.scope] = true
		out = appendMessage(out, fieldRSScopeSpans, func(out []byte) []byte {
			out = append(out, heads[first.scope]...)
			begin := from
			if i > 0 {
				begin = batch[i-1].end
			}
			for _, s := range batch[i:] {
				if s.scope == first.scope {
					out = append(out, buf[begin:s.end]...)
				}
				begin = s.end
			}
			return out
		})
	}
	return out
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

// Shutdown exports what is queued, stops the goroutine and the client,
// bounded by ctx.
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
	return b.client.Stop(ctx)
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
