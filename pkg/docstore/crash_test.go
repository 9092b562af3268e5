package docstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore"
)

// The crash test: a child process (this test binary again) writes to a
// durable file store and reports each write it begins and each one
// acknowledged; the parent kills it with SIGKILL at a random moment and
// checks the reopened file against the acknowledged writes.
const (
	crashRounds   = 3
	crashPathEnv  = "DOCSTORE_CRASH_CHILD" // the store's path: set, the test runs as the child
	crashSeedEnv  = "DOCSTORE_CRASH_SEED"
	crashPrefix   = "crash "
	crashColl     = "crash"
	crashPool     = 100 // text ids Put and PutMany choose from, so that they replace documents
	crashMinKill  = 100 // the kill comes after crashMinKill to crashMaxKill acknowledged writes
	crashMaxKill  = 300
	crashRoundFor = 30 * time.Second // a watchdog kills a child still running after this
	crashChildFor = time.Minute      // the child stops on its own after this (the parent kills it long before)
)

// crashLine is one line of the child's report: a write begun, or the same
// write acknowledged (its call returned nil). Documents and ids are in the
// store's JSON form.
type crashLine struct {
	Phase string       `json:"phase"` // "begin" or "ack"
	Op    string       `json:"op"`    // insert, put, patch, delete, put_many
	Docs  []crashEntry `json:"docs"`
}

// crashEntry is one document of a write.
type crashEntry struct {
	ID  json.RawMessage `json:"id"`            // null in an insert's begin line: the store picks the id
	Doc json.RawMessage `json:"doc"`           // the whole document after the write; null for a delete
	Rev uint64          `json:"rev,omitempty"` // the revision the store acknowledged
}

// TestCrashRecovery kills a process writing to a durable file store
// (Options.NoSync false) at a random moment, crashRounds times, and checks
// that the reopened store holds every acknowledged write with its content
// and revision (the last acknowledged write of an id wins, acknowledged
// deletes are gone), nothing else but possibly the one write in flight,
// whole or not at all, that its indexes agree with its documents
// (Store.Verify), and that Insert never reuses an id.
//
// A SIGKILL leaves the kernel's page cache intact, so this checks that a
// write is complete in the file when its call returns and that a
// transaction is never half visible, not that fsync reaches the disk
// (which needs a power cut).
func TestCrashRecovery(t *testing.T) {
	if path := os.Getenv(crashPathEnv); path != "" {
		seed, err := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", crashSeedEnv, err)
		}
		crashChild(t, path, seed)
		return
	}
	// The rounds run at once (their children mostly wait for commits),
	// then each is checked.
	rounds := make([]*crashRound, crashRounds)
	var wg sync.WaitGroup
	for i := range rounds {
		r := &crashRound{path: filepath.Join(t.TempDir(), "crash.db"), seed: rand.Uint64(), h: crashHistory{docs: map[string]crashDoc{}}}
		rounds[i] = r
		wg.Go(func() { r.err = r.run(crashMinKill + rand.IntN(crashMaxKill-crashMinKill)) })
	}
	wg.Wait()
	for i, r := range rounds {
		t.Run(fmt.Sprintf("round%d", i+1), func(t *testing.T) {
			if r.err != nil {
				t.Fatalf("seed %d: %v", r.seed, r.err)
			}
			inFlight := r.h.check(t, r.path)
			t.Logf("seed %d: killed after %d acknowledged writes (%d documents live); the write in flight: %s",
				r.seed, r.h.acked, len(r.h.docs), inFlight)
		})
	}
}

// crashRound is one child writing to the store at path.
type crashRound struct {
	path string
	seed uint64
	h    crashHistory
	err  error
}

