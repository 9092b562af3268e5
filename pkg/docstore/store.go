package docstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Storage layout: every structure lives in top-level buckets of one kv.DB
// (one bbolt file, or memory), named by a one-letter kind, a NUL, the
// collection and, for indexes, a NUL and the index name:
//
//	m              the catalog ("c\x00<collection>" → JSON of its schema and
//	               index definitions); its sequence numbers revisions
//	d\x00<coll>    documents: key(id) → uvarint(revision) + value encoding;
//	               its sequence numbers insert_auto's ids
//	i\x00<coll>\x00<index>
//	               secondary index entries, key(field values…) + key(id),
//	               in blocks: first entry → the block (see indexBlockBytes)
//
// Reserved for the search and graph layers, beside the documents in the
// same file and kept by the same transactions: t\x00 (text postings with
// positions), v\x00 (vector blocks), g\x00 (geo cells), e\x00 and r\x00
// (outgoing and incoming edges).
const (
	metaBucket    = "m"
	catalogPrefix = "c\x00"
	// layoutKey (in the meta bucket) holds the layout version, storeLayout
	// in decimal. Layout 1, written before index entries were kept in
	// blocks, has no such key; Open rebuilds its indexes as blocks, and
	// refuses a layout it does not know. Layout 2 linked every vector in
	// its write's transaction; layout 3 queues them for the linker
	// (linker.go), which an earlier version would never link: a layout 2
	// store is read as it is and marked 3 by a read-write open.
	layoutKey   = "layout"
	storeLayout = 3
)

func docsBucket(coll string) []byte { return []byte("d\x00" + coll) }
func indexBucket(coll, index string) []byte {
	return []byte("i\x00" + coll + "\x00" + index)
}

// openTimeout bounds how long Open waits for a PostgreSQL server.
const openTimeout = 30 * time.Second

// MaxLimit is the most documents one list operation returns; larger
// limits are clamped to it.
const MaxLimit = 10_000

// DefaultLimit is the page size when none is given.
const DefaultLimit = 100

// ErrLayout is the cause of Open's error for a store file written in a
// later layout than this version reads (see layoutKey).
var ErrLayout = errors.New("store layout unknown to this version")

// Options configures Open.
type Options struct {
	// NoSync skips fsync on commit: for tests only; a crash may lose
	// acknowledged writes.
	NoSync bool
	// ReadOnly opens an existing file without ever writing it (a missing
	// or empty file is an error): every write fails. A file of an earlier
	// layout with indexes, which only a read-write Open upgrades, fails
	// with ErrLayout.
	ReadOnly bool
}

// ErrDamaged is the cause of the error for a damaged store file: Open
// refuses one, and an operation that meets damage done to the file while
// it is open fails with it (a [*DamageError] saying what is wrong); the
// store stays open.
var ErrDamaged = kv.ErrDamaged

// DamageError reports what is damaged in a store file.
type DamageError = kv.DamageError

// Store is an open document store, safe for concurrent use: writers are
// serialized (and batched when concurrent), readers see consistent
// snapshots and never block writers.
type Store struct {
	db     kv.DB
	closed atomic.Bool

	// catMu guards cat and catEpoch. Document writes hold it for reading
	// through their transaction, so that a catalog change (a new index, a
	// schema) never interleaves with them; catalog changes hold it for
	// writing.
	catMu sync.RWMutex
	cat   map[string]*collection
	// catEpoch is the storage layer's epoch (kv.Tx.Epoch) that cat was read
	// at. Every catalog change moves the epoch, so a transaction whose epoch
	// is not catEpoch sees a catalog that another process sharing the store
	// (PostgreSQL) has changed: cat is reloaded from it (see withCatalog).
	catEpoch uint64

	// linker links the vectors writes queue into their HNSW graphs
	// (linker.go); nil on a read-only store.
	linker *linker
}

// collection is a collection's catalog entry.
type collection struct {
	Name    string     `json:"name"`
	Schema  *Schema    `json:"schema,omitempty"`
	Indexes []IndexDef `json:"indexes"`
	derivedDefs
}

// IndexDef defines a secondary index: a scalar index has one field, a
// compound index several (queries use any leading prefix of them).
type IndexDef struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"`
	Unique bool     `json:"unique,omitempty"`
}

