package kv

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// backupChunk is how many keys the memory backend's Backup writes per bbolt
// transaction (bbolt advises against very large transactions).
const backupChunk = 50_000

// Backup implements DB: the committed snapshot, taken in O(1), is written
// into a temporary bbolt file, which is then copied to w and removed.
func (d *memDB) Backup(w io.Writer) (n int64, err error) {
	if err := d.closedErr("backup"); err != nil {
		return 0, err
	}
	st := d.state.Load()
	n, err = backupFile(w, func(db *bolt.DB) error {
		for _, name := range slices.Sorted(maps.Keys(st.buckets)) {
			mb := st.buckets[name]
			it := mb.snap.Iter()
			more := it.First()
			next := func() ([]byte, []byte, error) {
				if !more {
					return nil, nil, nil
				}
				k, v := it.Item().k, it.Item().v
				more = it.Next()
				return k, v, nil
			}
			if err := writeBucket(db, []byte(name), mb.seq, next); err != nil {
				return fmt.Errorf("bucket %q: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("kv: backup memory store: %w", err)
	}
	return n, nil
}

// backupFile builds a bbolt file in os.TempDir() with fill, copies it to w
// and removes it; it returns the number of bytes written to w.
func backupFile(w io.Writer, fill func(*bolt.DB) error) (n int64, err error) {
	f, err := os.CreateTemp("", "kv-backup-*.db")
	if err != nil {
		return 0, err
	}
	path := f.Name()
	defer func() { err = errors.Join(err, removeTemp(path)) }()
	if err := f.Close(); err != nil {
		return 0, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", path, cerr))
		}
	}()
	if err := fill(db); err != nil {
		return 0, err
	}
	err = db.View(func(tx *bolt.Tx) error {
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// writeBucket copies one bucket into db, backupChunk keys per transaction,
// packing pages full since the keys arrive in order; next returns them,
// then nil.
func writeBucket(db *bolt.DB, name []byte, seq uint64, next func() (k, v []byte, err error)) error {
	k, v, err := next()
	for first := true; err == nil && (first || k != nil); first = false {
		err = db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			b.FillPercent = 1
			if err := b.SetSequence(seq); err != nil {
				return err
			}
			for i := 0; k != nil && i < backupChunk; i++ {
				if err := b.Put(k, v); err != nil {
					return err
				}
				if k, v, err = next(); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return err
}

// removeTemp removes the backup's temporary file.
func removeTemp(path string) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
