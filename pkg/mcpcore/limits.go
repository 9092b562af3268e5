package mcpcore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Size units for limits.
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// MaxResultChunkBytes is the largest page the result read tool returns.
const MaxResultChunkBytes = 256 * KiB

// MaxToolTimeout is the longest any tool call may run: the maximum of the
// tool_timeout limit and of a tool's own [ToolOptions.Timeout].
const MaxToolTimeout = 5 * time.Minute

// LimitKind says how a limit's value is counted, written and shown.
type LimitKind string

// The kinds of limits. A count and a byte size are JSON integers in the
// configuration file; a duration is a Go duration string ("15m", "500ms")
// and its value in a [LimitSpec] is in nanoseconds.
const (
	LimitCount    LimitKind = "count"
	LimitBytes    LimitKind = "bytes"
	LimitDuration LimitKind = "duration"
)

// LimitSpec declares one named limit: the core's own (see [CoreLimits]) and
// each plugin's ([PluginInfo.Limits]) are declared the same way, validated
// the same way, set in the configuration file the same way ("limits" for the
// core, "plugins.<name>.limits" for a plugin) and listed the same way in
// mcpkit://info. A limit that is reached must fail the operation with a
// [*LimitError] naming it, never by truncating data.
type LimitSpec struct {
	// Name is the limit's name in the configuration file and in errors:
	// lower case, [a-z][a-z0-9_]*.
	Name string
	// Kind is a count, a byte size or a duration.
	Kind LimitKind
	// Default, Min and Max bound the value (durations in nanoseconds);
	// Min <= Default <= Max and Min >= 0.
	Default, Min, Max int64
	// Unit names what a count counts ("sessions", "commands"); optional.
	Unit string
	// Meaning is one line for operators and agents: what the limit bounds
	// and what happens when it is reached.
	Meaning string
}

// LimitInfo describes one limit as reported by mcpkit://info. Values are
// written as in the configuration file: durations as Go duration strings,
// counts and byte sizes as decimal integers.
type LimitInfo struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Value   string `json:"value"`
	Max     string `json:"max"`
	Unit    string `json:"unit,omitempty"`
	Meaning string `json:"meaning"`
}

// Limits is the typed view of the core's limits, the ones mcpcore and its
// transports enforce. Every field has a default and a range declared in the
// core limit table ([CoreLimits]), from which [Limits.Validate] and
// [Limits.Report] work; a limit that is reached fails the operation with a
// [*LimitError], never by truncating data. Plugins declare their own limits
// with [PluginInfo.Limits] and read them with [Host.Limit]: the core knows
// no plugin's engine.
//
// In the configuration file, "limits" is an object of these names; an
// unknown name is a [*ConfigError] naming it, and a limit not named keeps
// its default.
type Limits struct {
	ConcurrentToolCalls  int
	ToolTimeout          Duration
	InlineResultBytes    int64
	RetainedResultBytes  int64
	ResultExpiry         Duration
	ResultChunkBytes     int64
	FrameBytes           int64
	InflightRequestBytes int64
	HTTPSessions         int
	HTTPSessionIdle      Duration
}

// coreLimit is one row of the core limit table: the declaration and the
// field of [Limits] that holds its value.
type coreLimit struct {
	LimitSpec
	field func(*Limits) any // *int, *int64 or *Duration
}

func (c coreLimit) get(l *Limits) int64 {
	switch p := c.field(l).(type) {
	case *int:
		return int64(*p)
	case *int64:
		return *p
	case *Duration:
		return int64(*p)
	}
	panic("mcpcore: core limit " + c.Name + " has a field of an unexpected type")
}

func (c coreLimit) set(l *Limits, v int64) {
	switch p := c.field(l).(type) {
	case *int:
		*p = int(v)
	case *int64:
		*p = v
	case *Duration:
		*p = Duration(v)
	}
}

