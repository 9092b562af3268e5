package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action"
)

// csrfCookie is the cookie of the authorize form's CSRF token (double
// submit: the form carries the same value).
const csrfCookie = "mcpkit_oauth_csrf"

// authzRequest is a checked authorization request.
type authzRequest struct {
	client                                  client
	redirectURI, state, challenge, resource string
}

// pageError is an error shown on a page rather than redirected: the
// redirect URI is unknown or bad, or the browser's form is not ours.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

// parseAuthorize checks an authorization request's parameters in the
// order that keeps redirects safe: client, then redirect URI (an error
// so far is a *pageError), then the rest (an *oauthError, redirected).
func (s *Server) parseAuthorize(ctx context.Context, r *http.Request, q url.Values) (authzRequest, error) {
	var ar authzRequest
	for k, v := range q {
		if len(v) > 1 {
			return ar, &pageError{http.StatusBadRequest, fmt.Sprintf("The parameter %s is repeated.", k)}
		}
	}
	id := q.Get("client_id")
	if id == "" {
		return ar, &pageError{http.StatusBadRequest, "The request names no client (client_id is missing)."}
	}
	ok, err := s.load(ctx, keyClient(id), &ar.client)
	if err != nil {
		return ar, err
	}
	if !ok {
		return ar, &pageError{http.StatusBadRequest, "The client is unknown or its registration expired: register it again."}
	}
	ar.redirectURI = q.Get("redirect_uri")
	switch {
	case ar.redirectURI == "" && len(ar.client.RedirectURIs) == 1:
		ar.redirectURI = ar.client.RedirectURIs[0]
	case !contains(ar.client.RedirectURIs, ar.redirectURI):
		return ar, &pageError{http.StatusBadRequest, "The redirect URI is not one the client registered."}
	}
	ar.state = q.Get("state")
	ar.challenge = q.Get("code_challenge")
	ar.resource = q.Get("resource")
	switch {
	case q.Get("response_type") != "code":
		return ar, badRequest("unsupported_response_type", "response_type must be code")
	case q.Get("code_challenge_method") != "S256":
		return ar, badRequest("invalid_request", "PKCE with code_challenge_method S256 is required (plain is refused)")
	case !validChallenge(ar.challenge):
		return ar, badRequest("invalid_request", "code_challenge must be the 43-character base64url SHA-256 of the verifier")
	case q.Get("scope") != "" && q.Get("scope") != Scope:
		return ar, badRequest("invalid_scope", "the only scope is %s", Scope)
	case ar.resource != "" && ar.resource != s.Resource(r):
		return ar, badRequest("invalid_target", "resource must be %s", s.Resource(r))
	}
	if ar.resource == "" {
		ar.resource = s.Resource(r)
	}
	return ar, nil
}

// validChallenge reports whether c is 43 base64url characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	for i := range len(c) {
		ch := c[i]
		if !(ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			return false
		}
	}
	return true
}

func contains(list []string, v string) bool {
	found := false
	for _, x := range list {
		found = found || equal(x, v)
	}
	return found && v != ""
}

// redirectTo is ar's redirect URI with params and the RFC 9207 iss added.
func (s *Server) redirectTo(r *http.Request, ar authzRequest, params map[string]string) string {
	u, _ := url.Parse(ar.redirectURI) // checked at registration
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	if ar.state != "" {
		q.Set("state", ar.state)
	}
	q.Set("iss", s.Issuer(r))
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	var q url.Values
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		if err := r.ParseForm(); err != nil {
			s.errorPage(w, &pageError{http.StatusBadRequest, "The form could not be read."})
			return
		}
		q = r.PostForm
	} else {
		q = r.URL.Query()
	}
	form := url.Values{} // the user's fields: not OAuth parameters
	if r.Method == http.MethodPost {
		form, q = splitForm(q)
	}
	ar, err := s.parseAuthorize(r.Context(), r, q)
	if err == nil && r.Method == http.MethodPost {
		err = s.signIn(w, r, ar, form)
	}
	if err == nil {
		if r.Method == http.MethodGet {
			s.renderAuthorize(w, r, ar, http.StatusOK, "", "signin")
		}
		return
	}
	var pe *pageError
	var oe *oauthError
	var ae *action.Error
	switch {
	case errors.As(err, &pe):
		s.errorPage(w, pe)
	case errors.As(err, &oe):
		http.Redirect(w, r, s.redirectTo(r, ar, map[string]string{"error": oe.Code, "error_description": oe.Description}), http.StatusFound)
	case errors.As(err, &ae) && ae.Kind != action.KindInternal:
		s.renderAuthorize(w, r, ar, ae.Kind.HTTPStatus(), ae.Message, form.Get("mode"))
	default:
		s.opts.Logger.Error("oauth authorize failed", "error", err)
		s.errorPage(w, &pageError{http.StatusInternalServerError, "Something went wrong on our side. Please try again."})
	}
}

// oauthParams are the hidden fields the authorize form carries back.
var oauthParams = []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "scope", "resource"}

// splitForm separates a posted form into the user's fields (and mode,
// csrf_token) and the OAuth parameters.
func splitForm(all url.Values) (form, q url.Values) {
	form, q = url.Values{}, url.Values{}
	for k, v := range all {
		if contains(oauthParams, k) {
			q[k] = v
		} else {
			form[k] = v
		}
	}
	return form, q
}

