package docstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// A text index's bucket, t\x00<collection>\x00<index>, holds:
//
//	"s"                        the index's statistics: uvarint(documents
//	                           with at least one term), then per field
//	                           uvarint(total terms)
//	"p" term "\x00" firstKey   a frozen block of term's postings: the
//	                           postings of up to maxBlock documents, in
//	                           id-key order, from the document firstKey on
//	"q" term                   the term's tail: its last block, after the
//	                           frozen ones, where postings are appended
//	                           (every term with postings has one)
//
// A block is uvarint(count), uvarint(len(lastKey)), lastKey (the id key
// of its last posting, so that appending needs no decoding), then its
// postings; each posting is the document's id key, prefix-compressed
// against the previous one (uvarint(shared), uvarint(len(suffix)),
// suffix), then uvarint(len(payload)), payload. A payload holds what
// BM25 and phrases need of the term in that document: uvarint(terms in
// field f) for each field of the index, then, for each field where the
// term occurs, uvarint(field), uvarint(frequency), uvarint(len(positions)),
// positions (uvarint deltas, the first from 0).
//
// A term's blocks never overlap; blocks split in two when they outgrow
// maxBlock and are deleted when emptied (an emptied tail is replaced by
// the last frozen block); a full tail is frozen under its first key when
// a posting is appended after it. Appending (new documents, the common
// case) thus reads and writes the tail alone, by its known key, and the
// tails, which every batch of writes touches, lie together in the file,
// apart from the frozen blocks, which it seldom does: a commit rewrites
// few pages.

// maxBlock is the most postings one block holds.
const maxBlock = 128

const (
	textStatsKey = "s"
	frozenKind   = 'p'
	tailKind     = 'q'
)

// errCorruptText reports a text index that does not decode.
var errCorruptText = errors.New("corrupt text index")

func textBucket(coll, index string) []byte {
	return []byte("t\x00" + coll + "\x00" + index)
}

// termKeys are the keys of a term's blocks.
type termKeys struct {
	frozen []byte // the prefix of its frozen blocks' keys
	tail   []byte // its tail's key
}

func keysOf(term string) termKeys {
	b := make([]byte, 0, 2*len(term)+3)
	b = append(append(append(b, frozenKind), term...), 0)
	n := len(b)
	b = append(append(b, tailKind), term...)
	return termKeys{frozen: b[:n:n], tail: b[n:]}
}

// frozenKey returns the key of the frozen block starting at key.
func (tk termKeys) frozenKey(key []byte) []byte { return append(tk.frozen, key...) }

// posting is one document's posting of a term.
type posting struct{ key, payload []byte }

// blockHeader splits a block into its count, its last key and its
// postings.
func blockHeader(b []byte) (count int, last, body []byte, err error) {
	c, n := binary.Uvarint(b)
	if n <= 0 || c == 0 || c > maxBlock {
		return 0, nil, nil, errCorruptText
	}
	b = b[n:]
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return 0, nil, nil, errCorruptText
	}
	return int(c), b[n : n+int(l)], b[n+int(l):], nil
}

// nextPosting decodes the posting at the start of body, whose previous
// key is in key (reused), and returns the rest of body.
func nextPosting(body, key []byte) (newKey, payload, rest []byte, err error) {
	shared, n := binary.Uvarint(body)
	if n <= 0 || shared > uint64(len(key)) {
		return nil, nil, nil, errCorruptText
	}
	body = body[n:]
	sl, n := binary.Uvarint(body)
	if n <= 0 || sl > uint64(len(body)-n) {
		return nil, nil, nil, errCorruptText
	}
	key = append(key[:shared], body[n:n+int(sl)]...)
	body = body[n+int(sl):]
	pl, n := binary.Uvarint(body)
	if n <= 0 || pl > uint64(len(body)-n) {
		return nil, nil, nil, errCorruptText
	}
	return key, body[n : n+int(pl)], body[n+int(pl):], nil
}

// decodeBlock returns a block's postings, sharing nothing with b.
func decodeBlock(b []byte) ([]posting, error) {
	count, last, body, err := blockHeader(b)
	if err != nil {
		return nil, err
	}
	out := make([]posting, 0, count+1)
	var key, payload []byte
	for range count {
		if key, payload, body, err = nextPosting(body, key); err != nil {
			return nil, err
		}
		out = append(out, posting{key: bytes.Clone(key), payload: bytes.Clone(payload)})
	}
	if len(body) != 0 || !bytes.Equal(key, last) {
		return nil, errCorruptText
	}
	return out, nil
}

