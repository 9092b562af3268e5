package kv

import (
	"errors"

	"github.com/jackc/pgx/v5"
)

// pgSpec is the state of an optimistic View (Options.ViewsMayRerun). Such a
// View sends nothing to the server until its first read: what fn asks
// before it (the epoch, which buckets exist, their sequences) is answered
// from what the process saw last, and the first read checks it. A first
// read that is a page forward (every Get) or of a set of keys (Prefetch)
// is one statement outside any transaction, which returns the meta row
// with the rows: a get by id is one statement, as a bare SELECT is. A second read then begins the
// transaction (with the meta row, in one round trip) and checks that no
// write committed since the first (the meta row's rev is the same), so the
// View reads one state throughout. When a check fails, fn was told
// something stale: the View is rolled back and fn runs again in an
// ordinary View.
type pgSpec struct {
	state                        specState
	sawEpoch, sawBuckets, sawSeq bool
	// seqStale: a sequence changed since the state fn was told about, and
	// the View has not read the new ones.
	seqStale bool
	firstRev int64 // the meta row's rev at the first read (specSingle)
	// sawCache: the read cache of the revision the View assumes
	// (assumedRev, the last the process saw) answered fn before any read
	// (see confirm).
	sawCache   bool
	assumedRev int64
}

type specState uint8

const (
	specNone    specState = iota // an ordinary transaction, or checked
	specPending                  // no read yet
	specSingle                   // one read done, alone
)

// pgRerun is the panic with which an optimistic View that was told
// something stale stops fn; run turns it into errRerun.
type pgRerun struct{}

// errRerun: the optimistic View must run again as an ordinary one.
var errRerun = errors.New("kv: the optimistic view runs again")

// beginOptimistic begins an optimistic View: a connection, and what the
// process saw last.
func (d *pgDB) beginOptimistic() (*pgTx, error) {
	cached := d.buckets.Load()
	if cached.rev < 0 {
		return d.begin(false) // nothing seen yet
	}
	c, err := d.pool.acquire(bg)
	if err != nil {
		return nil, err
	}
	return &pgTx{
		txState: txState{epoch: cached.epoch},
		d:       d, c: c, rev: cached.rev, gen: cached.gen, sgen: cached.sgen, base: cached.byName,
		spec: pgSpec{state: specPending, assumedRev: cached.rev}, rc: d.readCache(cached.rev),
	}, nil
}

// Epoch implements Tx.
func (t *pgTx) Epoch() uint64 {
	t.checkRead()
	t.spec.sawEpoch = true
	return t.epoch
}

// askRerun stops fn: the View must run again.
func (t *pgTx) askRerun() {
	t.rerun = true
	panic(pgRerun{})
}

// stale reports whether the meta row m contradicts what a pending View
// told fn: the epoch, the buckets, the sequences, or rows the read cache
// of the revision it assumed answered (the revision moved: a write
// committed, here or elsewhere, since the process saw it; scored, see
// confirm).
func (t *pgTx) stale(m *pgMetaRow) bool {
	sp := &t.spec
	if sp.sawCache {
		held := m.rev == sp.assumedRev
		t.d.noteAssumed(held)
		if !held {
			return true
		}
	}
	return (sp.sawEpoch && uint64(m.epoch) != t.epoch) || (sp.sawBuckets && m.gen != t.gen) || (sp.sawSeq && m.sgen != t.sgen)
}

// firstPage is an optimistic View's first read, a page forward: one
// statement with the meta row.
func (t *pgTx) firstPage(args ...any) []item {
	sql := t.d.sql.viewFirst
	if len(args) == 3 && args[2] == 1 {
		sql, args = t.d.sql.viewFirstGet, args[:2]
	}
	return t.firstRead(sql, args...)
}

// firstRead is an optimistic View's first read, sql: one statement
// outside any transaction that returns the meta row with each row read
// (viewFirst, viewFirstGet, viewFirstMany).
func (t *pgTx) firstRead(sql string, args ...any) []item {
	t.d.trips.Add(1)
	rows, _ := t.c.c.Query(bg, sql, args...)
	var m pgMetaRow
	var out []item
	var k, v []byte
	_, err := pgx.ForEachRow(rows, []any{&m.rev, &m.epoch, &m.gen, &m.sgen, &k, &v}, func() error {
		m.found = true
		if k != nil {
			out = append(out, item{k: k, v: v})
		}
		return nil
	})
	if err == nil && !m.found {
		err = errNoMeta
	}
	if err != nil {
		t.failRead(err)
	}
	t.readAlone(&m)
	return out
}

