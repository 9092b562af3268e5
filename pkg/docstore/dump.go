package docstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Backup writes a consistent copy of the whole store, taken while writers
// go on, in the bbolt file format (also from an in-memory store): the
// bytes open with Open. It returns the bytes written.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	n, err := s.db.Backup(w)
	return n, closedAs(err)
}

// BackupFile writes Backup to path atomically: a temporary file in the same
// directory, synced, then renamed over path.
func (s *Store) BackupFile(ctx context.Context, path string) (int64, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return 0, fmt.Errorf("docstore: backup: %w", err)
	}
	defer os.Remove(f.Name()) // after the rename, removes nothing
	n, err := s.Backup(ctx, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return 0, fmt.Errorf("docstore: backup to %s: %w", path, err)
	}
	return n, nil
}

// DumpFormat is the version of the dump format Dump writes.
const DumpFormat = 1

// dumpLine is one line of a dump: a header, a collection (its schema and
// indexes), or a document.
type dumpLine struct {
	Type       string     `json:"type"`             // "dump", "collection" or "document"
	Format     int        `json:"format,omitempty"` // dump
	Collection string     `json:"collection,omitempty"`
	Schema     *Schema    `json:"schema,omitempty"`
	Indexes    []IndexDef `json:"indexes,omitempty"`
	derivedDefs
	ID  json.RawMessage `json:"id,omitempty"`
	Doc json.RawMessage `json:"doc,omitempty"`
	// Edge is an edge line's edge (graph.go), among the collections
	// dumped, after every document.
	Edge *edgeLine `json:"edge,omitempty"`
}

// Dump writes the collections named (all when none) as JSON Lines: a
// header, then for each collection a line with its schema, index and search
// structure definitions followed by one line per document (id and document in the
// JSON form of FromJSON and ToJSON, which keeps every typed value), from
// one consistent snapshot, then one line per edge between documents of the
// collections dumped. It returns the documents written.
func (s *Store) Dump(ctx context.Context, w io.Writer, colls []string, progress Progress) (int64, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var n int64
	// The dump is written as it is read, so its View must not run twice.
	viewOnce := func(fn func(kv.Tx) error) error { return kv.ViewOnce(s.db, fn) }
	err := s.withCatalog(viewOnce, func(tx kv.Tx) error {
		if len(colls) == 0 {
			colls = sortedNames(s.cat)
		}
		for _, c := range colls {
			if _, err := s.collectionOf(c); err != nil {
				return err
			}
		}
		var total int64
		for _, c := range colls {
			total += int64(tx.Bucket(docsBucket(c)).KeyN())
		}
		if err := enc.Encode(dumpLine{Type: "dump", Format: DumpFormat}); err != nil {
			return err
		}
		for _, name := range colls {
			col := s.cat[name]
			if err := enc.Encode(dumpLine{Type: "collection", Collection: name, Schema: col.Schema, Indexes: userIndexes(col.Indexes), derivedDefs: col.derivedDefs}); err != nil {
				return err
			}
			r := &reader{tx: tx, col: col, docs: tx.Bucket(docsBucket(name))}
			c := r.docs.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				d, err := r.load(k, v)
				if err != nil {
					return err
				}
				id, err := ToJSON(d.ID)
				if err != nil {
					return err
				}
				doc, err := ToJSON(d.Value)
				if err != nil {
					return fmt.Errorf("docstore: dump document %s of %q: %w", idString(d.ID), name, err)
				}
				if err := enc.Encode(dumpLine{Type: "document", Collection: name, ID: id, Doc: doc}); err != nil {
					return err
				}
				if n++; n%1024 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
					if progress != nil {
						progress(n, total)
					}
				}
			}
		}
		if progress != nil {
			progress(n, total)
		}
		return dumpEdges(tx, colls, func(l edgeLine) error { return enc.Encode(dumpLine{Type: "edge", Edge: &l}) })
	})
	if err == nil {
		err = bw.Flush()
	}
	return n, err
}

