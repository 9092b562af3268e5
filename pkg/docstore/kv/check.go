package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// A bbolt file is read through a memory map and trusted: a file shorter
// than its meta page says, or a page whose header or elements are garbage,
// makes bbolt fault (SIGBUS, which no recover catches) or panic in its
// assertions, some of them on goroutines of its own. checkFile reads the
// file's structure with plain reads, bounds-checking everything, before
// bbolt maps it, so that bbolt only ever follows what was found sound.
//
// The on-disk layout below is bbolt's (version 2, native byte order); its
// package internal/common is not importable.
const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2

	pageHeaderSize = 16 // id u64, flags u16, count u16, overflow u32
	elementSize    = 16 // a leaf or branch element
	bucketHeader   = 16 // root pgid u64, sequence u64
	metaSize       = 64 // magic ... txid, then the checksum
	metaSumBytes   = 56 // the bytes the checksum covers

	branchFlag   = 0x01
	leafFlag     = 0x02
	metaFlag     = 0x04
	freelistFlag = 0x10

	bucketLeafFlag = 0x01
	noFreelist     = ^uint64(0)

	// minPageSize and maxPageSize bound the page size a meta page may
	// give; bbolt writes the OS page size (4 KiB to 64 KiB).
	minPageSize = 512
	maxPageSize = 1 << 20
	// maxDepth bounds the nesting of pages and buckets followed: a sound
	// tree of the largest file is far shallower.
	maxDepth = 64
	// maxProblems is the most problems a DamageError lists.
	maxProblems = 20
)

// ErrDamaged is the cause of every error for a store file whose contents
// contradict themselves: truncated, or with a page overwritten. It is
// returned by Open, and by a transaction that meets damage done to the
// file after it was opened (the DB stays open; other transactions are
// unaffected unless they meet it too).
var ErrDamaged = errors.New("store file damaged")

// DamageError reports what is damaged in a store file. It matches
// ErrDamaged with errors.Is.
type DamageError struct {
	Path string
	// Problems are the damage found, one sentence each, at most 20.
	Problems []string
	// More counts the problems found beyond Problems.
	More int
}

func (e *DamageError) Error() string {
	msg := fmt.Sprintf("store file %s is damaged: %s", e.Path, e.Problems[0])
	if n := len(e.Problems) - 1 + e.More; n > 0 {
		msg += fmt.Sprintf(" (and %d more problems)", n)
	}
	return msg
}

// Is makes errors.Is(err, ErrDamaged) true.
func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

// meta is a decoded meta page.
type meta struct {
	page     uint64 // 0 or 1
	pageSize uint64
	root     uint64
	freelist uint64
	pgid     uint64 // the high-water mark: pages [0, pgid) are in use or free
	txid     uint64
	err      error // why the page is not a valid meta page
}

// fileCheck walks one file's page tree.
type fileCheck struct {
	f        *os.File
	path     string
	size     int64
	pageSize uint64
	hwm      uint64
	// seen has a bit per page found in the tree (a page used twice is
	// damage); nil when the check follows one path (followKey).
	seen []uint64
	// shallow stops at the buckets named in the root bucket's pages: their
	// root page is checked in range, their tree is left to lazyCheck.
	shallow bool
	// nest is how many buckets deep the walk is (0: the root bucket).
	nest int
	// stop, when not nil and set, ends the walk with errStopped.
	stop *atomic.Bool
	// bufs holds one page buffer per depth, reused from page to page.
	bufs     [][]byte
	problems []string
	more     int
}

// errStopped ends a check whose stop flag was set (the DB is closing).
var errStopped = errors.New("kv: check stopped")

// errEmptyFile is checkFile's error for an empty file, which bbolt takes
// for a new one and initializes: Open allows that unless read-only.
var errEmptyFile = fmt.Errorf("%w: the file is empty (0 bytes)", ErrInvalidFile)

