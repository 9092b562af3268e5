package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"

	segjson "github.com/segmentio/encoding/json"

	"github.com/mcpkit/mcpkit/pkg/httporigin"
)

// HTTPOptions configures [App.HTTPHandler].
type HTTPOptions struct {
	Prefix         string       // the path every route is under; "" is "/api"
	MaxBodyBytes   int64        // the request body limit; 0 is 1 MiB
	AllowedOrigins []string     // browser origins allowed (CORS); "*" allows any, without credentials
	Logger         *slog.Logger // nil: the app's logger
	// Identify returns the principal a request's credentials (a bearer
	// token, say) authenticate it as ("" for none); an error refuses the
	// request (an *Error as it is: unauthorized for a bad token, with
	// WWW-Authenticate: Bearer error="invalid_token" when the request
	// carried a bearer token; any other is a 500, logged). Without
	// credentials, a request whose web session is signed in
	// ([Session.SignIn]) is that session's principal. The principal
	// becomes Conn.Principal and the request's rate-limit key (the
	// Authenticated limit). nil: only sessions identify.
	Identify func(*http.Request) (principal string, err error)
	// RateLimit limits each client's requests (see [RateLimit]); nil: no
	// limit.
	RateLimit *RateLimit
	// TrustForwardedFor makes the rate limit take an unauthenticated
	// client's IP from the last X-Forwarded-For address (set it only
	// behind a proxy that appends one) rather than the connection's.
	TrustForwardedFor bool
	// Sessions gives each request the web session its cookie names
	// (Conn.Session); nil: no sessions.
	Sessions *Sessions
}

// DefaultMaxBodyBytes is the request body limit when HTTPOptions sets none.
const DefaultMaxBodyBytes = 1 << 20

// maxRequestIDLen bounds a client's X-Request-Id; a longer or non-printable
// one is replaced by a new id.
const maxRequestIDLen = 128

type httpHandler struct {
	app      *App
	prefix   string
	maxBody  int64
	origins  httporigin.Policy
	logger   *slog.Logger
	limiter  *rateLimiter // nil: no rate limit
	identify func(*http.Request) (string, error)
	// trustForwarded takes Conn.Remote from X-Forwarded-For
	// (HTTPOptions.TrustForwardedFor).
	trustForwarded bool
	sessions       *Sessions // nil: none
	routes         []*route  // most literal segments first
	swagger        []byte
}

