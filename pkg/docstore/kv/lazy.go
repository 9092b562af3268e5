package kv

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// Open checks only what bbolt reads to open a file with a persisted
// freelist (the meta pages, the freelist, the root bucket's pages and the
// buckets bbolt keeps inline in them) so that an open costs the same at
// any size. The rest is checked by lazyCheck: the whole file in the
// background, which every write waits for (a write frees and allocates
// pages, which must be known to be used once and not listed as free), as
// does a backup (a copy of a damaged file would not be one), and,
// until that check has found the file sound, what each read reaches
// before bbolt reads it: the path of a Get, the whole bucket of a cursor
// or a count. A read that reaches damage fails with a *DamageError, as
// SQLite reports a malformed page when a read reaches it, and the DB stays
// open; if the background check finds damage, every write fails with it.

// lazyCheck checks one open file's pages as reads reach them, and the
// whole file once, in the background.
type lazyCheck struct {
	path     string
	f        *os.File
	pageSize uint64
	hwm      uint64

	// sound is set once the whole file was checked and found sound:
	// nothing is checked any more.
	sound atomic.Bool
	// done is closed when the whole-file check has ended, with its
	// result in err.
	done chan struct{}
	err  error
	stop atomic.Bool

	mu      sync.Mutex
	buckets map[uint64]*bucketCheck // by root page
}

// bucketCheck is the check of one bucket's tree, run once.
type bucketCheck struct {
	once sync.Once
	err  error
}

// soundFile is the lazyCheck of a file checked whole at open.
func soundFile() *lazyCheck {
	l := &lazyCheck{done: make(chan struct{})}
	l.sound.Store(true)
	close(l.done)
	return l
}

// startLazyCheck returns the lazyCheck of the file at path, opened by
// bbolt after inspectFile checked what m says and the root bucket's
// pages, and starts the whole-file check on a goroutine of its own, which
// close stops.
func startLazyCheck(path string, m meta) (*lazyCheck, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kv: open %s: %w", path, err)
	}
	l := &lazyCheck{path: path, f: f, pageSize: m.pageSize, hwm: m.pgid,
		done: make(chan struct{}), buckets: map[uint64]*bucketCheck{}}
	go l.checkAll(m)
	return l, nil
}

// newCheck returns a fileCheck of l's file.
func (l *lazyCheck) newCheck() *fileCheck {
	return &fileCheck{f: l.f, path: l.path, pageSize: l.pageSize, hwm: l.hwm, stop: &l.stop}
}

// checkAll checks the whole file, as checkFile does, and records the
// result. bbolt holds the file's lock and no write begins before the
// result: the file does not change underneath.
func (l *lazyCheck) checkAll(m meta) {
	defer close(l.done)
	l.err = l.newCheck().walkAll(m)
	if l.err == nil {
		l.sound.Store(true)
	}
}

// whole waits for the whole-file check and returns its error: a write
// may begin only on a file found sound, and a backup copies only such a
// file.
func (l *lazyCheck) whole() error {
	<-l.done
	switch {
	case l.err == errStopped:
		return ErrClosed
	case l.err != nil:
		return l.err
	}
	return nil
}

// close stops the whole-file check, waits for it and closes the file,
// once no transaction reads it.
func (l *lazyCheck) close() {
	l.stop.Store(true)
	<-l.done
	if l.f != nil {
		l.f.Close()
	}
}

// bucket checks, once, the tree of the bucket whose root is page root
// (not 0: an inline bucket was checked with the root bucket's pages).
func (l *lazyCheck) bucket(root uint64) error {
	if l.sound.Load() {
		return nil
	}
	l.mu.Lock()
	b := l.buckets[root]
	if b == nil {
		b = &bucketCheck{}
		l.buckets[root] = b
	}
	l.mu.Unlock()
	b.once.Do(func() {
		c := l.newCheck()
		c.seen = make([]uint64, (l.hwm+63)/64)
		b.err = c.walkPage(root, nil, nil, 0, site{root: true})
		if b.err == nil {
			b.err = c.damage()
		}
	})
	return b.err
}

// key checks the pages a search for key goes through in the bucket whose
// root is page root, unless the whole bucket or file was checked.
func (l *lazyCheck) key(root uint64, key []byte) error {
	if l.sound.Load() {
		return nil
	}
	l.mu.Lock()
	b := l.buckets[root]
	l.mu.Unlock()
	if b != nil {
		return l.bucket(root) // checked, or being checked
	}
	c := l.newCheck()
	if err := c.followKey(root, key); err != nil {
		return err
	}
	return c.damage()
}