// readAlone checks the meta row m read with a pending View's first read,
// alone outside any transaction, and notes the revision read.
func (t *pgTx) readAlone(m *pgMetaRow) {
	if t.stale(m) || m.gen != t.gen {
		t.askRerun()
	}
	t.readRev(m.rev)
	t.epoch = uint64(m.epoch)
	if m.sgen != t.sgen {
		t.spec.seqStale = true
	} else {
		t.d.noteBuckets(&pgBucketSet{rev: m.rev, epoch: t.epoch, gen: m.gen, sgen: m.sgen, byName: t.base})
	}
	t.spec.state, t.spec.firstRev = specSingle, m.rev
}

// confirm makes sure that the read cache h would answer from is that of
// the revision the transaction reads, or will be checked to be: a pending
// View assumed the last revision the process saw. While that has mostly
// been found current (speculating), the cache of that revision answers at
// once, and the View's first read (which brings the meta row) or, with
// none, its end checks that no write committed since: if one did, fn runs
// again (stale). Otherwise the View first reads the meta row (one
// statement outside any transaction, as a first read that is a page is)
// and moves its handles to the cache of the revision it found. It reports
// whether it did so, and what h knows must be looked up again.
func (t *pgTx) confirm(h *pgBucket) bool {
	if t.spec.state != specPending || h.known.owner == nil {
		return false
	}
	if t.d.speculating() {
		t.spec.sawCache = true
		return false
	}
	t.d.trips.Add(1)
	var m pgMetaRow
	if err := m.scan(t.c.c.QueryRow(bg, t.d.sql.meta)); err != nil || !m.found {
		if err == nil {
			err = errNoMeta
		}
		t.failRead(err)
	}
	t.d.noteAssumed(m.rev == t.spec.assumedRev)
	t.readAlone(&m)
	return true
}

// An optimistic View answered from the cache before its first read saves
// a round trip when the revision it assumed holds, and costs a run of fn
// (a search: its filter and ranking) when it does not. The process
// speculates while the revisions assumed held in more than about
// rerunCost of rerunCost+1 Views that had the choice, whether they
// speculated or confirmed: a score moved up by one for each that held,
// down by rerunCost for each that did not, within ±speculationBound, and
// speculation is on while it is not negative. Under writes from other
// processes between most Views, Views confirm first (a round trip) rather
// than run twice.
const (
	rerunCost        = 8
	speculationBound = 4 * rerunCost
)

// speculating reports whether an optimistic View lets the cache of the
// revision it assumes answer before it read the meta row.
func (d *pgDB) speculating() bool { return d.speculation.Load() >= 0 }

// noteAssumed scores a revision assumed that held, or did not.
func (d *pgDB) noteAssumed(held bool) {
	delta := int32(1)
	if !held {
		delta = -rerunCost
	}
	for {
		cur := d.speculation.Load()
		next := min(max(cur+delta, -speculationBound), speculationBound)
		if next == cur || d.speculation.CompareAndSwap(cur, next) {
			return
		}
	}
}

// checkMeta checks the meta row read with BEGIN by an optimistic View's
// first read (pending) or second (after a first alone), and adopts the
// bucket set it brought.
func (t *pgTx) checkMeta(m *pgMetaRow) {
	switch t.spec.state {
	case specNone:
		return
	case specPending:
		if t.stale(m) {
			t.askRerun()
		}
	case specSingle:
		if m.rev != t.spec.firstRev {
			t.askRerun() // a write committed between the two reads
		}
	}
	t.spec.state = specNone
	t.epoch = uint64(m.epoch)
	if m.gen != t.gen || m.sgen != t.sgen {
		// What moved was not told to fn (else stale): buckets it never
		// asked about, or sequences.
		t.base, t.gen, t.sgen = m.set, m.gen, m.sgen
		for name, h := range t.handles {
			h.seq = m.set[name].seq
		}
	}
	t.spec.seqStale = false
}

// checkOptimistic checks, when fn has returned, an optimistic View that
// never read: what it told fn must still hold. It reports false when the
// View must run again.
func (t *pgTx) checkOptimistic() bool {
	sp := &t.spec
	if sp.state != specPending || !(sp.sawEpoch || sp.sawBuckets || sp.sawSeq || sp.sawCache) {
		return true
	}
	t.d.trips.Add(1)
	var m pgMetaRow
	if err := m.scan(t.c.c.QueryRow(bg, t.d.sql.meta)); err != nil || !m.found {
		t.c.fail(err)
		return false // the ordinary View reports the error
	}
	return !t.stale(&m)
}

// ViewOnce runs fn in a View of db that never runs fn again, whatever
// Options.ViewsMayRerun says: for a function with effects outside the View
// (a dump written as it is read, a copy into another store). On PostgreSQL
// it is an ordinary View (its snapshot taken when it begins); elsewhere it
// is db.View.
func ViewOnce(db DB, fn func(Tx) error) error {
	if d, ok := db.(*pgDB); ok {
		return d.view(fn, false)
	}
	return db.View(fn)
}
