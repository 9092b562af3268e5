package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// The fuzz input is a program: a sequence of transactions, each a kind byte,
// an operation count and the operations, each an opcode and its argument
// bytes. Running out of input reads zeros.
const (
	txView = iota
	txCommit
	txRollback // fn returns an error
	txPanic    // fn panics
	txKinds
)

const (
	opPut = iota
	opGet
	opDelete
	opCreate
	opDeleteBucket
	opNextSequence
	opSequence
	opKeyN
	opForEachBucket
	opNewCursor
	opFirst
	opLast
	opSeek
	opNext
	opPrev
	opCursorDelete
	opPutMany    // bucket, first key, count, value size: grows bbolt trees past one page
	opDeleteMany // bucket, first key, count: empties leaves within a transaction
	opScan       // whole bucket forward and backward with a new cursor
	opDeleteWalk // bucket, direction, steps: Cursor.Delete then Next or Prev
	opEpoch      // bump (odd) or not: Epoch after
	opCount
)

// program reads the fuzz input.
type program struct {
	data []byte
}

func (p *program) byte() byte {
	if len(p.data) == 0 {
		return 0
	}
	b := p.data[0]
	p.data = p.data[1:]
	return b
}

func (p *program) done() bool { return len(p.data) == 0 }

var bucketNames = [][]byte{[]byte("a"), []byte("b"), []byte("c"), nil}

func (p *program) bucket() int { return int(p.byte()) % len(bucketNames) }

// fuzzKey maps a byte onto keys that collide often, interleave ("00" sorts
// between "000" and "001"... before "000"), lie past every other key, or are
// empty (refused).
func fuzzKey(b byte) []byte {
	switch {
	case b < 200:
		return fmt.Appendf(nil, "%03d", b)
	case b < 250:
		return fmt.Appendf(nil, "%02d", b-200)
	case b < 255:
		return fmt.Appendf(nil, "~%d", b-250)
	}
	return nil
}

