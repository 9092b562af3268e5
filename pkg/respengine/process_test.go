package respengine

import "testing"

// TestLogRing: the ring keeps the last max bytes by sequence, counts the
// rest, and ends a page before a split UTF-8 sequence.
func TestLogRing(t *testing.T) {
	l := newLogRing(8)
	l.Write([]byte("abcdef"))
	l.Write([]byte("ghij"))
	if p := l.read(0, 100); string(p.data) != "cdefghij" || p.first != 2 || p.missed != 2 || p.dropped != 2 || p.next != 10 {
		t.Fatalf("after overflow: %+v %q", p, p.data)
	}
	if p := l.read(5, 3); string(p.data) != "fgh" || p.first != 5 || p.missed != 0 || p.next != 8 {
		t.Fatalf("a page: %+v %q", p, p.data)
	}
	l.Write([]byte("0123456789xyz"))
	if p := l.read(10, 100); string(p.data) != "56789xyz" || p.first != 15 || p.missed != 5 || p.end != 23 {
		t.Fatalf("a write larger than the ring: %+v %q", p, p.data)
	}
	if p := l.read(23, 10); len(p.data) != 0 || p.next != 23 {
		t.Fatalf("at the end: %+v", p)
	}

	u := newLogRing(64)
	u.Write([]byte("aé€b"))
	if p := u.read(0, 2); string(p.data) != "a" || p.next != 1 {
		t.Fatalf("a page that would split é: %+v %q", p, p.data)
	}
	if p := u.read(1, 4); string(p.data) != "é" || p.next != 3 {
		t.Fatalf("a page that would split €: %+v %q", p, p.data)
	}
	if enc, v := encodeBytes([]byte{0xff, 'a'}); enc != EncodingBase64 || v != "/2E=" {
		t.Fatalf("binary: %s %s", enc, v)
	}
}
