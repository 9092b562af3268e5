// Package kv is the document store's storage layer: named top-level buckets
// of ordered key-value pairs, with one small API over two backends that behave
// identically, a bbolt file (Open) and memory (OpenMemory).
//
// The API is modelled on go.etcd.io/bbolt's: View for consistent read-only
// snapshots, Update for one serialized, durable writer, Batch to coalesce
// concurrent writers, cursors ordered by bytes.Compare. Where bbolt leaves a
// behaviour undefined or inconsistent (mutating a bucket while a cursor walks
// it, Put of a nil value, Cursor.Delete then Next, Prev across a leaf emptied
// earlier in the same transaction, key counts inside a write transaction), kv
// defines it, and both backends implement the definition; a fuzz test checks
// that they agree operation by operation.
//
// kv knows nothing of documents or of package docstore, and starts no
// goroutine of its own.
package kv

import (
	"errors"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Limits on what a bucket holds; both backends enforce bbolt's.
const (
	// MaxKeySize is the largest key and the largest bucket name, in bytes.
	MaxKeySize = bolt.MaxKeySize
	// MaxValueSize is the largest value, in bytes.
	MaxValueSize = bolt.MaxValueSize
)

// Errors that callers branch on. Every error kv returns that has one of these
// causes wraps it, with context, so test with errors.Is.
var (
	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("store closed")
	// ErrReadOnly: Update or Batch on a DB opened with Options.ReadOnly.
	ErrReadOnly = errors.New("store opened read-only")
	// ErrLocked: Open could not lock the file within Options.Timeout because
	// another DB holds it (in this process or another).
	ErrLocked = errors.New("store file locked by another user")
	// ErrInvalidFile: the file is not a store: not a bbolt file, or (opened
	// read-only) empty. A damaged store file fails with ErrDamaged.
	ErrInvalidFile = errors.New("not a valid store file")
	// ErrTxNotWritable: a write in a View transaction.
	ErrTxNotWritable = errors.New("transaction not writable")
	// ErrTxClosed: a write through a Tx, Bucket or Cursor after its
	// transaction's function returned.
	ErrTxClosed = errors.New("transaction ended")
	// ErrBucketNotFound: DeleteBucket of an absent bucket, or a write through
	// a Bucket deleted earlier in the same transaction.
	ErrBucketNotFound = errors.New("bucket not found")
	// ErrBucketNameRequired: an empty bucket name.
	ErrBucketNameRequired = errors.New("bucket name required")
	// ErrKeyRequired: an empty key.
	ErrKeyRequired = errors.New("key required")
	// ErrKeyTooLarge: a key or bucket name longer than MaxKeySize.
	ErrKeyTooLarge = errors.New("key too large")
	// ErrValueTooLarge: a value longer than MaxValueSize.
	ErrValueTooLarge = errors.New("value too large")
	// ErrNoCursorKey: Cursor.Delete when the cursor's last move returned no
	// key, or the key it returned was already deleted through the cursor.
	ErrNoCursorKey = errors.New("cursor is not on a key")
)

// DB is a store of named buckets. Its methods are safe for concurrent use.
//
// Transactions are functions: fn receives a Tx that, with every Bucket and
// Cursor obtained from it, is valid only until fn returns and only on fn's
// goroutine. Do not start a transaction inside another on the same DB: an
// Update inside an Update deadlocks, and on a bbolt file an Update inside a
// View can deadlock when the commit must grow the file.
type DB interface {
	// View runs fn in a read-only transaction on a consistent snapshot: the
	// state after the last commit when View began, unchanged by commits while
	// fn runs. Any number of Views run at once, and a View never blocks a
	// writer, except on a bbolt file above its 1 GiB initial map, where a
	// commit that grows the file waits for the Views open at that moment.
	// View returns fn's error unchanged.
	View(fn func(Tx) error) error

	// Update runs fn in the one read-write transaction; concurrent Updates
	// wait their turn. If fn returns nil, the transaction commits and, unless
	// Options.NoSync, is durable (fsynced) when Update returns nil. If fn
	// returns an error or panics, everything fn did is rolled back, leaving
	// no trace, and Update returns fn's error unchanged (or re-panics).
	Update(fn func(Tx) error) error

	// Batch is Update for many concurrent callers: calls arriving within a
	// few milliseconds (up to 1,000) share one transaction and one commit. A
	// call returns when the shared transaction has committed. If one call's
	// fn fails or panics, the shared transaction is rolled back, that call is
	// re-run alone (returning its error or re-panicking on its own goroutine)
	// and the others are re-run together, so fn may run more than once and
	// must be idempotent, with no effect outside the transaction. A lone
	// caller waits up to 10 ms for company; use Update when latency matters.
	Batch(fn func(Tx) error) error

	// Backup writes a consistent copy of the store, as of the last commit, to
	// w in bbolt file format, whichever the backend, so that the bytes written
	// open with Open. It returns the number of bytes written. Writers are not
	// blocked while it runs. The memory backend builds the file in
	// os.TempDir() and removes it before returning.
	Backup(w io.Writer) (int64, error)

	// Close releases the store. On a bbolt file it waits for running
	// transactions to end. Afterwards View, Update, Batch and Backup return
	// ErrClosed; a second Close returns nil.
	Close() error

	// Path is the file's path, or "" for memory.
	Path() string

	// Check looks for damage in everything committed: on a bbolt file,
	// its structure as Open checks it, then bbolt's own consistency check
	// (key order, free pages, pages neither reachable nor free). It
	// returns nil, a *DamageError listing what is damaged, or the error
	// that stopped it. Memory holds nothing to damage.
	Check() error
}

// Tx is a transaction: a set of top-level buckets, read-only or read-write.
// A Tx is not safe for concurrent use. After its function returns, its
// writes fail with ErrTxClosed and its reads panic (see Bucket).
type Tx interface {
	// Bucket returns the bucket named name, or nil when there is none.
	Bucket(name []byte) Bucket

	// CreateBucketIfNotExists returns the bucket named name, creating it
	// empty (sequence 0) when absent. It fails with ErrTxNotWritable in a
	// read-only transaction, ErrBucketNameRequired for an empty name and
	// ErrKeyTooLarge for a name longer than MaxKeySize.
	CreateBucketIfNotExists(name []byte) (Bucket, error)

	// DeleteBucket deletes the bucket named name with all its keys and its
	// sequence, or fails with ErrBucketNotFound. A Bucket obtained earlier
	// for it reads as empty and its writes fail with ErrBucketNotFound.
	DeleteBucket(name []byte) error

	// ForEachBucket calls fn for every bucket in name order (bytes.Compare),
	// stopping at and returning fn's first error. fn must not create or
	// delete buckets; name is valid only during the transaction.
	ForEachBucket(fn func(name []byte, b Bucket) error) error

	// Writable reports whether this is an Update or Batch transaction.
	Writable() bool

	// Epoch returns a store-wide counter as of the transaction's start (a
	// View sees the value committed when it began; an Update sees its own
	// BumpEpoch). Only BumpEpoch changes it. It is for caches kept outside
	// the store by the processes that share it: docstore keeps its catalog
	// in memory and reloads it when the epoch moved. On a bbolt file or in
	// memory, which one process owns, it lives in memory and starts at 0 at
	// every open.
	Epoch() uint64

	// BumpEpoch increments the epoch; it commits and rolls back with the
	// transaction (a Batch call re-run after a rollback bumps once). It fails
	// with ErrTxNotWritable in a View.
	BumpEpoch() error
}

// Bucket is an ordered set of key-value pairs inside one transaction.
//
// Keys and values returned by a Bucket or its Cursors are valid only until
// the transaction ends and must never be modified: they may be the store's
// own memory (bbolt: the memory-mapped file).
//
// After the transaction ends, writes fail with ErrTxClosed and reads panic,
// as reading a bbolt file's memory after its transaction would be unsafe.
type Bucket interface {
	// Get returns the value of key, or nil when key is absent. A value put
	// empty (nil or zero-length) reads back as a non-nil empty slice.
	Get(key []byte) []byte

	// Put sets key to value, replacing any value. The key and value must not
	// be modified until the transaction ends (the bbolt backend keeps them
	// until the commit; the memory backend copies them). It fails with
	// ErrTxNotWritable, ErrKeyRequired, ErrKeyTooLarge or ErrValueTooLarge.
	// On a bbolt file, when every write of a transaction to a bucket puts a
	// key after all the keys it holds (ids that only grow), the pages it
	// writes are filled, rather than split half full.
	Put(key, value []byte) error

	// Delete removes key; deleting an absent key is not an error.
	Delete(key []byte) error

	// Cursor returns a new cursor over the bucket, not positioned on a key.
	Cursor() Cursor

	// NextSequence increments the bucket's sequence and returns the new
	// value (the first is 1). The sequence commits and rolls back with the
	// transaction and is kept by Backup.
	NextSequence() (uint64, error)

	// Sequence returns the bucket's sequence without changing it.
	Sequence() uint64

	// KeyN returns the number of keys. It costs a walk of the bucket's pages
	// on a bbolt file, and a walk of its keys once the bucket has been
	// written in the current transaction; it is O(1) in memory.
	KeyN() int
}

// Cursor walks a bucket in key order (bytes.Compare). Each move returns the
// key and value it lands on, or nil, nil when there is none; a cursor is
// valid only during its transaction and is not safe for concurrent use.
//
// A cursor is positioned by key, not by slot: writes to its bucket while it
// walks (Put, Delete, Cursor.Delete, through any handle) never make it skip
// or repeat a key; Next and Prev move to the nearest key after or before the
// one it is on, whether or not that key still exists. bbolt's own cursor
// does not guarantee this ("reposition your cursor after mutating data").
//
// The ends behave as bbolt's cursor does: when Next finds no later key it
// returns nil and stays on the last key, so Prev then returns the key before
// it; when Prev finds no earlier key it returns nil and moves to the first
// key, so Next then returns the second. After Seek returns nil (every key is
// before the sought one), Next returns nil and Prev returns the last key.
type Cursor interface {
	// First moves to the first key.
	First() (key, value []byte)
	// Last moves to the last key.
	Last() (key, value []byte)
	// Seek moves to the first key at or after seek.
	Seek(seek []byte) (key, value []byte)
	// Next moves to the next key.
	Next() (key, value []byte)
	// Prev moves to the previous key.
	Prev() (key, value []byte)
	// Delete removes the key the last move returned; Next and Prev then move
	// from where it was. It fails with ErrNoCursorKey when the last move
	// returned nil or the key was already deleted through this cursor.
	Delete() error
}

// Options configure Open.
type Options struct {
	// Timeout is how long Open waits for the file lock held by another DB
	// (another process, or another Open in this one) before failing with
	// ErrLocked. Zero tries once.
	Timeout time.Duration
	// NoSync skips fsync at commit: a crash can lose or corrupt committed
	// data. For tests only.
	NoSync bool
	// ReadOnly opens an existing file with a shared lock; Update and Batch
	// fail with ErrReadOnly.
	ReadOnly bool
}
