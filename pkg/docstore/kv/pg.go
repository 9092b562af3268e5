package kv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// The PostgreSQL backend (OpenPostgres) keeps a store in three tables of a
// database, named after the store (mcpkit_NAME_meta, _buckets, _kv), so
// that any number of processes share it with the semantics of a bbolt file:
//
//   - A write transaction (Update, Batch) runs READ COMMITTED and begins by
//     incrementing the store's revision in its one meta row: the row lock
//     serializes the writers of every process as bbolt's writer lock does,
//     and once it is held no other writer can commit, so the writer's reads
//     see a stable state. Its writes are kept in the transaction (an overlay
//     per bucket) and sent at commit, with COMMIT, in one round trip.
//   - A View is a REPEATABLE READ READ ONLY transaction: a snapshot.
//   - Reads fetch pages of keys and remember, for the rest of the
//     transaction, which key ranges they know completely, so a Get that
//     misses tells the transaction that nothing lies between the key and
//     the next one (ids that grow cost one query per transaction), and
//     cursors walk pages of growing size.
//
// The statements are listed in docs/postgres.md; they are those that
// CockroachDB and YugabyteDB accept too (no extension, no advisory lock, no
// LISTEN/NOTIFY).

// Errors of the PostgreSQL backend.
var (
	// ErrConflict: a transaction failed on a serialization failure or a
	// deadlock (SQLSTATE 40001, 40P01; CockroachDB raises them under its
	// SERIALIZABLE isolation) after its function ran; nothing of it was
	// committed. Update returns it (its function is never re-run
	// silently); Batch re-runs its functions instead, as they may be.
	ErrConflict = errors.New("transaction conflict: serialization failure, nothing committed")
	// ErrUnavailable: the database server could not be reached or the
	// connection was lost. The DB reconnects by itself at the next
	// transaction once the server is back.
	ErrUnavailable = errors.New("store server unavailable")
)

// Limits of the PostgreSQL backend, below bbolt's: a key (and a bucket
// name) is an entry of a btree index, which PostgreSQL limits to about a
// third of a page, and a bytea value to 1 GiB.
const (
	// PostgresMaxKeySize is the largest key and bucket name on PostgreSQL.
	PostgresMaxKeySize = 2600
	// PostgresMaxValueSize is the largest value on PostgreSQL.
	PostgresMaxValueSize = 1<<30 - 1
)

// KeyLimit returns the largest key and bucket name db takes: MaxKeySize,
// or PostgresMaxKeySize on PostgreSQL.
func KeyLimit(db DB) int {
	if _, ok := db.(*pgDB); ok {
		return PostgresMaxKeySize
	}
	return MaxKeySize
}

// storeParam is the URL query parameter that names the store; cacheParam
// the one that sets the budget of the read cache (see pgReadCache), in
// bytes.
const (
	storeParam = "mcpkit_store"
	cacheParam = "mcpkit_read_cache"
)

var storeNameRE = regexp.MustCompile(`^[a-z0-9_]{1,40}$`)