// userIndexes drops the indexes a schema's unique fields imply (the schema
// brings them back).
func userIndexes(defs []IndexDef) []IndexDef {
	return slices.DeleteFunc(slices.Clone(defs), func(d IndexDef) bool { return schemaIndex(d.Name) })
}

// LoadMode says what Load does with a collection that already exists.
type LoadMode string

const (
	// LoadRefuse (the default) fails, at that collection's line, when a
	// collection of the dump exists and holds documents (the collections
	// before it in the dump are loaded).
	LoadRefuse LoadMode = "refuse"
	// LoadReplace deletes the existing collection's documents, schema and
	// indexes first.
	LoadReplace LoadMode = "replace"
	// LoadMerge keeps the existing documents (a document of the dump
	// replaces the one with its id), adds the dump's indexes that are
	// missing and, when the dump has a schema, sets it.
	LoadMerge LoadMode = "merge"
)

// LoadStats is what Load did.
type LoadStats struct {
	Collections int   `json:"collections"`
	Documents   int64 `json:"documents"`
}

// loadBatch is how many documents Load writes per transaction.
const loadBatch = 1000

// Load reads a dump (see Dump) into the store. Each collection line sets
// up its collection (per mode) before its documents are written, in
// transactions of 1,000 documents, each checked against the schema and
// the unique indexes. Load is not atomic: on an error, the batches before
// it stay, and the error names the line. total, when known (the dump's
// size in lines, or 0), is passed to progress.
func (s *Store) Load(ctx context.Context, r io.Reader, mode LoadMode, total int64, progress Progress) (LoadStats, error) {
	if err := s.usable(ctx); err != nil {
		return LoadStats{}, err
	}
	if mode == "" {
		mode = LoadRefuse
	}
	if mode != LoadRefuse && mode != LoadReplace && mode != LoadMerge {
		return LoadStats{}, &Error{Code: CodeInvalid, Field: "mode", Message: fmt.Sprintf("load mode %q: want refuse, replace or merge", mode)}
	}
	ld := &loader{s: s, ctx: ctx, mode: mode}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var line int64
	fail := func(err error) (LoadStats, error) {
		return ld.stats, fmt.Errorf("docstore: load, line %d: %w", line, err)
	}
	for sc.Scan() {
		line++
		if err := ld.line(sc.Bytes()); err != nil {
			return fail(err)
		}
		if progress != nil && line%1024 == 0 {
			progress(line, total)
		}
	}
	if err := sc.Err(); err != nil {
		return fail(err)
	}
	if err := ld.finish(); err != nil {
		return fail(err)
	}
	if progress != nil {
		progress(line, total)
	}
	return ld.stats, nil
}

// loader is one Load's state between dump lines: the collection whose
// section is being read, and the documents and edges read but not yet
// written (written loadBatch at a time).
type loader struct {
	s       *Store
	ctx     context.Context
	mode    LoadMode
	stats   LoadStats
	current string
	batch   []Doc
	edges   []edgeLine
}

// line takes one dump line, by its type.
func (ld *loader) line(data []byte) error {
	var l dumpLine
	if err := json.Unmarshal(data, &l); err != nil {
		return &Error{Code: CodeInvalid, Message: "not a dump line: " + err.Error()}
	}
	switch l.Type {
	case "dump":
		if l.Format != DumpFormat {
			return &Error{Code: CodeInvalid, Message: fmt.Sprintf("dump format %d: this version reads format %d", l.Format, DumpFormat)}
		}
		return nil
	case "collection":
		return ld.collection(l)
	case "edge":
		return ld.edge(l)
	case "document":
		return ld.document(l)
	default:
		return &Error{Code: CodeInvalid, Message: fmt.Sprintf("unknown dump line type %q", l.Type)}
	}
}

// collection starts a collection's section, set up per the load's mode.
func (ld *loader) collection(l dumpLine) error {
	if err := ld.flushDocs(); err != nil {
		return err
	}
	if err := ld.s.loadCollection(ld.ctx, l, ld.mode); err != nil {
		return err
	}
	ld.current = l.Collection
	ld.stats.Collections++
	return nil
}

