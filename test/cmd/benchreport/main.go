// Command benchreport runs the project's benchmarks and writes a report
// of them: `make bench-report` runs it. It runs each make target named on
// its command line (bench, bench-resp, bench-store, bench-agent) with `go test -v`
// output, keeps each target's output in the report directory, and writes
// there report.md, one table per area (mcpkit's figure, the peer's, their
// ratio, the target and whether it is met), with PNG plots of the ratios
// and of the latency quantiles, headed by the machine and its load. A
// benchmark that fails (a missed target) is reported, not fatal: its
// figures are read from the table it logged. With -publish it also writes
// docs/benchmarks.md and docs/benchmarks/*.png. With -from it only
// rereads the outputs kept by an earlier run.
//
// It lives in the test module so that its plotting library stays out of
// mcpkit's own module. It is a tool of the repository, not of mcpkit.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// run runs the command with args, telling its progress on progress.
func run(args []string, progress io.Writer) error {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	root := fs.String("C", "..", "the repository's root, where make runs")
	outDir := fs.String("out", "bench-report", "the report's directory (relative to -C unless absolute)")
	publish := fs.String("publish", "", "also write DIR/benchmarks.md and DIR/benchmarks/*.png (relative to -C unless absolute)")
	from := fs.Bool("from", false, "run nothing: report the outputs an earlier run kept in -out")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: benchreport [flags] TARGET...   (make targets that run benchmarks)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	targets := fs.Args()
	if len(targets) == 0 {
		fs.Usage()
		return errors.New("no make target given")
	}
	dir := under(*root, *outDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	machinePath := filepath.Join(dir, "machine.json")
	var m Machine
	if *from {
		data, err := os.ReadFile(machinePath)
		if err != nil {
			return fmt.Errorf("-from needs an earlier run's machine.json: %w", err)
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("read %s: %w", machinePath, err)
		}
	} else {
		var err error
		if m, err = runTargets(*root, dir, targets, progress); err != nil {
			return err
		}
	}

	out := &Output{Logs: map[string][]string{}}
	for _, t := range targets {
		file := filepath.Join(dir, t+".txt")
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("the output of make %s: %w", t, err)
		}
		o, err := Parse(data, file)
		if err != nil {
			return err
		}
		out.Merge(o)
	}
	if !*from {
		if out.CPU != "" { // the processor as the benchmarks saw it
			m.CPU = out.CPU
		}
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(machinePath, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", machinePath, err)
		}
	}
	areas, err := Write(dir, m, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "benchreport: wrote %s\n", filepath.Join(dir, "report.md"))
	if *publish != "" {
		docs := under(*root, *publish)
		if err := Publish(docs, dir, m, out, areas); err != nil {
			return err
		}
		fmt.Fprintf(progress, "benchreport: wrote %s\n", filepath.Join(docs, "benchmarks.md"))
	}
	return nil
}

// under is path relative to root, unless it is absolute.
func under(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// Write evaluates out, draws the plots into dir and writes dir/report.md.
// It returns the areas evaluated, with their plots.
func Write(dir string, m Machine, out *Output) ([]AreaFigures, error) {
	areas := Evaluate(out, Areas())
	if err := DrawPlots(areas, dir); err != nil {
		return nil, err
	}
	return areas, writeReport(filepath.Join(dir, "report.md"), "", m, out, areas)
}

// Publish writes docsDir/benchmarks.md and copies the plots drawn in dir
// under docsDir/benchmarks/, replacing the PNGs of an earlier report.
func Publish(docsDir, dir string, m Machine, out *Output, areas []AreaFigures) error {
	imgs := filepath.Join(docsDir, "benchmarks")
	old, err := filepath.Glob(filepath.Join(imgs, "*.png"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("remove the earlier plot: %w", err)
		}
	}
	if err := os.MkdirAll(imgs, 0o755); err != nil {
		return fmt.Errorf("docs plots directory: %w", err)
	}
	for _, a := range areas {
		for _, p := range a.Plots {
			data, err := os.ReadFile(filepath.Join(dir, p.File))
			if err != nil {
				return fmt.Errorf("publish a plot: %w", err)
			}
			if err := os.WriteFile(filepath.Join(imgs, p.File), data, 0o644); err != nil {
				return fmt.Errorf("publish a plot: %w", err)
			}
		}
	}
	return writeReport(filepath.Join(docsDir, "benchmarks.md"), "benchmarks/", m, out, areas)
}

// writeReport renders the report into path, its plots linked with imgDir
// before their names.
func writeReport(path, imgDir string, m Machine, out *Output, areas []AreaFigures) error {
	var b bytes.Buffer
	if err := Render(&b, m, out, areas, imgDir); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}

// runTargets runs each make target in root with `go test -v` output (so
// that what benchmarks log is printed whole, failing ones included),
// keeping its output in dir/<target>.txt, while sampling the load
// average. A target that fails is recorded and the next one runs.
func runTargets(root, dir string, targets []string, progress io.Writer) (Machine, error) {
	m := Machine{
		Date:   time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Go:     runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		CPU:    procField("/proc/cpuinfo", "model name"),
		Cores:  runtime.NumCPU(),
		Memory: memory(),
	}
	before := loadAverage()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	peak := before
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				peak = max(peak, loadAverage())
			}
		}
	})
	defer func() { stop(); wg.Wait() }()

	for _, t := range targets {
		file := filepath.Join(dir, t+".txt")
		f, err := os.Create(file)
		if err != nil {
			return m, fmt.Errorf("output file: %w", err)
		}
		fmt.Fprintf(progress, "benchreport: make %s (output in %s)\n", t, file)
		cmd := exec.Command("make", "-C", root, "--no-print-directory", t)
		cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -v"))
		cmd.Stdout, cmd.Stderr = f, f
		start := time.Now()
		runErr := cmd.Run()
		took := time.Since(start).Round(time.Second)
		if err := f.Close(); err != nil {
			return m, fmt.Errorf("output file: %w", err)
		}
		status := "passed"
		var exit *exec.ExitError
		switch {
		case errors.As(runErr, &exit):
			status = "failed (exit status " + strconv.Itoa(exit.ExitCode()) + ")"
		case runErr != nil:
			return m, fmt.Errorf("make %s: %w", t, runErr)
		}
		fmt.Fprintf(progress, "benchreport: make %s %s in %v\n", t, status, took)
		m.Targets = append(m.Targets, fmt.Sprintf("`make %s` %s in %v", t, status, took))
	}
	stop()
	wg.Wait()
	m.Load = fmt.Sprintf("%.2f before, %.2f at the highest (sampled every 5 s), %.2f after, on %d cores", before, peak, loadAverage(), m.Cores)
	return m, nil
}

// loadAverage is the 1-minute load average, or 0 where it cannot be read.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	if err != nil {
		return 0
	}
	return f
}

// memory is the machine's memory in GiB, from /proc/meminfo.
func memory() string {
	kb, err := strconv.ParseFloat(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 64)
	if err != nil {
		return "unknown"
	}
	return strconv.FormatFloat(kb/(1<<20), 'f', 1, 64) + " GiB"
}

// procField is the value of the first "name: value" line of a /proc file,
// or "unknown".
func procField(file, name string) string {
	f, err := os.Open(file)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == name {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "unknown"
}
