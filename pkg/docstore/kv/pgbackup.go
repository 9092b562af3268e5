package kv

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Backup implements DB: a View's snapshot, streamed bucket by bucket into a
// temporary bbolt file, which is then copied to w and removed.
func (d *pgDB) Backup(w io.Writer) (int64, error) {
	if err := d.closedErr("backup"); err != nil {
		return 0, err
	}
	var n int64
	err := d.View(func(tx Tx) error {
		t := tx.(*pgTx)
		var err error
		n, err = backupFile(w, func(db *bolt.DB) error {
			for _, name := range slices.Sorted(maps.Keys(t.base)) {
				if err := t.copyBucket(db, name); err != nil {
					return fmt.Errorf("bucket %q: %w", name, err)
				}
			}
			return nil
		})
		return err
	})
	if err != nil {
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrUnavailable) {
			return n, err
		}
		return n, fmt.Errorf("kv: backup %s: %w", d.path, err)
	}
	return n, nil
}

// copyBucket streams bucket name into db.
func (t *pgTx) copyBucket(db *bolt.DB, name string) error {
	info := t.base[name]
	rows, err := t.c.c.Query(bg, t.d.sql.scan, info.id)
	if err != nil {
		t.c.fail(err)
		return t.d.fail("backup", err)
	}
	defer rows.Close()
	next := func() ([]byte, []byte, error) {
		if !rows.Next() {
			return nil, nil, rows.Err()
		}
		var k, v []byte
		err := rows.Scan(&k, &v)
		return k, v, err
	}
	if err := writeBucket(db, []byte(name), info.seq, next); err != nil {
		t.c.fail(err)
		return t.d.fail("backup", err)
	}
	return nil
}

// Check implements DB: in a View, the tables answer with the columns the
// backend uses (the View's begin reads two of them), every key belongs to
// a bucket, and no bucket id is beyond the meta row's counter.
func (d *pgDB) Check() error {
	if err := d.closedErr("check"); err != nil {
		return err
	}
	var de DamageError
	err := d.View(func(tx Tx) error {
		t := tx.(*pgTx)
		ids := make([]int64, 0, len(t.base))
		for name, info := range t.base {
			ids = append(ids, info.id)
			if info.id > t.nextb {
				de.Problems = append(de.Problems, fmt.Sprintf("bucket %q has id %d, beyond the last allocated (%d)", name, info.id, t.nextb))
			}
		}
		var orphans int64
		err := t.c.c.QueryRow(bg, d.sql.orphans, ids).Scan(&orphans)
		if err != nil {
			t.c.fail(err)
			return d.fail("check", err)
		}
		if orphans > 0 {
			de.Problems = append(de.Problems, fmt.Sprintf("%d keys belong to no bucket", orphans))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(de.Problems) > maxProblems {
		de.More = len(de.Problems) - maxProblems
		de.Problems = de.Problems[:maxProblems]
	}
	if len(de.Problems) > 0 {
		de.Path = d.path
		return fmt.Errorf("kv: check: %w", &de)
	}
	return nil
}