// IsURL reports whether s is a PostgreSQL URL (postgres:// or
// postgresql://), which OpenPostgres takes, rather than a file path.
func IsURL(s string) bool {
	l := strings.ToLower(s[:min(len(s), len("postgresql://"))])
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Redact returns path as messages may show it: a PostgreSQL URL without
// its password (with its store name), a file path as it is.
func Redact(path string) string {
	if !IsURL(path) {
		return path
	}
	p, err := parsePGURL(path)
	if err != nil {
		return "(a PostgreSQL URL that does not parse)"
	}
	return p.shown
}

// pgURL is a parsed store URL.
type pgURL struct {
	conn  string // for pgx: without mcpkit_store and pool_max_conns
	store string
	shown string // without the password
	conns int    // pool_max_conns, or 0
	cache int64  // mcpkit_read_cache: the read cache's budget in bytes
}

// parsePGURL parses a store URL. Its errors never quote the URL, which may
// hold a password.
func parsePGURL(raw string) (pgURL, error) {
	if !IsURL(raw) {
		return pgURL{}, errors.New("kv: not a PostgreSQL URL (postgres:// or postgresql://)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return pgURL{}, errors.New("kv: PostgreSQL URL does not parse (a password with reserved characters must be percent-encoded)")
	}
	q := u.Query()
	p := pgURL{store: "default"}
	if vs, ok := q[storeParam]; ok {
		if len(vs) != 1 || !storeNameRE.MatchString(vs[0]) {
			return pgURL{}, fmt.Errorf("kv: PostgreSQL URL: %s=%q: want one name of 1 to 40 characters among a-z, 0-9 and _", storeParam, strings.Join(vs, ","))
		}
		p.store = vs[0]
	}
	p.cache = defaultReadCache
	if vs, ok := q[cacheParam]; ok {
		n, err := strconv.ParseInt(strings.Join(vs, ","), 10, 64)
		if err != nil || n < 0 {
			return pgURL{}, fmt.Errorf("kv: PostgreSQL URL: %s=%q: want a number of bytes (0: no read cache)", cacheParam, strings.Join(vs, ","))
		}
		p.cache = n
	}
	if v := q.Get("pool_max_conns"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return pgURL{}, fmt.Errorf("kv: PostgreSQL URL: pool_max_conns=%q: want a positive number", v)
		}
		p.conns = n
	}
	q.Del(storeParam)
	q.Del(cacheParam)
	q.Del("pool_max_conns")
	u.RawQuery = q.Encode()
	p.conn = u.String()

	shown := *u
	if shown.User != nil {
		shown.User = url.User(shown.User.Username())
	}
	sq := maps.Clone(q)
	sq.Del("password")
	sq.Set(storeParam, p.store)
	shown.RawQuery = sq.Encode()
	p.shown = shown.String()
	return p, nil
}

// pgDB is the PostgreSQL backend.
type pgDB struct {
	pool     *pgPool
	tables   pgTables
	sql      pgStatements
	path     string // the URL without the password
	secrets  []string
	readOnly bool
	closed   atomic.Bool
	batch    batcher
	// rerunViews: Options.ViewsMayRerun; reruns counts the optimistic
	// Views that ran again.
	rerunViews bool
	reruns     atomic.Int64
	// trips counts the round trips to the server, for tests.
	trips atomic.Int64
	// buckets is the last state seen (the meta row's counters and the
	// bucket set): a transaction reads the set again only when its
	// generations moved, and an optimistic View starts from it.
	buckets atomic.Pointer[pgBucketSet]
	// rcache is the read cache of the latest revision a View read, of at
	// most cacheBudget bytes (mcpkit_read_cache; 0: none).
	rcache      atomic.Pointer[pgReadCache]
	cacheBudget int64
	// speculation scores whether an optimistic View lets the read cache
	// of the revision it assumes answer before it read the meta row (see
	// pgTx.confirm).
	speculation atomic.Int32
}

var _ DB = (*pgDB)(nil)

// pgTables are the quoted names of a store's tables.
type pgTables struct{ meta, buckets, kv string }

// OpenPostgres opens the store named by url's mcpkit_store parameter
// ("default" when absent) in the PostgreSQL database url names, creating
// its tables unless opts.ReadOnly (a missing store is then ErrInvalidFile).
// The password comes from the URL, PGPASSWORD or the password file
// (PGPASSFILE, ~/.pgpass), as libpq's; it never appears in Path or in an
// error. opts.Timeout bounds each connection attempt (default 10 s) and
// opts.NoSync sets synchronous_commit off. The URL's pool_max_conns caps
// the connections (default 16), and its mcpkit_read_cache the bytes of
// rows the Views of this DB keep for the next Views that read the same
// revision of the store (default 64 MiB, 0 for none). The server
// unreachable is ErrUnavailable.
func OpenPostgres(ctx context.Context, rawURL string, opts Options) (DB, error) {
	p, err := parsePGURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(p.conn)
	if err != nil {
		return nil, fmt.Errorf("kv: open %s: %s", p.shown, scrub(err.Error(), urlSecrets(rawURL)))
	}
	d := &pgDB{path: p.shown, readOnly: opts.ReadOnly, rerunViews: opts.ViewsMayRerun, cacheBudget: p.cache}
	d.secrets = append(urlSecrets(rawURL), cfg.Password)
	if opts.Timeout > 0 {
		cfg.ConnectTimeout = opts.Timeout
	} else if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if opts.NoSync {
		cfg.RuntimeParams["synchronous_commit"] = "off"
	}
	conns := p.conns
	if conns == 0 {
		conns = 16
	}
	d.pool = newPGPool(cfg, conns)
	name := "mcpkit_" + p.store
	d.tables = pgTables{
		meta:    pgx.Identifier{name + "_meta"}.Sanitize(),
		buckets: pgx.Identifier{name + "_buckets"}.Sanitize(),
		kv:      pgx.Identifier{name + "_kv"}.Sanitize(),
	}
	d.sql = newPGStatements(d.tables)
	d.buckets.Store(&pgBucketSet{rev: -1, gen: -1, sgen: -1})
	d.batch.update = d.batchUpdate
	if err := d.prepare(ctx); err != nil {
		d.pool.close()
		return nil, err
	}
	return d, nil
}

// urlSecrets are the forms a password may take in a URL.
func urlSecrets(raw string) []string {
	var out []string
	if u, err := url.Parse(raw); err == nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
		if pw := u.Query().Get("password"); pw != "" {
			out = append(out, pw, url.QueryEscape(pw))
		}
	}
	return out
}

