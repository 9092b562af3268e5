package test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// exportedMetric is a metric instrument the code creates.
type exportedMetric struct {
	name, unit, kind string // kind: counter, updowncounter, histogram, gauge
	file             string
}

// instrumentKinds maps the OpenTelemetry metric API's instrument
// constructors to the kind of metric they make.
var instrumentKinds = map[string]string{
	"Int64Counter": "counter", "Float64Counter": "counter", "Int64ObservableCounter": "counter", "Float64ObservableCounter": "counter",
	"Int64UpDownCounter": "updowncounter", "Float64UpDownCounter": "updowncounter",
	"Int64ObservableUpDownCounter": "updowncounter", "Float64ObservableUpDownCounter": "updowncounter",
	"Int64Histogram": "histogram", "Float64Histogram": "histogram",
	"Int64Gauge": "gauge", "Float64Gauge": "gauge", "Int64ObservableGauge": "gauge", "Float64ObservableGauge": "gauge",
}

// exportedMetrics finds every metric instrument the program's code
// (non-test Go files under pkg/, plugins/, internal/ and cmd/) creates,
// with its name and unit: string literals, constants of the same package
// or another package's constants (by name, when the tree defines it once).
func exportedMetrics(t *testing.T) []exportedMetric {
	t.Helper()
	var pkgs []*goPackage
	all := map[string]string{} // every package's constants; "" for a name defined twice differently
	for _, root := range []string{"pkg", "plugins", "internal", "cmd"} {
		dirs := map[string][]string{}
		err := filepath.WalkDir(filepath.Join("..", root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, files := range dirs {
			p := parsePackage(t, files)
			for k, v := range p.consts {
				if old, seen := all[k]; seen && old != v {
					v = ""
				}
				all[k] = v
			}
			pkgs = append(pkgs, p)
		}
	}
	var out []exportedMetric
	for _, p := range pkgs {
		out = append(out, p.metrics(t, all)...)
	}
	return out
}

// goPackage is one package's parsed files and string constants.
type goPackage struct {
	files  []string
	parsed []*ast.File
	consts map[string]string
}

// parsePackage parses one package's files and collects its constants.
func parsePackage(t *testing.T, files []string) *goPackage {
	t.Helper()
	p := &goPackage{files: files, consts: map[string]string{}}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		p.parsed = append(p.parsed, af)
		for _, decl := range af.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							p.consts[n.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	return p
}

// metrics finds the metric instruments the package creates; all holds
// every package's constants.
func (p *goPackage) metrics(t *testing.T, all map[string]string) []exportedMetric {
	t.Helper()
	files, parsed := p.files, p.parsed
	str := func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.Ident:
			s, ok := p.consts[e.Name]
			return s, ok
		case *ast.SelectorExpr:
			s := all[e.Sel.Name]
			return s, s != ""
		}
		return "", false
	}
	var out []exportedMetric
	for i, af := range parsed {
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			kind, isInstrument := instrumentKinds[sel.Sel.Name]
			if !isInstrument || len(call.Args) == 0 {
				return true
			}
			name, ok := str(call.Args[0])
			if !ok {
				t.Errorf("%s: a %s whose name is not a literal or a constant the tree defines once: the dashboard check cannot see it", files[i], sel.Sel.Name)
				return true
			}
			m := exportedMetric{name: name, kind: kind, file: files[i]}
			for _, a := range call.Args[1:] {
				if c, ok := a.(*ast.CallExpr); ok {
					if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "WithUnit" && len(c.Args) == 1 {
						m.unit, _ = str(c.Args[0])
					}
				}
			}
			out = append(out, m)
			return true
		})
	}
	return out
}

// promUnits are the unit suffixes the OpenTelemetry Prometheus exporter
// appends (its default translation, UnderscoreEscapingWithSuffixes, by
// github.com/prometheus/otlptranslator) for the units the code uses;
// annotations ({call}) add none.
var promUnits = map[string]string{"s": "_seconds", "ms": "_milliseconds", "By": "_bytes", "": ""}

// promNames are the series names the Prometheus exporter writes for m.
func promNames(t *testing.T, m exportedMetric) []string {
	t.Helper()
	base := regexp.MustCompile(`[^a-zA-Z0-9_:]`).ReplaceAllString(m.name, "_")
	unit := m.unit
	if strings.HasPrefix(unit, "{") && strings.HasSuffix(unit, "}") {
		unit = ""
	}
	if m.unit == "1" && m.kind == "gauge" {
		base += "_ratio"
	} else if suffix, ok := promUnits[unit]; ok {
		if !strings.HasSuffix(base, suffix) {
			base += suffix
		}
	} else if unit != "1" {
		t.Errorf("%s: metric %s has unit %q, whose Prometheus suffix this test does not know: add it to promUnits", m.file, m.name, m.unit)
	}
	switch m.kind {
	case "counter":
		return []string{base + "_total"}
	case "histogram":
		return []string{base + "_bucket", base + "_sum", base + "_count"}
	}
	return []string{base}
}

