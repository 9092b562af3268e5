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
	"strings"
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
	size     int64
	pageSize uint64
	hwm      uint64
	seen     map[uint64]bool
	problems []string
	more     int
}

// errEmptyFile is checkFile's error for an empty file, which bbolt takes
// for a new one and initializes: Open allows that unless read-only.
var errEmptyFile = fmt.Errorf("%w: the file is empty (0 bytes)", ErrInvalidFile)

// checkFile checks the structure of the bbolt file at path without
// mapping it: a meta page that is valid, a length that holds every page
// below its high-water mark, and every page reachable from the root bucket
// (headers, element bounds, key order, nested buckets, each page used
// once), and the freelist page if there is one. It returns nil for a sound
// file, errEmptyFile for an empty one, ErrInvalidFile for a file that is
// not a bbolt file, a *DamageError for a damaged one, and the error of
// opening or reading it.
//
// With lock, it reads under a shared lock (see lockShared), waiting up to
// timeout for a writer's lock, and fails with errBusy if it stays held;
// without, the caller holds bbolt's lock.
func checkFile(path string, lock bool, timeout time.Duration) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if lock {
		if err := lockShared(f, timeout); err != nil {
			return err
		}
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return errEmptyFile
	}
	c := &fileCheck{f: f, size: st.Size(), seen: map[uint64]bool{}}
	m, err := c.activeMeta()
	if err != nil {
		return err
	}
	c.pageSize, c.hwm = m.pageSize, m.pgid
	if err := c.checkMeta(m); err != nil {
		return err
	}
	if err := c.walkPage(m.root, nil, nil, 0, "the root bucket"); err != nil {
		return err
	}
	if m.freelist != noFreelist {
		if err := c.checkFreelist(m.freelist); err != nil {
			return err
		}
	}
	if len(c.problems) > 0 {
		return &DamageError{Path: path, Problems: c.problems, More: c.more}
	}
	return nil
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
	return meta{}, &DamageError{Path: c.f.Name(), Problems: []string{
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
		return &DamageError{Path: c.f.Name(), Problems: []string{fmt.Sprintf("meta page %d (txid %d): ", m.page, m.txid) + fmt.Sprintf(format, args...)}}
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

// readPage reads page id with its overflow pages after checking its
// header: a problem (and nil) for a page that cannot be followed.
func (c *fileCheck) readPage(id uint64, from string) ([]byte, error) {
	if id < 2 || id >= c.hwm {
		c.problem("%s points to page %d, outside pages 2 to %d", from, id, c.hwm-1)
		return nil, nil
	}
	off := int64(id * c.pageSize)
	head := make([]byte, pageHeaderSize)
	if _, err := c.f.ReadAt(head, off); err != nil {
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
	for i := id; i <= id+overflow; i++ {
		if c.seen[i] {
			c.problem("page %d at offset %d (under %s) is used twice in the tree", i, i*c.pageSize, from)
			return nil, nil
		}
		c.seen[i] = true
	}
	buf := make([]byte, (overflow+1)*c.pageSize)
	if _, err := c.f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	return buf, nil
}

// walkPage checks page id and, below it, every page and bucket it leads
// to; lo and hi bound its keys (nil: unbounded).
func (c *fileCheck) walkPage(id uint64, lo, hi []byte, depth int, from string) error {
	if depth > maxDepth {
		c.problem("page %d (under %s) is nested deeper than %d levels", id, from, maxDepth)
		return nil
	}
	buf, err := c.readPage(id, from)
	if err != nil || buf == nil {
		return err
	}
	return c.walkElements(buf, id, lo, hi, depth)
}

// walkElements checks the elements of the page in buf (page id, or 0 for
// a bucket's inline page) and follows them.
func (c *fileCheck) walkElements(buf []byte, id uint64, lo, hi []byte, depth int) error {
	le := binary.NativeEndian
	flags, count := le.Uint16(buf[8:]), int(le.Uint16(buf[10:]))
	where := fmt.Sprintf("page %d", id)
	if id == 0 {
		where = "an inline bucket page"
	}
	if pageHeaderSize+count*elementSize > len(buf) {
		c.problem("%s holds %d elements, more than fit in it", where, count)
		return nil
	}
	if flags == branchFlag && count == 0 {
		c.problem("%s is a branch without elements", where)
		return nil
	}
	var prev []byte
	for i := range count {
		at := pageHeaderSize + i*elementSize
		e := buf[at : at+elementSize]
		var pos, ksize, vsize uint64
		if flags == branchFlag {
			pos, ksize = uint64(le.Uint32(e)), uint64(le.Uint32(e[4:]))
		} else {
			pos, ksize, vsize = uint64(le.Uint32(e[4:])), uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:]))
		}
		end := uint64(at) + pos + ksize + vsize
		if end > uint64(len(buf)) {
			c.problem("%s: element %d ends at byte %d, past the page's %d bytes", where, i, end, len(buf))
			return nil
		}
		key := buf[uint64(at)+pos : uint64(at)+pos+ksize]
		if prev != nil && bytes.Compare(prev, key) >= 0 || lo != nil && bytes.Compare(key, lo) < 0 || hi != nil && bytes.Compare(key, hi) >= 0 {
			c.problem("%s: key %d (%x) is out of order", where, i, trim(key))
			return nil
		}
		prev = key
		if flags == branchFlag {
			next := hi
			if i+1 < count {
				ne := buf[at+elementSize:]
				if p, k := uint64(le.Uint32(ne)), uint64(le.Uint32(ne[4:])); uint64(at+elementSize)+p+k <= uint64(len(buf)) {
					next = buf[uint64(at+elementSize)+p : uint64(at+elementSize)+p+k]
				}
			}
			if err := c.walkPage(le.Uint64(e[8:]), key, next, depth+1, where); err != nil {
				return err
			}
			continue
		}
		if le.Uint32(e)&bucketLeafFlag != 0 {
			value := buf[uint64(at)+pos+ksize : end]
			if err := c.walkBucket(value, key, where, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkBucket checks the nested bucket whose header (and inline page) is
// value.
func (c *fileCheck) walkBucket(value, name []byte, where string, depth int) error {
	if len(value) < bucketHeader {
		c.problem("%s: bucket %q has a %d-byte header, not %d", where, trim(name), len(value), bucketHeader)
		return nil
	}
	from := fmt.Sprintf("bucket %q in %s", trim(name), where)
	root := binary.NativeEndian.Uint64(value)
	if root != 0 {
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

// checkFreelist checks the freelist page: its header, and that the ids it
// lists fit in it and lie below the high-water mark.
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
	case id+overflow >= c.hwm:
		c.problem("freelist page %d runs past the high-water mark %d", id, c.hwm)
	case count > (overflow+1)*c.pageSize/8:
		c.problem("freelist page %d lists %d pages, more than fit in it", id, count)
	default:
		buf := make([]byte, (overflow+1)*c.pageSize)
		if _, err := c.f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read freelist page %d: %w", id, err)
		}
		ids := buf[pageHeaderSize:]
		for i := first; i < first+count && 8*(i+1) <= uint64(len(ids)); i++ {
			if p := le.Uint64(ids[8*i:]); p < 2 || p >= c.hwm {
				c.problem("freelist page %d lists page %d, outside pages 2 to %d", id, p, c.hwm-1)
				break
			}
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
