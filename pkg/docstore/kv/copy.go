package kv

import (
	"bytes"
	"fmt"
)

// copyChunk is how many keys Copy writes per transaction of dst.
const copyChunk = 10_000

// Copy copies every bucket of src, as of one snapshot of it, with its
// keys and its sequence, into dst, which must hold none of those buckets
// (Copy fails before writing anything when one exists). It writes in
// transactions of copyChunk keys, so that a large store does not make
// one huge transaction: if it fails midway, dst holds part of the copy.
// It returns the number of keys copied. This is how a store moves from
// one backend to another (a bbolt file to PostgreSQL) with its derived
// structures as they are, where a dump and load would rebuild them.
func Copy(dst, src DB) (int64, error) {
	var n int64
	err := ViewOnce(src, func(stx Tx) error {
		var names [][]byte
		err := stx.ForEachBucket(func(name []byte, _ Bucket) error {
			names = append(names, bytes.Clone(name))
			return nil
		})
		if err != nil {
			return err
		}
		if err := dst.View(func(dtx Tx) error {
			for _, name := range names {
				if dtx.Bucket(name) != nil {
					return fmt.Errorf("kv: copy: the destination already has bucket %q", name)
				}
			}
			return nil
		}); err != nil {
			return err
		}
		for _, name := range names {
			copied, err := copyBucket(dst, name, stx.Bucket(name))
			n += copied
			if err != nil {
				return fmt.Errorf("kv: copy bucket %q: %w", name, err)
			}
		}
		return nil
	})
	return n, err
}

// copyBucket copies b into the new bucket name of dst, copyChunk keys per
// transaction, the sequence with the first.
func copyBucket(dst DB, name []byte, b Bucket) (int64, error) {
	var n int64
	c := b.Cursor()
	k, v := c.First()
	first := true
	for first || k != nil {
		err := dst.Update(func(tx Tx) error {
			db, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			if first {
				for db.Sequence() < b.Sequence() {
					if _, err := db.NextSequence(); err != nil {
						return err
					}
				}
			}
			for i := 0; k != nil && i < copyChunk; i++ {
				if err := db.Put(k, v); err != nil {
					return err
				}
				n++
				k, v = c.Next()
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		first = false
	}
	return n, nil
}