// coreLimits is the core limit table, in the order mcpkit://info lists it.
var coreLimits = []coreLimit{
	{LimitSpec{Name: "concurrent_tool_calls", Kind: LimitCount, Default: 128, Min: 1, Max: 4096, Unit: "calls",
		Meaning: "tool calls running at once across every session; a call beyond it fails at once and does nothing"},
		func(l *Limits) any { return &l.ConcurrentToolCalls }},
	{LimitSpec{Name: "tool_timeout", Kind: LimitDuration, Default: int64(10 * time.Second), Min: int64(time.Millisecond), Max: int64(MaxToolTimeout),
		Meaning: "how long one tool call may run (unless the tool sets its own timeout); then it fails with kind timeout"},
		func(l *Limits) any { return &l.ToolTimeout }},
	{LimitSpec{Name: "inline_result_bytes", Kind: LimitBytes, Default: 64 * KiB, Min: 1 * KiB, Max: 1 * MiB,
		Meaning: "largest serialized tool result returned inline; a larger one is retained and paged through the read tool"},
		func(l *Limits) any { return &l.InlineResultBytes }},
	{LimitSpec{Name: "retained_result_bytes", Kind: LimitBytes, Default: 128 * MiB, Min: 1 * MiB, Max: 4 * GiB,
		Meaning: "bytes of large results retained for paging at once; a result that does not fit fails the call"},
		func(l *Limits) any { return &l.RetainedResultBytes }},
	{LimitSpec{Name: "result_expiry", Kind: LimitDuration, Default: int64(5 * time.Minute), Min: int64(time.Second), Max: int64(time.Hour),
		Meaning: "how long a retained result lives after it was created; reads do not extend it"},
		func(l *Limits) any { return &l.ResultExpiry }},
	{LimitSpec{Name: "result_chunk_bytes", Kind: LimitBytes, Default: 64 * KiB, Min: 1 * KiB, Max: MaxResultChunkBytes,
		Meaning: "default length of one page read through the read tool"},
		func(l *Limits) any { return &l.ResultChunkBytes }},
	{LimitSpec{Name: "frame_bytes", Kind: LimitBytes, Default: 64 * MiB, Min: 64 * KiB, Max: 1 * GiB,
		Meaning: "largest JSON-RPC message read (a stdio line, an HTTP body); a larger one is refused with an error"},
		func(l *Limits) any { return &l.FrameBytes }},
	{LimitSpec{Name: "inflight_request_bytes", Kind: LimitBytes, Default: 256 * MiB, Min: 1 * MiB, Max: 16 * GiB,
		Meaning: "bytes of requests read but not yet answered, across the transport; at least frame_bytes; beyond it reading pauses (stdio) or the request is refused (HTTP)"},
		func(l *Limits) any { return &l.InflightRequestBytes }},
	{LimitSpec{Name: "http_sessions", Kind: LimitCount, Default: 1024, Min: 1, Max: 65536, Unit: "sessions",
		Meaning: "legacy-era HTTP sessions open at once; an initialize beyond it is refused"},
		func(l *Limits) any { return &l.HTTPSessions }},
	{LimitSpec{Name: "http_session_idle", Kind: LimitDuration, Default: int64(15 * time.Minute), Min: int64(time.Second), Max: int64(24 * time.Hour),
		Meaning: "how long a legacy-era HTTP session may stay idle before it is closed"},
		func(l *Limits) any { return &l.HTTPSessionIdle }},
}

// CoreLimits returns the declarations of the core's limits, in the order
// mcpkit://info lists them.
func CoreLimits() []LimitSpec {
	out := make([]LimitSpec, len(coreLimits))
	for i, c := range coreLimits {
		out[i] = c.LimitSpec
	}
	return out
}

// DefaultLimits returns every core limit at its default.
func DefaultLimits() Limits {
	var l Limits
	for _, c := range coreLimits {
		c.set(&l, c.Default)
	}
	return l
}

// Validate reports the first core limit outside its range, or an
// inflight_request_bytes below frame_bytes, as a [*ConfigError].
func (l Limits) Validate() error {
	for _, c := range coreLimits {
		if err := c.check("limits."+c.Name, c.get(&l)); err != nil {
			return err
		}
	}
	if l.InflightRequestBytes < l.FrameBytes {
		return &ConfigError{Field: "limits.inflight_request_bytes", Reason: fmt.Sprintf(
			"%d is below frame_bytes (%d): one request of the largest allowed size must fit", l.InflightRequestBytes, l.FrameBytes)}
	}
	return nil
}

// Report lists every core limit with its effective value, maximum and
// meaning.
func (l Limits) Report() []LimitInfo {
	out := make([]LimitInfo, 0, len(coreLimits))
	for _, c := range coreLimits {
		out = append(out, c.Info(c.get(&l)))
	}
	return out
}

// UnmarshalJSON sets the limits named in a JSON object, leaving the others
// as they are. An unknown name or a value of the wrong form is a
// [*ConfigError] naming the limit; ranges are checked by [Limits.Validate].
func (l *Limits) UnmarshalJSON(data []byte) error {
	specs := CoreLimits()
	values, err := parseLimits("limits", specs, data)
	if err != nil {
		return err
	}
	for _, c := range coreLimits {
		if v, ok := values[c.Name]; ok {
			c.set(l, v)
		}
	}
	return nil
}

