package kv

import "strings"

// pgStatements are every statement the PostgreSQL backend sends, for one
// store's tables (docs/postgres.md lists them). Keys are bytea, which
// PostgreSQL, CockroachDB and YugabyteDB order bytewise, with no collation.
type pgStatements struct {
	create []string

	// Transactions.
	beginWrite, beginView, commit, rollback string
	// lock begins a write: it takes the meta row's lock (every writer of
	// every process queues on it) and reads the counters.
	lock string
	// meta reads the counters; viewMeta reads them in a View's snapshot
	// with, when the meta row's bgen is not $1 or its sgen not $2, the
	// bucket set, in one statement (a row per bucket, or one with NULLs).
	meta, viewMeta string
	// viewFirst is an optimistic View's first read when it is a page
	// forward (a Get): the counters and the page in one statement, outside
	// any transaction.
	viewFirst string
	// viewFirstGet is viewFirst for one row (a Get), its limit written in
	// the statement: with a parameter for the limit, PostgreSQL estimates a
	// generic plan far dearer than a custom one and plans the statement
	// again at every execution (a get by id through the engine measured
	// 136 µs, against 80 µs planned once).
	viewFirstGet string
	// viewFirstMany is viewFirst for the keys $2 (an array) of bucket $1
	// (kv.Prefetch): the counters and the rows in one statement.
	viewFirstMany string
	// bucketsIfMoved reads the bucket set when the meta row's bgen is not
	// $1 or its sgen not $2, the generations of the set the process holds
	// (a write reads it after the lock, in a snapshot of its own).
	bucketsIfMoved string

	// Reads of one bucket ($1).
	pageAsc, pageDesc, pageLast, count, countExcept string
	// getMany reads the keys $2 (an array) of bucket $1 (kv.Prefetch).
	getMany string
	// getRanges reads up to $4 keys of each range [$2[i], $3[i]) of bucket
	// $1, and the key on either side, tagged with the range's ordinal
	// (kv.PrefetchRanges).
	getRanges string
	// scan streams a bucket in key order (Backup); orphans counts the keys
	// of no bucket in $1 (Check).
	scan, orphans string

	// Writes, sent at commit.
	deleteBucketKeys, deleteBuckets, upsertBuckets             string
	deleteKeys, insertKeys, upsertKeys, updateKeys, updateMeta string
}

