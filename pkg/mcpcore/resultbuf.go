package mcpcore

import (
	"context"
	"sync"
	"unsafe"
)

// ResultBuffer returns an empty buffer with room for at least n bytes, for
// a handler to encode its result into and return as [EncodedJSON] (append
// to the buffer, return what append gave). On a direct call
// ([ToolOptions.Direct], served by [Server.Run]) of a server without
// [Options.Middleware], where nothing but the host sees the result, the
// buffer is memory kept from an earlier call, and the host keeps it again
// once the call's response is written, so that a tool with large results
// does not allocate one per call; elsewhere it is a new buffer.
//
// The handler must keep no reference to the buffer once it returns. A
// result encoded past n into memory append allocated, or retained for
// paging, is not reused. A second call of ResultBuffer in the same call
// returns a new buffer.
func ResultBuffer(ctx context.Context, n int) []byte {
	slot, _ := ctx.Value(resultSlotKey{}).(*resultSlot)
	if slot == nil {
		return make([]byte, 0, n)
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.given != nil || slot.done {
		return make([]byte, 0, n)
	}
	slot.given = directBuffers.Get().(*[]byte)
	if cap(*slot.given) < n {
		*slot.given = make([]byte, 0, n)
	}
	return (*slot.given)[:0]
}

// resultSlot is a direct call's buffer for its result (ResultBuffer). The
// handler may be abandoned by the host (a timeout) and go on using what it
// was given, so the slot is only reused when the host served the result
// itself (served) and then released the slot (release).
type resultSlot struct {
	mu     sync.Mutex
	given  *[]byte // handed out by ResultBuffer, from directBuffers
	served bool    // the host served the call's result and no longer needs given
	done   bool    // released: ResultBuffer hands out nothing more
}

type resultSlotKey struct{}

// withResultSlot returns ctx with a new result slot for a direct call.
func withResultSlot(ctx context.Context) (context.Context, *resultSlot) {
	slot := new(resultSlot)
	return context.WithValue(ctx, resultSlotKey{}, slot), slot
}

// servedResult records that the host has encoded the result data of the call
// whose context is ctx, data being what the handler returned; paged: data
// is retained for the read tool. The buffer the handler was given may then
// be reused once the response is written, unless data is that buffer's
// memory and retained.
func servedResult(ctx context.Context, data []byte, paged bool) {
	slot, _ := ctx.Value(resultSlotKey{}).(*resultSlot)
	if slot == nil {
		return
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.given == nil {
		return
	}
	slot.served = !paged || !overlap(data, *slot.given)
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

// release ends the slot once the call's response is written (or dropped):
// the buffer goes back to directBuffers if the host served the result.
func (slot *resultSlot) release() {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	slot.done = true
	if slot.given == nil || !slot.served || cap(*slot.given) > keepDirectBytes {
		return
	}
	*slot.given = (*slot.given)[:0]
	directBuffers.Put(slot.given)
	slot.given = nil
}
