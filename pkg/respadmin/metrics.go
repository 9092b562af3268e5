package respadmin

import (
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// counterFields are INFO fields that only grow (besides those named
// total_*): they are exposed as counters.
var counterFields = map[string]bool{
	"expired_keys": true, "evicted_keys": true, "keyspace_hits": true, "keyspace_misses": true,
	"rejected_connections": true, "sync_full": true, "sync_partial_ok": true, "sync_partial_err": true,
	"used_cpu_sys": true, "used_cpu_user": true,
	"used_cpu_sys_children": true, "used_cpu_user_children": true,
}

// getMetrics answers a scrape: INFO ALL as Prometheus metrics, through the
// client library's registry and exposition (text or protobuf, as the
// scraper negotiates). A target that cannot be reached gives redis_up 0.
func getMetrics(s *Server, w http.ResponseWriter, r *http.Request, _ caller) error {
	ctx, cancel := s.ctx(r)
	defer cancel()
	start := time.Now()
	var info Info
	v, err := s.pool.one(ctx, "INFO", "ALL")
	if err != nil {
		s.logger.Warn("metrics: INFO failed", "err", err)
	} else {
		info = parseInfo(string(v.Str))
	}
	took := time.Since(start)
	reg := prometheus.NewRegistry()
	if err := reg.Register(&infoCollector{descs: &s.descs, info: info, up: err == nil, took: took}); err != nil {
		return &Error{Status: http.StatusInternalServerError, Kind: "internal", Message: err.Error()}
	}
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(w, r)
	return nil
}

// infoCollector is an unchecked collector (it describes nothing, since
// INFO's fields vary by server version): Collect runs once per scrape.
type infoCollector struct {
	descs *sync.Map // name and labels to *prometheus.Desc, kept across scrapes
	info  Info
	up    bool
	took  time.Duration
}

// Describe implements prometheus.Collector: nothing, as an unchecked
// collector does.
func (c *infoCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c *infoCollector) Collect(ch chan<- prometheus.Metric) {
	collectInfo(ch, c.descs, c.info, c.up, c.took)
}

// collectInfo turns INFO into metrics: redis_up, redis_scrape_duration_seconds,
// redis_instance_info{version,mode,role}, one redis_<field> per numeric
// field (counters for growing ones), redis_db_{keys,expires,avg_ttl_ms}{db},
// redis_command_{calls,usec,rejected_calls,failed_calls}_total{cmd} and
// redis_errors_total{error}.
func collectInfo(ch chan<- prometheus.Metric, descs *sync.Map, info Info, up bool, took time.Duration) {
	emit := func(typ prometheus.ValueType, name, help string, v float64, labels ...string) {
		var names, values []string
		for i := 0; i+1 < len(labels); i += 2 {
			names, values = append(names, labels[i]), append(values, labels[i+1])
		}
		key := name + "\x00" + strings.Join(names, ",")
		d, ok := descs.Load(key)
		if !ok {
			d, _ = descs.LoadOrStore(key, prometheus.NewDesc(name, help, names, nil))
		}
		ch <- prometheus.MustNewConstMetric(d.(*prometheus.Desc), typ, v, values...)
	}
	gauge := func(name, help string, v float64, labels ...string) {
		emit(prometheus.GaugeValue, name, help, v, labels...)
	}
	counter := func(name, help string, v float64, labels ...string) {
		emit(prometheus.CounterValue, name, help, v, labels...)
	}
	upv := 0.0
	if up {
		upv = 1
	}
	gauge("redis_up", "1 when the target answered INFO", upv)
	gauge("redis_scrape_duration_seconds", "how long INFO took", took.Seconds())
	if !up {
		return
	}
	srv, repl := info["server"], info["replication"]
	gauge("redis_instance_info", "the target's version, mode and role (value 1)", 1,
		"version", str(srv["redis_version"]), "mode", str(srv["redis_mode"]), "role", str(repl["role"]))
	sections := make([]string, 0, len(info))
	for sec := range info {
		sections = append(sections, sec)
	}
	sort.Strings(sections)
	seen := map[string]bool{}
	for _, sec := range sections {
		fields := info[sec]
		for _, field := range sortedFields(fields) {
			val := fields[field]
			switch {
			case sec == "keyspace":
				obj, _ := val.(map[string]any)
				for k, name := range map[string]string{"keys": "redis_db_keys", "expires": "redis_db_expires", "avg_ttl": "redis_db_avg_ttl_ms"} {
					if n, ok := number(obj[k]); ok {
						gauge(name, "keyspace: "+k+" per database", n, "db", field)
					}
				}
			case sec == "commandstats":
				obj, _ := val.(map[string]any)
				cmd := strings.TrimPrefix(field, "cmdstat_")
				for k, name := range map[string]string{"calls": "redis_command_calls_total", "usec": "redis_command_usec_total",
					"rejected_calls": "redis_command_rejected_calls_total", "failed_calls": "redis_command_failed_calls_total"} {
					if n, ok := number(obj[k]); ok {
						counter(name, "commandstats: "+k+" per command", n, "cmd", cmd)
					}
				}
			case sec == "errorstats":
				obj, _ := val.(map[string]any)
				if n, ok := number(obj["count"]); ok {
					counter("redis_errors_total", "errorstats: error replies per prefix", n, "error", strings.TrimPrefix(field, "errorstat_"))
				}
			default:
				n, ok := number(val)
				name := "redis_" + metricName(field)
				if !ok || seen[name] {
					continue
				}
				seen[name] = true
				if strings.HasPrefix(field, "total_") || counterFields[field] {
					counter(name, "INFO "+sec+" "+field, n)
				} else {
					gauge(name, "INFO "+sec+" "+field, n)
				}
			}
		}
	}
}

func sortedFields(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// number returns an INFO value as a float when it is a number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// metricName makes an INFO field a valid metric name part.
func metricName(field string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, field)
}
