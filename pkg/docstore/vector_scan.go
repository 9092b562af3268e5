package docstore

import (
	"encoding/binary"
	"math"
	"runtime"
	"unsafe"
)

// littleEndian is whether this machine stores a float32 as the blocks
// do, so that a block's bytes can be read in place.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// floats returns b's little-endian float32s: a view of b when the machine
// is little-endian and b 4-byte aligned (blocks are padded to 4 bytes, so
// both backends give aligned values), a copy otherwise. The view is valid
// as long as b is (until its transaction ends).
func floats(b []byte) []float32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// dotGo returns the dot product of a and b (len(b) ≥ len(a)), with four
// accumulators.
func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// sqL2Go returns the squared Euclidean distance between a and b (len(b)
// ≥ len(a)).
func sqL2Go(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		d0, d1, d2, d3 := a[i]-b[i], a[i+1]-b[i+1], a[i+2]-b[i+2], a[i+3]-b[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return s0 + s1 + s2 + s3
}

// vectorScore turns a distance of metric (distanceOf) into a search score,
// larger is better: the cosine similarity, the dot product, or the
// negated Euclidean distance.
func vectorScore(metric string, d float32) float64 {
	switch metric {
	case MetricDot:
		return -float64(d)
	case MetricL2:
		return -math.Sqrt(float64(d))
	}
	return 1 - float64(d)
}

// topK keeps the k candidates of smallest distance.
type topK struct {
	k int
	h candHeap // farthest first
}

func (t *topK) offer(slot uint32, d float32) {
	if len(t.h.c) < t.k {
		t.h.push(cand{slot, d})
	} else if d < t.h.c[0].d {
		t.h.c[0] = cand{slot, d}
		t.h.push(t.h.pop()) // sift: pop the replaced root's place, push it back
	}
}

// sorted returns the candidates, closest first.
func (t *topK) sorted() []cand {
	out := t.h.c
	sortCands(out)
	return out
}

// scanBlock is a block for the exact scan: its number and contents.
type scanBlock struct {
	n uint32
	b block
}

// exact returns the k live slots closest to q among those whose doc key
// allowed accepts (nil: all), scanning every block: the blocks are read
// on this goroutine (a transaction is not shared), then their components
// are scored by GOMAXPROCS goroutines, each over a contiguous run of
// blocks with its own top k, joined before exact returns.
func (v *vectors) exact(q []float32, k int, allowed func(idKey []byte) bool) []cand {
	var blocks []scanBlock
	c := v.blocks.Cursor()
	for key, raw := c.First(); key != nil; key, raw = c.Next() {
		blocks = append(blocks, scanBlock{binary.BigEndian.Uint32(key), block{vecs: floats(raw[:v.blockLen()]), raw: raw, per: v.per}})
	}
	if len(blocks) == 0 || k <= 0 {
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), len(blocks))
	tops := make([]topK, workers)
	dist := distanceOf(v.def.Metric)
	dim := v.def.Dimension
	for w := range workers {
		tops[w] = topK{k: k, h: candHeap{far: true}}
	}
	goReading(workers, func(w int) {
		part := blocks[w*len(blocks)/workers : (w+1)*len(blocks)/workers]
		t := &tops[w]
		for _, sb := range part {
			offs := sb.b.raw[len(sb.b.vecs)*4:]
			for i := range v.per {
				if binary.LittleEndian.Uint32(offs[4*i:]) == binary.LittleEndian.Uint32(offs[4*i+4:]) {
					continue // a free slot
				}
				if allowed != nil && !allowed(sb.b.key(i)) {
					continue
				}
				t.offer(sb.n*uint32(v.per)+uint32(i), dist(q, sb.b.vecs[i*dim:(i+1)*dim]))
			}
		}
	})
	all := topK{k: k, h: candHeap{far: true}}
	for _, t := range tops {
		for _, c := range t.h.c {
			all.offer(c.slot, c.d)
		}
	}
	return all.sorted()
}

// exactAmong returns the k slots closest to q among the documents keys,
// reading each one's vector: for a filter that leaves few documents.
func (v *vectors) exactAmong(q []float32, k int, keys []string) []cand {
	g := v.graph()
	t := topK{k: k, h: candHeap{far: true}}
	for _, key := range keys {
		if slot, ok := v.slotOf([]byte(key)); ok {
			t.offer(slot, g.dist(q, g.vec(slot)))
		}
	}
	return t.sorted()
}
