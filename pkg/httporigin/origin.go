// Package httporigin is the one browser-origin policy of mcpkit's HTTP
// listener. /mcp (the core's check, in front of every route), the action
// framework's /api and /ws and the OAuth server's /oauth and /.well-known
// endpoints all decide with it, from the same list (http.allowed_origins),
// so that an origin one of them admits is never refused by another, and a
// CORS header never says yes where the request is then refused.
//
// A request passes when it carries no Origin header (not a browser's
// cross-origin request), when its origin is the request's own (same host
// and port; the scheme is not compared, since a TLS-terminating proxy
// forwards https as http), when the origin is listed (exactly, ignoring
// case and a trailing "/"), or when the list holds "*" (any origin). "*"
// is Keryx's: any origin may read the answers, but never with credentials
// (cookies): Access-Control-Allow-Origin is "*" itself, as browsers
// require, Access-Control-Allow-Credentials is not sent, and the routes
// that sign requests in by cookie drop one such a request carries
// ([Policy.WithoutCookies]). A listed origin is echoed, and may be given
// credentials.
package httporigin

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Any is the list entry that admits every origin, without credentials.
const Any = "*"

// Policy is an allow list of browser origins. The zero Policy admits only
// same-origin requests (and requests without Origin).
type Policy struct {
	any  bool
	list map[string]bool
}

// New returns the policy of the allowed list: origins
// ("scheme://host[:port]") and "*".
func New(allowed []string) Policy {
	p := Policy{list: make(map[string]bool, len(allowed))}
	for _, o := range allowed {
		if o = strings.TrimSpace(o); o == Any {
			p.any = true
		} else if o != "" {
			p.list[normalize(o)] = true
		}
	}
	return p
}

// normalize is the form origins are compared in: lower case, without a
// trailing "/" or the scheme's default port (a browser never sends
// "https://app.example:443").
func normalize(origin string) string {
	o := strings.ToLower(strings.TrimSuffix(origin, "/"))
	if s, ok := strings.CutSuffix(o, ":443"); ok && strings.HasPrefix(o, "https://") {
		return s
	}
	if s, ok := strings.CutSuffix(o, ":80"); ok && strings.HasPrefix(o, "http://") {
		return s
	}
	return o
}

// Check reports why entry cannot be in an allow list: it must be "*" or
// an http(s) origin, scheme://host[:port] with nothing after but an
// optional "/". Anything else ("app.example", "https://app.example/app",
// "null") would never match what a browser sends, or would admit what it
// should not.
func Check(entry string) error {
	if entry == Any {
		return nil
	}
	u, err := url.Parse(strings.TrimSuffix(entry, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(u.Host, ":") || strings.Contains(entry, "?") || strings.Contains(entry, "#") {
		return fmt.Errorf("%q is not an origin: want \"*\" or scheme://host[:port] (http or https) with no path", entry)
	}
	return nil
}

// Allowed reports whether a request r from origin (its Origin header) may
// proceed.
func (p Policy) Allowed(origin string, r *http.Request) bool {
	return origin == "" || p.any || p.list[normalize(origin)] || SameOrigin(origin, r)
}

// Credentialed reports whether a request r from origin may carry the
// browser's ambient credentials (cookies): no Origin, the same origin or a
// listed one may; an origin admitted only by "*" may not.
func (p Policy) Credentialed(origin string, r *http.Request) bool {
	return origin == "" || p.list[normalize(origin)] || SameOrigin(origin, r)
}

// WithoutCookies returns r, or, when r's origin is admitted only by "*", a
// copy of r without its Cookie header. "*" admits any origin without
// credentials: a cookie a browser sends along anyway (same site, another
// origin: another port of localhost, a sibling subdomain) must not sign
// the request in, or any page of that site could act as the user.
func (p Policy) WithoutCookies(r *http.Request) *http.Request {
	if p.Credentialed(r.Header.Get("Origin"), r) || r.Header.Get("Cookie") == "" {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Del("Cookie")
	return r
}

// AllowOrigin is the Access-Control-Allow-Origin value for a request from
// origin ("" when it gets none: not admitted, or only as same-origin,
// which needs no CORS), and whether it may be sent with credentials (a
// listed origin; never under "*").
func (p Policy) AllowOrigin(origin string) (value string, credentials bool) {
	switch {
	case origin == "":
		return "", false
	case p.list[normalize(origin)]:
		return origin, true
	case p.any:
		return Any, false
	}
	return "", false
}

// SetCORS writes the CORS answer for a request from origin: Vary: Origin,
// and Access-Control-Allow-Origin when the policy grants one, with
// Access-Control-Allow-Credentials when credentials is true and the
// origin was listed (never with "*"). It reports whether it granted
// one.
func (p Policy) SetCORS(h http.Header, origin string, credentials bool) bool {
	if origin == "" {
		return false
	}
	if !slices.Contains(h.Values("Vary"), "Origin") { // once, though the core and a route both answer
		h.Add("Vary", "Origin")
	}
	value, creds := p.AllowOrigin(origin)
	if value == "" {
		return false
	}
	h.Set("Access-Control-Allow-Origin", value)
	if credentials && creds {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	return true
}

// SameOrigin reports whether origin names the host and port r was sent to
// (default ports filled in from the schemes; the schemes themselves are
// not compared: behind a TLS-terminating proxy the request arrives as
// plain HTTP).
func SameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	reqScheme := "http"
	if r.TLS != nil {
		reqScheme = "https"
	}
	return strings.EqualFold(withPort(u.Host, u.Scheme), withPort(r.Host, reqScheme))
}

// withPort adds the scheme's default port to a host that has none.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}
