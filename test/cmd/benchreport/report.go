package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Machine describes where and when the benchmarks ran.
type Machine struct {
	Date    string // UTC
	Go      string
	CPU     string
	Cores   int
	Memory  string
	Load    string   // load averages before, at peak and after the run
	Targets []string // each make target run, its duration and exit status
}

// Figures are a row's evaluated figures.
type Figures struct {
	Row              Row
	Mine, Peer       float64
	HasMine, HasPeer bool
	// PeerOther is the peer's other figure (Row.PeerOther), if found.
	PeerOther    float64
	HasPeerOther bool
	// Verdicts are the row's targets, each with its outcome.
	Verdicts []Verdict
	// Quantiles are the latency quantiles found (seconds; NaN when a
	// side lacks one).
	Quantiles []QuantileValue
}

// Verdict is one target's outcome.
type Verdict struct {
	Target string // as the report prints it: "ratio ≤ 1.10"
	Known  bool   // its figures were measured
	Met    bool
	Shown  string // the figure checked, when not in the row's columns
	// Speed is the target on the speed scale of the ratio plot (peer's
	// time over mcpkit's, or mcpkit's rate over the peer's), 0 when it
	// is not a ratio target.
	Speed float64
}

// QuantileValue is one latency quantile of a row.
type QuantileValue struct {
	Q          string
	Mine, Peer float64
}

// Ratio is mcpkit's figure over the peer's.
func (f *Figures) Ratio() (float64, bool) {
	if !f.HasMine || !f.HasPeer || f.Peer == 0 {
		return 0, false
	}
	return f.Mine / f.Peer, true
}

// Speed is how many times faster mcpkit is than its peer (> 1 faster):
// the ratio for rates, its inverse for times.
func (f *Figures) Speed() (float64, bool) {
	r, ok := f.Ratio()
	if !ok || r == 0 || f.Row.Kind == Size {
		return 0, false
	}
	if f.Row.Kind == Time {
		return 1 / r, true
	}
	return r, true
}

// AreaFigures is an area with its rows evaluated.
type AreaFigures struct {
	Area
	Rows []Figures
	Logs []string // what its benchmarks logged
	// Tables are the logged tables it shows whole (Area.Tables found),
	// each as rows of cells, the header first.
	Tables [][][]string
	// Plots are the PNG files drawn for it (names within the report's
	// directory).
	Plots []Plot
}

// Plot is a PNG of the report.
type Plot struct{ File, Alt string }

// Evaluate reads every row of the areas in out.
func Evaluate(out *Output, areas []Area) []AreaFigures {
	var res []AreaFigures
	for _, a := range areas {
		af := AreaFigures{Area: a}
		for _, row := range a.Rows {
			af.Rows = append(af.Rows, evaluate(out, row))
		}
		for _, t := range a.Tables {
			if rows := table(out.logs("", t.Bench), t.Header); rows != nil {
				af.Tables = append(af.Tables, rows)
			}
		}
		for _, b := range a.Benches {
			for _, line := range out.logs("", b) {
				af.Logs = append(af.Logs, b+": "+line)
			}
		}
		res = append(res, af)
	}
	return res
}

func evaluate(out *Output, row Row) Figures {
	f := Figures{Row: row}
	f.Mine, f.HasMine = row.Mine.Value(out)
	f.Peer, f.HasPeer = row.Peer.Value(out)
	f.PeerOther, f.HasPeerOther = row.PeerOther.Value(out)
	ratio, hasRatio := f.Ratio()
	for _, c := range row.Checks {
		v := Verdict{}
		var got float64
		switch c.Of {
		case OfRatio:
			v.Target = "ratio " + c.Op + " " + strconv.FormatFloat(c.Limit, 'f', 2, 64)
			got, v.Known = ratio, hasRatio
			v.Speed = c.Limit
			if row.Kind == Time {
				v.Speed = 1 / c.Limit
			}
		case OfMine:
			v.Target = c.Op + " " + format(row.Kind, c.Limit, row.Per)
			got, v.Known = f.Mine, f.HasMine
		case OfAdded:
			v.Target = "adds " + c.Op + " " + format(row.Kind, c.Limit, row.Per)
			got, v.Known = f.Mine-f.Peer, f.HasMine && f.HasPeer
			if v.Known {
				v.Shown = "adds " + format(row.Kind, got, row.Per)
				if f.Peer > 0 && f.Peer+c.Limit > 0 {
					v.Speed = f.Peer / (f.Peer + c.Limit)
				}
			}
		case OfOther:
			v.Target = c.OtherName + " " + c.Op + " " + strconv.FormatFloat(c.Limit, 'f', 2, 64)
			got, v.Known = c.Other.Value(out)
			if v.Known {
				v.Shown = c.OtherName + " " + strconv.FormatFloat(got, 'f', 3, 64)
			}
		}
		if v.Known {
			v.Met = got <= c.Limit
			if c.Op == "≥" {
				v.Met = got >= c.Limit
			}
		}
		f.Verdicts = append(f.Verdicts, v)
	}
	for _, q := range row.Quantiles {
		qv := QuantileValue{Q: q.Q, Mine: math.NaN(), Peer: math.NaN()}
		if v, ok := q.Mine.Value(out); ok {
			qv.Mine = v
		}
		if v, ok := q.Peer.Value(out); ok {
			qv.Peer = v
		}
		if !math.IsNaN(qv.Mine) || !math.IsNaN(qv.Peer) {
			f.Quantiles = append(f.Quantiles, qv)
		}
	}
	return f
}