// checkFile checks the structure of the bbolt file at path without
// mapping it: a meta page that is valid, a length that holds every page
// below its high-water mark, every page reachable from the root bucket
// (headers, element bounds, key order, nested buckets, each page used
// once), and the freelist page if there is one (its ids in range, each
// listed once, none of them a page of the tree). It returns nil for a
// sound file, errEmptyFile for an empty one, ErrInvalidFile for a file
// that is not a bbolt file, a *DamageError for a damaged one, and the
// error of opening or reading it.
//
// With lock, it reads under a shared lock (see lockShared), waiting up to
// timeout for a writer's lock, and fails with errBusy if it stays held;
// without, the caller holds bbolt's lock.
func checkFile(path string, lock bool, timeout time.Duration) error {
	_, err := inspectFile(path, lock, timeout, false)
	return err
}

// inspectFile is checkFile, shallow (see fileCheck.shallow) when asked
// and the file has a persisted freelist, since bbolt rebuilds a missing
// one at a read-write open by following every page. It returns the
// active meta page when the file has one, and whether the whole file was
// checked.
func inspectFile(path string, lock bool, timeout time.Duration, shallow bool) (fileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileInfo{}, err
	}
	defer f.Close()
	if lock {
		if err := lockShared(f, timeout); err != nil {
			return fileInfo{}, err
		}
	}
	st, err := f.Stat()
	if err != nil {
		return fileInfo{}, err
	}
	if st.Size() == 0 {
		return fileInfo{}, errEmptyFile
	}
	c := &fileCheck{f: f, path: path, size: st.Size()}
	m, err := c.activeMeta()
	if err != nil {
		return fileInfo{}, err
	}
	c.pageSize, c.hwm = m.pageSize, m.pgid
	if err := c.checkMeta(m); err != nil {
		return fileInfo{}, err
	}
	info := fileInfo{meta: m, whole: !shallow || m.freelist == noFreelist}
	c.shallow = !info.whole
	return info, c.walkAll(m)
}

// fileInfo is what inspectFile learnt of a file.
type fileInfo struct {
	meta  meta
	whole bool // every page was checked, not only the root bucket's
}

// walkAll walks the tree from m's root bucket and checks m's freelist,
// and returns the problems found as a *DamageError.
func (c *fileCheck) walkAll(m meta) error {
	c.seen = make([]uint64, (c.hwm+63)/64)
	if err := c.walkPage(m.root, nil, nil, 0, site{root: true}); err != nil {
		return err
	}
	if m.freelist != noFreelist {
		if err := c.checkFreelist(m.freelist); err != nil {
			return err
		}
	}
	return c.damage()
}

// damage returns the problems found as a *DamageError, nil when none.
func (c *fileCheck) damage() error {
	if len(c.problems) == 0 {
		return nil
	}
	return &DamageError{Path: c.path, Problems: c.problems, More: c.more}
}

// activeMeta reads both meta pages and returns the one bbolt would use:
// the valid one, or of two valid ones the later (higher txid).
func (c *fileCheck) activeMeta() (meta, error) {
	m0, err := c.readMeta(0, 0)
	if err != nil {
		return meta{}, err
	}
	// bbolt finds meta page 1 one page size in, the size meta page 0
	// gives, or the OS page size when meta page 0 is not valid.
	off := uint64(os.Getpagesize())
	if m0.err == nil {
		off = m0.pageSize
	}
	m1, err := c.readMeta(1, int64(off))
	if err != nil {
		return meta{}, err
	}
	a, b := m0, m1
	if m1.txid > m0.txid {
		a, b = m1, m0
	}
	switch {
	case a.err == nil:
		return a, nil
	case b.err == nil:
		return b, nil
	}
	if errors.Is(m0.err, ErrInvalidFile) && errors.Is(m1.err, ErrInvalidFile) {
		return meta{}, m0.err
	}
	return meta{}, &DamageError{Path: c.path, Problems: []string{
		fmt.Sprintf("meta page 0: %v", m0.err), fmt.Sprintf("meta page 1: %v", m1.err)}}
}