// HTTPHandler serves the app's actions that have a Web route, Keryx
// style, at Prefix+Route (":id" segments are path params), and
// GET Prefix+"/swagger", an OpenAPI 3.1 document of them. Actions without
// a Web route are not served over HTTP (as in Keryx).
//
// Params are merged from the path, the body (a JSON object, or an
// application/x-www-form-urlencoded form) and the query. Text values
// (path, form, query) are converted to the input's type; a repeated form
// or query param makes an array input. A param given by two sources with
// different values is refused (invalid_param naming it): unlike Keryx,
// which lets a JSON body override a path param and appends query values
// to body ones, no source silently wins.
//
// A result is 200 with its JSON (null for none). An error is
// {"error": {"kind", "message", "field"}} with [Kind.HTTPStatus]; a path
// under the prefix that no route matches is 404, a route matched with
// another method 405 (with Allow), a body over MaxBodyBytes 413. Every
// response carries X-Request-Id (the client's, when printable ASCII of at
// most 128 bytes, else a new one; it is Conn.ID), X-Content-Type-Options
// nosniff, Referrer-Policy no-referrer and X-Frame-Options DENY. A
// request with an Origin that is neither the request's host nor allowed
// is 403; an allowed one gets CORS headers, and a preflight (OPTIONS with
// Access-Control-Request-Method) 204. The action's context is the
// request's.
//
// With a RateLimit, every request but a preflight and the swagger
// document is counted (after the origin check) and its response carries
// X-RateLimit-Limit, X-RateLimit-Remaining (requests left now) and
// X-RateLimit-Reset (the Unix second by which the whole limit is back); a
// refused one is 429 rate_limited with Retry-After (seconds). A failing
// [RateStore] fails the request (500, logged). HTTPHandler panics on a
// RateLimit that [RateLimit.Validate] refuses.
//
// With Sessions, an action's Conn.Session is the session the request's
// cookie names (a new, empty one when it names none that is live; an id
// the client made up is never adopted). The response sets the cookie
// when the store holds the session after the run (extending it), and
// clears it when the request named a session that is gone or destroyed.
// A failing [SessionStore] fails the request (500, logged).
func (a *App) HTTPHandler(opts HTTPOptions) http.Handler {
	h := &httpHandler{app: a, prefix: strings.TrimSuffix(opts.Prefix, "/"), maxBody: opts.MaxBodyBytes, logger: opts.Logger}
	if opts.Prefix == "" {
		h.prefix = "/api"
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.logger == nil {
		h.logger = a.logger
	}
	h.origins = httporigin.New(opts.AllowedOrigins)
	h.identify, h.trustForwarded = opts.Identify, opts.TrustForwardedFor
	h.sessions = opts.Sessions.withDefaults()
	h.limiter = newRateLimiter(opts.RateLimit, opts.TrustForwardedFor)
	for _, act := range a.Actions() {
		if act.Web == nil {
			continue
		}
		segs, _ := parseRoute(act.Web.Route) // checked by Add
		lit := 0
		for _, s := range segs {
			if !s.param {
				lit++
			}
		}
		h.routes = append(h.routes, &route{act: act, method: act.Web.Method, segs: segs, literal: lit})
	}
	slices.SortStableFunc(h.routes, func(x, y *route) int { return y.literal - x.literal })
	h.swagger = a.openAPI(h.prefix)
	return h
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	id := r.Header.Get("X-Request-Id")
	if !validRequestID(id) {
		id = NewID()
	}
	hdr["X-Request-Id"] = []string{id}
	hdr["X-Content-Type-Options"] = []string{"nosniff"}
	hdr["Referrer-Policy"] = []string{"no-referrer"}
	hdr["X-Frame-Options"] = []string{"DENY"}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !h.origins.Allowed(origin, r) {
			h.fail(w, r, id, "", &Error{Kind: KindForbidden, Message: "origin " + origin + " is not allowed"})
			return
		}
		h.cors(hdr, origin)
		r = h.origins.WithoutCookies(r) // "*" admits an origin without its cookies
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), h.prefix)
	if !ok || rest != "" && rest[0] != '/' {
		h.fail(w, r, id, "", &Error{Kind: KindNotFound, Message: "no route " + r.URL.Path})
		return
	}
	if rest == "/swagger" {
		h.serveSwagger(w, r)
		return
	}
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" && r.Header.Get("Origin") != ""
	var cl caller
	if !preflight {
		var err error
		if cl, err = h.caller(r); err != nil {
			if strings.HasPrefix(strings.ToLower(r.Header.Get("Authorization")), "bearer ") {
				hdr["Www-Authenticate"] = []string{`Bearer error="invalid_token"`}
			}
			h.fail(w, r, id, "", err)
			return
		}
	}
	principal := cl.principal
	if h.limiter != nil && !preflight {
		if err := h.limiter.allow(r, principal, hdr); err != nil {
			h.fail(w, r, id, "", err)
			return
		}
	}
	parts, err := splitPath(rest)
	if err != nil {
		h.fail(w, r, id, "", &Error{Kind: KindNotFound, Message: "no route " + r.URL.Path})
		return
	}
	var found *route
	var pathParams map[string]string
	var allow []string
	for _, rt := range h.routes {
		pp, ok := rt.match(parts)
		if !ok {
			continue
		}
		if !slices.Contains(allow, rt.method) {
			allow = append(allow, rt.method)
		}
		if found == nil && rt.method == r.Method {
			found, pathParams = rt, pp
		}
	}
	if r.Method == http.MethodOptions && len(allow) > 0 {
		slices.Sort(allow)
		hdr["Allow"] = []string{strings.Join(append(allow, http.MethodOptions), ", ")}
		if preflight {
			hdr["Access-Control-Allow-Methods"] = hdr["Allow"]
			hdr["Access-Control-Allow-Headers"] = []string{"Content-Type, Authorization, X-Request-Id"}
			hdr["Access-Control-Max-Age"] = []string{"600"}
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if found == nil {
		if len(allow) > 0 {
			slices.Sort(allow)
			hdr["Allow"] = []string{strings.Join(allow, ", ")}
			h.writeError(w, id, http.StatusMethodNotAllowed, &Error{Kind: KindNotFound, Message: "method " + r.Method + " is not allowed here; allowed: " + strings.Join(allow, ", ")})
			return
		}
		h.fail(w, r, id, "", &Error{Kind: KindNotFound, Message: "no route " + r.Method + " " + r.URL.Path})
		return
	}
	h.serveAction(w, r, id, cl, found.act, pathParams)
}

// caller is who a request comes from: its principal, and its web session
// (nil without Sessions) with the session id its cookie named ("" for
// none).
type caller struct {
	principal string
	session   *Session
	cookie    string
}

// caller identifies r's client: the principal its credentials name
// (HTTPOptions.Identify), else its signed-in session's.
func (h *httpHandler) caller(r *http.Request) (caller, error) {
	var cl caller
	if h.sessions != nil {
		var err error
		cl.cookie = h.sessions.cookieID(r)
		if cl.session, err = h.sessions.load(r.Context(), cl.cookie, false); err != nil {
			return cl, err
		}
	}
	if h.identify != nil {
		p, err := h.identify(r)
		if err != nil {
			return cl, err
		}
		cl.principal = p
	}
	if cl.principal == "" && cl.session != nil {
		cl.principal = cl.session.Principal()
	}
	return cl, nil
}

func (h *httpHandler) serveAction(w http.ResponseWriter, r *http.Request, id string, cl caller, act *Action, pathParams map[string]string) {
	m, err := h.params(w, r, act, pathParams)
	if err != nil {
		h.fail(w, r, id, act.Name, err)
		return
	}
	var raw json.RawMessage
	if len(m) > 0 {
		if raw, err = segjson.Marshal(m); err != nil {
			h.fail(w, r, id, act.Name, &Error{Kind: KindInternal, Message: "internal error", Err: err})
			return
		}
	}
	c := &Conn{Type: "web", ID: id, Remote: RemoteAddr(r, h.trustForwarded), Principal: cl.principal, Session: cl.session}
	out, err := h.app.run(requestContext(r), c, act, raw, m)
	if c.Session != nil { // before anything is written
		h.sessions.setCookie(w, r, c.Session, cl.cookie != "")
	}
	if err != nil {
		h.fail(w, r, id, act.Name, err)
		return
	}
	body, err := segjson.Marshal(out)
	if err != nil {
		h.fail(w, r, id, act.Name, &Error{Kind: KindInternal, Message: "internal error", Err: err})
		return
	}
	w.Header()["Content-Type"] = []string{"application/json"}
	_, _ = w.Write(append(body, '\n')) // a failed write is the client's loss; nothing to tell it
}

// params merges the path, body and query params of r for act (see
// HTTPHandler).
func (h *httpHandler) params(w http.ResponseWriter, r *http.Request, act *Action, pathParams map[string]string) (map[string]any, error) {
	m := map[string]any{}
	src := map[string]string{}
	add := func(source, k string, v any) error {
		if prev, dup := m[k]; dup && !reflect.DeepEqual(prev, v) {
			return paramError(KindInvalidParam, k, "given by both the %s and the %s with different values", src[k], source)
		}
		m[k], src[k] = v, source
		return nil
	}
	for k, v := range pathParams {
		text, err := url.PathUnescape(v)
		if err != nil {
			return nil, paramError(KindInvalidParam, k, "bad path escape")
		}
		cv, err := act.schema.coerce(k, []string{text})
		if err != nil {
			return nil, err
		}
		m[k], src[k] = cv, "path"
	}
	body, err := h.body(w, r, act)
	if err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(body) {
		if err := add("body", k, body[k]); err != nil {
			return nil, err
		}
	}
	if r.URL.RawQuery != "" {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return nil, paramError(KindInvalidParam, "", "bad query: %v", err)
		}
		for _, k := range sortedKeys(q) {
			v, err := act.schema.coerce(k, q[k])
			if err != nil {
				return nil, err
			}
			if err := add("query", k, v); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// body reads r's body params: a JSON object, or a URL-encoded form (text
// values converted like the query's). GET and HEAD bodies are ignored.
func (h *httpHandler) body(w http.ResponseWriter, r *http.Request, act *Action) (map[string]any, error) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > h.maxBody {
		return nil, h.tooLarge()
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, h.tooLarge()
		}
		return nil, paramError(KindInvalidParam, "", "cannot read the body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		m, err := parseParams(data)
		if err != nil {
			return nil, err
		}
		return m, nil
	case "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(data))
		if err != nil {
			return nil, paramError(KindInvalidParam, "", "bad form body: %v", err)
		}
		m := make(map[string]any, len(form))
		for k, vs := range form {
			if m[k], err = act.schema.coerce(k, vs); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	return nil, paramError(KindInvalidParam, "", "unsupported body Content-Type %q: send application/json or application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
}

func (h *httpHandler) tooLarge() *Error {
	return Errorf(KindTooLarge, "the body is over the limit of %d bytes", h.maxBody)
}

// fail writes err (made an *Error if it is not one) with its kind's status.
func (h *httpHandler) fail(w http.ResponseWriter, r *http.Request, id, action string, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Kind: KindInternal, Message: "internal error", Err: err}
	}
	if e.Kind == KindInternal && action == "" {
		h.logger.Error("http", "id", id, "path", r.URL.Path, "error", e.Err)
	}
	h.writeError(w, id, e.Kind.HTTPStatus(), e)
}

// errorBody is the JSON body of an error response.
type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// ErrorJSON is the JSON error object every transport shows for err: kind,
// message and field ("internal error" for an error that is not an *Error).
func ErrorJSON(err error) []byte {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Kind: KindInternal, Message: "internal error"}
	}
	b, _ := segjson.Marshal(errorBody{errorJSON{e.Kind, e.Message, e.Field}}) // cannot fail: strings only
	return b
}

func (h *httpHandler) writeError(w http.ResponseWriter, id string, status int, e *Error) {
	w.Header()["Content-Type"] = []string{"application/json"}
	w.WriteHeader(status)
	_, _ = w.Write(append(ErrorJSON(e), '\n'))
}

func (h *httpHandler) serveSwagger(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = []string{"GET, HEAD"}
		h.writeError(w, w.Header().Get("X-Request-Id"), http.StatusMethodNotAllowed, &Error{Kind: KindNotFound, Message: "method " + r.Method + " is not allowed here; allowed: GET"})
		return
	}
	w.Header()["Content-Type"] = []string{"application/json"}
	_, _ = w.Write(h.swagger)
}

// cors answers an admitted origin by the listener's one policy (package
// httporigin): a listed origin is echoed with credentials (the session
// cookie), any other under "*" gets "*" without them.
func (h *httpHandler) cors(hdr http.Header, origin string) {
	if h.origins.SetCORS(hdr, origin, true) {
		hdr["Access-Control-Expose-Headers"] = []string{"X-Request-Id, " + rateHeaders}
	}
}

// splitPath splits an escaped path under the prefix into its segments ("" and
// "/" are none).
func splitPath(p string) ([]string, error) {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil, nil
	}
	parts := strings.Split(p, "/")
	if slices.Contains(parts, "") {
		return nil, errors.New("empty segment")
	}
	return parts, nil
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := range len(id) {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}