// edge queues an edge; edges come after every document they join.
func (ld *loader) edge(l dumpLine) error {
	if err := ld.flushDocs(); err != nil {
		return err
	}
	if l.Edge == nil {
		return &Error{Code: CodeInvalid, Message: "an edge line without its edge"}
	}
	if ld.edges = append(ld.edges, *l.Edge); len(ld.edges) == loadBatch {
		if err := ld.s.loadEdges(ld.ctx, ld.edges); err != nil {
			return err
		}
		ld.edges = ld.edges[:0]
	}
	return nil
}

// document queues a document of the current collection's section.
func (ld *loader) document(l dumpLine) error {
	if l.Collection != ld.current || ld.current == "" {
		return &Error{Code: CodeInvalid, Message: fmt.Sprintf("document of collection %q outside its collection's section", l.Collection)}
	}
	id, err := FromJSON(l.ID)
	if err == nil {
		err = checkID(ld.current, id)
	}
	if err != nil {
		return err
	}
	doc, err := FromJSON(l.Doc)
	if err != nil {
		return err
	}
	if ld.batch = append(ld.batch, Doc{ID: id, Value: doc}); len(ld.batch) == loadBatch {
		return ld.flushDocs()
	}
	return nil
}

// flushDocs writes the queued documents of the current collection in one
// transaction.
func (ld *loader) flushDocs() error {
	if len(ld.batch) == 0 {
		return nil
	}
	err := ld.s.update(ld.ctx, ld.current, func(w *writer) error {
		for _, d := range ld.batch {
			old, exists, err := w.get(d.ID)
			if err != nil {
				return err
			}
			if _, err := w.put(d.ID, d.Value, old, exists); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		ld.stats.Documents += int64(len(ld.batch))
		ld.batch = ld.batch[:0]
	}
	return err
}

// finish writes what is still queued at the end of the dump.
func (ld *loader) finish() error {
	if err := ld.flushDocs(); err != nil {
		return err
	}
	return ld.s.loadEdges(ld.ctx, ld.edges)
}

// loadCollection sets up a collection of a dump per mode.
func (s *Store) loadCollection(ctx context.Context, l dumpLine, mode LoadMode) error {
	if err := checkName("collection", l.Collection); err != nil {
		return err
	}
	if s.exists(l.Collection) {
		switch mode {
		case LoadRefuse:
			n, _, err := s.Count(ctx, l.Collection, nil)
			if err != nil {
				return err
			}
			if n > 0 {
				return &Error{Code: CodeInvalid, Collection: l.Collection,
					Message: fmt.Sprintf("collection %q exists with %d documents: load with mode replace or merge", l.Collection, n)}
			}
		case LoadReplace:
			if err := s.dropCollection(l.Collection); err != nil {
				return err
			}
		}
	}
	if l.Schema != nil {
		if err := s.SetSchema(ctx, l.Collection, *l.Schema); err != nil {
			return err
		}
	} else if err := s.ensureCollection(l.Collection); err != nil {
		return err
	}
	for _, def := range l.Indexes {
		if _, err := s.CreateIndex(ctx, l.Collection, def, nil); err != nil {
			return err
		}
	}
	return s.createDerived(ctx, l.Collection, l.derivedDefs)
}

// dropCollection deletes a collection: its documents, indexes and catalog
// entry.
func (s *Store) dropCollection(coll string) error {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	err := s.catalogUpdate(func(tx kv.Tx) error {
		col := s.cat[coll]
		if col == nil {
			return errNothingToChange
		}
		if err := scalarIndexes.drop(tx, col); err != nil {
			return err
		}
		if err := dropDerived(tx, col); err != nil {
			return err
		}
		if err := tx.DeleteBucket(docsBucket(coll)); err != nil {
			return err
		}
		return tx.Bucket([]byte(metaBucket)).Delete([]byte(catalogPrefix + coll))
	})
	if errors.Is(err, errNothingToChange) {
		return nil
	}
	if err == nil {
		delete(s.cat, coll)
		s.linker.forget(coll)
	}
	return err
}