// readMeta decodes the meta page n at off; a page that is not a valid
// meta page comes back with err set (ErrInvalidFile for one without
// bbolt's magic number), a read that fails as the error.
func (c *fileCheck) readMeta(n uint64, off int64) (meta, error) {
	m := meta{page: n}
	buf := make([]byte, pageHeaderSize+metaSize+8)
	if off+int64(len(buf)) > c.size {
		m.err = fmt.Errorf("%w: the file is %d bytes, too short for meta page %d", ErrInvalidFile, c.size, n)
		return m, nil
	}
	if _, err := c.f.ReadAt(buf, off); err != nil {
		return m, err
	}
	le := binary.NativeEndian
	b := buf[pageHeaderSize:]
	m.pageSize = uint64(le.Uint32(b[8:]))
	m.root = le.Uint64(b[16:])
	m.freelist = le.Uint64(b[32:])
	m.pgid = le.Uint64(b[40:])
	m.txid = le.Uint64(b[48:])
	h := fnv.New64a()
	h.Write(b[:metaSumBytes])
	switch {
	case le.Uint32(b) != boltMagic:
		m.err = fmt.Errorf("%w: no bbolt magic number", ErrInvalidFile)
	case le.Uint32(b[4:]) != boltVersion:
		m.err = fmt.Errorf("file format version %d, not %d", le.Uint32(b[4:]), boltVersion)
	case le.Uint64(b[metaSumBytes:]) != h.Sum64():
		m.err = errors.New("checksum mismatch")
	}
	return m, nil
}

// checkMeta checks what the active meta page says against the file.
func (c *fileCheck) checkMeta(m meta) error {
	damaged := func(format string, args ...any) error {
		return &DamageError{Path: c.path, Problems: []string{fmt.Sprintf("meta page %d (txid %d): ", m.page, m.txid) + fmt.Sprintf(format, args...)}}
	}
	switch {
	case m.pageSize < minPageSize || m.pageSize > maxPageSize || m.pageSize&(m.pageSize-1) != 0:
		return damaged("page size %d is not a power of two from %d to %d", m.pageSize, minPageSize, maxPageSize)
	case m.pgid < 3:
		return damaged("high-water mark of %d pages, fewer than the two meta pages and a root", m.pgid)
	case m.pgid > uint64(c.size)/m.pageSize: // size < pgid × pageSize, without overflow
		return damaged("the file is %d bytes, shorter than the %d pages of %d bytes it records (%s): it was truncated",
			c.size, m.pgid, m.pageSize, bytesOf(m.pgid, m.pageSize))
	case m.root < 2 || m.root >= m.pgid:
		return damaged("root bucket page %d is outside pages 2 to %d", m.root, m.pgid-1)
	case m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid):
		return damaged("freelist page %d is outside pages 2 to %d", m.freelist, m.pgid-1)
	}
	return nil
}

// problem records one problem found.
func (c *fileCheck) problem(format string, args ...any) {
	if len(c.problems) < maxProblems {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
		return
	}
	c.more++
}

// site is where a page or bucket was found, for a problem's message
// (formatted only then).
type site struct {
	root   bool   // the root bucket
	page   uint64 // else the page (0: an inline bucket page)
	bucket []byte // the bucket of this name in that page, if not nil
}

func (s site) String() string {
	where := fmt.Sprintf("page %d", s.page)
	switch {
	case s.root:
		return "the root bucket"
	case s.page == 0:
		where = "an inline bucket page"
	}
	if s.bucket != nil {
		return fmt.Sprintf("bucket %q in %s", trim(s.bucket), where)
	}
	return where
}

// buf returns the buffer of depth depth, of n bytes.
func (c *fileCheck) buf(depth int, n uint64) []byte {
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, nil)
	}
	if uint64(cap(c.bufs[depth])) < n {
		c.bufs[depth] = make([]byte, n)
	}
	return c.bufs[depth][:n]
}

