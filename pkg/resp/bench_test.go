package resp

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/jsonesc"
)

// BenchmarkPipeline pipelines batches of SET and GET through Conn and
// through go-redis on the same server; compare ns/op per batch size.
//
//	go test -run XXX -bench Pipeline -benchtime 2000x ./pkg/resp
func BenchmarkPipeline(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{})
	ctx := context.Background()
	c, err := Dial(ctx, DialOptions{Addr: srv.Addr})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 1})
	defer rc.Close()
	value := make([]byte, 64)
	for _, batch := range []int{1, 16, 128} {
		cmds := make([][][]byte, batch)
		for i := range cmds {
			if i%2 == 0 {
				cmds[i] = [][]byte{[]byte("SET"), fmt.Appendf(nil, "k%d", i), value}
			} else {
				cmds[i] = [][]byte{[]byte("GET"), fmt.Appendf(nil, "k%d", i-1)}
			}
		}
		b.Run(fmt.Sprintf("resp/batch=%d", batch), func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Pipeline(ctx, cmds, PipelineOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("goredis/batch=%d", batch), func(b *testing.B) {
			for b.Loop() {
				p := rc.Pipeline()
				for _, cmd := range cmds {
					a := make([]any, len(cmd))
					for i, x := range cmd {
						a[i] = x
					}
					p.Do(ctx, a...)
				}
				if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeAndJSON decodes 128 replies and renders them as JSON, the
// work per reply of a pipeline served over MCP: 64-byte bulk strings, and
// the +OK of a SET.
func BenchmarkDecodeAndJSON(b *testing.B) {
	for _, reply := range []struct {
		name  string
		value Value
	}{
		{"bulk-64", Value{Kind: KindBulkString, Str: bytes.Repeat([]byte("x"), 64)}},
		{"simple-OK", Value{Kind: KindSimpleString, Str: []byte("OK")}},
	} {
		var wire []byte
		for range 128 {
			wire = AppendValue(wire, reply.value)
		}
		b.Run(reply.name, func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			r := NewReader(&repeat{b: wire}, ReaderOptions{})
			var js []byte
			for b.Loop() {
				js = js[:0]
				for range 128 {
					v, _, err := r.ReadValue()
					if err != nil {
						b.Fatal(err)
					}
					if js, err = AppendJSON(js, &v); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		// The same with the text form written beside the JSON.
		b.Run(reply.name+"/pair", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			r := NewReader(&repeat{b: wire}, ReaderOptions{})
			var p jsonesc.Pair
			for b.Loop() {
				p.JSON, p.Text = p.JSON[:0], p.Text[:0]
				for range 128 {
					v, _, err := r.ReadValue()
					if err != nil {
						b.Fatal(err)
					}
					if err := AppendJSONPair(&p, &v); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// repeat reads b over and over.
type repeat struct {
	b   []byte
	off int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := copy(p, r.b[r.off:])
	r.off = (r.off + n) % len(r.b)
	return n, nil
}