// run runs the child, reads its report and kills it after killAt
// acknowledged writes, at a random moment of the next one.
func (r *crashRound) run(killAt int) error {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecovery$")
	cmd.Env = append(os.Environ(), crashPathEnv+"="+r.path, crashSeedEnv+"="+strconv.FormatUint(r.seed, 10))
	stdin, err := cmd.StdinPipe() // the child exits when it closes: it never outlives this test
	if err != nil {
		return err
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	var hung atomic.Bool
	watchdog := time.AfterFunc(crashRoundFor, func() { hung.Store(true); cmd.Process.Kill() })
	defer watchdog.Stop()

	var other []string
	var reportErr error
	killed := false
	out := bufio.NewReaderSize(stdout, 1<<16)
	for {
		// A line cut by the kill (no newline) is not a delivered report.
		line, err := out.ReadString('\n')
		if err != nil {
			break
		}
		rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), crashPrefix)
		if !ok {
			other = append(other, line)
			continue
		}
		if reportErr != nil {
			continue
		}
		if reportErr = r.h.add(rest); reportErr != nil {
			cmd.Process.Kill()
			killed = true
			continue
		}
		if !killed && r.h.acked >= killAt {
			// A random moment inside the next write: waiting for company,
			// in the transaction, in fsync, or reporting.
			time.Sleep(time.Duration(rand.Int64N(int64(15 * time.Millisecond))))
			if err := cmd.Process.Kill(); err != nil {
				return err
			}
			killed = true
		}
	}
	werr := cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case reportErr != nil:
		return reportErr
	case hung.Load():
		return fmt.Errorf("the round took more than %v (%d acknowledged writes):\n%s%s", crashRoundFor, r.h.acked, strings.Join(other, ""), stderr.String())
	case !killed || !ws.Signaled() || ws.Signal() != syscall.SIGKILL:
		return fmt.Errorf("the child ended by itself (%v) after %d acknowledged writes, before the kill:\n%s%s",
			werr, r.h.acked, strings.Join(other, ""), stderr.String())
	case r.h.acked == 0:
		return fmt.Errorf("the child was killed before any write was acknowledged")
	}
	return nil
}

// crashDoc is a document as the child's acknowledged writes left it.
type crashDoc struct {
	id, doc docstore.Value
	rev     uint64 // 0: not known (the write in flight)
}

// crashHistory is what the parent read of the child's report.
type crashHistory struct {
	docs    map[string]crashDoc // by the id's JSON; deleted documents are absent
	pending *crashLine          // the write begun and not acknowledged
	acked   int
	// maxInsert is the largest id an acknowledged Insert returned.
	maxInsert int64
}

// add takes one report line.
func (h *crashHistory) add(text string) error {
	var l crashLine
	if err := json.Unmarshal([]byte(text), &l); err != nil {
		return fmt.Errorf("child's report %.200q: %w", text, err)
	}
	switch {
	case l.Phase == "begin" && h.pending == nil:
		h.pending = &l
		return nil
	case l.Phase == "ack" && h.pending != nil && h.pending.Op == l.Op && len(h.pending.Docs) == len(l.Docs):
		h.pending = nil
		h.acked++
		next, err := applyCrashLine(h.docs, &l)
		if err != nil {
			return err
		}
		h.docs = next
		if l.Op == "insert" {
			id, _ := next[string(l.Docs[0].ID)].id.Int()
			h.maxInsert = max(h.maxInsert, id)
		}
		return nil
	}
	return fmt.Errorf("child's report out of order: %.200q after %d acknowledged writes (in flight: %v)", text, h.acked, h.pending)
}

// applyCrashLine returns docs with l's writes applied (an insert without
// its id is left out: the store picks it).
func applyCrashLine(docs map[string]crashDoc, l *crashLine) (map[string]crashDoc, error) {
	out := maps.Clone(docs)
	for _, e := range l.Docs {
		if string(e.ID) == "null" {
			continue
		}
		id, err := docstore.FromJSON(e.ID)
		if err != nil {
			return nil, fmt.Errorf("id %s: %w", e.ID, err)
		}
		if string(e.Doc) == "null" {
			delete(out, string(e.ID))
			continue
		}
		doc, err := docstore.FromJSON(e.Doc)
		if err != nil {
			return nil, fmt.Errorf("document %s: %w", e.ID, err)
		}
		out[string(e.ID)] = crashDoc{id: id, doc: doc, rev: e.Rev}
	}
	return out, nil
}

