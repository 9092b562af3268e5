package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/docstore"
)

// The resident memory of a store (issue 30) is measured in a process of its
// own, so that what the benchmark itself holds (the documents it ingested,
// the other side) does not count: the test binary runs again with
// storeMemoryEnv set, and TestStoreMemoryChild opens one side's file, runs
// one query of each kind, and prints the time each step took and the
// process's resident memory after it, from /proc/self/status. bbolt maps
// its file, so the pages it reads are file-backed resident memory (RssFile,
// shared with the page cache and reclaimable), while SQLite reads pages
// into a cache on its heap (RssAnon): only the sum compares like with like,
// and the target counts it.
const storeMemoryEnv = "MCPKIT_BENCH_STORE_MEMORY"

// storeMemorySteps are the steps of TestStoreMemoryChild, in order: the
// resident memory before the store is opened is the process's own (the
// test binary, the Go runtime), the same for both sides.
var storeMemorySteps = []string{"before open", "open", "first get", "first eq page", "first eq count", "first range page"}

// storeMemoryRuns is how many child processes each side runs (their
// median is reported), in turns.
const storeMemoryRuns = 3

// storeMemoryMaxRatio is the target: the docstore's resident memory at
// most twice SQLite's after each step (plus the vectors' own size where
// the documents hold vectors: BenchmarkStoreVector).
const storeMemoryMaxRatio = 2.0

// memStep is a child's measure of one step.
type memStep struct {
	Step   string        `json:"step"`
	Took   time.Duration `json:"took"`
	AnonKB int64         `json:"anon_kb"`
	FileKB int64         `json:"file_kb"`
}

// memLinePrefix starts the child's line of results on its stdout.
const memLinePrefix = "STORE-MEMORY "

// TestStoreMemoryChild is the memory benchmarks' child process (see
// storeMemoryEnv): "<workload>:<file>" names what it opens and runs (see
// memWorkloads); the queries' arguments are fixed, the same on both sides.
func TestStoreMemoryChild(t *testing.T) {
	spec, ok := os.LookupEnv(storeMemoryEnv)
	if !ok {
		t.Skip("run by BenchmarkStoreSQLite and BenchmarkStoreVector in a process of its own")
	}
	ctx := t.Context()
	which, path, _ := strings.Cut(spec, ":")
	w, ok := memWorkloads[which]
	if !ok {
		t.Fatalf("unknown workload %q", which)
	}
	var steps []memStep
	mark := func(step string, start time.Time) {
		took := time.Since(start)
		anon, file, err := residentKB()
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, memStep{Step: step, Took: took, AnonKB: anon, FileKB: file})
	}
	mark(w.steps[0], time.Now())
	start := time.Now()
	queries, closeFn, err := w.open(t, path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	mark(w.steps[1], start)
	for i, run := range queries {
		start := time.Now()
		if err := run(ctx); err != nil {
			t.Fatal(err)
		}
		mark(w.steps[2+i], start)
	}
	line, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", memLinePrefix, line)
}

// memWorkload is what a memory child does: open a file (the step after
// "before open") and run queries, one step each, in the order of steps.
type memWorkload struct {
	steps []string
	open  func(tb testing.TB, path string) (queries []func(context.Context) error, closeFn func() error, err error)
}

// memWorkloads are the children's workloads by name: BenchmarkStoreSQLite's
// on either side, and BenchmarkStoreVector's (bench_store_vector_test.go).
var memWorkloads = map[string]memWorkload{
	"docstore":         {storeMemorySteps, storeSideQueries("docstore")},
	"sqlite":           {storeMemorySteps, storeSideQueries("sqlite")},
	"docstore-vectors": {vecMemorySteps, openVecDocstore},
	"sqlite-vectors":   {vecMemorySteps[:3], openVecSQLite},
}

// storeSideQueries opens which side of BenchmarkStoreSQLite and returns
// its first query of each kind.
func storeSideQueries(which string) func(tb testing.TB, path string) ([]func(context.Context) error, func() error, error) {
	return func(tb testing.TB, path string) ([]func(context.Context) error, func() error, error) {
		side, err := openStoreSideAgain(tb.Context(), which, path)
		if err != nil {
			return nil, nil, err
		}
		const id, group = 4242, 421
		return []func(context.Context) error{
			func(ctx context.Context) error { _, err := side.get(ctx, id, false); return err },
			func(ctx context.Context) error { _, err := side.eqPage(ctx, group); return err },
			func(ctx context.Context) error { _, err := side.count(ctx, group); return err },
			func(ctx context.Context) error {
				_, err := side.rangePage(ctx, group, group+storeRangeSpan-1)
				return err
			},
		}, side.close, nil
	}
}

// openStoreSideAgain opens an existing side's file as the benchmark's
// reopen does: "docstore" or "sqlite".
func openStoreSideAgain(ctx context.Context, which, path string) (storeSide, error) {
	switch which {
	case "docstore":
		s, err := docstore.Open(path, docstore.Options{})
		if err != nil {
			return nil, err
		}
		return &docstoreSide{path: path, s: s}, nil
	case "sqlite":
		s := &sqliteSide{path: path}
		if err := s.open(ctx); err != nil {
			return nil, err
		}
		if err := s.prepare(ctx); err != nil {
			s.close()
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("unknown side %q", which)
}

// residentKB returns the process's anonymous and file-backed resident
// memory in KiB (RssAnon, and RssFile plus RssShmem).
func residentKB() (anon, file int64, err error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, err
	}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "RssAnon" && name != "RssFile" && name != "RssShmem") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/self/status %s: %w", name, err)
		}
		found++
		if name == "RssAnon" {
			anon = n
		} else {
			file += n
		}
	}
	if found != 3 {
		return 0, 0, fmt.Errorf("/proc/self/status lacks RssAnon, RssFile or RssShmem")
	}
	return anon, file, nil
}

