package httporigin

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAllowed(t *testing.T) {
	r := httptest.NewRequest("GET", "http://127.0.0.1:8080/api", nil)
	tests := []struct {
		list   []string
		origin string
		want   bool
	}{
		{nil, "", true},                       // not a browser's cross-origin request
		{nil, "http://127.0.0.1:8080", true},  // same origin
		{nil, "HTTP://127.0.0.1:8080", true},  // case
		{nil, "https://127.0.0.1:8080", true}, // scheme not compared (TLS proxy)
		{nil, "http://localhost:8080", false}, // another host name
		{nil, "http://127.0.0.1:8081", false},
		{nil, "null", false},
		{[]string{"https://app.example"}, "https://app.example", true},
		{[]string{"https://app.example/"}, "https://APP.example", true},
		{[]string{"https://app.example"}, "https://app.example:8443", false},
		{[]string{"https://app.example"}, "https://evil.example", false},
		{[]string{"*"}, "https://evil.example", true},
		{[]string{"*"}, "null", true},
	}
	for _, tt := range tests {
		if got := New(tt.list).Allowed(tt.origin, r); got != tt.want {
			t.Errorf("%q, Origin %q: %v, want %v", tt.list, tt.origin, got, tt.want)
		}
	}
	tlsReq := httptest.NewRequest("GET", "https://app.example/api", nil)
	tlsReq.TLS = &tls.ConnectionState{}
	if !New(nil).Allowed("https://app.example", tlsReq) || New(nil).Allowed("http://app.example", tlsReq) {
		t.Error("default ports: https://app.example is app.example:443 and http://app.example is not")
	}
}

// "*" answers "*" without credentials; a listed origin is echoed, with
// credentials when the route asks; same-origin and refused origins get no
// CORS header.
func TestSetCORS(t *testing.T) {
	tests := []struct {
		list        []string
		origin      string
		credentials bool
		allow, cred string
	}{
		{[]string{"*"}, "https://any.example", true, "*", ""},
		{[]string{"*", "https://app.example"}, "https://app.example", true, "https://app.example", "true"},
		{[]string{"https://app.example"}, "https://app.example", true, "https://app.example", "true"},
		{[]string{"https://app.example"}, "https://app.example", false, "https://app.example", ""},
		{[]string{"https://app.example"}, "https://evil.example", true, "", ""},
		{nil, "http://127.0.0.1:8080", true, "", ""},
	}
	for _, tt := range tests {
		h := http.Header{}
		h.Add("Vary", "Origin") // the core's, before the route's
		granted := New(tt.list).SetCORS(h, tt.origin, tt.credentials)
		if h.Get("Access-Control-Allow-Origin") != tt.allow || h.Get("Access-Control-Allow-Credentials") != tt.cred || granted != (tt.allow != "") {
			t.Errorf("%q, Origin %q: %v %v", tt.list, tt.origin, granted, h)
		}
		if len(h.Values("Vary")) != 1 {
			t.Errorf("%q, Origin %q: Vary %q", tt.list, tt.origin, h.Values("Vary"))
		}
	}
}

// An origin admitted only by "*" loses its cookies; the same origin, a
// listed one and a request without Origin keep them.
func TestWithoutCookies(t *testing.T) {
	p := New([]string{"*", "https://app.example"})
	for origin, keep := range map[string]bool{"": true, "http://127.0.0.1:8080": true, "https://app.example": true, "http://localhost:3000": false} {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080/api", nil)
		r.Header.Set("Cookie", "s=1")
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		got := p.WithoutCookies(r)
		if (got.Header.Get("Cookie") != "") != keep || r.Header.Get("Cookie") == "" {
			t.Errorf("Origin %q: cookie %q (the original's %q), keep %v", origin, got.Header.Get("Cookie"), r.Header.Get("Cookie"), keep)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, ok := range []string{"*", "https://app.example", "http://127.0.0.1:3000", "https://app.example/", "http://[::1]:8080"} {
		if err := Check(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "app.example", "null", "https://app.example/app", "ftp://app.example", "https://user@app.example",
		"https://app.example?x", "https://app.example#x", "*.example.com", "https://", "https://app.example:"} {
		if err := Check(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A listed default port matches what a browser sends (it omits it).
	r := httptest.NewRequest("GET", "http://127.0.0.1:8080/api", nil)
	if !New([]string{"https://app.example:443"}).Allowed("https://app.example", r) || !New([]string{"http://app.example"}).Allowed("http://app.example:80", r) {
		t.Error("default ports are not compared as the same origin")
	}
}
