package kv

import (
	"testing"
	"time"
)

// TestLoneBatchDoesNotWait: a Batch call with no company commits at once
// (bbolt's own Batch waits up to 10 ms for company, on every lone write).
func TestLoneBatchDoesNotWait(t *testing.T) {
	db := OpenMemory()
	defer db.Close()
	const n = 200
	start := time.Now()
	for range n {
		if err := db.Batch(func(tx Tx) error {
			_, err := tx.CreateBucketIfNotExists([]byte("b"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if per := time.Since(start) / n; per > 2*time.Millisecond {
		t.Fatalf("a lone Batch took %v", per)
	}
}