// parseLimits reads a JSON object of limit values against specs: every
// name must be declared, counts and byte sizes are integers, durations are
// Go duration strings. field is the object's dotted path for errors. It
// returns only the values present; null or absent data gives none.
func parseLimits(field string, specs []LimitSpec, data []byte) (map[string]int64, error) {
	if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &ConfigError{Field: field, Reason: "must be an object of limit names and values"}
	}
	values := make(map[string]int64, len(raw))
	for _, name := range sortedKeys(raw) {
		i := slices.IndexFunc(specs, func(s LimitSpec) bool { return s.Name == name })
		if i < 0 {
			known := make([]string, len(specs))
			for j, s := range specs {
				known[j] = s.Name
			}
			return nil, &ConfigError{Field: field + "." + name, Reason: fmt.Sprintf("unknown field %q: no such limit (known: %s)", name, strings.Join(known, ", "))}
		}
		v, err := specs[i].parse(raw[name])
		if err != nil {
			return nil, &ConfigError{Field: field + "." + name, Reason: err.Error()}
		}
		values[name] = v
	}
	return values, nil
}

// resolveLimits applies the values given for specs over their defaults and
// checks every value's range.
func resolveLimits(field string, specs []LimitSpec, data []byte) (map[string]int64, error) {
	given, err := parseLimits(field, specs, data)
	if err != nil {
		return nil, err
	}
	values := make(map[string]int64, len(specs))
	for _, s := range specs {
		v, ok := given[s.Name]
		if !ok {
			v = s.Default
		}
		if err := s.check(field+"."+s.Name, v); err != nil {
			return nil, err
		}
		values[s.Name] = v
	}
	return values, nil
}

// parse reads one value of the limit's kind.
func (s LimitSpec) parse(raw json.RawMessage) (int64, error) {
	if s.Kind == LimitDuration {
		var d Duration
		if err := d.UnmarshalJSON(raw); err != nil {
			return 0, err
		}
		return int64(d), nil
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("must be an integer (%s), got %s", s.Kind, raw)
	}
	return v, nil
}

// check reports a value outside the limit's range.
func (s LimitSpec) check(field string, v int64) error {
	if v < s.Min || v > s.Max {
		return &ConfigError{Field: field, Reason: fmt.Sprintf("%s is outside [%s, %s]", s.format(v), s.format(s.Min), s.format(s.Max))}
	}
	return nil
}

func (s LimitSpec) format(v int64) string {
	if s.Kind == LimitDuration {
		return time.Duration(v).String()
	}
	return strconv.FormatInt(v, 10)
}

// Info describes the limit at value v as mcpkit://info lists it, for a
// plugin that lists its limits in a resource of its own.
func (s LimitSpec) Info(v int64) LimitInfo {
	return LimitInfo{Name: s.Name, Kind: string(s.Kind), Value: s.format(v), Max: s.format(s.Max), Unit: s.Unit, Meaning: s.Meaning}
}

// validateLimitSpecs checks a table of limit declarations: valid unique
// names, a known kind, Min <= Default <= Max with Min >= 0, and a one-line
// meaning.
func validateLimitSpecs(specs []LimitSpec) error {
	for i, s := range specs {
		switch {
		case !validLimitName(s.Name):
			return fmt.Errorf("limit %q: invalid name (want [a-z][a-z0-9_]*)", s.Name)
		case slices.ContainsFunc(specs[:i], func(o LimitSpec) bool { return o.Name == s.Name }):
			return fmt.Errorf("limit %q: declared twice", s.Name)
		case s.Kind != LimitCount && s.Kind != LimitBytes && s.Kind != LimitDuration:
			return fmt.Errorf("limit %q: unknown kind %q", s.Name, s.Kind)
		case s.Min < 0 || s.Min > s.Default || s.Default > s.Max:
			return fmt.Errorf("limit %q: want 0 <= min (%d) <= default (%d) <= max (%d)", s.Name, s.Min, s.Default, s.Max)
		case strings.TrimSpace(s.Meaning) == "" || strings.ContainsAny(s.Meaning, "\r\n"):
			return fmt.Errorf("limit %q: meaning must be one non-empty line", s.Name)
		}
	}
	return nil
}

func validLimitName(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("10s", "5m"). A bare number is rejected: it would be ambiguous.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"10s\" or \"5m\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}
