package kv

import (
	"fmt"
)

// txState is the part of a transaction that every backend shares: whether
// it may write, whether its function has returned, and its epoch.
type txState struct {
	writable bool
	done     bool
	// epoch is the committed epoch when the transaction began, plus one if
	// bumped; the backend publishes it at commit when bumped.
	epoch  uint64
	bumped bool
}

// Epoch implements Tx.
func (t *txState) Epoch() uint64 {
	t.checkRead()
	return t.epoch
}

// BumpEpoch implements Tx.
func (t *txState) BumpEpoch() error {
	if err := t.checkWrite(); err != nil {
		return fmt.Errorf("kv: bump epoch: %w", err)
	}
	t.epoch++
	t.bumped = true
	return nil
}

// checkWrite is the common guard of every write: the transaction must be
// open and writable.
func (t *txState) checkWrite() error {
	if t.done {
		return ErrTxClosed
	}
	if !t.writable {
		return ErrTxNotWritable
	}
	return nil
}

// checkRead panics on a read after the transaction ended (see Bucket).
func (t *txState) checkRead() {
	if t.done {
		panic(fmt.Errorf("kv: read through a transaction that has ended: %w", ErrTxClosed))
	}
}

// checkBucketName validates a name for CreateBucketIfNotExists.
func checkBucketName(name []byte) error {
	switch {
	case len(name) == 0:
		return fmt.Errorf("kv: create bucket: %w", ErrBucketNameRequired)
	case len(name) > MaxKeySize:
		return fmt.Errorf("kv: create bucket: name of %d bytes exceeds %d: %w", len(name), MaxKeySize, ErrKeyTooLarge)
	}
	return nil
}

// bucketState is what both backends keep per bucket per transaction, shared
// by every handle and cursor on that bucket in that transaction.
type bucketState struct {
	tx   *txState
	name string
	// ver counts the writes to the bucket in this transaction; a cursor whose
	// backend position was taken at another ver re-seeks by key.
	ver uint64
	// dirty: written in this transaction (including created in it).
	dirty bool
	// deleted: the bucket was deleted in this transaction after this handle
	// was obtained.
	deleted bool
}

// checkWrite is the guard of every write to the bucket.
func (s *bucketState) checkWrite(op string) error {
	err := s.tx.checkWrite()
	if err == nil && s.deleted {
		err = ErrBucketNotFound
	}
	if err != nil {
		return fmt.Errorf("kv: bucket %q: %s: %w", s.name, op, err)
	}
	return nil
}

// checkPut is the guard of Put.
func (s *bucketState) checkPut(key, value []byte) error {
	if err := s.checkWrite("put"); err != nil {
		return err
	}
	var err error
	switch {
	case len(key) == 0:
		err = ErrKeyRequired
	case len(key) > MaxKeySize:
		err = fmt.Errorf("key of %d bytes exceeds %d: %w", len(key), MaxKeySize, ErrKeyTooLarge)
	case len(value) > MaxValueSize:
		err = fmt.Errorf("value of %d bytes exceeds %d: %w", len(value), MaxValueSize, ErrValueTooLarge)
	}
	if err != nil {
		return fmt.Errorf("kv: bucket %q: put: %w", s.name, err)
	}
	return nil
}

// readable panics after the transaction ended and reports whether the bucket
// still exists (a deleted bucket reads as empty).
func (s *bucketState) readable() bool {
	s.tx.checkRead()
	return !s.deleted
}

// wrote records a write to the bucket.
func (s *bucketState) wrote() {
	s.ver++
	s.dirty = true
}

// rawCursor is a backend's own cursor, which the shared cursor drives.
// next and prev are called only while the raw cursor is on the shared
// cursor's key and the bucket is unchanged since it got there; prev receives
// that key.
type rawCursor interface {
	first() (k, v []byte)
	last() (k, v []byte)
	seek(key []byte) (k, v []byte)
	next() (k, v []byte)
	prev(from []byte) (k, v []byte)
}

// cursorMode is where a cursor is, in the terms of Cursor's documentation.
type cursorMode uint8

