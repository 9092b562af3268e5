package test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// sqliteSide is SQLite holding BenchmarkStoreSQLite's documents as JSON text
// in a table (id INTEGER PRIMARY KEY, doc TEXT), with the docstore's two
// indexes as expression indexes on json_extract. Its connection is in WAL
// mode with synchronous=FULL, so that a commit is durable when it returns,
// as the docstore's is, and has a page cache (64 MiB) that holds every
// document.
type sqliteSide struct {
	path    string
	db      *sql.DB
	version string

	st sqliteStmts
}

// sqliteStmts are sqliteSide's prepared statements.
type sqliteStmts struct {
	upsert, get, eqPage, count, rangePage *sql.Stmt
}

// The statements of sqliteSide; the queries name json_extract exactly as
// the indexes do, which is what lets SQLite use them.
const (
	sqliteSchema = `CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS docs_group ON docs (json_extract(doc, '$.group'));
CREATE INDEX IF NOT EXISTS docs_name ON docs (json_extract(doc, '$.name'));`
	sqliteUpsert    = `INSERT INTO docs (id, doc) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`
	sqliteGet       = `SELECT doc FROM docs WHERE id = ?`
	sqliteEqPage    = `SELECT id, doc FROM docs WHERE json_extract(doc, '$.group') = ? ORDER BY id LIMIT ?`
	sqliteCount     = `SELECT count(*) FROM docs WHERE json_extract(doc, '$.group') = ?`
	sqliteRangePage = `SELECT id, doc FROM docs WHERE json_extract(doc, '$.group') BETWEEN ? AND ?
ORDER BY json_extract(doc, '$.group'), id LIMIT ?`
)

func openSQLiteSide(ctx context.Context, path string) (*sqliteSide, error) {
	s := &sqliteSide{path: path}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	if _, err := s.db.ExecContext(ctx, sqliteSchema); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("sqlite schema: %w", err)
	}
	if err := s.prepare(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// open opens the database with one connection and checks that the
// durability settings took.
func (s *sqliteSide) open(ctx context.Context) error {
	q := url.Values{"_pragma": {"journal_mode(WAL)", "synchronous(FULL)", "cache_size(-65536)"}}
	db, err := sql.Open("sqlite", "file:"+s.path+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("sqlite open: %w", err)
	}
	db.SetMaxOpenConns(1)
	var mode string
	var sync int
	err = db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode)
	if err == nil {
		err = db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync)
	}
	if err == nil {
		err = db.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&s.version)
	}
	if err == nil && (mode != "wal" || sync != 2) {
		err = fmt.Errorf("journal_mode %s, synchronous %d: want wal and 2 (FULL)", mode, sync)
	}
	if err != nil {
		db.Close()
		return fmt.Errorf("sqlite open: %w", err)
	}
	s.db = db
	return nil
}

func (s *sqliteSide) prepare(ctx context.Context) error {
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&s.st.upsert, sqliteUpsert}, {&s.st.get, sqliteGet}, {&s.st.eqPage, sqliteEqPage}, {&s.st.count, sqliteCount}, {&s.st.rangePage, sqliteRangePage}} {
		var err error
		if *p.stmt, err = s.db.PrepareContext(ctx, p.sql); err != nil {
			return fmt.Errorf("sqlite prepare %q: %w", p.sql, err)
		}
	}
	return nil
}

// checkPlans fails unless SQLite answers the queries from the group index,
// without sorting.
func (s *sqliteSide) checkPlans(ctx context.Context) error {
	for _, q := range []struct {
		sql  string
		args []any
	}{{sqliteEqPage, []any{1, 1}}, {sqliteCount, []any{1}}, {sqliteRangePage, []any{1, 2, 1}}} {
		rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q.sql, q.args...)
		if err != nil {
			return fmt.Errorf("sqlite explain: %w", err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				rows.Close()
				return err
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, "; ")
		if !strings.Contains(all, "INDEX docs_group") || strings.Contains(all, "TEMP B-TREE") {
			return fmt.Errorf("sqlite plans %q as %q: want the docs_group index and no sort", q.sql, all)
		}
	}
	return nil
}

func (s *sqliteSide) ingest(ctx context.Context, b *storeBatchDocs) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmt := tx.StmtContext(ctx, s.st.upsert)
	for i, d := range b.docs {
		id, _ := d.ID.Int()
		if _, err := stmt.ExecContext(ctx, id, b.json[i]); err != nil {
			return errors.Join(err, tx.Rollback())
		}
	}
	return tx.Commit()
}

func (s *sqliteSide) get(ctx context.Context, id int64, _ bool) (string, error) {
	var doc string
	err := s.st.get.QueryRowContext(ctx, id).Scan(&doc)
	return doc, err
}

// sqliteIDs runs a page query and returns the ids of its rows (reading every
// row's document too).
func sqliteIDs(ctx context.Context, stmt *sql.Stmt, args ...any) ([]int64, error) {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		var doc string
		if err := rows.Scan(&id, &doc); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

func (s *sqliteSide) eqPage(ctx context.Context, g int64) ([]int64, error) {
	return sqliteIDs(ctx, s.st.eqPage, g, 2*storeDocs/storeGroups)
}

func (s *sqliteSide) count(ctx context.Context, g int64) (int, error) {
	var n int
	err := s.st.count.QueryRowContext(ctx, g).Scan(&n)
	return n, err
}

func (s *sqliteSide) rangePage(ctx context.Context, lo, hi int64) ([]int64, error) {
	return sqliteIDs(ctx, s.st.rangePage, lo, hi, storeRangeLimit)
}

func (s *sqliteSide) reopen(ctx context.Context) error {
	if err := s.close(); err != nil {
		return err
	}
	if err := s.open(ctx); err != nil {
		return err
	}
	return s.prepare(ctx)
}

func (s *sqliteSide) files() []string { return []string{s.path, s.path + "-wal"} }

func (s *sqliteSide) close() error { return s.db.Close() }
