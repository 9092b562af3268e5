package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
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

// isLoopback reports whether host (a URL's Hostname) is a loopback host
// that may be served over plain http (RFC 8252 7.3): localhost, an
// address of 127.0.0.0/8 or ::1.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// isPrivateUseScheme reports whether scheme is a native app's private-use
// URI scheme (RFC 8252 7.1): reverse-domain style, so with a '.' in it
// ("com.example.app"). No scheme a browser or the network acts on
// (javascript, data, ftp, ws, ...) has one.
func isPrivateUseScheme(scheme string) bool {
	return strings.Contains(scheme, ".")
}

// checkRedirectURI applies Keryx's rules to a redirect URI at
// registration: absolute, at most maxURILen bytes, no fragment, no
// userinfo; and then https with a host, or http on a loopback host, or a
// native app's private-use scheme (RFC 8252 7.1: reverse-domain style,
// "com.example.app:/cb"). Every other scheme (ftp, ws, javascript, data,
// file, an undotted custom one, ...) is refused: the code would travel
// in clear, or to something that is not the client.
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
	case u.Scheme == "https":
		if u.Host == "" {
			return fmt.Errorf("%q has no host", s)
		}
	case u.Scheme == "http":
		if !isLoopback(u.Hostname()) {
			return fmt.Errorf("%q: http is allowed only on a loopback host (localhost, 127.0.0.0/8, [::1]); use https", s)
		}
		if _, _, err := net.SplitHostPort(u.Host); err != nil && u.Port() != "" {
			return fmt.Errorf("%q: bad port", s)
		}
	case !isPrivateUseScheme(u.Scheme):
		return fmt.Errorf("%q: scheme %s is not allowed: use https, http on a loopback host, or a native app's reverse-domain scheme (com.example.app:/cb)", s, u.Scheme)
	}
	return nil
}