// fuzzValue maps a byte onto nil, empty, or up to 2 KiB.
func fuzzValue(b byte) []byte {
	switch b {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	return bytes.Repeat([]byte{b}, int(b)*8)
}

var sentinels = []error{
	kv.ErrClosed, kv.ErrReadOnly, kv.ErrTxNotWritable, kv.ErrTxClosed, kv.ErrBucketNotFound,
	kv.ErrBucketNameRequired, kv.ErrKeyRequired, kv.ErrKeyTooLarge, kv.ErrValueTooLarge, kv.ErrNoCursorKey,
}

// errKind names err by the sentinel it wraps.
func errKind(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "unexpected: " + err.Error()
}

func pair(k, v []byte) string {
	if k == nil && v != nil {
		return fmt.Sprintf("nil key with value %q", v)
	}
	return fmt.Sprintf("%q=%q(nil:%t)", k, v, v == nil)
}

// side is one backend's transaction and its cursors, one per bucket name.
type side struct {
	tx      kv.Tx
	cursors [4]kv.Cursor
}

// step runs one operation, with arguments args, on one side and describes
// what it saw.
func (s *side) step(op int, bi int, args []byte) string {
	name := bucketNames[bi]
	b := s.tx.Bucket(name)
	cursor := func() kv.Cursor {
		if s.cursors[bi] == nil && b != nil {
			s.cursors[bi] = b.Cursor()
		}
		return s.cursors[bi]
	}
	if b == nil {
		switch op {
		case opCreate, opDeleteBucket, opForEachBucket, opEpoch:
		default:
			if c := s.cursors[bi]; c == nil || op < opFirst || op > opCursorDelete {
				return "no bucket"
			}
		}
	}
	switch op {
	case opPut:
		return errKind(b.Put(fuzzKey(args[0]), fuzzValue(args[1])))
	case opGet:
		v := b.Get(fuzzKey(args[0]))
		return fmt.Sprintf("%q(nil:%t)", v, v == nil)
	case opDelete:
		return errKind(b.Delete(fuzzKey(args[0])))
	case opCreate:
		nb, err := s.tx.CreateBucketIfNotExists(name)
		if err != nil {
			return errKind(err)
		}
		return fmt.Sprintf("keys %d seq %d", nb.KeyN(), nb.Sequence())
	case opDeleteBucket:
		return errKind(s.tx.DeleteBucket(name))
	case opNextSequence:
		n, err := b.NextSequence()
		return fmt.Sprintf("%d %s", n, errKind(err))
	case opSequence:
		return fmt.Sprint(b.Sequence())
	case opKeyN:
		return fmt.Sprint(b.KeyN())
	case opForEachBucket:
		var out []string
		err := s.tx.ForEachBucket(func(name []byte, b kv.Bucket) error {
			out = append(out, fmt.Sprintf("%s:%d:%d", name, b.KeyN(), b.Sequence()))
			return nil
		})
		return fmt.Sprint(out, errKind(err))
	case opNewCursor:
		s.cursors[bi] = b.Cursor()
		return "cursor"
	case opFirst:
		return pair(cursor().First())
	case opLast:
		return pair(cursor().Last())
	case opSeek:
		return pair(cursor().Seek(fuzzKey(args[0])))
	case opNext:
		return pair(cursor().Next())
	case opPrev:
		return pair(cursor().Prev())
	case opCursorDelete:
		return errKind(cursor().Delete())
	case opPutMany:
		for i := range int(args[1]%100) + 1 {
			if err := b.Put(fuzzKey(byte((int(args[0])+i)%200)), fuzzValue(args[2])); err != nil {
				return errKind(err)
			}
		}
		return "ok"
	case opDeleteMany:
		for i := range int(args[1]%100) + 1 {
			if err := b.Delete(fuzzKey(byte((int(args[0]) + i) % 200))); err != nil {
				return errKind(err)
			}
		}
		return "ok"
	case opScan:
		var out bytes.Buffer
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			fmt.Fprintf(&out, "%s/%d ", k, len(v))
		}
		out.WriteString("| ")
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			fmt.Fprintf(&out, "%s ", k)
		}
		return out.String()
	case opEpoch:
		var err error
		if args[0]%2 == 1 {
			err = s.tx.BumpEpoch()
		}
		return fmt.Sprintf("%d %s", s.tx.Epoch(), errKind(err))
	case opDeleteWalk:
		c := cursor()
		var out bytes.Buffer
		for range int(args[1]%50) + 1 {
			out.WriteString(errKind(c.Delete()))
			if args[0]%2 == 0 {
				out.WriteString(pair(c.Next()))
			} else {
				out.WriteString(pair(c.Prev()))
			}
		}
		return out.String()
	}
	panic(fmt.Sprintf("opcode %d", op))
}

var errRollback = errors.New("fuzz: roll back")

// runTx runs one transaction of the program on both stores, nested so that
// each operation runs on both before the next, and fails t as soon as they
// disagree.
func runTx(t *testing.T, names [2]string, dbs [2]kv.DB, p *program, txNo int) {
	kind := int(p.byte()) % txKinds
	n := int(p.byte()) % 32
	type op struct {
		code, bucket int
		args         []byte
	}
	ops := make([]op, n)
	for i := range ops {
		ops[i] = op{code: int(p.byte()) % opCount, bucket: p.bucket(), args: []byte{p.byte(), p.byte(), p.byte()}}
	}
	body := func(txs [2]kv.Tx) error {
		sides := [2]*side{{tx: txs[0]}, {tx: txs[1]}}
		for i, o := range ops {
			got0, got1 := sides[0].step(o.code, o.bucket, o.args), sides[1].step(o.code, o.bucket, o.args)
			if got0 != got1 {
				t.Fatalf("tx %d (kind %d) op %d (code %d bucket %q args %v):\n%s: %s\n%s: %s",
					txNo, kind, i, o.code, bucketNames[o.bucket], o.args, names[0], got0, names[1], got1)
			}
		}
		switch kind {
		case txRollback:
			return errRollback
		case txPanic:
			panic(errRollback)
		}
		return nil
	}
	run := func(db kv.DB) func(func(kv.Tx) error) error {
		if kind == txView {
			return db.View
		}
		return db.Update
	}
	var errs [2]error
	func() {
		defer func() {
			if p := recover(); p != nil && p != errRollback {
				panic(p)
			}
		}()
		errs[0] = run(dbs[0])(func(tx0 kv.Tx) error {
			errs[1] = run(dbs[1])(func(tx1 kv.Tx) error { return body([2]kv.Tx{tx0, tx1}) })
			return errs[1]
		})
	}()
	if errKind(errs[0]) != errKind(errs[1]) {
		t.Fatalf("tx %d: %s returned %v, %s %v", txNo, names[0], errs[0], names[1], errs[1])
	}
}