// scrub replaces every secret in s.
func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "xxxxx")
		}
	}
	return s
}

// prepare creates the store's tables (or, read-only, checks that they
// exist), concurrent openers of the same store included.
func (d *pgDB) prepare(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		err := d.prepareOnce(ctx)
		var pgErr *pgconn.PgError
		// Two CREATE TABLE IF NOT EXISTS at once can both miss the table,
		// and one fails on the catalog (23505 on its unique index, 42710 or
		// 42P07: the type or table exists); the next attempt finds it.
		if err == nil || attempt == 5 || !errors.As(err, &pgErr) ||
			(pgErr.Code != "23505" && pgErr.Code != "42710" && pgErr.Code != "42P07" && !isConflict(pgErr)) {
			if err != nil {
				return d.fail("open", err)
			}
			return nil
		}
	}
}

func (d *pgDB) prepareOnce(ctx context.Context) error {
	c, err := d.pool.acquire(ctx)
	if err != nil {
		return err
	}
	defer func() { d.pool.release(c) }()
	if d.readOnly {
		var m pgMetaRow
		if err := m.scan(c.c.QueryRow(ctx, d.sql.meta)); err != nil {
			return err
		}
		if !m.found {
			return errNoMeta
		}
		return nil
	}
	// One simple-protocol query: a pipeline would prepare the INSERT
	// before its table exists.
	if _, err := c.c.Exec(ctx, strings.Join(d.sql.create, ";\n"), pgx.QueryExecModeSimpleProtocol); err != nil {
		c.fail(err)
		return err
	}
	return nil
}

// Path implements DB: the URL without its password.
func (d *pgDB) Path() string { return d.path }

// Close implements DB: it closes the idle connections, and the others as
// their transactions end.
func (d *pgDB) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	d.pool.close()
	return nil
}

func (d *pgDB) closedErr(op string) error {
	if d.closed.Load() {
		return fmt.Errorf("kv: %s %s: %w", op, d.path, ErrClosed)
	}
	return nil
}

// isConflict reports a serialization failure or a deadlock.
func isConflict(e *pgconn.PgError) bool { return e.Code == "40001" || e.Code == "40P01" }

// isUnavailable reports a server error that means the server is going away
// or refuses connections for now.
func isUnavailable(e *pgconn.PgError) bool {
	return strings.HasPrefix(e.Code, "08") || e.Code == "57P01" || e.Code == "57P02" || e.Code == "57P03" ||
		e.Code == "53300" // too many connections
}

// fail wraps an error met during op with the backend's typed causes, never
// quoting a password: a server error (*pgconn.PgError, the server's words)
// is wrapped, any other error is rewritten as text without secrets.
func (d *pgDB) fail(op string, err error) error {
	var pgErr *pgconn.PgError
	var ours pgOwnError
	switch {
	case errors.As(err, &ours):
		return fmt.Errorf("kv: %s %s: %w", op, d.path, ours.err)
	case errors.Is(err, errPoolClosed):
		return fmt.Errorf("kv: %s %s: %w", op, d.path, ErrClosed)
	case errors.As(err, &pgErr) && isConflict(pgErr):
		return fmt.Errorf("kv: %s %s: %w: %w", op, d.path, ErrConflict, pgErr)
	case errors.As(err, &pgErr) && isUnavailable(pgErr):
		return fmt.Errorf("kv: %s %s: %w: %w", op, d.path, ErrUnavailable, pgErr)
	case errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return fmt.Errorf("kv: %s %s: the store's tables are missing (%s): %w", op, d.path, pgErr.Message, ErrInvalidFile)
	case errors.As(err, &pgErr):
		return fmt.Errorf("kv: %s %s: %w", op, d.path, pgErr)
	}
	return fmt.Errorf("kv: %s %s: %w: %s", op, d.path, ErrUnavailable, scrub(err.Error(), d.secrets))
}