// Open opens the store at path: a bbolt file (created if absent), a
// PostgreSQL database given by a postgres:// or postgresql:// URL (see
// kv.OpenPostgres: its tables are created if absent, and any number of
// processes may open the same store at once), or an in-memory store when
// path is "". A file of an earlier layout is upgraded in place (its
// indexes rebuilt, in one transaction); one of a later layout fails with
// ErrLayout. A damaged file fails with ErrDamaged and one that is not a
// store file with kv.ErrInvalidFile. Errors and Path never show a URL's
// password.
func Open(path string, opts Options) (*Store, error) {
	db, err := openKV(path, opts)
	if err != nil {
		return nil, err
	}
	s, err := openOn(db, opts.ReadOnly)
	if err != nil {
		db.Close()
		return nil, err
	}
	if !opts.ReadOnly {
		s.runLinker(newLinker(s))
	}
	return s, nil
}

// openKV opens the storage at path as Open describes.
func openKV(path string, opts Options) (kv.DB, error) {
	kvOpts := kv.Options{NoSync: opts.NoSync, ReadOnly: opts.ReadOnly}
	var db kv.DB
	var err error
	switch {
	case path == "":
		db = kv.OpenMemory()
	case kv.IsURL(path):
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		defer cancel()
		// Every View function of the engine can run again (each starts
		// by resetting what it returns; Dump, which writes as it reads,
		// uses kv.ViewOnce), so a get by id is one statement.
		kvOpts.ViewsMayRerun = true
		db, err = kv.OpenPostgres(ctx, path, kvOpts)
	default:
		db, err = kv.Open(path, kvOpts)
	}
	if err != nil {
		return nil, fmt.Errorf("docstore: %w", err) // kv's error names the store
	}
	return db, nil
}

// Copy copies the store at src into a new store at dst (each a file or a
// PostgreSQL URL, as Open takes them; dst must hold no store yet): its
// documents, catalog and every derived structure as they are, where a dump
// and load would rebuild the indexes. src is only read, and must be a
// store this version reads. It returns the number of keys copied.
func Copy(dst, src string) (int64, error) {
	from, err := openKV(src, Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer from.Close()
	if _, err := openOn(from, true); err != nil {
		return 0, err
	}
	to, err := openKV(dst, Options{})
	if err != nil {
		return 0, err
	}
	n, err := kv.Copy(to, from)
	if err == nil {
		_, err = openOn(to, false)
	}
	if cerr := to.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("docstore: copy %s to %s: %w", kv.Redact(src), kv.Redact(dst), err)
	}
	return n, nil
}

// openOn returns the store kept in db, its catalog loaded (and its layout
// upgraded unless readOnly). Several Stores may share one db, as processes
// share a store on PostgreSQL.
func openOn(db kv.DB, readOnly bool) (*Store, error) {
	s := &Store{db: db}
	load := s.loadCatalog
	if readOnly {
		load = s.readCatalog
	}
	if err := load(); err != nil {
		return nil, err
	}
	return s, nil
}

// CheckFile looks for damage in the store's file: its structure and
// bbolt's own consistency check (see kv.DB.Check). It returns nil, a
// [*DamageError] listing what is damaged, or the error that stopped it;
// Verify checks the documents and indexes.
func (s *Store) CheckFile() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return closedAs(s.db.Check())
}

// Path returns the store's file, or "" in memory.
func (s *Store) Path() string { return s.db.Path() }

// Close closes the store; operations after it fail with ErrClosed.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.linker.stop()
	return s.db.Close()
}

// closedAs returns ErrClosed for the storage layer's closed error (a
// store closed while an operation was under way), err otherwise.
func closedAs(err error) error {
	if errors.Is(err, kv.ErrClosed) {
		return ErrClosed
	}
	return err
}

