package mcpcore

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/mcpcore/sessionstore"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// HTTPRoute is a route a plugin serves on the HTTP listener beside /mcp and
// /healthz (an action framework's /api and WebSocket endpoints, OAuth
// metadata and pages).
type HTTPRoute struct {
	// Pattern is a net/http ServeMux pattern ("GET /api/{name}", "/ws",
	// "/.well-known/oauth-protected-resource").
	Pattern string
	// Handler serves the route. It authenticates its own requests: the
	// bearer check of /mcp does not apply to plugin routes.
	Handler http.Handler
	// Plugin is the plugin that added the route.
	Plugin string
}

// HTTPContributions is what the plugins add to an HTTP listener: the HTTP
// transport serves it, and ignores it over stdio.
type HTTPContributions struct {
	// Routes are the plugins' own routes, in the order they were added.
	Routes []HTTPRoute
	// Verifier, when a plugin set one, authenticates /mcp requests besides
	// the configured static bearer tokens.
	Verifier auth.TokenVerifier
	// ResourceMetadataURL is the protected-resource metadata (RFC 9728)
	// that goes with Verifier into WWW-Authenticate: "", an absolute URL,
	// or a path that the HTTP transport names on the origin each loopback
	// request reached (see [Host.SetTokenVerifier]).
	ResourceMetadataURL string
	// SessionStore, when a plugin set one, shares legacy HTTP sessions
	// between instances.
	SessionStore sessionstore.Store
}

// HandleHTTP adds a route the plugin serves on the HTTP listener, behind the
// same Host and Origin checks as /mcp. Conflicts with /mcp, /healthz or
// another plugin's route are refused when the listener is built, naming
// both plugins. Routes are served only over HTTP. For Attach only.
func (h *Host) HandleHTTP(pattern string, handler http.Handler) {
	switch {
	case strings.TrimSpace(pattern) == "":
		h.fail(&ConfigError{Field: "plugins." + h.name, Reason: "HTTP route with an empty pattern"})
	case handler == nil:
		h.fail(&ConfigError{Field: "plugins." + h.name, Reason: fmt.Sprintf("HTTP route %q has a nil handler", pattern)})
	default:
		h.srv.http.Routes = append(h.srv.http.Routes, HTTPRoute{Pattern: pattern, Handler: handler, Plugin: h.name})
		h.routes = append(h.routes, pattern)
	}
}

// SetTokenVerifier makes verifier authenticate /mcp: a request is admitted
// when the configured static bearer tokens or verifier accept its token,
// and the verifier's TokenInfo.UserID becomes the caller's [Principal]. A
// configured verifier counts as authentication for listening beyond
// loopback. resourceMetadata names the protected-resource metadata (RFC
// 9728) in the WWW-Authenticate header of a refused request: an absolute
// http(s) URL is named as it is; a path ("/.well-known/...") is named on
// the origin the request reached (its scheme and Host), for requests that
// reached a loopback address only, where the transport has checked that
// Host is a loopback name; elsewhere a path names nothing, since Host is
// the client's to choose (clients then look at the well-known path of the
// URL they used). "" names nothing. Anything else is a configuration
// error. At most one plugin may set a verifier. For Attach only.
func (h *Host) SetTokenVerifier(verifier auth.TokenVerifier, resourceMetadata string) {
	if verifier == nil {
		h.fail(&ConfigError{Field: "plugins." + h.name, Reason: "nil token verifier"})
		return
	}
	if !validResourceMetadata(resourceMetadata) {
		h.fail(&ConfigError{Field: "plugins." + h.name, Reason: fmt.Sprintf(
			"resource metadata %q is neither an absolute http(s) URL nor a path", resourceMetadata)})
		return
	}
	if !h.claimHTTP("token verifier", &h.srv.verifierOwner) {
		return
	}
	h.srv.http.Verifier, h.srv.http.ResourceMetadataURL = verifier, resourceMetadata
}

// validResourceMetadata accepts "", an absolute http(s) URL with a host,
// or a path (starting with a single "/"), none with a fragment or a
// character that would need quoting in a header.
func validResourceMetadata(s string) bool {
	if s == "" {
		return true
	}
	if strings.ContainsAny(s, "\"\\ \t\r\n#") {
		return false
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	if strings.HasPrefix(s, "/") {
		return !strings.HasPrefix(s, "//")
	}
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// SetSessionStore shares the legacy HTTP sessions of this instance through
// store, so that every instance pointed at the same store serves a session
// any of them opened. At most one plugin may set a store. For Attach only.
func (h *Host) SetSessionStore(store sessionstore.Store) {
	if store == nil {
		h.fail(&ConfigError{Field: "plugins." + h.name, Reason: "nil session store"})
		return
	}
	if !h.claimHTTP("session store", &h.srv.storeOwner) {
		return
	}
	h.srv.http.SessionStore = store
}

// claimHTTP records h's plugin as the owner of a single-owner HTTP
// contribution, or records an error naming both plugins.
func (h *Host) claimHTTP(what string, owner *string) bool {
	if *owner != "" {
		h.fail(&ConfigError{Field: "plugins." + h.name, Reason: fmt.Sprintf(
			"%s set by plugin %q, but plugin %q already set one; enable only one of them", what, h.name, *owner)})
		return false
	}
	*owner = h.name
	return true
}

// HTTP returns what the plugins contribute to an HTTP listener.
func (s *Server) HTTP() HTTPContributions {
	c := s.http
	c.Routes = append([]HTTPRoute(nil), s.http.Routes...)
	return c
}