// check reopens the store and compares it with the history; it returns
// what became of the write in flight.
func (h *crashHistory) check(t *testing.T, path string) string {
	t.Helper()
	ctx := context.Background()
	s, err := docstore.Open(path, docstore.Options{})
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	defer s.Close()
	if err := s.Verify(ctx); err != nil {
		t.Errorf("verify after the kill: %v", err)
	}
	found := map[string]docstore.Doc{}
	for q := (docstore.Query{Limit: docstore.MaxLimit}); ; {
		page, err := s.Page(ctx, crashColl, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Docs {
			found[mustJSON(t, d.ID)] = d
		}
		if q.Cursor = page.Next; q.Cursor == "" {
			break
		}
	}

	inFlight := "none"
	diffs := crashDiff(t, found, h.docs, nil)
	if h.pending != nil {
		inFlight = h.pending.Op + ", not committed"
		if len(diffs) > 0 {
			applied, err := applyCrashLine(h.docs, h.pending)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range h.pending.Docs {
				if d, ok := applied[string(e.ID)]; ok {
					d.rev = 0 // the revision of the write in flight is unknown
					applied[string(e.ID)] = d
				}
			}
			var inserted *crashDoc
			if h.pending.Op == "insert" {
				doc, err := docstore.FromJSON(h.pending.Docs[0].Doc)
				if err != nil {
					t.Fatal(err)
				}
				inserted = &crashDoc{doc: doc}
			}
			if len(crashDiff(t, found, applied, inserted)) == 0 {
				diffs, inFlight = nil, h.pending.Op+", committed whole"
			}
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("the store after the kill disagrees with the %d acknowledged writes (in flight: %s):\n%s",
			h.acked, h.pendingText(), strings.Join(diffs[:min(len(diffs), 10)], "\n"))
	}

	// Insert continues after every id it gave, acknowledged or not.
	maxID := h.maxInsert
	for _, d := range found {
		if id, ok := d.ID.Int(); ok {
			maxID = max(maxID, id)
		}
	}
	d, err := s.Insert(ctx, crashColl, docstore.Map(docstore.Field{Key: "email", Value: docstore.Text("after@crash")}))
	if err != nil {
		t.Fatalf("insert after the kill: %v", err)
	}
	if id, _ := d.ID.Int(); id <= maxID {
		t.Errorf("insert after the kill got id %d, not after %d", id, maxID)
	}
	if err := s.Verify(ctx); err != nil {
		t.Errorf("verify after the kill and one insert: %v", err)
	}
	return inFlight
}

func (h *crashHistory) pendingText() string {
	if h.pending == nil {
		return "none"
	}
	b, _ := json.Marshal(h.pending)
	return clip(string(b))
}

// clip shortens a document's JSON for a message (bodies run to kilobytes).
func clip(s string) string {
	if len(s) <= 200 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:200], len(s))
}