// appendPosting appends p to a block's postings, prefix-compressed
// against the previous key prev.
func appendPosting(dst, prev []byte, p posting) []byte {
	shared := 0
	for shared < len(prev) && shared < len(p.key) && prev[shared] == p.key[shared] {
		shared++
	}
	dst = binary.AppendUvarint(dst, uint64(shared))
	dst = binary.AppendUvarint(dst, uint64(len(p.key)-shared))
	dst = append(dst, p.key[shared:]...)
	dst = binary.AppendUvarint(dst, uint64(len(p.payload)))
	return append(dst, p.payload...)
}

func appendBlockHeader(dst []byte, count int, last []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(count))
	dst = binary.AppendUvarint(dst, uint64(len(last)))
	return append(dst, last...)
}

// encodeBlock encodes postings (1 to maxBlock, in key order) as a block.
func encodeBlock(ps []posting) []byte {
	size := 16
	for _, p := range ps {
		size += len(p.key) + len(p.payload) + 6
	}
	b := appendBlockHeader(make([]byte, 0, size+len(ps[len(ps)-1].key)), len(ps), ps[len(ps)-1].key)
	var prev []byte
	for _, p := range ps {
		b = appendPosting(b, prev, p)
		prev = p.key
	}
	return b
}

// blockFirst returns the id key of a block's first posting.
func blockFirst(b []byte) ([]byte, error) {
	_, _, body, err := blockHeader(b)
	if err != nil {
		return nil, err
	}
	key, _, _, err := nextPosting(body, nil)
	return key, err
}

// findBlock returns the key and value of the block of the term that
// holds key, or would: the last block starting at or before key, else
// the term's first block; nil when the term has no postings.
func findBlock(b kv.Bucket, tk termKeys, key []byte) (k, v []byte, err error) {
	tv := b.Get(tk.tail)
	if tv == nil {
		return nil, nil, nil
	}
	first, err := blockFirst(tv)
	if err != nil || bytes.Compare(key, first) >= 0 {
		return tk.tail, tv, err
	}
	c := b.Cursor()
	seek := tk.frozenKey(key)
	k, v = c.Seek(seek)
	if k != nil && bytes.Equal(k, seek) {
		return k, v, nil
	}
	if pk, pv := c.Prev(); pk != nil && bytes.HasPrefix(pk, tk.frozen) {
		return pk, pv, nil
	}
	if k != nil && bytes.HasPrefix(k, tk.frozen) {
		return k, v, nil
	}
	return tk.tail, tv, nil // before every posting, and no frozen block
}

// putPosting sets the posting of key in term's postings to payload.
// Appending after the term's last posting reads and writes its tail
// alone.
func putPosting(b kv.Bucket, term string, key, payload []byte) error {
	tk := keysOf(term)
	tv := b.Get(tk.tail)
	if tv == nil { // the term's first posting
		return b.Put(tk.tail, encodeBlock([]posting{{key, payload}}))
	}
	count, last, body, err := blockHeader(tv)
	if err != nil {
		return err
	}
	if bytes.Compare(key, last) > 0 {
		if count == maxBlock { // freeze the tail under its first key and start another
			first, err := blockFirst(tv)
			if err != nil {
				return err
			}
			if err := b.Put(tk.frozenKey(first), bytes.Clone(tv)); err != nil {
				return err
			}
			return b.Put(tk.tail, encodeBlock([]posting{{key, payload}}))
		}
		nb := appendBlockHeader(make([]byte, 0, len(tv)+len(key)*2+len(payload)+8), count+1, key)
		nb = appendPosting(append(nb, body...), last, posting{key, payload})
		return b.Put(tk.tail, nb)
	}
	bk, bv, err := findBlock(b, tk, key)
	if err != nil {
		return err
	}
	ps, err := decodeBlock(bv)
	if err != nil {
		return err
	}
	bk = bytes.Clone(bk)
	i, found := slices.BinarySearchFunc(ps, key, func(p posting, k []byte) int { return bytes.Compare(p.key, k) })
	if found {
		ps[i].payload = payload
	} else {
		ps = slices.Insert(ps, i, posting{key, payload})
	}
	return writeBlocks(b, tk, bk, ps)
}

