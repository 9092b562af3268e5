package main

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// Output is what `go test -bench -v` printed, in the parts the report
// reads: the results (through benchfmt), what each benchmark logged, which
// failed, and which packages did not build.
type Output struct {
	// CPU is the processor the benchmarks ran on, as `go test` names it.
	CPU string
	// Results are the benchmark results, in the order printed.
	Results []Result
	// Logs are the log lines of each top-level benchmark (its
	// sub-benchmarks' included), keyed by package and name (see key).
	Logs map[string][]string
	// Failed are the benchmarks (full names) reported as failing.
	Failed []string
	// BuildFailures are the packages whose tests did not build.
	BuildFailures []string
	// Stopped are the packages that failed with no benchmark of theirs
	// failing: killed, timed out or panicked.
	Stopped []string
}

// Result is one benchmark result line.
type Result struct {
	Pkg   string // import path
	Name  string // full name without the GOMAXPROCS suffix
	Iters int
	// Values are the measurements by their unit as printed ("ns/op",
	// "ratio", "static-p50-µs", ...).
	Values map[string]float64
	// Units are the units in the order printed.
	Units []string
	used  bool // shown in an area's table
}

// key names a top-level benchmark of a package.
func key(pkg, top string) string { return pkg + " " + top }

var (
	// buildFailed is go test's line for a package whose test binary did
	// not build.
	buildFailed = regexp.MustCompile(`^FAIL\s+(\S+)\s+\[(build|setup) failed\]`)
	// pkgFailed is go test's line for a package that failed after running.
	pkgFailed = regexp.MustCompile(`^FAIL\s+(\S+)\s+[0-9.]+s$`)
	// logLine is a benchmark's log line (`    file_test.go:12: text`);
	// continuation lines of a multi-line message are indented further.
	logLine = regexp.MustCompile(`^    [^\s:]+\.go:\d+: (.*)$`)
)

// Parse reads the output of `go test -bench -v` (several runs may follow
// one another). name names it in errors.
func Parse(data []byte, name string) (*Output, error) {
	out := &Output{Logs: map[string][]string{}}
	r := benchfmt.NewReader(bytes.NewReader(data), name)
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			base, parts := rec.Name.Parts()
			full := "Benchmark" + string(base) // benchfmt drops the prefix
			for _, p := range parts {
				if !bytes.HasPrefix(p, []byte("-")) { // "-2" is GOMAXPROCS
					full += string(p)
				}
			}
			res := Result{Pkg: rec.GetConfig("pkg"), Name: full, Iters: rec.Iters, Values: map[string]float64{}}
			for _, v := range rec.Values {
				unit, val := v.Unit, v.Value
				if v.OrigUnit != "" { // benchfmt tidies ns to sec: keep the benchmark's own unit
					unit, val = v.OrigUnit, v.OrigValue
				}
				res.Values[unit] = val
				res.Units = append(res.Units, unit)
			}
			out.Results = append(out.Results, res)
			if cpu := strings.TrimSpace(rec.GetConfig("cpu")); cpu != "" {
				out.CPU = cpu
			}
		}
		// A *benchfmt.SyntaxError is a line that starts like a result but
		// is not one (a benchmark killed while running): not a result.
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("read benchmark output %s: %w", name, err)
	}

	// Logs, failures and build failures, which benchfmt skips. In -v
	// output a benchmark's name is printed before what it logs, so a log
	// line belongs to the last top-level benchmark named.
	var pkg, top string
	inLog := false
	failedIn := map[string]bool{} // packages with a failed benchmark
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg, top, inLog = strings.TrimPrefix(line, "pkg: "), "", false
		case strings.HasPrefix(line, "Benchmark"):
			name, _, _ := strings.Cut(strings.Fields(line)[0], "/")
			top, inLog = stripProcs(name), false
		case strings.HasPrefix(line, "--- FAIL: Benchmark"):
			name := stripProcs(strings.Fields(line)[2])
			out.Failed = append(out.Failed, name)
			failedIn[pkg] = true
			inLog = false
		case top != "" && logLine.MatchString(line):
			k := key(pkg, top)
			out.Logs[k] = append(out.Logs[k], logLine.FindStringSubmatch(line)[1])
			inLog = true
		case inLog && strings.HasPrefix(line, "        "):
			k := key(pkg, top)
			out.Logs[k] = append(out.Logs[k], strings.TrimPrefix(line, "        "))
		default:
			inLog = false
			if m := buildFailed.FindStringSubmatch(line); m != nil {
				out.BuildFailures = append(out.BuildFailures, m[1])
			} else if m := pkgFailed.FindStringSubmatch(line); m != nil && !failedIn[m[1]] {
				out.Stopped = append(out.Stopped, m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read benchmark output %s: %w", name, err)
	}
	return out, nil
}

