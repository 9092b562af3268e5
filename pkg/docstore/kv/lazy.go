package kv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sort"
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
// before bbolt reads it: the path of a Get, the pages each move of a
// cursor reaches (see cursorCheck), the whole bucket of a count. A read
// that reaches damage fails with a *DamageError, as SQLite reports a
// malformed page when a read reaches it, and the DB stays open; if the
// background check finds damage, every write fails with it.

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

// cursorCheck moves as bbolt's cursor over a bucket moves, over pages it
// reads and checks itself, one step ahead: each of its moves checks the
// pages the same move of bbolt's cursor is about to reach (the next leaf,
// the path of a seek), so that a scan checks the leaves it reads and the
// branches above them, not the whole bucket. Its stack mirrors bbolt's
// (see bbolt's cursor.go): the pages from the bucket's root down, with
// the element each is at.
type cursorCheck struct {
	c     *fileCheck
	root  uint64
	stack []shadowRef
}

// shadowRef is a page on cursorCheck's stack, held in the fileCheck's
// buffer of its depth.
type shadowRef struct {
	id           uint64
	buf          []byte
	index, count int
	leaf         bool
	lo, hi       []byte // the bounds of its keys, from its parent
}

// cursor returns the cursorCheck of a cursor over the bucket whose root
// is page root, nil when the file was found sound.
func (l *lazyCheck) cursor(root uint64) *cursorCheck {
	if l.sound.Load() {
		return nil
	}
	return &cursorCheck{c: l.newCheck(), root: root}
}

// push reads and checks page id as the child of the stack's top (at its
// index), or as the root, and pushes it, its index set by at (0: the
// first element, -1: the last).
func (s *cursorCheck) push(id uint64, at int) error {
	depth := len(s.stack)
	var lo, hi []byte
	from := site{root: true}
	if depth > 0 {
		top := &s.stack[depth-1]
		from = site{page: top.id}
		e, _ := elementAt(top.buf, top.index)
		lo, hi = e.key, top.hi
		if top.index+1 < top.count {
			ne, _ := elementAt(top.buf, top.index+1)
			hi = ne.key
		}
	}
	if depth > maxDepth || slices.ContainsFunc(s.stack, func(r shadowRef) bool { return r.id == id }) {
		s.c.problem("page %d (under %s) is its own descendant, or nested deeper than %d levels", id, from, maxDepth)
		return s.c.damage()
	}
	buf, err := s.c.readPage(id, from, depth)
	if err != nil {
		return err
	}
	if buf == nil {
		return s.c.damage()
	}
	count, ok := s.c.pageElements(buf, id, lo, hi)
	if !ok {
		return s.c.damage()
	}
	ref := shadowRef{id: id, buf: buf, count: count, leaf: binary.NativeEndian.Uint16(buf[8:]) == leafFlag, lo: lo, hi: hi}
	if at < 0 {
		ref.index = count - 1
	}
	s.stack = append(s.stack, ref)
	return nil
}

// child returns the page the top of the stack (a branch) points to at
// its index.
func (s *cursorCheck) child() uint64 {
	top := &s.stack[len(s.stack)-1]
	e, _ := elementAt(top.buf, top.index)
	return e.child
}

// descend pushes pages down to a leaf: the first element of each (at 0)
// or the last (at -1).
func (s *cursorCheck) descend(at int) error {
	for !s.stack[len(s.stack)-1].leaf {
		if err := s.push(s.child(), at); err != nil {
			return err
		}
	}
	return nil
}

// first is bbolt's Cursor.First.
func (s *cursorCheck) first() error {
	s.stack = s.stack[:0]
	if err := s.push(s.root, 0); err != nil {
		return err
	}
	if err := s.descend(0); err != nil {
		return err
	}
	if s.stack[len(s.stack)-1].count == 0 {
		return s.next()
	}
	return nil
}

// last is bbolt's Cursor.Last.
func (s *cursorCheck) last() error {
	s.stack = s.stack[:0]
	if err := s.push(s.root, -1); err != nil {
		return err
	}
	if err := s.descend(-1); err != nil {
		return err
	}
	for len(s.stack) > 1 && s.stack[len(s.stack)-1].count == 0 {
		if err := s.prev(); err != nil {
			return err
		}
	}
	return nil
}

// seek is bbolt's Cursor.Seek: its search, then a move to the next leaf
// when the key is past the leaf's last.
func (s *cursorCheck) seek(key []byte) error {
	s.stack = s.stack[:0]
	for id := s.root; ; {
		if err := s.push(id, 0); err != nil {
			return err
		}
		top := &s.stack[len(s.stack)-1]
		if top.leaf {
			top.index = sort.Search(top.count, func(i int) bool {
				e, _ := elementAt(top.buf, i)
				return bytes.Compare(e.key, key) >= 0
			})
			break
		}
		top.index = max(sort.Search(top.count, func(i int) bool {
			e, _ := elementAt(top.buf, i)
			return bytes.Compare(e.key, key) > 0
		})-1, 0)
		id = s.child()
	}
	if top := s.stack[len(s.stack)-1]; top.index >= top.count {
		return s.next()
	}
	return nil
}

// next is bbolt's Cursor.Next.
func (s *cursorCheck) next() error {
	for {
		i := len(s.stack) - 1
		for ; i >= 0; i-- {
			if e := &s.stack[i]; e.index < e.count-1 {
				e.index++
				break
			}
		}
		if i == -1 {
			return nil
		}
		s.stack = s.stack[:i+1]
		if err := s.descend(0); err != nil {
			return err
		}
		if s.stack[len(s.stack)-1].count != 0 {
			return nil
		}
	}
}

// prev is bbolt's Cursor.Prev.
func (s *cursorCheck) prev() error {
	for i := len(s.stack) - 1; i >= 0; i-- {
		if e := &s.stack[i]; e.index > 0 {
			e.index--
			break
		}
		if len(s.stack) == 1 {
			return s.first()
		}
		s.stack = s.stack[:i]
	}
	if len(s.stack) == 0 {
		return nil
	}
	return s.descend(-1)
}
