package respengine

import (
	"encoding/base64"
	"sync"
	"unicode/utf8"
)

// Encodings of a log page or a program's output.
const (
	EncodingUTF8   = "utf8"
	EncodingBase64 = "base64"
)

// logRing keeps the last max bytes a process wrote, addressed by sequence:
// the byte offset since the process started, so that a reader's cursor
// survives the drops. Bytes older than the last max are dropped and
// counted, never presented as complete history.
type logRing struct {
	mu  sync.Mutex
	max int
	buf []byte // bytes [end-len(buf), end)
	end int64  // bytes written so far: the next byte's sequence
}

func newLogRing(max int) *logRing { return &logRing{max: max} }

// Write implements io.Writer; it never fails.
func (l *logRing) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	l.end += int64(n)
	if n >= l.max {
		l.buf = append(l.buf[:0], p[n-l.max:]...)
		return n, nil
	}
	if over := len(l.buf) + n - l.max; over > 0 {
		l.buf = l.buf[:copy(l.buf, l.buf[over:])]
	}
	l.buf = append(l.buf, p...)
	return n, nil
}

// logPage is one read of a logRing.
type logPage struct {
	data    []byte
	first   int64 // the sequence of data[0]
	next    int64 // the sequence after data
	missed  int64 // bytes between the requested cursor and first: dropped before this read
	dropped int64 // bytes dropped since the start
	end     int64 // bytes written so far
}

// read returns up to max bytes from sequence since (or from the oldest
// retained byte, when since was dropped). A page that would end inside a
// UTF-8 sequence of otherwise valid text ends before it, so that text
// pages stay text. since beyond end is the caller's to refuse.
func (l *logRing) read(since int64, max int) logPage {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := logPage{dropped: l.end - int64(len(l.buf)), end: l.end, first: since}
	if since < p.dropped {
		p.missed, p.first = p.dropped-since, p.dropped
	}
	if p.first > l.end {
		p.first = l.end
	}
	from := int(p.first - p.dropped)
	to := min(len(l.buf), from+max)
	data := l.buf[from:to]
	if to < len(l.buf) && !utf8.Valid(data) {
		for cut := 1; cut <= utf8.UTFMax-1 && cut < len(data); cut++ {
			if utf8.Valid(data[:len(data)-cut]) {
				data = data[:len(data)-cut]
				break
			}
		}
	}
	p.data = append([]byte(nil), data...)
	p.next = p.first + int64(len(p.data))
	return p
}

// all returns every retained byte and the count of dropped ones.
func (l *logRing) all() (data []byte, dropped int64) {
	p := l.read(0, l.max)
	return p.data, p.dropped
}

// encodeBytes returns b as text when it is valid UTF-8, else as base64:
// either way lossless.
func encodeBytes(b []byte) (encoding, value string) {
	if utf8.Valid(b) {
		return EncodingUTF8, string(b)
	}
	return EncodingBase64, base64.StdEncoding.EncodeToString(b)
}
