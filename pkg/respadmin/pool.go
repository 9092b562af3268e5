package respadmin

import (
	"context"
	"fmt"
	"sync"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// maxReplyBytes bounds the replies of one request's commands.
const maxReplyBytes = 64 << 20

// pool keeps idle connections to the target for reuse. A connection that
// failed (and so was closed by pkg/resp) is never returned to it.
type pool struct {
	opts   resp.DialOptions
	mu     sync.Mutex
	idle   []*resp.Conn
	max    int
	closed bool
}

func newPool(opts resp.DialOptions, max int) *pool {
	return &pool{opts: opts, max: max}
}

// get returns an idle connection or dials a new one.
func (p *pool) get(ctx context.Context) (*resp.Conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("the gateway is closing")
	}
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	return p.dial(ctx)
}

// dial opens a connection that is not pooled.
func (p *pool) dial(ctx context.Context) (*resp.Conn, error) {
	c, err := resp.Dial(ctx, p.opts)
	if err != nil {
		return nil, fmt.Errorf("connect to the target: %w", err)
	}
	return c, nil
}

// put returns c to the pool, or closes it when it failed, the pool is
// full or closed.
func (p *pool) put(c *resp.Conn) {
	if c.Closed() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= p.max {
		c.Close()
		return
	}
	p.idle = append(p.idle, c)
}

// close closes the idle connections; later gets fail.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range p.idle {
		c.Close()
	}
	p.idle = nil
}

// run sends cmds as one pipeline on a pooled connection and returns their
// replies (server errors are replies: check them).
func (p *pool) run(ctx context.Context, cmds ...[]string) ([]resp.Value, error) {
	c, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	defer p.put(c)
	wire := make([][][]byte, len(cmds))
	for i, cmd := range cmds {
		wire[i] = make([][]byte, len(cmd))
		for j, a := range cmd {
			wire[i][j] = []byte(a)
		}
	}
	res, err := c.Pipeline(ctx, wire, resp.PipelineOptions{MaxReplyBytes: maxReplyBytes})
	if err != nil {
		return nil, fmt.Errorf("%s on the target: %w", cmds[0][0], err)
	}
	return res.Replies, nil
}

// one runs one command and returns its reply; a server error reply is
// returned as a target_error.
func (p *pool) one(ctx context.Context, cmd ...string) (resp.Value, error) {
	vs, err := p.run(ctx, cmd)
	if err != nil {
		return resp.Value{}, err
	}
	if vs[0].IsError() {
		return resp.Value{}, targetError(cmd[0], vs[0])
	}
	return vs[0], nil
}