// signIn checks the form's CSRF token, runs the login or signup action
// with the form's fields and, when it names a user, redirects with a new
// code.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request, ar authzRequest, form url.Values) error {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || ck.Value == "" || !equal(ck.Value, form.Get("csrf_token")) {
		return &pageError{http.StatusForbidden, "The form's security token is missing or stale: open the sign-in page again."}
	}
	act := s.login
	if form.Get("mode") == "signup" {
		act = s.signup
	}
	if act == nil {
		return &action.Error{Kind: action.KindNotFound, Message: fmt.Sprintf("this app has no %s action", form.Get("mode"))}
	}
	params, err := formParams(act, form)
	if err != nil {
		return err
	}
	out, err := s.opts.App.Run(r.Context(), &action.Conn{Type: "web", ID: action.NewID(), Remote: action.RemoteAddr(r, s.opts.TrustForwardedFor)}, act.Name, params)
	if err != nil {
		return err
	}
	user, err := userID(out)
	if err != nil {
		return fmt.Errorf("action %s: %w", act.Name, err)
	}
	code := newSecret()
	g := grant{Client: ar.client.ID, User: user, Resource: ar.resource, Scope: Scope, Expires: millis(time.Now().Add(s.opts.CodeTTL)),
		RedirectURI: ar.redirectURI, Challenge: ar.challenge}
	if err := s.put(r.Context(), keyCode(code), g, s.opts.CodeTTL); err != nil {
		return err
	}
	to := s.redirectTo(r, ar, map[string]string{"code": code})
	pageHeaders(w.Header())
	w.Header().Set("Location", to)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	// The body is for a browser that does not follow the redirect.
	body, err := s.pages.success.Render(map[string]any{"redirectUrl": to, "clientName": ar.client.Name})
	if err != nil {
		s.opts.Logger.Error("render oauth-success.html", "error", err)
		return nil
	}
	_, _ = w.Write([]byte(body))
	return nil
}

// formParams are the action's inputs from the form: only its own
// inputs, the empty ones left out (so that a missing required one is
// reported as such), numbers and booleans by their schema type.
func formParams(act *action.Action, form url.Values) (json.RawMessage, error) {
	s := act.InputSchema()
	m := map[string]any{}
	for name, p := range s.Properties {
		v := form.Get(name)
		if v == "" {
			continue
		}
		switch p.Type {
		case "integer", "number", "boolean":
			var x any
			if err := json.Unmarshal([]byte(v), &x); err != nil {
				return nil, &action.Error{Kind: action.KindInvalidParam, Field: name, Message: fmt.Sprintf("%s must be a %s", name, p.Type)}
			}
			m[name] = x
		default:
			m[name] = v
		}
	}
	return json.Marshal(m)
}

// userID is the user id of a login or signup action's result,
// {"user": {"id": ...}}, as text.
func userID(out any) (string, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode the result: %w", err)
	}
	var res struct {
		User struct {
			ID json.RawMessage `json:"id"`
		} `json:"user"`
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.User.ID) == 0 || string(res.User.ID) == "null" {
		return "", errors.New(`the result is not {"user": {"id": ...}}`)
	}
	var id string
	if json.Unmarshal(res.User.ID, &id) == nil && id != "" {
		return id, nil
	}
	var n json.Number
	if json.Unmarshal(res.User.ID, &n) == nil {
		return n.String(), nil
	}
	return "", errors.New("the user id is neither a string nor a number")
}

// renderAuthorize renders the sign-in and sign-up page for ar, with a new
// CSRF token (cookie and hidden field), msg as its error and the tab of
// mode selected.
func (s *Server) renderAuthorize(w http.ResponseWriter, r *http.Request, ar authzRequest, status int, msg, mode string) {
	csrf := newSecret()
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: csrf, Path: PathAuthorize, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(time.Hour / time.Second)})
	var hidden strings.Builder
	hv := map[string]string{"response_type": "code", "client_id": ar.client.ID, "redirect_uri": ar.redirectURI, "state": ar.state,
		"code_challenge": ar.challenge, "code_challenge_method": "S256", "scope": Scope, "resource": ar.resource, "csrf_token": csrf}
	for _, k := range append(oauthParams, "csrf_token") {
		fmt.Fprintf(&hidden, `<input type="hidden" name="%s" value="%s">`, k, html.EscapeString(hv[k]))
	}
	errorHTML := ""
	if msg != "" {
		// An alert, focused as the page loads, so that a screen reader
		// reads it at once (role=alert alone is not announced reliably
		// on a page that has just loaded).
		errorHTML = `<p class="error" id="oauth-error" role="alert" tabindex="-1" autofocus>` + html.EscapeString(msg) + `</p>`
	}
	signin, signup := fields(s.login, false), fields(s.signup, true)
	body, err := s.pages.authorize.Render(map[string]any{
		"signinFields": signin, "signupFields": signup, "hasSignin": s.login != nil, "hasSignup": s.signup != nil,
		"signupSelected": mode == "signup" || s.login == nil, "errorHtml": errorHTML, "hiddenFields": hidden.String(),
		"clientName": ar.client.Name, "appName": s.opts.App.Name(),
	})
	if err != nil {
		s.opts.Logger.Error("render oauth-authorize.html", "error", err)
		s.errorPage(w, &pageError{http.StatusInternalServerError, "The sign-in page could not be rendered."})
		return
	}
	pageHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// errorPage renders e as a plain page: never a redirect.
func (s *Server) errorPage(w http.ResponseWriter, e *pageError) {
	pageHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(e.status)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`+
		`<title>Authorization error</title><link rel="stylesheet" href="%s"></head><body><main class="card"><h1>Authorization error</h1>`+
		`<p class="error" role="alert">%s</p></main></body></html>`, pathAssets+"oauth-common.css", html.EscapeString(e.msg))
}