// usable fails with ErrClosed after Close, and with ctx's error once ctx
// has ended.
func (s *Store) usable(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// loadCatalog reads the catalog in a read transaction when the store is
// of the current layout (every open but the first and an upgrade's):
// opening writes nothing, so it costs no commit (on a file, a sync).
// Otherwise it creates or upgrades the layout in a write transaction.
func (s *Store) loadCatalog() error {
	current := false
	err := s.db.View(func(tx kv.Tx) error {
		current = false // a View may run again (kv.Options.ViewsMayRerun)
		m := tx.Bucket([]byte(metaBucket))
		if m == nil || string(m.Get([]byte(layoutKey))) != strconv.Itoa(storeLayout) {
			return nil
		}
		cat, err := readCatalogFrom(m)
		if err != nil {
			return err
		}
		s.cat, s.catEpoch, current = cat, tx.Epoch(), true
		return nil
	})
	if err != nil || current {
		return err
	}
	return s.db.Update(func(tx kv.Tx) error {
		m, err := tx.CreateBucketIfNotExists([]byte(metaBucket))
		if err != nil {
			return err
		}
		if s.cat, err = readCatalogFrom(m); err != nil {
			return err
		}
		s.catEpoch = tx.Epoch()
		return s.upgrade(tx, m)
	})
}

// readCatalog is loadCatalog for a read-only store, which cannot upgrade:
// a file without the catalog bucket is an empty store, and one of an
// earlier layout whose indexes need rebuilding fails with ErrLayout.
func (s *Store) readCatalog() error {
	return s.db.View(func(tx kv.Tx) error {
		if err := s.syncCatalog(tx); err != nil {
			return err
		}
		m := tx.Bucket([]byte(metaBucket))
		if m == nil {
			return nil
		}
		switch v := string(m.Get([]byte(layoutKey))); v {
		case strconv.Itoa(storeLayout), "2":
			return nil
		case "":
			for _, col := range s.cat {
				if len(col.Indexes) > 0 {
					return fmt.Errorf("docstore: the store is in layout 1, whose indexes a read-write open rebuilds (serve it once): %w", ErrLayout)
				}
			}
			return nil
		default:
			return unknownLayout(v)
		}
	})
}

// readCatalogFrom reads the catalog entries of the meta bucket m (nil: a
// store without one, which has no collections).
func readCatalogFrom(m kv.Bucket) (map[string]*collection, error) {
	cat := map[string]*collection{}
	if m == nil {
		return cat, nil
	}
	c := m.Cursor()
	for k, v := c.Seek([]byte(catalogPrefix)); k != nil && strings.HasPrefix(string(k), catalogPrefix); k, v = c.Next() {
		var col collection
		if err := json.Unmarshal(v, &col); err != nil {
			return nil, fmt.Errorf("docstore: catalog entry %q: %w", k, err)
		}
		cat[col.Name] = &col
	}
	return cat, nil
}

// The catalog is kept in memory (cat) for every operation to read without
// decoding it; the storage layer's epoch says when it is out of date. A
// store on a file or in memory has this process as its only writer, and
// the epoch moves only with its own catalog changes. A store on PostgreSQL
// is shared: another process's catalog change (a new collection, index,
// schema, vector field) moves the epoch, and the next transaction here
// that sees the new epoch reloads the catalog before it reads or writes a
// document, so that an index created elsewhere is used and kept by every
// write here from the moment its creation has committed.

// errStaleCatalog ends a transaction that began with an out-of-date
// catalog, before it has done anything (withCatalog reloads and retries).
var errStaleCatalog = errors.New("docstore: catalog out of date")

// staleRetries bounds withCatalog's reloads, which only catalog changes
// landing faster than a transaction can start make necessary.
const staleRetries = 100

// withCatalog runs fn in a transaction of run (s.db.View, Update or
// Batch) with catMu held for reading and cat exactly the catalog of the
// transaction's snapshot: when the transaction's epoch is not catEpoch, it
// ends the transaction before fn runs, reloads cat, and starts again.
func (s *Store) withCatalog(run func(func(kv.Tx) error) error, fn func(tx kv.Tx) error) error {
	for range staleRetries {
		s.catMu.RLock()
		err := run(func(tx kv.Tx) error {
			if tx.Epoch() != s.catEpoch {
				return errStaleCatalog
			}
			return fn(tx)
		})
		s.catMu.RUnlock()
		if !errors.Is(err, errStaleCatalog) {
			return closedAs(err)
		}
		if err := s.refreshCatalog(); err != nil {
			return err
		}
	}
	return fmt.Errorf("docstore: the catalog changed %d times while an operation started; try again: %w", staleRetries, errStaleCatalog)
}

// refreshCatalog brings cat up to the store's latest epoch.
func (s *Store) refreshCatalog() error {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	return closedAs(s.db.View(s.syncCatalog))
}

// syncCatalog reloads cat from tx when tx's epoch is not catEpoch; catMu
// held for writing.
func (s *Store) syncCatalog(tx kv.Tx) error {
	if tx.Epoch() == s.catEpoch && s.cat != nil {
		return nil
	}
	cat, err := readCatalogFrom(tx.Bucket([]byte(metaBucket)))
	if err != nil {
		return err
	}
	s.cat, s.catEpoch = cat, tx.Epoch()
	return nil
}

// catalogUpdate runs fn in a write transaction that changes the catalog,
// with catMu held for writing: fn sees cat as the transaction's snapshot
// has it, and the epoch moves when the transaction commits, so that every
// other process sharing the store reloads its catalog.
func (s *Store) catalogUpdate(fn func(tx kv.Tx) error) error {
	err := s.db.Update(func(tx kv.Tx) error {
		if err := s.syncCatalog(tx); err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		return tx.BumpEpoch()
	})
	if err != nil {
		return closedAs(err)
	}
	s.catEpoch++
	return nil
}

// upgrade brings a store of an earlier layout to storeLayout in tx (a new
// store takes it as it is), and fails with ErrLayout for a later one.
func (s *Store) upgrade(tx kv.Tx, m kv.Bucket) error {
	switch v := string(m.Get([]byte(layoutKey))); v {
	case strconv.Itoa(storeLayout):
		return nil
	case "2":
		return m.Put([]byte(layoutKey), []byte(strconv.Itoa(storeLayout)))
	case "":
		// Layout 1 (or a new store): an index entry per key.
		for _, name := range sortedNames(s.cat) {
			col := s.cat[name]
			for _, def := range col.Indexes {
				if err := tx.DeleteBucket(indexBucket(name, def.Name)); err != nil {
					return fmt.Errorf("docstore: upgrade index %q of %q: %w", def.Name, name, err)
				}
				if err := buildIndex(context.Background(), tx, col, def, nil); err != nil {
					return fmt.Errorf("docstore: upgrade index %q of %q: %w", def.Name, name, err)
				}
			}
		}
		return m.Put([]byte(layoutKey), []byte(strconv.Itoa(storeLayout)))
	default:
		return unknownLayout(v)
	}
}

// unknownLayout is the error for a store of layout v, not storeLayout.
func unknownLayout(v string) error {
	return fmt.Errorf("docstore: the store's layout %q is not %d, the one this version reads: %w", v, storeLayout, ErrLayout)
}

// putCatalog writes col's catalog entry in tx.
func putCatalog(tx kv.Tx, col *collection) error {
	data, err := json.Marshal(col)
	if err != nil {
		return err
	}
	return tx.Bucket([]byte(metaBucket)).Put([]byte(catalogPrefix+col.Name), data)
}

// checkName validates a collection or index name.
// The Error's Field is what ("collection" or "index").
func checkName(what, name string) error {
	if name == "" || len(name) > 256 || strings.ContainsRune(name, 0) {
		return &Error{Code: CodeInvalid, Field: what, Message: fmt.Sprintf("%s name %q must be 1 to 256 bytes without NUL", what, name)}
	}
	return nil
}

// collectionOf returns the catalog entry of coll (catMu held), or a
// collection_not_found error.
func (s *Store) collectionOf(coll string) (*collection, error) {
	if col := s.cat[coll]; col != nil {
		return col, nil
	}
	if err := checkName("collection", coll); err != nil {
		return nil, err
	}
	return nil, errorf(CodeCollectionNotFound, coll, "no collection %q", coll)
}

// ensureCollection creates coll if it does not exist.
func (s *Store) ensureCollection(coll string) error {
	s.catMu.RLock()
	_, ok := s.cat[coll]
	s.catMu.RUnlock()
	if ok {
		return nil
	}
	if err := checkName("collection", coll); err != nil {
		return err
	}
	return s.changeCatalog(coll, true, nil)
}

// exists reports whether coll exists, reloading the catalog first when it
// does not know coll (another process may have created it).
func (s *Store) exists(coll string) bool {
	s.catMu.RLock()
	ok := s.cat[coll] != nil
	s.catMu.RUnlock()
	if ok || s.refreshCatalog() != nil {
		return ok
	}
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	return s.cat[coll] != nil
}

// changeCatalog runs fn on coll's catalog entry (created when create is
// set and it does not exist) in a write transaction, with every document
// writer excluded, and publishes the entry when the transaction commits.
// A nil fn only creates the collection, and writes nothing when it exists.
func (s *Store) changeCatalog(coll string, create bool, fn func(tx kv.Tx, col *collection) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	var col *collection
	err := s.catalogUpdate(func(tx kv.Tx) error {
		old := s.cat[coll]
		if old == nil && !create {
			return errorf(CodeCollectionNotFound, coll, "no collection %q", coll)
		}
		col = &collection{Name: coll, Indexes: []IndexDef{}}
		if old != nil {
			if fn == nil {
				col = old
				return errNothingToChange
			}
			col.Schema = old.Schema
			col.Indexes = slices.Clone(old.Indexes)
			col.derivedDefs = old.derivedDefs.clone()
		}
		if _, err := tx.CreateBucketIfNotExists(docsBucket(coll)); err != nil {
			return err
		}
		if fn != nil {
			if err := fn(tx, col); err != nil {
				return err
			}
		}
		return putCatalog(tx, col)
	})
	if errors.Is(err, errNothingToChange) {
		return nil
	}
	if err != nil {
		return err
	}
	s.cat[coll] = col
	return nil
}

// errNothingToChange rolls back a catalog change found unneeded once the
// catalog is current (a collection to create that another process created).
var errNothingToChange = errors.New("docstore: nothing to change")

// CollectionInfo describes a collection.
type CollectionInfo struct {
	Name    string     `json:"name"`
	Count   int        `json:"count"`
	Indexes []IndexDef `json:"indexes"`
	Schema  *Schema    `json:"schema"`
	// TextIndexes, Vector and GeoIndexes are the collection's search
	// structures, when it has them.
	TextIndexes []TextIndexDef `json:"text_indexes,omitempty"`
	Vector      *VectorDef     `json:"vector,omitempty"`
	GeoIndexes  []GeoIndexDef  `json:"geo_indexes,omitempty"`
	// VectorsQueued is the number of vectors waiting to be linked into
	// the HNSW graph (searches measure them exactly; see WaitLinked), and
	// LinkError why this process's linker's last batch for the collection
	// failed, if it did (it tries again every second).
	VectorsQueued int    `json:"vectors_queued,omitempty"`
	LinkError     string `json:"link_error,omitempty"`
}

// Collections lists the collections in name order.
func (s *Store) Collections(ctx context.Context) ([]CollectionInfo, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	var out []CollectionInfo
	err := s.withCatalog(s.db.View, func(tx kv.Tx) error {
		out = out[:0]
		for _, name := range sortedNames(s.cat) {
			col := s.cat[name]
			d := col.derivedDefs.clone()
			info := CollectionInfo{Name: name, Indexes: slices.Clone(col.Indexes), Schema: col.Schema,
				TextIndexes: d.TextIndexes, Vector: d.Vector, GeoIndexes: d.GeoIndexes}
			if b := tx.Bucket(docsBucket(name)); b != nil {
				info.Count = b.KeyN()
			}
			if q := tx.Bucket(vectorBucket(name, vecQueue)); q != nil && col.Vector != nil {
				info.VectorsQueued = q.KeyN()
			}
			if err := s.linker.lastError(name); err != nil {
				info.LinkError = err.Error()
			}
			out = append(out, info)
		}
		return nil
	})
	return out, err
}

func sortedNames(m map[string]*collection) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// record encodes a stored document: its revision, then its value.
func record(rev uint64, doc Value) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 64), rev)
	return AppendValue(b, doc)
}