// pgOwnError carries an error of kv's own (a sentinel) through code that
// classifies server errors.
type pgOwnError struct{ err error }

func (e pgOwnError) Error() string { return e.err.Error() }

// pgFailure is the panic with which a read that cannot return an error
// (Get, cursor moves, KeyN) ends its transaction when the server fails;
// View, Update and Batch recover it and return err.
type pgFailure struct{ err error }

// pgPool is the connection pool: pgxpool's, but for one thing it cannot
// do: a View ends by sending COMMIT without waiting for the reply, which
// the connection's next user reads (already arrived, at no round trip),
// so that a View costs its reads plus one round trip, not two.
//
// The idle list is a stack: the connection used last, whose server process
// is the likeliest to be running, is used first (measured: a View on the
// connection idle longest, whose reply had more time to arrive, took
// longer, the other server process having to be woken).
type pgPool struct {
	cfg  *pgx.ConnConfig
	sem  chan struct{} // one token per connection in use (or being opened)
	mu   sync.Mutex
	idle []*pgConn
	done bool
}

var errPoolClosed = errors.New("kv: pool closed")

// pgConn is a connection of the pool.
type pgConn struct {
	c *pgx.Conn
	// pending: a COMMIT or ROLLBACK was sent and its reply not read yet.
	pending bool
	// reused: taken from the idle list (it may have died while idle).
	reused bool
	broken bool
}

func newPGPool(cfg *pgx.ConnConfig, conns int) *pgPool {
	return &pgPool{cfg: cfg, sem: make(chan struct{}, conns)}
}

// acquire returns a connection ready for a statement: an idle one whose
// pending reply it reads, or a new one.
func (p *pgPool) acquire(ctx context.Context) (*pgConn, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			<-p.sem
			return nil, errPoolClosed
		}
		var c *pgConn
		if n := len(p.idle); n > 0 {
			c, p.idle = p.idle[n-1], p.idle[:n-1]
		}
		p.mu.Unlock()
		if c == nil {
			break
		}
		if err := c.finish(ctx); err != nil {
			p.closeConn(c)
			continue
		}
		c.reused = true
		return c, nil
	}
	conn, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.sem
		return nil, err
	}
	return &pgConn{c: conn}, nil
}

// release returns c to the idle list, or closes it when broken, in a
// transaction it could not end, or the pool closed.
func (p *pgPool) release(c *pgConn) {
	defer func() { <-p.sem }()
	if c.broken || c.c.IsClosed() || (!c.pending && c.c.PgConn().TxStatus() != 'I') {
		p.closeConn(c)
		return
	}
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		p.closeConn(c)
		return
	}
	c.reused = false
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// close closes the idle connections; the busy ones close at release.
func (p *pgPool) close() {
	p.mu.Lock()
	p.done = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		p.closeConn(c)
	}
}

// closeConn closes c.
func (p *pgPool) closeConn(c *pgConn) { c.close() }

func (c *pgConn) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.c.Close(ctx)
}

// fail marks c broken when err is not a server's reply (the connection is
// then in an unknown state).
func (c *pgConn) fail(err error) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || c.c.IsClosed() {
		c.broken = true
	}
}

// sendEnd sends COMMIT (or ROLLBACK) without waiting for its reply, which
// finish reads at the connection's next use.
func (c *pgConn) sendEnd(sql string) {
	pc := c.c.PgConn()
	pc.Frontend().SendQuery(&pgproto3.Query{String: sql})
	if err := pc.Frontend().Flush(); err != nil {
		c.broken = true
		return
	}
	c.pending = true
}

// finish reads the reply of the COMMIT or ROLLBACK sendEnd sent.
func (c *pgConn) finish(ctx context.Context) error {
	if !c.pending {
		return nil
	}
	c.pending = false
	var first error
	for {
		msg, err := c.c.PgConn().ReceiveMessage(ctx)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			if first == nil {
				first = pgconn.ErrorResponseToPgError(m)
			}
		case *pgproto3.ReadyForQuery:
			if first == nil && m.TxStatus != 'I' {
				first = fmt.Errorf("kv: connection left in transaction state %q", m.TxStatus)
			}
			return first
		}
	}
}
