package respengine

import (
	"crypto/tls"
	"crypto/x509"
)

// Target is one resolved endpoint the engine may reach: a RESP server and,
// optionally, its management origin. Calls name targets, never addresses.
// Its secrets are behind functions, which fmt prints as addresses: no log
// line or error can carry them by accident.
type Target struct {
	Name     string
	Addr     string // host:port
	Protocol int    // 2 or 3
	Database int
	Username string
	Password func() string
	TLS      *tls.Config // nil: plain TCP
	// ManagementURL is the management origin ("": none); ManagementToken
	// its bearer token ("": none); ManagementCAs the roots its TLS is
	// verified with (nil: the system's).
	ManagementURL   string
	ManagementToken func() string
	ManagementCAs   *x509.CertPool
}
