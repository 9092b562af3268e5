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
// most twice SQLite's after each step (the benchmark's documents hold no
// vectors, whose own size the target would add).
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

// TestStoreMemoryChild is BenchmarkStoreSQLite's child process (see
// storeMemoryEnv): "docstore:<file>" or "sqlite:<file>" names what it
// opens; the queries' arguments are fixed, the same on both sides.
func TestStoreMemoryChild(t *testing.T) {
	spec, ok := os.LookupEnv(storeMemoryEnv)
	if !ok {
		t.Skip("run by BenchmarkStoreSQLite in a process of its own")
	}
	ctx := t.Context()
	which, path, _ := strings.Cut(spec, ":")
	var steps []memStep
	mark := func(step string, start time.Time) {
		took := time.Since(start)
		anon, file, err := residentKB()
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, memStep{Step: step, Took: took, AnonKB: anon, FileKB: file})
	}
	mark(storeMemorySteps[0], time.Now())
	start := time.Now()
	side, err := openStoreSideAgain(ctx, which, path)
	if err != nil {
		t.Fatal(err)
	}
	defer side.close()
	mark(storeMemorySteps[1], start)
	const id, group = 4242, 421
	for i, run := range []func() error{
		func() error { _, err := side.get(ctx, id, false); return err },
		func() error { _, err := side.eqPage(ctx, group); return err },
		func() error { _, err := side.count(ctx, group); return err },
		func() error { _, err := side.rangePage(ctx, group, group+storeRangeSpan-1); return err },
	} {
		start := time.Now()
		if err := run(); err != nil {
			t.Fatal(err)
		}
		mark(storeMemorySteps[2+i], start)
	}
	line, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", memLinePrefix, line)
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
		for s := range storeMemorySteps {
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
			if len(steps) != len(storeMemorySteps) {
				return nil, fmt.Errorf("memory of %s: %d steps, want %d", side, len(steps), len(storeMemorySteps))
			}
			return steps, nil
		}
	}
	return nil, fmt.Errorf("memory of %s: no result line in\n%s", side, out)
}

// storeMemoryTable returns the table of med (see measureStoreMemory) and
// whether every step met the target: the resident memory (anonymous plus
// file-backed) of the docstore at most storeMemoryMaxRatio times SQLite's,
// and the first query of each kind's time.
func storeMemoryTable(med [2][]memStep) (table string, met bool) {
	met = true
	var rows []string
	rows = append(rows, fmt.Sprintf("%-20s  %8s  %8s  %8s  %8s  %9s  %9s  %5s  %8s  %8s  %s",
		"memory after (KiB)", "ds anon", "ds file", "sq anon", "sq file", "ds total", "sq total", "ratio", "ds µs", "sq µs", "target"))
	for s, step := range storeMemorySteps {
		ds, sq := med[0][s], med[1][s]
		dsTotal, sqTotal := ds.AnonKB+ds.FileKB, sq.AnonKB+sq.FileKB
		ratio := float64(dsTotal) / float64(sqTotal)
		target := fmt.Sprintf("≤ %.0f× sqlite: met", storeMemoryMaxRatio)
		if ratio > storeMemoryMaxRatio {
			target, met = fmt.Sprintf("≤ %.0f× sqlite: MISSED", storeMemoryMaxRatio), false
		}
		rows = append(rows, fmt.Sprintf("%-20s  %8d  %8d  %8d  %8d  %9d  %9d  %5.2f  %8s  %8s  %s",
			step, ds.AnonKB, ds.FileKB, sq.AnonKB, sq.FileKB, dsTotal, sqTotal, ratio, micros(ds.Took), micros(sq.Took), target))
	}
	return strings.Join(rows, "\n"), met
}
