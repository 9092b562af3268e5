package action

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// segment is one segment of a route: literal text or a ":param".
type segment struct {
	text  string
	param bool
}

// parseRoute splits a Keryx-style route ("/user/:id") into segments:
// it must start with '/', and have no empty segment, no parameter named
// twice and no character outside letters, digits and "-._~:".
func parseRoute(route string) ([]segment, error) {
	if route == "/" {
		return nil, nil
	}
	if !strings.HasPrefix(route, "/") {
		return nil, fmt.Errorf("%q: must start with /", route)
	}
	var segs []segment
	seen := map[string]bool{}
	for _, part := range strings.Split(route[1:], "/") {
		if part == "" {
			return nil, fmt.Errorf("%q: empty segment", route)
		}
		for _, r := range part {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~:", r)) {
				return nil, fmt.Errorf("%q: character %q", route, r)
			}
		}
		if name, ok := strings.CutPrefix(part, ":"); ok {
			if name == "" || strings.Contains(name, ":") || seen[name] {
				return nil, fmt.Errorf("%q: bad or repeated parameter %q", route, part)
			}
			seen[name] = true
			segs = append(segs, segment{text: name, param: true})
			continue
		}
		segs = append(segs, segment{text: part})
	}
	return segs, nil
}

// sameShape reports whether two valid routes match the same paths (the
// same literals, parameters in the same places, whatever their names).
func sameShape(a, b string) bool {
	sa, _ := parseRoute(a)
	sb, _ := parseRoute(b)
	return slices.EqualFunc(sa, sb, func(x, y segment) bool {
		return x.param == y.param && (x.param || x.text == y.text)
	})
}

// route is one action's compiled route.
type route struct {
	act     *Action
	method  string
	segs    []segment
	literal int // literal segments: more wins when two routes match
}

// match returns the path params of path (split in parts) for r, or false.
func (r *route) match(parts []string) (map[string]string, bool) {
	if len(parts) != len(r.segs) {
		return nil, false
	}
	var params map[string]string
	for i, s := range r.segs {
		if !s.param {
			if parts[i] != s.text {
				return nil, false
			}
			continue
		}
		if params == nil {
			params = map[string]string{}
		}
		params[s.text] = parts[i]
	}
	return params, true
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
