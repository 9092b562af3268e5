package httpserve

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// abandonBody prepares the reply to a request whose body will not be read
// (completely), on HTTP/1: the connection closes after the reply, which
// net/http then sends without first reading the rest of the body, and the
// rest is read (to close the connection gracefully, as net/http does) for
// at most bodyLinger. So a client that stalls half-way holds neither the
// reply nor, for long, the connection, and one still sending gets the reply
// rather than a reset. (HTTP/2 streams need no such care.)
func abandonBody(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 && r.Body != nil && r.Body != http.NoBody {
		w.Header().Set("Connection", "close")
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyLinger))
	}
}

// bodyLinger is how long the rest of an abandoned body is read (net/http's
// own delay before closing a connection with unread data is 500 ms).
const bodyLinger = 500 * time.Millisecond

// checkHost rejects DNS rebinding: a request that reached a loopback address
// must name a loopback host. (The SDK handlers check this too; doing it first
// keeps a rebinding request from reaching the body read or the session cap.)
func (h *Handler) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
			if isLoopbackHostPort(la.String()) && !isLoopbackHostPort(r.Host) {
				h.logger.Debug("rejected request: non-loopback Host on loopback listener", "host", r.Host)
				abandonBody(w, r)
				http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkOrigin rejects a browser request from a foreign origin, by the one
// origin policy of the listener (package httporigin: no Origin, the same
// origin, a listed one, or any under "*"). For /mcp (mcp true) it also
// answers CORS: an admitted cross-origin request gets its
// Access-Control-Allow-Origin (its origin, or "*" under "*"; never with
// credentials: /mcp takes bearer tokens, not cookies) and its preflight is
// answered here, before auth, as preflights carry no token. A plugin
// route gets Access-Control-Allow-Origin on the same terms, and its
// preflights go to its handler, which knows its methods and headers (the
// action framework's /api and the OAuth endpoints answer them by the same
// policy).
func (h *Handler) checkOrigin(next http.Handler, mcp bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !h.origins.Allowed(origin, r) {
			h.logger.Debug("rejected request: origin not allowed", "origin", origin, "host", r.Host)
			abandonBody(w, r)
			http.Error(w, fmt.Sprintf("Forbidden: origin %q is not allowed", origin), http.StatusForbidden)
			return
		}
		hd := w.Header()
		if !h.origins.SetCORS(hd, origin, false) || !mcp {
			next.ServeHTTP(w, r)
			return
		}
		hd.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			hd.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				hd.Set("Access-Control-Allow-Headers", req)
			}
			hd.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackHostPort reports whether a "host[:port]" names a loopback host.
func isLoopbackHostPort(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return isLoopbackHost(strings.Trim(host, "[]"))
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if i := strings.IndexByte(host, '%'); i >= 0 { // zone
		host = host[:i]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