// crashDiff lists how the store's documents differ from want: content (as
// JSON, so field order counts), and revision where known. inserted, when
// set, is a document the store may hold once under an int id not in want.
func crashDiff(t *testing.T, found map[string]docstore.Doc, want map[string]crashDoc, inserted *crashDoc) []string {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w := want[k]
		f, ok := found[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: missing; acknowledged at revision %d: %s", k, w.rev, clip(mustJSON(t, w.doc))))
		case mustJSON(t, f.Value) != mustJSON(t, w.doc) || (w.rev != 0 && f.Revision != w.rev):
			diffs = append(diffs, fmt.Sprintf("%s: revision %d %s; acknowledged revision %d %s",
				k, f.Revision, clip(mustJSON(t, f.Value)), w.rev, clip(mustJSON(t, w.doc))))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(found)) {
		if _, ok := want[k]; ok {
			continue
		}
		f := found[k]
		if _, isInt := f.ID.Int(); inserted != nil && isInt && mustJSON(t, f.Value) == mustJSON(t, inserted.doc) {
			inserted = nil
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s: present at revision %d but never acknowledged: %s", k, f.Revision, clip(mustJSON(t, f.Value))))
	}
	if inserted != nil {
		diffs = append(diffs, "the insert in flight is not there")
	}
	return diffs
}

func mustJSON(t *testing.T, v docstore.Value) string {
	t.Helper()
	b, err := docstore.ToJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// crashChild is the child: it writes to the store at path until it is
// killed, reporting every write on stdout, and fails the test on any
// write that does not do what it should.
func crashChild(t *testing.T, path string, seed uint64) {
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(3) // the parent is gone
	}()
	ctx := context.Background()
	s, err := docstore.Open(path, docstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, def := range []docstore.IndexDef{
		{Name: "email", Fields: []string{"email"}, Unique: true},
		{Name: "group_n", Fields: []string{"group", "n"}},
	} {
		if _, err := s.CreateIndex(ctx, crashColl, def, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateGeoIndex(ctx, crashColl, docstore.GeoIndexDef{Name: "loc", Field: "loc"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTextIndex(ctx, crashColl, docstore.TextIndexDef{Name: "body", Fields: []string{"body"}, Stem: true, StopWords: true}, nil); err != nil {
		t.Fatal(err)
	}
	w := &crashWriter{t: t, s: s, r: rand.New(rand.NewPCG(seed, 1)), seed: seed,
		live: map[string]docstore.Value{}, ids: map[string]docstore.Value{}}
	for end := time.Now().Add(crashChildFor); time.Now().Before(end); {
		w.step(ctx)
	}
	t.Fatalf("not killed within %v", crashChildFor)
}

// crashWriter makes the child's writes and keeps what it acknowledged.
type crashWriter struct {
	t    *testing.T
	s    *docstore.Store
	r    *rand.Rand
	seed uint64
	n    int                       // documents made, for unique emails
	live map[string]docstore.Value // by the id's JSON: the acknowledged document
	ids  map[string]docstore.Value // by the id's JSON: the id
}

// doc returns a new document with a unique email; its body's size varies
// from a few bytes to more than a page.
func (w *crashWriter) doc() docstore.Value {
	body := strings.Repeat(string(rune('a'+w.r.IntN(26))), w.r.IntN(6000))
	return docstore.Map(
		docstore.Field{Key: "email", Value: w.email()},
		docstore.Field{Key: "group", Value: docstore.Int(w.r.Int64N(20))},
		docstore.Field{Key: "n", Value: docstore.Int(w.r.Int64N(1000))},
		docstore.Field{Key: "score", Value: docstore.Float(w.r.Float64())},
		docstore.Field{Key: "loc", Value: docstore.Array(docstore.Float(w.r.Float64()*360-180), docstore.Float(w.r.Float64()*180-90))},
		docstore.Field{Key: "body", Value: docstore.Text(body)},
		docstore.Field{Key: "nested", Value: docstore.Map(
			docstore.Field{Key: "k", Value: docstore.Int(w.r.Int64N(1_000_000))},
			docstore.Field{Key: "tags", Value: docstore.Array(docstore.Text("x"), docstore.Int(w.r.Int64N(9)))},
		)},
	)
}

// email returns an email no document had before.
func (w *crashWriter) email() docstore.Value {
	w.n++
	return docstore.Text(fmt.Sprintf("w%d-%d@crash", w.seed%1000, w.n))
}

// poolID returns one of the ids Put and PutMany choose from.
func (w *crashWriter) poolID() docstore.Value {
	return docstore.Text(fmt.Sprintf("p%03d", w.r.IntN(crashPool)))
}

// liveID returns the id of a random acknowledged document, if any.
func (w *crashWriter) liveID() (docstore.Value, bool) {
	if len(w.live) == 0 {
		return docstore.Value{}, false
	}
	keys := slices.Sorted(maps.Keys(w.live))
	return w.ids[keys[w.r.IntN(len(keys))]], true
}

// report prints one line of the report.
func (w *crashWriter) report(phase, op string, docs []crashEntry) {
	b, err := json.Marshal(crashLine{Phase: phase, Op: op, Docs: docs})
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := os.Stdout.WriteString(crashPrefix + string(b) + "\n"); err != nil {
		w.t.Fatal(err)
	}
}

func (w *crashWriter) entry(id, doc docstore.Value, rev uint64) crashEntry {
	return crashEntry{ID: json.RawMessage(mustJSON(w.t, id)), Doc: json.RawMessage(mustJSON(w.t, doc)), Rev: rev}
}

// write reports op begun, runs it and, once call returned nil, checks
// that the store returned the documents it was given (want), records them
// and reports the write acknowledged.
func (w *crashWriter) write(op string, begun []crashEntry, want []docstore.Value, call func() ([]docstore.Doc, error)) {
	t := w.t
	w.report("begin", op, begun)
	got, err := call()
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	entries := make([]crashEntry, len(got))
	for i, d := range got {
		if mustJSON(t, d.Value) != mustJSON(t, want[i]) {
			t.Fatalf("%s %s returned %s, want %s", op, mustJSON(t, d.ID), mustJSON(t, d.Value), mustJSON(t, want[i]))
		}
		k := mustJSON(t, d.ID)
		w.live[k], w.ids[k] = d.Value, d.ID
		entries[i] = w.entry(d.ID, d.Value, d.Revision)
	}
	w.report("ack", op, entries)
}

// one adapts a call returning one document for write.
func one(d docstore.Doc, err error) ([]docstore.Doc, error) { return []docstore.Doc{d}, err }

// step makes one random write.
func (w *crashWriter) step(ctx context.Context) {
	t := w.t
	target, live := w.liveID() // for a patch or a delete
	if other, ok := w.liveID(); live && ok && w.r.IntN(4) == 0 {
		// An edge changes no document, so it is not reported: Verify
		// checks after the kill that every edge is whole, both ends there.
		if _, err := w.s.Link(ctx, docstore.Ref{Collection: crashColl, ID: target}, "next", docstore.Ref{Collection: crashColl, ID: other}, docstore.Null()); err != nil {
			t.Fatal(err)
		}
	}
	switch p := w.r.IntN(100); {
	case p < 25:
		doc := w.doc()
		w.write("insert", []crashEntry{{ID: json.RawMessage("null"), Doc: json.RawMessage(mustJSON(t, doc))}}, []docstore.Value{doc},
			func() ([]docstore.Doc, error) { return one(w.s.Insert(ctx, crashColl, doc)) })
	case p < 50:
		id, doc := w.poolID(), w.doc()
		w.write("put", []crashEntry{w.entry(id, doc, 0)}, []docstore.Value{doc},
			func() ([]docstore.Doc, error) { return one(w.s.Put(ctx, crashColl, id, doc)) })
	case p < 65 && live:
		id := target
		patch := docstore.Map(
			docstore.Field{Key: "n", Value: docstore.Int(w.r.Int64N(1000))},
			docstore.Field{Key: "email", Value: w.email()},
			docstore.Field{Key: "score", Value: docstore.Null()},
			docstore.Field{Key: "patched", Value: docstore.Bool(true)},
		)
		want := w.live[mustJSON(t, id)]
		fields, _ := patch.Fields()
		for _, f := range fields { // a merge patch of top-level fields
			if f.Value.IsNull() {
				want = want.Without(f.Key)
			} else {
				want = want.With(f.Key, f.Value)
			}
		}
		w.write("patch", []crashEntry{w.entry(id, want, 0)}, []docstore.Value{want},
			func() ([]docstore.Doc, error) { return one(w.s.Patch(ctx, crashColl, id, patch)) })
	case p < 75 && live:
		id := target
		w.report("begin", "delete", []crashEntry{w.entry(id, docstore.Null(), 0)})
		deleted, err := w.s.Delete(ctx, crashColl, id)
		if err != nil || !deleted {
			t.Fatalf("delete %s: %v, %v", mustJSON(t, id), deleted, err)
		}
		k := mustJSON(t, id)
		delete(w.live, k)
		delete(w.ids, k)
		w.report("ack", "delete", []crashEntry{w.entry(id, docstore.Null(), 0)})
	case p < 90:
		var docs []docstore.Doc
		var want []docstore.Value
		var entries []crashEntry
		for n := 2 + w.r.IntN(7); len(docs) < n; {
			id := w.poolID()
			if slices.ContainsFunc(docs, func(d docstore.Doc) bool { return docstore.Equal(d.ID, id) }) {
				continue
			}
			doc := w.doc()
			docs, want = append(docs, docstore.Doc{ID: id, Value: doc}), append(want, doc)
			entries = append(entries, w.entry(id, doc, 0))
		}
		w.write("put_many", entries, want, func() ([]docstore.Doc, error) { return w.s.PutMany(ctx, crashColl, docs) })
	default:
		w.violate(ctx)
	}
}

// violate makes a write the unique index refuses, unreported: whatever of
// it the store kept would show as a document never acknowledged.
func (w *crashWriter) violate(ctx context.Context) {
	t := w.t
	owner, ok := w.liveID()
	if !ok {
		return
	}
	email, _ := w.live[mustJSON(t, owner)].Get("email")
	valid, dup := w.doc(), w.doc().With("email", email)
	validID, dupID := docstore.Text(fmt.Sprintf("v%d", w.n-1)), docstore.Text(fmt.Sprintf("v%d", w.n))
	var err error
	if w.r.IntN(2) == 0 {
		_, err = w.s.Put(ctx, crashColl, dupID, dup)
	} else { // all or nothing: the first document alone would be valid
		_, err = w.s.PutMany(ctx, crashColl, []docstore.Doc{{ID: validID, Value: valid}, {ID: dupID, Value: dup}})
	}
	var e *docstore.Error
	if !errors.As(err, &e) || e.Code != docstore.CodeUniqueViolation {
		t.Fatalf("a write repeating the email of %s: %v, want a unique violation", mustJSON(t, owner), err)
	}
}
