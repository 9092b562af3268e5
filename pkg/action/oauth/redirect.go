package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// parseURL parses an absolute URL.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if !u.IsAbs() {
		return nil, errors.New("not an absolute URL")
	}
	return u, nil
}

// loopbackHosts may be served over plain http (RFC 8252 7.3).
var loopbackHosts = map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}

// refusedSchemes can carry script or local files: never a redirect.
var refusedSchemes = map[string]bool{"javascript": true, "data": true, "vbscript": true, "file": true}

// checkRedirectURI applies the seed's rules to a redirect URI at
// registration: absolute, at most maxURILen bytes, no fragment, no
// userinfo; https, or http on a loopback host, or a private-use scheme of
// a native app (RFC 8252 7.1), except schemes that run script or read
// files.
func checkRedirectURI(s string) error {
	if len(s) > maxURILen {
		return fmt.Errorf("over %d bytes", maxURILen)
	}
	u, err := parseURL(s)
	if err != nil {
		return fmt.Errorf("%q: %v", s, err)
	}
	switch {
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("%q has a fragment", s)
	case u.User != nil:
		return fmt.Errorf("%q has userinfo", s)
	case refusedSchemes[u.Scheme]:
		return fmt.Errorf("%q: scheme %s is not allowed", s, u.Scheme)
	case u.Scheme == "https":
		if u.Host == "" {
			return fmt.Errorf("%q has no host", s)
		}
	case u.Scheme == "http":
		if !loopbackHosts[strings.ToLower(u.Hostname())] {
			return fmt.Errorf("%q: http is allowed only for localhost, 127.0.0.1 and [::1]; use https", s)
		}
		if _, _, err := net.SplitHostPort(u.Host); err != nil && u.Port() != "" {
			return fmt.Errorf("%q: bad port", s)
		}
	}
	return nil
}
