package mcpcore

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/fastpath"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestResultStoreExpiryIsNotExtendedByReads(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	s := newResultStore(1*MiB, 5*time.Minute, clock.now)
	defer s.Close()
	h, err := s.Put("o", []byte("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	clock.add(4 * time.Minute)
	c, err := s.Read("o", h.ID, 8, 100)
	if err != nil || string(c.Data) != "89" || c.NextOffset != nil {
		t.Fatalf("read = %+v, %v", c, err)
	}
	if _, err := s.Read("other", h.ID, 0, 1); !errors.Is(err, ErrResultNotFound) {
		t.Fatalf("another owner read it: %v", err)
	}
	clock.add(time.Minute) // 5 minutes after creation, despite the read at 4
	if _, err := s.Read("o", h.ID, 0, 1); !errors.Is(err, ErrResultNotFound) {
		t.Fatalf("read after expiry: %v", err)
	}
	if st := s.Stats(); st.Retained != 0 || st.Bytes != 0 {
		t.Fatalf("stats after expiry = %+v", st)
	}
}

func TestResultStoreBudget(t *testing.T) {
	s := newResultStore(100, time.Minute, nil)
	defer s.Close()
	a, err := s.Put("o", make([]byte, 60))
	if err != nil {
		t.Fatal(err)
	}
	var le *LimitError
	if _, err := s.Put("o", make([]byte, 41)); !errors.As(err, &le) || le.Limit != "retained_result_bytes" || !errors.Is(err, ErrLimit) {
		t.Fatalf("over budget: %v", err)
	}
	if err := s.Release("o", a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put("o", make([]byte, 100)); err != nil {
		t.Fatalf("after release: %v", err)
	}
	for _, tc := range []struct{ off, n int64 }{{-1, 1}, {101, 1}, {0, 0}} {
		if _, err := s.Read("o", "missing", tc.off, tc.n); err == nil {
			t.Errorf("read(%d,%d) of a missing id succeeded", tc.off, tc.n)
		}
	}
}

func TestResultStoreTimerFreesMemory(t *testing.T) {
	s := newResultStore(MiB, 20*time.Millisecond, nil)
	defer s.Close()
	if _, err := s.Put("o", make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	s.mu.Lock()
	used := s.used
	s.mu.Unlock()
	if used != 0 {
		t.Fatalf("%d bytes still held after expiry", used)
	}
}

// TestResultStorePutAfterClose: a result that a late handler finishes after
// shutdown is not retained (no entry, no timer holding its bytes).
func TestResultStorePutAfterClose(t *testing.T) {
	s := newResultStore(MiB, time.Minute, nil)
	if _, err := s.Put("o", make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Put("o", make([]byte, 1000)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v, want ErrClosed", err)
	}
	s.mu.Lock()
	n, used := len(s.entries), s.used
	s.mu.Unlock()
	if n != 0 || used != 0 {
		t.Fatalf("after Close and a late Put the store holds %d entries, %d bytes", n, used)
	}
}

// TestResultStoreParts: a result retained as parts reads back as their
// concatenation at every offset and length, across part boundaries (empty
// parts included); a read within one heap part is a view of it, a read
// from a ResultMemory a copy.
func TestResultStoreParts(t *testing.T) {
	s := newResultStore(1*MiB, time.Minute, nil)
	defer s.Close()
	parts := [][]byte{[]byte("abc"), {}, []byte("d"), []byte("efghij"), []byte("k")}
	whole := "abcdefghijk"
	for _, mem := range []*fastpath.ResultMemory{nil, fastpath.NewResultMemory()} {
		h, err := s.PutParts("o", mem, parts)
		if err != nil || h.TotalBytes != int64(len(whole)) {
			t.Fatalf("put: %+v %v", h, err)
		}
		for off := 0; off <= len(whole); off++ {
			for n := 1; n <= len(whole)+1; n++ {
				c, err := s.Read("o", h.ID, int64(off), int64(n))
				if want := whole[off:min(off+n, len(whole))]; err != nil || string(c.Data) != want {
					t.Fatalf("read %d+%d: %q %v, want %q", off, n, c.Data, err, want)
				}
			}
		}
		c, _ := s.Read("o", h.ID, 4, 3)
		if view := &c.Data[0] == &parts[3][0]; view != (mem == nil) {
			t.Errorf("memory %v: a read within a part is a view: %v", mem != nil, view)
		}
	}
}