const (
	unpositioned cursorMode = iota // new, or the bucket was empty
	onKey                          // on pos (which may have been deleted since)
	pastEnd                        // the last Seek found no key
)

// cursor implements Cursor for both backends over a rawCursor, so that the
// semantics documented on Cursor are written once.
type cursor struct {
	raw rawCursor
	b   *bucketState
	del func(key []byte) error

	mode cursorMode
	pos  []byte
	// current: the last move returned pos and it was not deleted through
	// this cursor since.
	current bool
	// synced: raw is on pos, as of bucket version ver.
	synced bool
	ver    uint64
}

var _ Cursor = (*cursor)(nil)

func newCursor(raw rawCursor, b *bucketState, del func([]byte) error) *cursor {
	return &cursor{raw: raw, b: b, del: del}
}

// land records the result of a move that returns k (nil: nothing there).
func (c *cursor) land(k, v []byte, emptyMode cursorMode) ([]byte, []byte) {
	c.current = k != nil
	if k == nil {
		c.mode, c.pos, c.synced = emptyMode, nil, false
		return nil, nil
	}
	c.mode, c.pos, c.synced, c.ver = onKey, k, true, c.b.ver
	return k, v
}

// rest positions the cursor on k (or unpositioned when k is nil) after a move
// that found nothing, and returns nil.
func (c *cursor) rest(k []byte) ([]byte, []byte) {
	c.land(k, nil, unpositioned)
	c.current = false
	return nil, nil
}

func (c *cursor) inSync() bool { return c.synced && c.ver == c.b.ver }

// First implements Cursor.
func (c *cursor) First() ([]byte, []byte) {
	if !c.b.readable() {
		return c.land(nil, nil, unpositioned)
	}
	k, v := c.raw.first()
	return c.land(k, v, unpositioned)
}

// Last implements Cursor.
func (c *cursor) Last() ([]byte, []byte) {
	if !c.b.readable() {
		return c.land(nil, nil, unpositioned)
	}
	k, v := c.raw.last()
	return c.land(k, v, unpositioned)
}

// Seek implements Cursor.
func (c *cursor) Seek(seek []byte) ([]byte, []byte) {
	if !c.b.readable() {
		return c.land(nil, nil, unpositioned)
	}
	k, v := c.raw.seek(seek)
	return c.land(k, v, pastEnd)
}

// Next implements Cursor.
func (c *cursor) Next() ([]byte, []byte) {
	if !c.b.readable() {
		return c.land(nil, nil, unpositioned)
	}
	if c.mode != onKey {
		c.current = false
		return nil, nil
	}
	var k, v []byte
	if c.inSync() {
		k, v = c.raw.next()
	} else if k, v = c.raw.seek(c.pos); k != nil && string(k) == string(c.pos) {
		k, v = c.raw.next()
	}
	if k == nil {
		last, _ := c.raw.last()
		return c.rest(last)
	}
	return c.land(k, v, unpositioned)
}

// Prev implements Cursor.
func (c *cursor) Prev() ([]byte, []byte) {
	if !c.b.readable() {
		return c.land(nil, nil, unpositioned)
	}
	var k, v []byte
	switch {
	case c.mode == unpositioned:
		c.current = false
		return nil, nil
	case c.mode == pastEnd:
		k, v = c.raw.last()
		return c.land(k, v, unpositioned)
	case c.inSync():
		k, v = c.raw.prev(c.pos)
	default:
		if k, _ = c.raw.seek(c.pos); k == nil {
			k, v = c.raw.last() // every key is before pos
		} else {
			k, v = c.raw.prev(c.pos)
		}
	}
	if k == nil {
		first, _ := c.raw.first()
		return c.rest(first)
	}
	return c.land(k, v, unpositioned)
}

// Delete implements Cursor.
func (c *cursor) Delete() error {
	if err := c.b.checkWrite("cursor delete"); err != nil {
		return err
	}
	if !c.current {
		return fmt.Errorf("kv: bucket %q: cursor delete: %w", c.b.name, ErrNoCursorKey)
	}
	if err := c.del(c.pos); err != nil {
		return err
	}
	c.current = false
	return nil
}