// applyTermOps applies ops (one per document) to term's postings. When
// every op sets a posting after the term's last one, they are appended to
// its tail at once (the full blocks frozen as putPosting would); otherwise
// each op is applied alone.
func applyTermOps(b kv.Bucket, term string, ops []termOp) error {
	slices.SortFunc(ops, func(x, y termOp) int { return bytes.Compare(x.key, y.key) })
	tk := keysOf(term)
	tv := b.Get(tk.tail)
	appends := !slices.ContainsFunc(ops, func(op termOp) bool { return op.payload == nil })
	if appends && tv != nil {
		_, last, _, err := blockHeader(tv)
		if err != nil {
			return err
		}
		appends = bytes.Compare(ops[0].key, last) > 0
	}
	if !appends {
		for _, op := range ops {
			var err error
			if op.payload == nil {
				err = deletePosting(b, term, op.key)
			} else {
				err = putPosting(b, term, op.key, op.payload)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	// Append to the tail's encoding as it is, freezing it under its first
	// key whenever it is full.
	count, last, first, body := 0, []byte(nil), []byte(nil), []byte(nil)
	if tv != nil {
		var err error
		if count, last, body, err = blockHeader(tv); err != nil {
			return err
		}
		if first, err = blockFirst(tv); err != nil {
			return err
		}
	}
	buf := append(make([]byte, 0, len(body)+len(ops)*(len(ops[0].key)+len(ops[0].payload)+4)), body...)
	block := func() []byte {
		return append(appendBlockHeader(make([]byte, 0, len(buf)+len(last)+12), count, last), buf...)
	}
	for _, op := range ops {
		if count == maxBlock {
			if err := b.Put(tk.frozenKey(first), block()); err != nil {
				return err
			}
			count, last, buf = 0, nil, buf[:0]
		}
		if count == 0 {
			first = op.key
		}
		buf = appendPosting(buf, last, posting{op.key, op.payload})
		last = op.key
		count++
	}
	return b.Put(tk.tail, block())
}

// deletePosting removes key's posting from term's postings, which must
// hold it.
func deletePosting(b kv.Bucket, term string, key []byte) error {
	tk := keysOf(term)
	bk, bv, err := findBlock(b, tk, key)
	if err != nil {
		return err
	}
	if bk == nil {
		return fmt.Errorf("%w: term %q has no postings to remove a document from", errCorruptText, term)
	}
	ps, err := decodeBlock(bv)
	if err != nil {
		return err
	}
	bk = bytes.Clone(bk)
	i, found := slices.BinarySearchFunc(ps, key, func(p posting, k []byte) int { return bytes.Compare(p.key, k) })
	if !found {
		return fmt.Errorf("%w: term %q has no posting of the document to remove", errCorruptText, term)
	}
	return writeBlocks(b, tk, bk, slices.Delete(ps, i, i+1))
}

// writeBlocks replaces the block at key old with ps: none deletes it,
// more than maxBlock splits it in two. The tail stays the last block:
// when it is emptied, the last frozen block becomes the tail.
func writeBlocks(b kv.Bucket, tk termKeys, old []byte, ps []posting) error {
	tail := bytes.Equal(old, tk.tail)
	if len(ps) == 0 || (!tail && !bytes.Equal(old[len(tk.frozen):], ps[0].key)) {
		if err := b.Delete(old); err != nil {
			return err
		}
	}
	if len(ps) == 0 && tail {
		c := b.Cursor()
		c.Seek(prefixEnd(tk.frozen))
		if pk, pv := c.Prev(); pk != nil && bytes.HasPrefix(pk, tk.frozen) {
			pk, pv = bytes.Clone(pk), bytes.Clone(pv)
			if err := b.Delete(pk); err != nil {
				return err
			}
			return b.Put(tk.tail, pv)
		}
		return nil
	}
	for len(ps) > 0 {
		n := len(ps)
		if n > maxBlock {
			n = len(ps) / 2
		}
		k := tk.frozenKey(ps[0].key)
		if tail && n == len(ps) {
			k = tk.tail
		}
		if err := b.Put(k, encodeBlock(ps[:n])); err != nil {
			return err
		}
		ps = ps[n:]
	}
	return nil
}

// termIter walks a term's postings in id-key order: its frozen blocks,
// then its tail.
type termIter struct {
	b       kv.Bucket
	c       kv.Cursor
	keys    termKeys
	started bool
	inTail  bool // the current block is the tail
	done    bool
	left    int    // postings left in the current block
	body    []byte // their encoding
	key     []byte // the current posting's id key (reused)
	payload []byte // and its payload
	err     error
}

func newTermIter(b kv.Bucket, term string) *termIter {
	return &termIter{b: b, c: b.Cursor(), keys: keysOf(term)}
}

// block moves to the next block, false after the tail.
func (it *termIter) block() ([]byte, bool) {
	if !it.inTail {
		var k, v []byte
		if it.started {
			k, v = it.c.Next()
		} else {
			k, v = it.c.Seek(it.keys.frozen)
			it.started = true
		}
		if k != nil && bytes.HasPrefix(k, it.keys.frozen) {
			return v, true
		}
		it.inTail = true
		v = it.b.Get(it.keys.tail)
		return v, v != nil
	}
	return nil, false
}

// next moves to the next posting; false at the end or on an error (err).
func (it *termIter) next() bool {
	for it.left == 0 {
		if it.done {
			return false
		}
		v, ok := it.block()
		if !ok {
			it.done = true
			return false
		}
		var err error
		if it.left, _, it.body, err = blockHeader(v); err != nil {
			it.err, it.done = err, true
			return false
		}
		it.key = it.key[:0]
	}
	var err error
	if it.key, it.payload, it.body, err = nextPosting(it.body, it.key); err != nil {
		it.err, it.done, it.left = err, true, 0
		return false
	}
	it.left--
	return true
}

// count returns how many postings the term has, from the blocks' headers.
func (it *termIter) count() (int, error) {
	n := 0
	for v, ok := it.block(); ok; v, ok = it.block() {
		c, _, _, err := blockHeader(v)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// payloadView reads a posting's payload for nf fields.
type payloadView struct {
	lens   []int // terms in each field
	groups []byte
}

func readPayload(p []byte, nf int, lens []int) (payloadView, error) {
	lens = lens[:0]
	for range nf {
		l, n := binary.Uvarint(p)
		if n <= 0 {
			return payloadView{}, errCorruptText
		}
		lens = append(lens, int(l))
		p = p[n:]
	}
	return payloadView{lens: lens, groups: p}, nil
}

// nextGroup returns the next field group of a payload: its field, its
// frequency, its encoded positions and the rest.
func nextGroup(g []byte) (field, tf int, positions, rest []byte, err error) {
	f, n := binary.Uvarint(g)
	if n <= 0 {
		return 0, 0, nil, nil, errCorruptText
	}
	g = g[n:]
	t, n := binary.Uvarint(g)
	if n <= 0 {
		return 0, 0, nil, nil, errCorruptText
	}
	g = g[n:]
	l, n := binary.Uvarint(g)
	if n <= 0 || l > uint64(len(g)-n) {
		return 0, 0, nil, nil, errCorruptText
	}
	return int(f), int(t), g[n : n+int(l)], g[n+int(l):], nil
}

// decodePositions appends the positions encoded in b to dst.
func decodePositions(dst []int, b []byte) ([]int, error) {
	p := 0
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errCorruptText
		}
		p += int(d)
		dst = append(dst, p)
		b = b[n:]
	}
	return dst, nil
}

// textStats are a text index's collection statistics.
type textStats struct {
	docs  uint64   // documents with at least one term
	total []uint64 // terms in each field, over all documents
}

func readTextStats(b kv.Bucket, nf int) (textStats, error) {
	st := textStats{total: make([]uint64, nf)}
	v := b.Get([]byte(textStatsKey))
	if v == nil {
		return st, nil
	}
	var n int
	if st.docs, n = binary.Uvarint(v); n <= 0 {
		return st, errCorruptText
	}
	v = v[n:]
	for i := range st.total {
		if st.total[i], n = binary.Uvarint(v); n <= 0 {
			return st, errCorruptText
		}
		v = v[n:]
	}
	if len(v) != 0 {
		return st, errCorruptText
	}
	return st, nil
}

func (st textStats) encode() []byte {
	b := binary.AppendUvarint(nil, st.docs)
	for _, t := range st.total {
		b = binary.AppendUvarint(b, t)
	}
	return b
}