// decodeRecord decodes a stored document.
func decodeRecord(coll string, id Value, b []byte) (uint64, Value, error) {
	return decodeRecordTo(coll, id, b, nil)
}

// decodeRecordTo is decodeRecord keeping texts in strs (nil: a copy of b).
func decodeRecordTo(coll string, id Value, b []byte, strs *stringStore) (uint64, Value, error) {
	rev, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, Value{}, fmt.Errorf("docstore: document %s in %q: corrupt record", idString(id), coll)
	}
	v, err := decodeValue(b[n:], strs)
	if err != nil {
		return 0, Value{}, fmt.Errorf("docstore: document %s in %q: %w", idString(id), coll, err)
	}
	return rev, v, nil
}

// idString shows an id in messages.
func idString(id Value) string {
	if t, ok := id.Text(); ok {
		return fmt.Sprintf("%q", t)
	}
	if i, ok := id.Int(); ok {
		return fmt.Sprint(i)
	}
	return id.Kind().String()
}

// checkID validates a document id: an int or a non-empty text.
func checkID(coll string, id Value) error {
	switch id.Kind() {
	case KindInt:
		return nil
	case KindText:
		if t, _ := id.Text(); t != "" && len(t) <= 1024 {
			return nil
		}
	}
	return &Error{Code: CodeInvalid, Collection: coll, Field: "id",
		Message: fmt.Sprintf("a document id is an int or a text of 1 to 1024 bytes, not %s", describeID(id))}
}

// describeID names an invalid id's kind for messages.
func describeID(v Value) string {
	if t, ok := v.Text(); ok && t == "" {
		return "empty text"
	}
	return v.Kind().String()
}

// checkDoc validates a document: a map.
func checkDoc(coll string, id Value, doc Value) error {
	if doc.Kind() != KindMap {
		return &Error{Code: CodeInvalid, Collection: coll, ID: &id, Message: fmt.Sprintf("a document is a map, not %s", doc.Kind())}
	}
	if depthOver(doc, MaxDepth) {
		return &Error{Code: CodeInvalid, Collection: coll, ID: &id, Message: fmt.Sprintf("a document nests arrays and maps more than %d deep", MaxDepth)}
	}
	return nil
}