// readPage reads page id into the buffer of depth, after checking its
// header: a problem (and nil) for a page that cannot be followed. The
// buffer is the page with its overflow pages, but only what a check
// looks at is read (the header, the elements, the keys and the nested
// buckets' headers); the values' bytes read as zeros, so that a page of
// large values (vector blocks) costs one read of its first page.
func (c *fileCheck) readPage(id uint64, from site, depth int) ([]byte, error) {
	if c.stop != nil && c.stop.Load() {
		return nil, errStopped
	}
	if id < 2 || id >= c.hwm {
		c.problem("%s points to page %d, outside pages 2 to %d", from, id, c.hwm-1)
		return nil, nil
	}
	off := int64(id * c.pageSize)
	head := c.buf(depth, c.pageSize)
	if err := c.readAt(head, off); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	le := binary.NativeEndian
	got, flags, overflow := le.Uint64(head), le.Uint16(head[8:]), uint64(le.Uint32(head[12:]))
	switch {
	case got != id:
		c.problem("page %d at offset %d (under %s) was overwritten: its header names page %d", id, off, from, got)
		return nil, nil
	case flags != branchFlag && flags != leafFlag:
		c.problem("page %d at offset %d (under %s) has page type %#x, not a branch or a leaf", id, off, from, flags)
		return nil, nil
	case id+overflow >= c.hwm:
		c.problem("page %d at offset %d (under %s) runs %d pages past the high-water mark %d", id, off, from, id+overflow+1-c.hwm, c.hwm)
		return nil, nil
	}
	if c.seen != nil {
		for i := id; i <= id+overflow; i++ {
			if c.seen[i/64]&(1<<(i%64)) != 0 {
				c.problem("page %d at offset %d (under %s) is used twice in the tree", i, i*c.pageSize, from)
				return nil, nil
			}
			c.seen[i/64] |= 1 << (i % 64)
		}
	}
	if overflow == 0 {
		return head, nil
	}
	// The first page is read; read up to the last byte looked at.
	buf := c.buf(depth, (overflow+1)*c.pageSize)
	copy(buf, head) // buf may be a larger buffer than head's
	read := c.pageSize
	clear(buf[read:])
	count := uint64(le.Uint16(buf[10:]))
	more := func(end uint64) error {
		end = min(end, uint64(len(buf)))
		if end <= read {
			return nil
		}
		err := c.readAt(buf[read:end], off+int64(read))
		read = end
		return err
	}
	if err := more(pageHeaderSize + count*elementSize); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	need := uint64(0)
	for i := range count {
		at := pageHeaderSize + i*elementSize
		if at+elementSize > uint64(len(buf)) {
			break
		}
		e := buf[at : at+elementSize]
		var end uint64
		if flags == branchFlag {
			end = at + uint64(le.Uint32(e)) + uint64(le.Uint32(e[4:]))
		} else {
			end = at + uint64(le.Uint32(e[4:])) + uint64(le.Uint32(e[8:]))
			if le.Uint32(e)&bucketLeafFlag != 0 {
				end += uint64(le.Uint32(e[12:]))
			}
		}
		need = max(need, end)
	}
	if err := more(need); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	return buf, nil
}

// readAt fills buf from the file at off; what lies past the end of the
// file (cut short underneath) reads as zeros.
func (c *fileCheck) readAt(buf []byte, off int64) error {
	n, err := c.f.ReadAt(buf, off)
	if errors.Is(err, io.EOF) {
		clear(buf[n:])
		err = nil
	}
	return err
}

// walkPage checks page id and, below it, every page and bucket it leads
// to; lo and hi bound its keys (nil: unbounded).
func (c *fileCheck) walkPage(id uint64, lo, hi []byte, depth int, from site) error {
	if depth > maxDepth {
		c.problem("page %d (under %s) is nested deeper than %d levels", id, from, maxDepth)
		return nil
	}
	buf, err := c.readPage(id, from, depth)
	if err != nil || buf == nil {
		return err
	}
	return c.walkElements(buf, id, lo, hi, depth)
}

