package ttlmap

import (
	"testing"
	"time"
)

// TestMap: values expire, Get with extend slides the expiry, Take is
// single-use, and values go in and out as copies.
func TestMap(t *testing.T) {
	m := New()
	in := []byte("v1")
	m.Put("a", in, 80*time.Millisecond)
	in[0] = 'x'
	got, ok := m.Get("a", 0)
	if !ok || string(got) != "v1" {
		t.Fatalf("Get = %q, %v; want the value put, unaffected by the caller's later change", got, ok)
	}
	got[0] = 'y'
	if again, _ := m.Get("a", 0); string(again) != "v1" {
		t.Fatalf("a returned value changed the stored one: %q", again)
	}

	m.Put("slide", []byte("s"), 80*time.Millisecond)
	for range 4 { // 4 × 40 ms: alive only because each Get extends it
		time.Sleep(40 * time.Millisecond)
		if _, ok := m.Get("slide", 80*time.Millisecond); !ok {
			t.Fatal("a value read with extend expired")
		}
	}
	if _, ok := m.Get("a", 0); ok {
		t.Fatal("a value past its ttl is still there")
	}

	m.Put("code", []byte("c"), time.Minute)
	if v, ok := m.Take("code"); !ok || string(v) != "c" {
		t.Fatalf("Take = %q, %v", v, ok)
	}
	if _, ok := m.Take("code"); ok {
		t.Fatal("a value was taken twice")
	}
	m.Delete("slide", "missing")
	if n := m.Len(); n != 0 {
		t.Fatalf("Len after deleting everything = %d", n)
	}
}