// FuzzBackendsAgree runs the same program of transactions on a bbolt file and
// in memory: after every operation both give the same answer, and after every
// transaction both hold the same state.
func FuzzBackendsAgree(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, [2]string{"bolt", "memory"}, [2]kv.DB{openBolt(t), openMemory(t)}, data)
	})
}

// FuzzPostgresAgrees is FuzzBackendsAgree for PostgreSQL against memory (its
// seeds run with the tests; fuzzing it needs a PostgreSQL server and is
// slower, a few round trips per transaction).
func FuzzPostgresAgrees(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, [2]string{"postgres", "memory"}, [2]kv.DB{openPostgres(t), openMemory(t)}, data)
	})
}

// agree runs the program data on both stores.
func agree(t *testing.T, names [2]string, dbs [2]kv.DB, data []byte) {
	p := &program{data: data}
	for i := 0; !p.done() && i < 16; i++ {
		runTx(t, names, dbs, p, i)
		equalDumps(t, dumpDB(t, dbs[1]), dumpDB(t, dbs[0]))
		if e0, e1 := epochOf(t, dbs[0]), epochOf(t, dbs[1]); e0 != e1 {
			t.Fatalf("after tx %d: epoch %d on %s, %d on %s", i, e0, names[0], e1, names[1])
		}
	}
}

// addFuzzSeeds adds the programs that found bugs, or cover what random
// input rarely reaches.
func addFuzzSeeds(f *testing.F) {
	tx := func(kind byte, ops ...[]byte) []byte {
		out := []byte{kind, byte(len(ops))}
		for _, o := range ops {
			out = append(out, (append(o, 0, 0, 0, 0))[:5]...)
		}
		return out
	}
	o := func(b ...byte) []byte { return b }
	grow := tx(txCommit, o(opCreate, 0), o(opPutMany, 0, 0, 99, 40), o(opPutMany, 0, 100, 99, 30), o(opCreate, 1), o(opPut, 1, 5, 1))
	f.Add(grow)
	f.Add(concat(grow, tx(txCommit, o(opDeleteMany, 0, 0, 99), o(opLast, 0), o(opPrev, 0), o(opScan, 0), o(opFirst, 0), o(opDeleteWalk, 0, 0, 200))))
	f.Add(concat(grow, tx(txCommit, o(opDeleteMany, 0, 50, 99), o(opSeek, 0, 160), o(opPrev, 0), o(opPrev, 0), o(opScan, 0))))
	f.Add(concat(grow, tx(txCommit, o(opPutMany, 0, 10, 5, 200), o(opFirst, 0), o(opDeleteWalk, 0, 0, 49), o(opLast, 0), o(opDeleteWalk, 0, 1, 49), o(opScan, 0))))
	f.Add(concat(grow, tx(txRollback, o(opDeleteBucket, 0), o(opNextSequence, 1), o(opCreate, 2), o(opPut, 2, 1, 0)), tx(txPanic, o(opPutMany, 1, 0, 50, 9)), tx(txView, o(opForEachBucket), o(opPut, 0, 3, 3), o(opNextSequence, 0), o(opScan, 1))))
	f.Add(concat(tx(txCommit, o(opEpoch, 0, 1), o(opEpoch, 0, 1), o(opCreate, 0)), tx(txRollback, o(opEpoch, 0, 1), o(opEpoch, 0, 0)), tx(txPanic, o(opEpoch, 0, 1)), tx(txView, o(opEpoch, 0, 1), o(opEpoch, 0, 0)), tx(txCommit, o(opEpoch, 0, 0), o(opEpoch, 0, 1))))
	f.Add(tx(txCommit, o(opCreate, 3), o(opCreate, 0), o(opPut, 0, 255, 4), o(opPut, 0, 7, 0), o(opGet, 0, 7), o(opSeek, 0, 252), o(opNext, 0), o(opPrev, 0), o(opCursorDelete, 0), o(opCursorDelete, 0)))
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