// element is one decoded element of a page.
type element struct {
	key, value []byte // value: a leaf's
	child      uint64 // a branch's
	bucket     bool   // a leaf element holding a nested bucket
}

// pageElements checks the elements of the page in buf (page id, or 0 for
// a bucket's inline page): that they fit in it and that their keys are in
// order within [lo, hi). It returns how many there are, or false after
// recording a problem.
func (c *fileCheck) pageElements(buf []byte, id uint64, lo, hi []byte) (int, bool) {
	le := binary.NativeEndian
	flags, count := le.Uint16(buf[8:]), int(le.Uint16(buf[10:]))
	where := site{page: id}
	if pageHeaderSize+count*elementSize > len(buf) {
		c.problem("%s holds %d elements, more than fit in it", where, count)
		return 0, false
	}
	if flags == branchFlag && count == 0 {
		c.problem("%s is a branch without elements", where)
		return 0, false
	}
	var prev []byte
	for i := range count {
		e, ok := elementAt(buf, i)
		if !ok {
			at := pageHeaderSize + i*elementSize
			c.problem("%s: element %d ends past the page's %d bytes (at byte %d)", where, i, len(buf), at)
			return 0, false
		}
		key := e.key
		if prev != nil && bytes.Compare(prev, key) >= 0 || lo != nil && bytes.Compare(key, lo) < 0 || hi != nil && bytes.Compare(key, hi) >= 0 {
			c.problem("%s: key %d (%x) is out of order", where, i, trim(key))
			return 0, false
		}
		prev = key
	}
	return count, true
}

// elementAt decodes element i of the page in buf, whose element headers
// are known to fit; false when its key or value runs past the page.
func elementAt(buf []byte, i int) (element, bool) {
	le := binary.NativeEndian
	at := pageHeaderSize + i*elementSize
	e := buf[at : at+elementSize]
	var pos, ksize, vsize uint64
	branch := le.Uint16(buf[8:]) == branchFlag
	if branch {
		pos, ksize = uint64(le.Uint32(e)), uint64(le.Uint32(e[4:]))
	} else {
		pos, ksize, vsize = uint64(le.Uint32(e[4:])), uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:]))
	}
	start := uint64(at) + pos
	if start+ksize+vsize > uint64(len(buf)) {
		return element{}, false
	}
	el := element{key: buf[start : start+ksize]}
	if branch {
		el.child = le.Uint64(e[8:])
	} else {
		el.value = buf[start+ksize : start+ksize+vsize]
		el.bucket = le.Uint32(e)&bucketLeafFlag != 0
	}
	return el, true
}

