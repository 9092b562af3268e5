package kv

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/pgtest"
)

// TestCopy: Copy moves every bucket with its keys and sequence, across
// several of its transactions, from memory to a bbolt file, to
// PostgreSQL and back to memory, and
// refuses a destination holding one of the buckets.
func TestCopy(t *testing.T) {
	src := OpenMemory()
	defer src.Close()
	const keys = 2*copyChunk + 17
	err := src.Update(func(tx Tx) error {
		big, err := tx.CreateBucketIfNotExists([]byte("big"))
		if err != nil {
			return err
		}
		for i := range keys {
			if err := big.Put(binary.BigEndian.AppendUint32(nil, uint32(i)), []byte(strings.Repeat("v", i%50))); err != nil {
				return err
			}
		}
		for range 42 {
			if _, err := big.NextSequence(); err != nil {
				return err
			}
		}
		_, err = tx.CreateBucketIfNotExists([]byte("empty"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	file, err := Open(filepath.Join(t.TempDir(), "copy.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if n, err := Copy(file, src); err != nil || n != keys {
		t.Fatalf("copy: %d keys, %v", n, err)
	}
	pg, err := OpenPostgres(t.Context(), pgtest.Shared(t).StoreURL(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if n, err := Copy(pg, file); err != nil || n != keys {
		t.Fatalf("copy to PostgreSQL: %d keys, %v", n, err)
	}
	back := OpenMemory()
	defer back.Close()
	if _, err := Copy(back, pg); err != nil {
		t.Fatal(err)
	}
	for _, db := range []DB{file, pg, back} {
		if got, want := dumpAll(t, db), dumpAll(t, src); got != want {
			t.Fatalf("%s: the copy differs:\n%.300s\nwant\n%.300s", db.Path(), got, want)
		}
	}
	if _, err := Copy(back, src); err == nil || !strings.Contains(err.Error(), `already has bucket "big"`) {
		t.Fatalf("copy onto a store holding the buckets: %v", err)
	}
}

// dumpAll renders every bucket of db with its sequence and keys.
func dumpAll(t *testing.T, db DB) string {
	t.Helper()
	var out bytes.Buffer
	err := db.View(func(tx Tx) error {
		return tx.ForEachBucket(func(name []byte, b Bucket) error {
			out.WriteString(string(name) + " seq " + string(binary.AppendUvarint(nil, b.Sequence())) + "\n")
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				out.Write(k)
				out.WriteByte('=')
				out.Write(v)
				out.WriteByte('\n')
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}