// measureStoreMemory runs TestStoreMemoryChild storeMemoryRuns times on
// each side's file, the sides taking turns, and returns each side's
// median of each step (by total resident memory; time apart).
func measureStoreMemory(b *testing.B, files [2][2]string) [2][]memStep {
	b.Helper()
	var runs [2][][]memStep
	for r := range storeMemoryRuns {
		for j := range 2 {
			i := (j + r) % 2
			steps, err := runStoreMemoryChild(b.Context(), files[i][0], files[i][1])
			if err != nil {
				b.Fatal(err)
			}
			runs[i] = append(runs[i], steps)
		}
	}
	var med [2][]memStep
	for i := range 2 {
		for s := range runs[i][0] {
			var took []time.Duration
			var byRSS []memStep
			for _, run := range runs[i] {
				took = append(took, run[s].Took)
				byRSS = append(byRSS, run[s])
			}
			slices.Sort(took)
			slices.SortFunc(byRSS, func(x, y memStep) int { return int((x.AnonKB + x.FileKB) - (y.AnonKB + y.FileKB)) })
			m := byRSS[len(byRSS)/2]
			m.Took = took[len(took)/2]
			med[i] = append(med[i], m)
		}
	}
	return med
}

// runStoreMemoryChild runs TestStoreMemoryChild on side's file and
// returns its steps.
func runStoreMemoryChild(ctx context.Context, side, path string) ([]memStep, error) {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStoreMemoryChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), storeMemoryEnv+"="+side+":"+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("memory of %s: %w\n%s", side, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, memLinePrefix); ok {
			var steps []memStep
			if err := json.Unmarshal([]byte(rest), &steps); err != nil {
				return nil, fmt.Errorf("memory of %s: %w", side, err)
			}
			if want := len(memWorkloads[side].steps); len(steps) != want {
				return nil, fmt.Errorf("memory of %s: %d steps, want %d", side, len(steps), want)
			}
			return steps, nil
		}
	}
	return nil, fmt.Errorf("memory of %s: no result line in\n%s", side, out)
}

// storeMemoryTable returns the table of med (see measureStoreMemory),
// headed header, one row per step, and whether every step met the target:
// the resident memory (anonymous plus file-backed) of the docstore at
// most storeMemoryMaxRatio times SQLite's plus allowKB, and the first
// query of each kind's time. Where SQLite ran fewer steps (it has no
// vector query), its figure is its last step's and its time "-". With
// needKB (one a step), each row also has its bound, storeMemoryMaxRatio
// times SQLite's plus the step's needKB (the store's pages it needs at
// least), and the docstore's total over it; the target does not count it.
func storeMemoryTable(header string, steps []string, med [2][]memStep, allowKB int64, needKB []int64) (table string, met bool) {
	met = true
	width := len(header)
	for _, step := range steps {
		width = max(width, len(step))
	}
	goal := fmt.Sprintf("≤ %.0f× sqlite", storeMemoryMaxRatio)
	if allowKB > 0 {
		goal += fmt.Sprintf(" + %.1f MB", kbMB(allowKB))
	}
	var bound string // the bound's columns, when needKB is given
	if needKB != nil {
		bound = fmt.Sprintf("  %9s  %7s", "bound", "÷ bound")
	}
	var rows []string
	rows = append(rows, fmt.Sprintf("%-*s  %8s  %8s  %8s  %8s  %9s  %9s  %5s  %8s  %8s%s  %s",
		width, header, "ds anon", "ds file", "sq anon", "sq file", "ds total", "sq total", "ratio", "ds µs", "sq µs", bound, "target"))
	for s, step := range steps {
		ds, sq := med[0][s], med[1][min(s, len(med[1])-1)]
		sqTook := micros(sq.Took)
		if s >= len(med[1]) {
			sqTook = "-"
		}
		dsTotal, sqTotal := ds.AnonKB+ds.FileKB, sq.AnonKB+sq.FileKB
		ratio := float64(dsTotal) / float64(sqTotal)
		target := goal + ": met"
		if float64(dsTotal) > storeMemoryMaxRatio*float64(sqTotal)+float64(allowKB) {
			target, met = goal+": MISSED", false
		}
		if needKB != nil {
			least := int64(storeMemoryMaxRatio*float64(sqTotal)) + needKB[s]
			bound = fmt.Sprintf("  %9d  %7.2f", least, float64(dsTotal)/float64(least))
		}
		rows = append(rows, fmt.Sprintf("%-*s  %8d  %8d  %8d  %8d  %9d  %9d  %5.2f  %8s  %8s%s  %s",
			width, step, ds.AnonKB, ds.FileKB, sq.AnonKB, sq.FileKB, dsTotal, sqTotal, ratio, micros(ds.Took), sqTook, bound, target))
	}
	return strings.Join(rows, "\n"), met
}
