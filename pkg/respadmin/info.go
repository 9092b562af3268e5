package respadmin

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// Info is INFO's reply as typed sections: section name (lowercase, as
// "# Server" gives "server") to field to value. A value is an int64 when
// it is an integer, a float64 when it is a finite decimal, an object when
// it is a list of k=v pairs (keyspace's "db0", commandstats' "cmdstat_get"),
// else a string.
type Info map[string]map[string]any

// parseInfo parses INFO's text.
func parseInfo(text string) Info {
	out := Info{}
	section := "default"
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			section = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(line, "#")))
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if out[section] == nil {
			out[section] = map[string]any{}
		}
		out[section][k] = infoValue(v)
	}
	return out
}

// infoValue types one INFO value.
func infoValue(v string) any {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	if f, ok := parseFloat(v); ok {
		return f
	}
	if strings.Contains(v, "=") && !strings.ContainsAny(v, " ") {
		obj := map[string]any{}
		for _, pair := range strings.Split(v, ",") {
			pk, pv, ok := strings.Cut(pair, "=")
			if !ok {
				return v
			}
			obj[pk] = infoValue(pv)
		}
		return obj
	}
	return v
}

// parseFloat parses a finite decimal number (not "nan" or "inf", which
// JSON cannot carry).
func parseFloat(v string) (float64, bool) {
	if v == "" || strings.ContainsAny(v, "nNiIxX") {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// plain converts a reply to ordinary JSON: maps to objects (keys as text),
// arrays and sets to arrays, integers and finite doubles to numbers,
// strings to strings (base64 in {"base64": ...} when not UTF-8), null to
// null. For lossless replies use the Value's own JSON form.
func plain(v resp.Value) any {
	if v.IsNull() {
		return nil
	}
	switch v.Kind {
	case resp.KindInteger:
		return v.Int
	case resp.KindBoolean:
		return v.Bool
	case resp.KindDouble:
		if f, ok := parseFloat(string(v.Str)); ok {
			return f
		}
		return string(v.Str)
	case resp.KindArray, resp.KindSet, resp.KindPush:
		out := make([]any, len(v.Elems))
		for i, e := range v.Elems {
			out[i] = plain(e)
		}
		return out
	case resp.KindMap:
		return pairs(v.Elems)
	case resp.KindAttribute:
		if v.Wrapped != nil {
			return plain(*v.Wrapped)
		}
		return nil
	}
	return text(v.Str)
}

// pairs converts flattened key, value, ... elements to an object.
func pairs(elems []resp.Value) map[string]any {
	out := make(map[string]any, len(elems)/2)
	for i := 0; i+1 < len(elems); i += 2 {
		out[string(elems[i].Str)] = plain(elems[i+1])
	}
	return out
}

// text returns b as a string when it is UTF-8, else {"base64": ...}.
func text(b []byte) any {
	if utf8.Valid(b) {
		return string(b)
	}
	return map[string]string{"base64": base64.StdEncoding.EncodeToString(b)}
}