// promqlWords are PromQL's functions, aggregations and keywords: what is
// left of an expression without them, its label matchers, groupings,
// ranges and strings is its metric names.
var promqlWords = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "rate": true, "irate": true, "increase": true,
	"histogram_quantile": true, "by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "and": true, "or": true, "unless": true, "bool": true, "offset": true, "topk": true,
	"bottomk": true, "label_values": true, "clamp_min": true, "delta": true, "deriv": true, "abs": true, "vector": true,
}

// promqlMetrics are the metric names a PromQL expression (or a Grafana
// label_values query) reads.
func promqlMetrics(expr string) []string {
	// label_values(SELECTOR, LABEL): the label is no metric.
	expr = regexp.MustCompile(`label_values\((.*),\s*\w+\s*\)`).ReplaceAllString(expr, "$1")
	for _, re := range []string{`"(?:[^"\\]|\\.)*"`, `\{[^}]*\}`, `\[[^\]]*\]`, `\b(?:by|without|on|ignoring)\s*\([^)]*\)`, `\$\w+`} {
		expr = regexp.MustCompile(re).ReplaceAllString(expr, " ")
	}
	var out []string
	for _, w := range regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`).FindAllString(expr, -1) {
		if !promqlWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// dashboardQueries are the PromQL expressions of a Grafana dashboard:
// every target's expr and every query variable's query.
func dashboardQueries(t *testing.T, v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && (k == "expr" || k == "definition") {
				out = append(out, s)
			}
			out = append(out, dashboardQueries(t, e)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, dashboardQueries(t, e)...)
		}
	}
	return out
}

// prometheusMetrics are the series Prometheus itself writes for each
// target, which the dashboard may query beside the program's.
var prometheusMetrics = map[string]bool{"up": true, "scrape_duration_seconds": true}

// TestDeployDashboardMetrics: every metric deploy/grafana/mcpkit.json
// queries is one the code exports, under the name the OpenTelemetry
// Prometheus exporter gives it, and the plugins' metrics (those the
// plugins' telemetry tests check) all have a panel and are documented. The core's metrics
// (mcp.*) are checked once the tree's code exports any: until the core's
// telemetry and the plugins' are in one tree, their names are listed.
func TestDeployDashboardMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "mcpkit.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("mcpkit.json: %v", err)
	}
	exported := map[string]exportedMetric{}
	coreInTree := false
	for _, m := range exportedMetrics(t) {
		for _, n := range promNames(t, m) {
			exported[n] = m
		}
		coreInTree = coreInTree || strings.HasPrefix(m.name, "mcp.")
	}
	queried := map[string]bool{}
	queries := dashboardQueries(t, dash)
	if len(queries) < 10 {
		t.Fatalf("the dashboard has %d queries", len(queries))
	}
	for _, q := range queries {
		names := promqlMetrics(q)
		if len(names) == 0 {
			t.Errorf("query %q reads no metric", q)
		}
		for _, n := range names {
			queried[n] = true
			_, ok := exported[n]
			switch {
			case ok || prometheusMetrics[n]:
			case strings.HasPrefix(n, "mcp_") && !coreInTree:
				t.Logf("%s: a core metric, not in this tree yet", n)
			default:
				t.Errorf("the dashboard queries %s, which no code exports (query %q)", n, q)
			}
		}
	}
	docs, err := os.ReadFile(filepath.Join("..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range exportedMetrics(t) {
		if !strings.HasPrefix(m.file, filepath.Join("..", "plugins")) && !strings.Contains(m.file, filepath.Join("pkg", "action")) {
			continue
		}
		names := promNames(t, m)
		if !slices.ContainsFunc(names, func(n string) bool { return queried[n] }) {
			t.Errorf("%s (%s, %s) has no panel in the dashboard", m.name, names[0], m.file)
		}
		if !bytes.Contains(docs, []byte("`"+m.name+"`")) {
			t.Errorf("%s (%s) is not listed in docs/observability*.md", m.name, m.file)
		}
	}
}

// TestDeployPrometheusConfig: the scrape configurations scrape /metrics
// with a bearer token read from a file (never inline): the single
// server's, compose's (every replica of compose.yaml, by name) and
// Kubernetes' (every mcpkit pod, discovered, on port 8080).
func TestDeployPrometheusConfig(t *testing.T) {
	type scrape struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		Authorization *struct {
			Type            string `yaml:"type"`
			Credentials     string `yaml:"credentials"`
			CredentialsFile string `yaml:"credentials_file"`
		} `yaml:"authorization"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
		KubernetesSD []struct {
			Role string `yaml:"role"`
		} `yaml:"kubernetes_sd_configs"`
		Relabel []struct {
			SourceLabels []string `yaml:"source_labels"`
			Regex        string   `yaml:"regex"`
			Action       string   `yaml:"action"`
		} `yaml:"relabel_configs"`
	}
	load := func(path string) scrape {
		t.Helper()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			ScrapeConfigs []scrape `yaml:"scrape_configs"`
		}
		if err := yaml.Unmarshal(raw, &cfg); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(cfg.ScrapeConfigs) != 1 {
			t.Fatalf("%s: %d scrape configs, want 1", path, len(cfg.ScrapeConfigs))
		}
		s := cfg.ScrapeConfigs[0]
		if s.JobName != "mcpkit" || s.MetricsPath != "/metrics" || s.Authorization == nil || s.Authorization.Type != "Bearer" ||
			s.Authorization.CredentialsFile == "" || s.Authorization.Credentials != "" {
			t.Errorf("%s: job %q path %q authorization %+v: want job mcpkit, /metrics, a Bearer token from a file", path, s.JobName, s.MetricsPath, s.Authorization)
		}
		return s
	}
	if s := load(filepath.Join("..", "deploy", "prometheus", "prometheus.yml")); len(s.StaticConfigs) != 1 || len(s.StaticConfigs[0].Targets) != 1 {
		t.Errorf("deploy/prometheus/prometheus.yml: targets %+v, want one server", s.StaticConfigs)
	}

	var c composeFile
	if err := yaml.Unmarshal(readScale(t, "compose.yaml"), &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var want []string
	for name, s := range c.Services {
		if slices.Contains(s.Command, "serve") {
			want = append(want, name+":8080")
		}
	}
	slices.Sort(want)
	prom, ok := c.Services["prometheus"]
	if !ok || !slices.Contains(secretNames(prom.Secrets), "prometheus-token") || len(prom.Configs) != 1 || c.Configs[prom.Configs[0].Source].File != "./prometheus.yml" {
		t.Fatalf("compose.yaml: the prometheus service %+v does not mount prometheus.yml and the prometheus-token secret", prom)
	}
	s := load(filepath.Join(scaleDir, "prometheus.yml"))
	if s.Authorization != nil && s.Authorization.CredentialsFile != "/run/secrets/prometheus-token" {
		t.Errorf("deploy/scale/prometheus.yml reads its token from %s, not the prometheus-token secret", s.Authorization.CredentialsFile)
	}
	var got []string
	for _, sc := range s.StaticConfigs {
		got = append(got, sc.Targets...)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("deploy/scale/prometheus.yml scrapes %v, compose's replicas are %v: every replica, directly", got, want)
	}

	k := load(filepath.Join(scaleDir, "prometheus-kubernetes.yml"))
	keeps := map[string]string{}
	for _, r := range k.Relabel {
		if r.Action == "keep" && len(r.SourceLabels) == 1 {
			keeps[r.SourceLabels[0]] = r.Regex
		}
	}
	if len(k.KubernetesSD) != 1 || k.KubernetesSD[0].Role != "pod" || keeps["__meta_kubernetes_pod_label_app"] != "mcpkit" ||
		keeps["__meta_kubernetes_pod_container_port_number"] != "8080" {
		t.Errorf("prometheus-kubernetes.yml: sd %+v keeps %v: want every pod labelled app=mcpkit on port 8080", k.KubernetesSD, keeps)
	}
	if k.Authorization != nil && k.Authorization.CredentialsFile != "/run/secrets/prometheus-token" {
		t.Errorf("prometheus-kubernetes.yml reads its token from %s", k.Authorization.CredentialsFile)
	}
	kustom := string(readScale(t, "kustomization.yaml"))
	for _, want := range []string{"prometheus.yml=prometheus-kubernetes.yml", "prometheus-token=secrets/prometheus-token"} {
		if !strings.Contains(kustom, want) {
			t.Errorf("kustomization.yaml lacks %q", want)
		}
	}
}