// format prints a figure of kind k: a duration from seconds, or a rate
// with what it counts.
func format(k Kind, v float64, per string) string {
	switch k {
	case Rate:
		return thousands(v) + " " + per
	case Fraction:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case Size:
		return thousands(v) + " B"
	}
	sign := ""
	if v < 0 {
		sign, v = "−", -v
	}
	switch {
	case v == 0:
		return "0"
	case v < 1e-6:
		return sign + strconv.FormatFloat(v*1e9, 'f', 0, 64) + " ns"
	case v < 1e-3:
		return sign + short(v*1e6) + " µs"
	case v < 1:
		return sign + short(v*1e3) + " ms"
	}
	return sign + short(v) + " s"
}

// short prints v with three significant digits at most, none after the
// point from 100 on.
func short(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// thousands prints v rounded, with commas between thousands (one
// decimal under 100).
func thousands(v float64) string {
	if math.Abs(v) < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatFloat(math.Round(math.Abs(v)), 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if v < 0 {
		s = "−" + s
	}
	return s
}

// Met is the row's overall mark: "met", "missed", "not measured" (a
// figure of a target is missing) or "" (no target).
func (f *Figures) Met() string {
	if len(f.Verdicts) == 0 {
		return ""
	}
	mark := "met"
	for _, v := range f.Verdicts {
		switch {
		case !v.Known && mark == "met":
			mark = "not measured"
		case v.Known && !v.Met:
			mark = "missed"
		}
	}
	return mark
}

// Render writes the Markdown report; imgDir prefixes the plots' file
// names in their links.
func Render(w io.Writer, m Machine, out *Output, areas []AreaFigures, imgDir string) error {
	var b strings.Builder
	b.WriteString("# mcpkit benchmarks\n\n")
	fmt.Fprintf(&b, "Written by `make bench-report` on %s, which runs every benchmark of the project "+
		"(`make bench`, `make bench-resp`, `make bench-store`, `make bench-agent`); `make bench-report BENCH_PUBLISH=1` also "+
		"refreshes this page (docs/benchmarks.md and its plots).\n\n", m.Date)
	b.WriteString("| machine | |\n|---|---|\n")
	for _, kv := range [][2]string{{"CPU", m.CPU}, {"cores", strconv.Itoa(m.Cores)}, {"memory", m.Memory},
		{"load average (1 min)", m.Load}, {"Go", m.Go}, {"runs", strings.Join(m.Targets, "; ")}} {
		fmt.Fprintf(&b, "| %s | %s |\n", kv[0], cellText(kv[1]))
	}
	b.WriteString("\nEach row compares mcpkit with a peer measured in the same run, the two sides alternating so that " +
		"the machine's noise hits both alike; the ratio is mcpkit's figure over the peer's. Rates (per second) are " +
		"better higher, times better lower: absolute figures move with the machine's load, ratios much less. " +
		"In the plots, bars show how many times faster mcpkit is than its peer, on a log scale (right of 1: " +
		"faster; left: slower; the red marks are the targets), and latency plots show each side's quantiles.\n\n")

	var missing []string
	for _, a := range areas {
		for _, f := range a.Rows {
			if !f.HasMine {
				missing = append(missing, a.Title+": "+f.Row.Name)
			}
		}
	}
	if len(out.BuildFailures) > 0 || len(out.Stopped) > 0 || len(out.Failed) > 0 || len(missing) > 0 {
		b.WriteString("**Problems in this run**\n\n")
		for _, p := range dedup(out.BuildFailures) {
			fmt.Fprintf(&b, "- `%s`: the tests did not build, so its benchmarks did not run.\n", p)
		}
		for _, p := range dedup(out.Stopped) {
			fmt.Fprintf(&b, "- `%s` stopped before its benchmarks finished (killed, timed out or panicked: see "+
				"its output kept beside the report).\n", p)
		}
		for _, f := range dedup(out.Failed) {
			fmt.Fprintf(&b, "- `%s` failed: a target it checks was missed (see the rows marked missed) or it "+
				"stopped on an error (see what it logged).\n", f)
		}
		if len(missing) > 0 {
			fmt.Fprintf(&b, "- %d rows were not measured (their benchmark did not run, stopped before measuring, or "+
				"no longer reports the figure): %s.\n", len(missing), strings.Join(missing, "; "))
		}
		b.WriteString("\n")
	}

	for _, a := range areas {
		fmt.Fprintf(&b, "## %s\n\n%s Measured by `%s`.\n\n", a.Title, a.About, a.Command)
		b.WriteString("| benchmark | mcpkit | peer | ratio | target | met |\n|---|---|---|---|---|---|\n")
		for _, f := range a.Rows {
			mine, peer, ratio := "not measured", "—", "—"
			if f.HasMine {
				mine = format(f.Row.Kind, f.Mine, f.Row.Per)
			}
			if f.Row.PeerName != "" {
				name := f.Row.PeerName
				if f.HasPeerOther {
					name += " (" + f.Row.PeerOtherName + " " + strconv.FormatFloat(f.PeerOther, 'f', 3, 64) + ")"
				}
				peer = name + ": not measured"
				if f.HasPeer {
					peer = name + ": " + format(f.Row.Kind, f.Peer, f.Row.Per)
				}
			}
			if r, ok := f.Ratio(); ok {
				ratio = strconv.FormatFloat(r, 'f', 2, 64)
				if r < 0.1 {
					ratio = strconv.FormatFloat(r, 'g', 2, 64)
				}
			}
			var targets, shown []string
			for _, v := range f.Verdicts {
				targets = append(targets, v.Target)
				if v.Shown != "" {
					shown = append(shown, v.Shown)
				}
			}
			met := f.Met()
			switch met {
			case "":
				met = "—"
			case "missed":
				met = "**missed**"
			}
			if len(shown) > 0 {
				met += " (" + strings.Join(shown, ", ") + ")"
			}
			target := strings.Join(targets, ", ")
			if target == "" {
				target = "reported"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cellText(f.Row.Name), mine, cellText(peer), ratio, target, met)
		}
		b.WriteString("\n")
		for _, t := range a.Tables {
			writeTable(&b, t)
		}
		for _, p := range a.Plots {
			fmt.Fprintf(&b, "![%s](%s)\n\n", p.Alt, imgDir+p.File)
		}
		if len(a.Logs) > 0 {
			b.WriteString("<details><summary>What its benchmarks logged</summary>\n\n```text\n")
			b.WriteString(strings.ReplaceAll(strings.Join(a.Logs, "\n"), "```", "'''"))
			b.WriteString("\n```\n\n</details>\n\n")
		}
	}

	b.WriteString("## Other benchmarks\n\nEvery other benchmark of the project, with no peer of its own " +
		"(micro-benchmarks of the engines and codecs), as `go test` reported it.\n\n" +
		"| package | benchmark | runs | figures |\n|---|---|---|---|\n")
	for _, r := range out.Results {
		if r.used {
			continue
		}
		var figs []string
		for _, u := range r.Units {
			v := r.Values[u]
			n := strconv.FormatFloat(v, 'g', 4, 64)
			if math.Abs(v) >= 1000 {
				n = thousands(v)
			}
			figs = append(figs, n+" "+u)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", strings.TrimPrefix(r.Pkg, "github.com/mcpkit/mcpkit/"), r.Name, r.Iters, cellText(strings.Join(figs, ", ")))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTable writes rows (the header first) as a Markdown table.
func writeTable(b *strings.Builder, rows [][]string) {
	line := func(cells []string) {
		b.WriteString("|")
		for i := range rows[0] {
			c := ""
			if i < len(cells) {
				c = cellText(cells[i])
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	line(rows[0])
	b.WriteString(strings.Repeat("|---", len(rows[0])) + "|\n")
	for _, r := range rows[1:] {
		line(r)
	}
	b.WriteString("\n")
}

// cellText escapes what would break a Markdown table cell.
func cellText(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// dedup returns s sorted without repeats.
func dedup(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