// stripProcs drops a "-N" GOMAXPROCS suffix from a benchmark name.
func stripProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// Merge appends o's records to out.
func (out *Output) Merge(o *Output) {
	if out.CPU == "" {
		out.CPU = o.CPU
	}
	out.Results = append(out.Results, o.Results...)
	for k, lines := range o.Logs {
		out.Logs[k] = append(out.Logs[k], lines...)
	}
	out.Failed = append(out.Failed, o.Failed...)
	out.BuildFailures = append(out.BuildFailures, o.BuildFailures...)
	out.Stopped = append(out.Stopped, o.Stopped...)
}

// result returns the result of the benchmark named full in a package
// whose import path ends in pkg ("" for any), or nil.
func (out *Output) result(pkg, full string) *Result {
	for i := range out.Results {
		r := &out.Results[i]
		if r.Name == full && strings.HasSuffix(r.Pkg, pkg) {
			return r
		}
	}
	return nil
}

// markUsed marks every result of the top-level benchmark top (in a
// package whose import path ends in pkg) as shown, its figures being read
// from its logged table.
func (out *Output) markUsed(pkg, top string) {
	for i := range out.Results {
		r := &out.Results[i]
		if name, _, _ := strings.Cut(r.Name, "/"); name == top && strings.HasSuffix(r.Pkg, pkg) {
			r.used = true
		}
	}
}

// logs returns the log lines of the top-level benchmark top in a package
// whose import path ends in pkg ("" for any).
func (out *Output) logs(pkg, top string) []string {
	for k, lines := range out.Logs {
		p, name, _ := strings.Cut(k, " ")
		if name == top && strings.HasSuffix(p, pkg) {
			return lines
		}
	}
	return nil
}

// columns splits a line of a logged table into its cells: text separated
// by two spaces or more.
var columns = regexp.MustCompile(`\s{2,}`)

// cell finds, in lines, the table whose header row starts with header
// (its first cell) and returns the cell of column col in its first row
// whose first cell starts with row.
func cell(lines []string, header, row, col string) (string, bool) {
	var cols []string
	for _, line := range lines {
		cells := columns.Split(strings.TrimSpace(line), -1)
		switch {
		case cells[0] == header && len(cells) > 1:
			cols = cells
		case cols == nil:
		case len(cells) < 2:
			cols = nil // the table ended
		case strings.HasPrefix(cells[0], row):
			for i, c := range cols {
				if c == col && i < len(cells) {
					return cells[i], true
				}
			}
			return "", false
		}
	}
	return "", false
}

// table finds, in lines, the table whose header row starts with header
// (its first cell) and returns its rows split into cells, the header
// first, up to the first line of fewer than two cells; nil when absent.
func table(lines []string, header string) [][]string {
	var rows [][]string
	for _, line := range lines {
		cells := columns.Split(strings.TrimSpace(line), -1)
		switch {
		case rows == nil && cells[0] == header && len(cells) > 1:
			rows = append(rows, cells)
		case rows == nil:
		case len(cells) < 2:
			return rows
		default:
			rows = append(rows, cells)
		}
	}
	return rows
}
