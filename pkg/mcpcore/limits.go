package mcpcore

import (
	"encoding/json"
	"fmt"
	"reflect"
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

// Limits is the one structure that bounds everything mcpkit does on behalf of
// an agent. Every field has a default (seed 000, "Large results and limits")
// and a range; [Limits.Validate] rejects a value outside its range. A limit
// that is reached fails the operation with a [*LimitError], never by
// truncating data.
//
// Counts are int, byte sizes int64, durations [Duration]. Plugin limits are
// carried here too, so one validated configuration serves every plugin.
type Limits struct {
	// Host-wide limits, enforced by mcpcore itself.
	ConcurrentToolCalls int      `json:"concurrent_tool_calls"`
	ToolTimeout         Duration `json:"tool_timeout"`
	InlineResultBytes   int64    `json:"inline_result_bytes"`
	RetainedResultBytes int64    `json:"retained_result_bytes"`
	ResultExpiry        Duration `json:"result_expiry"`
	ResultChunkBytes    int64    `json:"result_chunk_bytes"`
	FrameBytes          int64    `json:"frame_bytes"`
	HTTPSessions        int      `json:"http_sessions"`
	HTTPSessionIdle     Duration `json:"http_session_idle"`

	// Plugin limits (RESP sidecar, seed 000).
	Sessions       int      `json:"sessions"`
	LiveHandles    int      `json:"live_handles"`
	SessionIdle    Duration `json:"session_idle"`
	BatchCommands  int      `json:"batch_commands"`
	CommandBytes   int64    `json:"command_bytes"`
	BatchBytes     int64    `json:"batch_bytes"`
	ReplyBytes     int64    `json:"reply_bytes"`
	DownloadBytes  int64    `json:"download_bytes"`
	ChildProcesses int      `json:"child_processes"`
	ChildLogBytes  int64    `json:"child_log_bytes"`
}

// DefaultLimits returns seed 000's defaults.
func DefaultLimits() Limits {
	return Limits{
		ConcurrentToolCalls: 128,
		ToolTimeout:         Duration(10 * time.Second),
		InlineResultBytes:   64 * KiB,
		RetainedResultBytes: 128 * MiB,
		ResultExpiry:        Duration(5 * time.Minute),
		ResultChunkBytes:    64 * KiB,
		FrameBytes:          64 * MiB,
		HTTPSessions:        1024,
		HTTPSessionIdle:     Duration(15 * time.Minute),

		Sessions:       64,
		LiveHandles:    64,
		SessionIdle:    Duration(15 * time.Minute),
		BatchCommands:  1024,
		CommandBytes:   8 * MiB,
		BatchBytes:     16 * MiB,
		ReplyBytes:     64 * MiB,
		DownloadBytes:  1 * GiB,
		ChildProcesses: 8,
		ChildLogBytes:  64 * KiB,
	}
}

// limitRange is the accepted range of one limit, keyed by its JSON name.
type limitRange struct{ min, max int64 }

var limitRanges = map[string]limitRange{
	"concurrent_tool_calls": {1, 4096},
	"tool_timeout":          {int64(time.Millisecond), int64(5 * time.Minute)},
	"inline_result_bytes":   {1 * KiB, 1 * MiB},
	"retained_result_bytes": {1 * MiB, 4 * GiB},
	"result_expiry":         {int64(time.Second), int64(time.Hour)},
	"result_chunk_bytes":    {1 * KiB, MaxResultChunkBytes},
	"frame_bytes":           {64 * KiB, 1 * GiB},
	"http_sessions":         {1, 65536},
	"http_session_idle":     {int64(time.Second), int64(24 * time.Hour)},
	"sessions":              {1, 4096},
	"live_handles":          {1, 4096},
	"session_idle":          {int64(time.Second), int64(24 * time.Hour)},
	"batch_commands":        {1, 1 << 20},
	"command_bytes":         {1 * KiB, 512 * MiB},
	"batch_bytes":           {1 * KiB, 1 * GiB},
	"reply_bytes":           {1 * KiB, 4 * GiB},
	"download_bytes":        {1, 1 * GiB},
	"child_processes":       {1, 256},
	"child_log_bytes":       {1 * KiB, 64 * MiB},
}

// LimitInfo describes one limit as reported by mcpkit://info.
type LimitInfo struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Max   string `json:"max"`
}

// each calls fn with every limit's JSON name, its value as int64 (nanoseconds
// for durations) and whether it is a duration.
func (l *Limits) each(fn func(name string, v int64, isDuration bool)) {
	rv := reflect.ValueOf(l).Elem()
	rt := rv.Type()
	durType := reflect.TypeFor[Duration]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fn(name, rv.Field(i).Int(), rt.Field(i).Type == durType)
	}
}

// Validate reports the first limit outside its range as a [*ConfigError].
func (l Limits) Validate() error {
	var err error
	l.each(func(name string, v int64, isDur bool) {
		r := limitRanges[name]
		if err == nil && (v < r.min || v > r.max) {
			err = &ConfigError{Field: "limits." + name, Reason: fmt.Sprintf("%s is outside [%s, %s]",
				formatLimit(v, isDur), formatLimit(r.min, isDur), formatLimit(r.max, isDur))}
		}
	})
	return err
}

// Report lists every limit with its effective value and maximum.
func (l Limits) Report() []LimitInfo {
	var out []LimitInfo
	l.each(func(name string, v int64, isDur bool) {
		out = append(out, LimitInfo{Name: name, Value: formatLimit(v, isDur), Max: formatLimit(limitRanges[name].max, isDur)})
	})
	return out
}

func formatLimit(v int64, isDur bool) string {
	if isDur {
		return time.Duration(v).String()
	}
	return fmt.Sprint(v)
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
