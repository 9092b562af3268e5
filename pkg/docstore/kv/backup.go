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
	f, err := os.CreateTemp("", "kv-backup-*.db")
	if err != nil {
		return 0, fmt.Errorf("kv: backup memory store: %w", err)
	}
	path := f.Name()
	defer func() { err = errors.Join(err, removeTemp(path)) }()
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("kv: backup memory store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return 0, fmt.Errorf("kv: backup memory store: %w", err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("kv: backup memory store: close %s: %w", path, cerr))
		}
	}()
	for _, name := range slices.Sorted(maps.Keys(st.buckets)) {
		if err := writeBucket(db, []byte(name), st.buckets[name]); err != nil {
			return 0, fmt.Errorf("kv: backup memory store: bucket %q: %w", name, err)
		}
	}
	err = db.View(func(tx *bolt.Tx) error {
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("kv: backup memory store: %w", err)
	}
	return n, nil
}

// writeBucket copies one bucket into db, backupChunk keys per transaction,
// packing pages full since the keys arrive in order.
func writeBucket(db *bolt.DB, name []byte, mb *memBucket) error {
	it := mb.snap.Iter()
	more := it.First()
	for first := true; first || more; first = false {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			b.FillPercent = 1
			if err := b.SetSequence(mb.seq); err != nil {
				return err
			}
			for i := 0; more && i < backupChunk; i++ {
				if err := b.Put(it.Item().k, it.Item().v); err != nil {
					return err
				}
				more = it.Next()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// removeTemp removes the backup's temporary file.
func removeTemp(path string) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("kv: backup memory store: remove %s: %w", path, err)
	}
	return nil
}
