package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestMemory() (*Memory, *clock) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	m := NewMemory()
	m.now = c.now
	return m, c
}

func TestMemoryRoundTrip(t *testing.T) {
	ctx := context.Background()
	m, c := newTestMemory()
	state := []byte(`{"logLevel":"info"}`)
	rec := Record{ID: "s1", Principal: "token:0123456789abcdef", State: state, Expires: c.t.Add(time.Minute)}
	if err := m.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	state[2] = 'X' // the store holds its own copy
	got, ok, err := m.Load(ctx, "s1", time.Time{})
	if err != nil || !ok {
		t.Fatalf("Load: %v %v", ok, err)
	}
	if got.ID != "s1" || got.Principal != rec.Principal || string(got.State) != `{"logLevel":"info"}` || !got.Expires.Equal(rec.Expires) {
		t.Fatalf("Load = %+v", got)
	}
	got.State[2] = 'Y' // and hands out copies
	if again, _, _ := m.Load(ctx, "s1", time.Time{}); string(again.State) != `{"logLevel":"info"}` {
		t.Fatalf("stored state changed through a loaded record: %s", again.State)
	}
	if _, ok, _ := m.Load(ctx, "other", time.Time{}); ok {
		t.Fatal("Load of a missing id found a record")
	}
	if err := m.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.Load(ctx, "s1", time.Time{}); ok {
		t.Fatal("record survived Delete")
	}
	if err := m.Delete(ctx, "s1"); err != nil {
		t.Fatalf("deleting a missing record: %v", err)
	}
	if err := m.Save(ctx, Record{}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Save without ID: %v, want ErrInvalidRecord", err)
	}
}

func TestMemoryExpiry(t *testing.T) {
	ctx := context.Background()
	m, c := newTestMemory()
	start := c.t
	m.Save(ctx, Record{ID: "s", Expires: start.Add(time.Minute)})
	m.Save(ctx, Record{ID: "forever"})

	// A load extends the expiry, never shortens it.
	c.t = start.Add(50 * time.Second)
	if _, ok, _ := m.Load(ctx, "s", c.t.Add(time.Minute)); !ok {
		t.Fatal("record expired early")
	}
	c.t = start.Add(100 * time.Second)
	if rec, ok, _ := m.Load(ctx, "s", start); !ok || !rec.Expires.Equal(start.Add(110*time.Second)) {
		t.Fatalf("after extension: ok=%v expires=%v, want %v", ok, rec.Expires, start.Add(110*time.Second))
	}
	c.t = start.Add(110 * time.Second)
	if _, ok, _ := m.Load(ctx, "s", c.t.Add(time.Minute)); ok {
		t.Fatal("expired record loaded (and extended)")
	}
	if rec, ok, _ := m.Load(ctx, "forever", c.t.Add(time.Minute)); !ok || !rec.Expires.IsZero() {
		t.Fatalf("record without expiry: ok=%v expires=%v", ok, rec.Expires)
	}

	// Save drops expired records it has not been asked about.
	m.Save(ctx, Record{ID: "a", Expires: c.t.Add(time.Second)})
	m.Save(ctx, Record{ID: "b", Expires: c.t.Add(time.Hour)})
	c.t = c.t.Add(2 * sweepEvery)
	m.Save(ctx, Record{ID: "c"})
	if n := m.Len(); n != 3 { // forever, b, c
		t.Fatalf("records after sweep: %d, want 3", n)
	}
}