// newPGStatements renders the statements for tables t.
func newPGStatements(t pgTables) pgStatements {
	r := strings.NewReplacer("{meta}", t.meta, "{buckets}", t.buckets, "{kv}", t.kv)
	return pgStatements{
		create: []string{
			r.Replace(`CREATE TABLE IF NOT EXISTS {meta} (id integer PRIMARY KEY, rev bigint NOT NULL, epoch bigint NOT NULL, bgen bigint NOT NULL, sgen bigint NOT NULL, nextb bigint NOT NULL)`),
			r.Replace(`INSERT INTO {meta} (id, rev, epoch, bgen, sgen, nextb) VALUES (1, 0, 0, 0, 0, 0) ON CONFLICT (id) DO NOTHING`),
			r.Replace(`CREATE TABLE IF NOT EXISTS {buckets} (id bigint PRIMARY KEY, name bytea NOT NULL UNIQUE, seq bigint NOT NULL)`),
			r.Replace(`CREATE TABLE IF NOT EXISTS {kv} (b bigint NOT NULL, k bytea NOT NULL, v bytea NOT NULL, PRIMARY KEY (b, k))`),
		},
		beginWrite: `BEGIN ISOLATION LEVEL READ COMMITTED`,
		beginView:  `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`,
		commit:     `COMMIT`,
		rollback:   `ROLLBACK`,
		lock:       r.Replace(`UPDATE {meta} SET rev = rev + 1 WHERE id = 1 RETURNING rev, epoch, bgen, sgen, nextb`),
		meta:       r.Replace(`SELECT rev, epoch, bgen, sgen, nextb FROM {meta} WHERE id = 1`),
		viewMeta: r.Replace(`SELECT m.rev, m.epoch, m.bgen, m.sgen, m.nextb, b.id, b.name, b.seq FROM {meta} m ` +
			`LEFT JOIN {buckets} b ON (m.bgen <> $1 OR m.sgen <> $2) WHERE m.id = 1`),
		viewFirst: r.Replace(`SELECT m.rev, m.epoch, m.bgen, m.sgen, p.k, p.v FROM {meta} m LEFT JOIN LATERAL ` +
			`(SELECT k, v FROM {kv} WHERE b = $1 AND k >= $2 ORDER BY k LIMIT $3) AS p ON true WHERE m.id = 1`),
		viewFirstGet: r.Replace(`SELECT m.rev, m.epoch, m.bgen, m.sgen, p.k, p.v FROM {meta} m LEFT JOIN LATERAL ` +
			`(SELECT k, v FROM {kv} WHERE b = $1 AND k >= $2 ORDER BY k LIMIT 1) AS p ON true WHERE m.id = 1`),
		viewFirstMany: r.Replace(`SELECT m.rev, m.epoch, m.bgen, m.sgen, p.k, p.v FROM {meta} m LEFT JOIN LATERAL ` +
			`(SELECT k, v FROM {kv} WHERE b = $1 AND k = ANY($2::bytea[])) AS p ON true WHERE m.id = 1`),
		bucketsIfMoved: r.Replace(`SELECT id, name, seq FROM {buckets} WHERE (SELECT bgen <> $1 OR sgen <> $2 FROM {meta} WHERE id = 1)`),

		pageAsc:  r.Replace(`SELECT k, v FROM {kv} WHERE b = $1 AND k >= $2 ORDER BY k LIMIT $3`),
		pageDesc: r.Replace(`SELECT k, v FROM {kv} WHERE b = $1 AND k < $2 ORDER BY k DESC LIMIT $3`),
		pageLast: r.Replace(`SELECT k, v FROM {kv} WHERE b = $1 ORDER BY k DESC LIMIT $2`),
		count:    r.Replace(`SELECT count(*) FROM {kv} WHERE b = $1`),
		getMany:  r.Replace(`SELECT k, v FROM {kv} WHERE b = $1 AND k = ANY($2::bytea[])`),
		getRanges: r.Replace(`SELECT r.i, p.k, p.v FROM unnest($2::bytea[], $3::bytea[]) WITH ORDINALITY AS r (lo, hi, i) CROSS JOIN LATERAL (` +
			`(SELECT k, v FROM {kv} WHERE b = $1 AND k < r.lo ORDER BY k DESC LIMIT 1) UNION ALL ` +
			`(SELECT k, v FROM {kv} WHERE b = $1 AND k >= r.lo AND k < r.hi ORDER BY k LIMIT $4) UNION ALL ` +
			`(SELECT k, v FROM {kv} WHERE b = $1 AND k >= r.hi ORDER BY k LIMIT 1)) AS p`),
		countExcept: r.Replace(`SELECT count(*) FROM {kv} WHERE b = $1 AND NOT (k = ANY($2::bytea[]))`),
		scan:        r.Replace(`SELECT k, v FROM {kv} WHERE b = $1 ORDER BY k`),
		orphans:     r.Replace(`SELECT count(*) FROM {kv} WHERE NOT (b = ANY($1::bigint[]))`),

		deleteBucketKeys: r.Replace(`DELETE FROM {kv} WHERE b = ANY($1::bigint[])`),
		deleteBuckets:    r.Replace(`DELETE FROM {buckets} WHERE id = ANY($1::bigint[])`),
		upsertBuckets: r.Replace(`INSERT INTO {buckets} (id, name, seq) SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bigint[]) ` +
			`ON CONFLICT (id) DO UPDATE SET seq = excluded.seq`),
		deleteKeys: r.Replace(`DELETE FROM {kv} WHERE b = $1 AND k = ANY($2::bytea[])`),
		insertKeys: r.Replace(`INSERT INTO {kv} (b, k, v) SELECT $1::bigint, t.k, t.v FROM unnest($2::bytea[], $3::bytea[]) AS t (k, v)`),
		upsertKeys: r.Replace(`INSERT INTO {kv} (b, k, v) SELECT $1::bigint, t.k, t.v FROM unnest($2::bytea[], $3::bytea[]) AS t (k, v) ` +
			`ON CONFLICT (b, k) DO UPDATE SET v = excluded.v`),
		// updateKeys rewrites keys the transaction knows present, $4 of
		// them: an UPDATE costs the server less than an upsert's conflict
		// path (a quarter less for a block rewritten, measured). If fewer
		// rows matched (the rows were changed outside mcpkit), it fails
		// the transaction with a division by zero (22012, errKeyGone),
		// so that a put is never lost silently.
		updateKeys: r.Replace(`WITH u AS (UPDATE {kv} AS t SET v = x.v FROM unnest($2::bytea[], $3::bytea[]) AS x (k, v) ` +
			`WHERE t.b = $1 AND t.k = x.k RETURNING 1) SELECT 1 / (SELECT CASE WHEN count(*) = $4::bigint THEN 1 ELSE 0 END FROM u)`),
		updateMeta: r.Replace(`UPDATE {meta} SET epoch = $1, bgen = $2, sgen = $3, nextb = $4 WHERE id = 1`),
	}
}
