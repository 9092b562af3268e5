package mcpcore

import (
	"context"
	"sync"
	"unsafe"

	"github.com/mcpkit/mcpkit/internal/fastpath"
)

func init() {
	fastpath.Register(fastpath.Hooks{ResultBuffer: resultBuffer, Direct: markDirect, DecodeArguments: decodeArguments})
}

// markDirect is fastpath.Direct's hook: opts, a ToolOptions, marked direct.
func markDirect(opts any) any {
	o := opts.(ToolOptions)
	o.direct = true
	return o
}

// resultBuffer is fastpath.ResultBuffer's hook (which says what it does):
// a direct call's first two buffers come from directBuffers, and go back
// there once its response is written (release).
func resultBuffer(ctx context.Context, n int) []byte {
	slot := slotOf(ctx)
	if slot == nil {
		return make([]byte, 0, n)
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.given[len(slot.given)-1] != nil || slot.done {
		return make([]byte, 0, n)
	}
	buf := directBuffers.Get().(*[]byte)
	if cap(*buf) < n {
		*buf = make([]byte, 0, n)
	}
	for i := range slot.given {
		if slot.given[i] == nil {
			slot.given[i] = buf
			break
		}
	}
	return (*buf)[:0]
}

// resultSlot is a direct call's buffers for its result (resultBuffer), and
// the text form of its result when the handler wrote it (fastpath.EncodedJSONText).
// The handler may be abandoned by the host (a timeout) and go on using what
// it was given, so the buffers are only reused when the host served the
// result itself (served) and then released the slot (release).
type resultSlot struct {
	mu     sync.Mutex
	given  [2]*[]byte // handed out by resultBuffer, from directBuffers
	served bool       // the host served the call's result and no longer needs given
	inline bool       // the host served the handler's result inline: the handler returned, nothing is retained
	done   bool       // released: resultBuffer hands out nothing more
	// text is the escaped form of the text content whose bytes are
	// textOf (fastpath.EncodedJSONText), for the host to write as it is.
	text, textOf []byte
	// args are the call's arguments, decoded as its params were read
	// (directParams), until the tool's handler takes them (decodedArgs).
	args any
}

type resultSlotKey struct{}

// slotOf returns the result slot of the direct call whose context is ctx,
// or nil.
func slotOf(ctx context.Context) *resultSlot {
	slot, _ := ctx.Value(resultSlotKey{}).(*resultSlot)
	return slot
}

// withResultSlot returns ctx with a new result slot for a direct call.
func withResultSlot(ctx context.Context) (context.Context, *resultSlot) {
	slot := new(resultSlot)
	return context.WithValue(ctx, resultSlotKey{}, slot), slot
}

// decodedArgs returns, once, the arguments of the direct call whose context
// is ctx when they were decoded as its params were read, and true; for a
// call whose arguments were not, or not into In, false.
func decodedArgs[In any](ctx context.Context) (In, bool) {
	slot := slotOf(ctx)
	if slot == nil {
		var zero In
		return zero, false
	}
	slot.mu.Lock()
	args := slot.args
	slot.args = nil
	slot.mu.Unlock()
	in, ok := args.(In)
	return in, ok
}

// escapedText returns the escaped form of t recorded by servedResult, when
// t is that text content: the same bytes in memory, which nothing writes
// to while the slot holds them, so that a text content a middleware
// replaced is escaped anew. A nil slot has none.
func (slot *resultSlot) escapedText(t string) ([]byte, bool) {
	if slot == nil || len(t) == 0 {
		return nil, false
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if len(slot.textOf) != len(t) || unsafe.SliceData(slot.textOf) != unsafe.StringData(t) {
		return nil, false
	}
	return slot.text, true
}

// servedResult records that the host has encoded the result data of the call
// whose context is ctx, data being what the handler returned; paged: data
// is retained for the read tool. The buffers the handler was given may
// then be reused once the response is written, unless data is one's memory
// and retained. escaped, if not nil, is the text form of data the handler
// wrote (fastpath.EncodedJSONText), which an inline result's text content is
// written as (see escapedText).
func servedResult(ctx context.Context, data, escaped []byte, paged bool) {
	slot := slotOf(ctx)
	if slot == nil {
		return
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	slot.served, slot.inline = true, !paged
	for _, g := range slot.given {
		if g != nil && paged && overlap(data, *g) {
			slot.served = false
		}
	}
	if !paged && escaped != nil && len(data) > 0 {
		slot.textOf, slot.text = data, escaped
	}
}

// overlap reports whether the memory of a and b (to their capacities)
// overlaps.
func overlap(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(cap(b)) && b0 < a0+uintptr(cap(a))
}

// servedInline reports whether the host served the handler's result
// inline (see servedResult).
func (slot *resultSlot) servedInline() bool {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	return slot.inline
}

// release ends the slot once the call's response is written (or dropped):
// the buffers go back to directBuffers if the host served the result.
func (slot *resultSlot) release() {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	slot.done = true
	slot.text, slot.textOf = nil, nil
	for i, g := range slot.given {
		if g == nil || !slot.served || cap(*g) > keepDirectBytes {
			continue
		}
		*g = (*g)[:0]
		directBuffers.Put(g)
		slot.given[i] = nil
	}
}