// walkElements checks the elements of the page in buf (page id, or 0 for
// a bucket's inline page) and follows them.
func (c *fileCheck) walkElements(buf []byte, id uint64, lo, hi []byte, depth int) error {
	count, ok := c.pageElements(buf, id, lo, hi)
	if !ok {
		return nil
	}
	branch := binary.NativeEndian.Uint16(buf[8:]) == branchFlag
	for i := range count {
		e, _ := elementAt(buf, i)
		switch {
		case branch:
			next := hi
			if i+1 < count {
				ne, _ := elementAt(buf, i+1)
				next = ne.key
			}
			if err := c.walkPage(e.child, e.key, next, depth+1, site{page: id}); err != nil {
				return err
			}
		case e.bucket:
			if err := c.walkBucket(e.value, e.key, site{page: id}, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkBucket checks the nested bucket whose header (and inline page) is
// value.
func (c *fileCheck) walkBucket(value, name []byte, where site, depth int) error {
	if len(value) < bucketHeader {
		c.problem("%s: bucket %q has a %d-byte header, not %d", where, trim(name), len(value), bucketHeader)
		return nil
	}
	from := where
	from.bucket = name
	root := binary.NativeEndian.Uint64(value)
	c.nest++
	defer func() { c.nest-- }()
	if root != 0 {
		if c.shallow && c.nest == 1 {
			if root < 2 || root >= c.hwm {
				c.problem("%s points to page %d, outside pages 2 to %d", from, root, c.hwm-1)
			}
			return nil
		}
		return c.walkPage(root, nil, nil, depth, from)
	}
	inline := value[bucketHeader:]
	switch {
	case len(inline) < pageHeaderSize:
		c.problem("%s: inline page of %d bytes, shorter than a page header", from, len(inline))
		return nil
	case binary.NativeEndian.Uint16(inline[8:]) != leafFlag:
		c.problem("%s: inline page of type %#x, not a leaf", from, binary.NativeEndian.Uint16(inline[8:]))
		return nil
	case depth > maxDepth:
		c.problem("%s is nested deeper than %d levels", from, maxDepth)
		return nil
	}
	return c.walkElements(inline, 0, nil, nil, depth)
}

// followKey checks the pages that a search for key in the bucket whose
// root is page root goes through, as bbolt's cursor descends them, down
// to the leaf: each page's header and elements, and that no page comes
// twice on the way (a cycle, which would make bbolt descend forever).
func (c *fileCheck) followKey(root uint64, key []byte) error {
	var path [maxDepth + 1]uint64
	id, from := root, site{root: true}
	var lo, hi []byte
	for depth := 0; ; depth++ {
		if depth > maxDepth || slices.Contains(path[:depth], id) {
			c.problem("page %d (under %s) is its own descendant, or nested deeper than %d levels", id, from, maxDepth)
			return nil
		}
		path[depth] = id
		buf, err := c.readPage(id, from, depth)
		if err != nil || buf == nil {
			return err
		}
		count, ok := c.pageElements(buf, id, lo, hi)
		if !ok || binary.NativeEndian.Uint16(buf[8:]) != branchFlag {
			return nil
		}
		// bbolt's choice: the last element whose key is at most key, or
		// the first.
		i := max(sort.Search(count, func(i int) bool {
			e, _ := elementAt(buf, i)
			return bytes.Compare(e.key, key) > 0
		})-1, 0)
		e, _ := elementAt(buf, i)
		if i+1 < count {
			ne, _ := elementAt(buf, i+1)
			hi = ne.key
		}
		lo, id, from = e.key, e.child, site{page: id}
	}
}

// checkFreelist checks the freelist page: its header, that the ids it
// lists fit in it, lie below the high-water mark and come once, and (when
// the tree was walked) that neither they nor the freelist's own pages
// are pages of the tree, which a write would then overwrite.
func (c *fileCheck) checkFreelist(id uint64) error {
	off := int64(id * c.pageSize)
	head := make([]byte, pageHeaderSize+8)
	if _, err := c.f.ReadAt(head, off); err != nil {
		return fmt.Errorf("read freelist page %d: %w", id, err)
	}
	le := binary.NativeEndian
	got, flags, overflow := le.Uint64(head), le.Uint16(head[8:]), uint64(le.Uint32(head[12:]))
	count, first := uint64(le.Uint16(head[10:])), uint64(0)
	if count == 0xFFFF { // bbolt's mark of a count too large for the header
		count, first = le.Uint64(head[pageHeaderSize:]), 1
	}
	switch {
	case got != id || flags != freelistFlag:
		c.problem("freelist page %d (offset %d) has the header of page %d of type %#x", id, off, got, flags)
		return nil
	case id+overflow >= c.hwm:
		c.problem("freelist page %d runs past the high-water mark %d", id, c.hwm)
		return nil
	case count > (overflow+1)*c.pageSize/8:
		c.problem("freelist page %d lists %d pages, more than fit in it", id, count)
		return nil
	}
	buf := make([]byte, (overflow+1)*c.pageSize)
	if _, err := c.f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read freelist page %d: %w", id, err)
	}
	ids := buf[pageHeaderSize:]
	free := make([]uint64, 0, count)
	for i := first; i < first+count && 8*(i+1) <= uint64(len(ids)); i++ {
		p := le.Uint64(ids[8*i:])
		if p < 2 || p >= c.hwm {
			c.problem("freelist page %d lists page %d, outside pages 2 to %d", id, p, c.hwm-1)
			return nil
		}
		free = append(free, p)
	}
	for p := id; p <= id+overflow; p++ {
		free = append(free, p) // the freelist's own pages: in no tree, listed as free by no one
	}
	slices.Sort(free)
	for i, p := range free {
		switch {
		case i > 0 && free[i-1] == p:
			c.problem("freelist page %d lists page %d twice, or lists its own page", id, p)
			return nil
		case c.seen != nil && c.seen[p/64]&(1<<(p%64)) != 0:
			c.problem("freelist page %d lists page %d, a page of the tree (a write would overwrite it)", id, p)
			return nil
		}
	}
	return nil
}

// bytesOf formats pages × pageSize bytes, or "more than 2^63 bytes".
func bytesOf(pages, pageSize uint64) string {
	if pages > math.MaxInt64/pageSize {
		return "more than 2^63 bytes"
	}
	return fmt.Sprintf("%d bytes", pages*pageSize)
}

// trim shortens a key for a message.
func trim(key []byte) []byte {
	if len(key) > 32 {
		return key[:32]
	}
	return key
}

// catchDamage, deferred, turns a panic that is damage (see damageOf) into
// a *DamageError in *err; any other panic goes on.
func catchDamage(path string, err *error) {
	if r := recover(); r != nil {
		*err = damageOf(path, r)
	}
}

// damageOf returns the *DamageError for the panic r, recovered in a
// function deferred during it: a memory fault (a read of the map past the
// end of the file, with debug.SetPanicOnFault), or a panic raised in
// bbolt's code (its assertions, or a runtime error on garbage). Any other
// panic is a bug of the caller's: damageOf panics again with r, on the
// stack that raised it.
func damageOf(path string, r any) error {
	if f, ok := r.(lazyFailure); ok {
		if f.err == errStopped {
			return fmt.Errorf("kv: %s: %w", path, ErrClosed)
		}
		return f.err
	}
	if isFault(r) {
		return &DamageError{Path: path, Problems: []string{fmt.Sprintf(
			"a read of the file's map faulted at %#x: the file is shorter than its pages, or another program changed it while open",
			r.(interface{ Addr() uintptr }).Addr())}}
	}
	if raisedInBolt() {
		return &DamageError{Path: path, Problems: []string{fmt.Sprint("bbolt: ", r)}}
	}
	panic(r)
}

// raisedInBolt reports whether the panic under way was raised in bbolt's
// code: the first frame below runtime.gopanic that is not the runtime's.
func raisedInBolt() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	inPanic := false
	for {
		f, more := frames.Next()
		switch {
		case !inPanic:
			inPanic = f.Function == "runtime.gopanic"
		case !strings.HasPrefix(f.Function, "runtime."):
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt")
		}
		if !more {
			return false
		}
	}
}

// CatchFault runs fn, which reads a transaction's memory on another
// goroutine than the transaction's, with memory faults turned into panics,
// and returns the fault recovered (nil when none); other panics go on.
// The transaction's goroutine must panic with a fault returned, once fn's
// goroutine is done, so that the transaction fails with ErrDamaged: a
// fault (the file cut short underneath) would otherwise kill the process.
func CatchFault(fn func()) (fault runtime.Error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(runtime.Error); ok && isFault(r) {
				fault = e
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}

// isFault reports whether the panic value r is a memory fault that
// debug.SetPanicOnFault turned into a panic: a runtime.Error with the
// faulting address.
func isFault(r any) bool {
	_, isErr := r.(runtime.Error)
	_, hasAddr := r.(interface{ Addr() uintptr })
	return isErr && hasAddr
}
