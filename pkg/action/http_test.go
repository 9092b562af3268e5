package action_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/mcpkit/mcpkit/pkg/action"
)

// serve starts the test app's HTTP handler on a real server.
func serve(t *testing.T, opts action.HTTPOptions) (string, *syncBuffer) {
	t.Helper()
	app, logs := testApp(t)
	srv := httptest.NewServer(app.HTTPHandler(opts))
	t.Cleanup(srv.Close)
	return srv.URL, logs
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func do(t *testing.T, method, u, contentType, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if len(raw) > 0 {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: body %q is not JSON: %v", method, u, raw, err)
		}
		r.body, _ = v.(map[string]any)
	}
	return r
}

// wantHTTPErr checks an error response's status, kind and field.
func wantHTTPErr(t *testing.T, r response, status int, kind action.Kind, field string) {
	t.Helper()
	e, _ := r.body["error"].(map[string]any)
	if r.status != status || e == nil || e["kind"] != string(kind) || (e["field"] == nil) != (field == "") || field != "" && e["field"] != field {
		t.Fatalf("got %d %s: want %d kind %s field %q", r.status, r.raw, status, kind, field)
	}
	if r.header.Get("Content-Type") != "application/json" {
		t.Errorf("error Content-Type %q", r.header.Get("Content-Type"))
	}
}

func TestHTTPRoutes(t *testing.T) {
	base, _ := serve(t, action.HTTPOptions{})
	r := do(t, "GET", base+"/api/status", "", "")
	if r.status != 200 || r.body["ok"] != true || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status: %d %s", r.status, r.raw)
	}
	// a literal route beats a parameterized one
	if r := do(t, "GET", base+"/api/user/me", "", ""); r.status != 200 || r.raw != "\"me\"\n" {
		t.Errorf("/user/me: %d %s", r.status, r.raw)
	}
	// path params are unescaped; query params converted to the input's types
	r = do(t, "GET", base+"/api/user/a%2Fb?verbose=true&limit=3&tags=x&tags=y", "", "")
	in, _ := r.body["in"].(map[string]any)
	if r.status != 200 || in["id"] != "a/b" || in["verbose"] != true || in["limit"] != float64(3) || len(in["tags"].([]any)) != 2 {
		t.Errorf("user:view: %d %s", r.status, r.raw)
	}
	if conn := r.body["conn"].(map[string]any); conn["type"] != "web" || conn["id"] != r.header.Get("X-Request-Id") {
		t.Errorf("conn %v: want type web and the request id", conn)
	}
	// a bad query value names its param
	wantHTTPErr(t, do(t, "GET", base+"/api/user/1?limit=many", "", ""), 400, action.KindInvalidParam, "limit")
	wantHTTPErr(t, do(t, "GET", base+"/api/user/1?limit=1&limit=2", "", ""), 400, action.KindInvalidParam, "limit")
	wantHTTPErr(t, do(t, "GET", base+"/api/user/1?admin=1", "", ""), 400, action.KindInvalidParam, "admin")
	// unknown routes and methods
	wantHTTPErr(t, do(t, "GET", base+"/api/nope", "", ""), 404, action.KindNotFound, "")
	wantHTTPErr(t, do(t, "GET", base+"/api/user/1/x", "", ""), 404, action.KindNotFound, "")
	wantHTTPErr(t, do(t, "GET", base+"/apix/status", "", ""), 404, action.KindNotFound, "")
	r = do(t, "DELETE", base+"/api/user/1", "", "")
	if r.status != 405 || r.header.Get("Allow") != "GET, PUT" {
		t.Errorf("DELETE /user/1: %d Allow %q %s", r.status, r.header.Get("Allow"), r.raw)
	}
	// an action without a Web route is not served
	wantHTTPErr(t, do(t, "GET", base+"/api/internal:only", "", ""), 404, action.KindNotFound, "")
}

func TestHTTPParams(t *testing.T) {
	base, _ := serve(t, action.HTTPOptions{Prefix: "/v1/"})
	const js = "application/json"
	// JSON body
	r := do(t, "POST", base+"/v1/user", js, `{"name":"ann","password":"12345678","age":3}`)
	if r.status != 200 || r.body["name"] != "ann" || r.body["age"] != float64(3) {
		t.Fatalf("JSON body: %d %s", r.status, r.raw)
	}
	// form body, converted
	r = do(t, "POST", base+"/v1/user", "application/x-www-form-urlencoded", url.Values{"name": {"bob"}, "password": {"12345678"}, "age": {"4"}}.Encode())
	if r.status != 200 || r.body["name"] != "bob" || r.body["age"] != float64(4) {
		t.Fatalf("form body: %d %s", r.status, r.raw)
	}
	// body and query merge; the same value twice is fine, different ones are refused
	r = do(t, "POST", base+"/v1/user?age=5", js, `{"name":"cy","password":"12345678"}`)
	if r.status != 200 || r.body["age"] != float64(5) {
		t.Errorf("body + query: %d %s", r.status, r.raw)
	}
	if r := do(t, "POST", base+"/v1/user?age=5", js, `{"name":"cy","password":"12345678","age":5}`); r.status != 200 {
		t.Errorf("same value in body and query: %d %s", r.status, r.raw)
	}
	wantHTTPErr(t, do(t, "POST", base+"/v1/user?age=6", js, `{"name":"cy","password":"12345678","age":5}`), 400, action.KindInvalidParam, "age")
	// path and body
	r = do(t, "PUT", base+"/v1/user/7", js, `{"id":"7","limit":2}`)
	if r.status != 200 || r.body["id"] != "7" || r.body["limit"] != float64(2) {
		t.Errorf("path + body: %d %s", r.status, r.raw)
	}
	wantHTTPErr(t, do(t, "PUT", base+"/v1/user/7", js, `{"id":"8"}`), 400, action.KindInvalidParam, "id")
	wantHTTPErr(t, do(t, "PUT", base+"/v1/user/7?id=8", "", ""), 400, action.KindInvalidParam, "id")
	// body errors
	wantHTTPErr(t, do(t, "POST", base+"/v1/user", js, `{"password":"12345678"}`), 400, action.KindMissingParam, "name")
	wantHTTPErr(t, do(t, "POST", base+"/v1/user", js, `[1]`), 400, action.KindInvalidParam, "")
	wantHTTPErr(t, do(t, "POST", base+"/v1/user", "text/plain", `name=x`), 400, action.KindInvalidParam, "")
}

func TestHTTPErrorStatuses(t *testing.T) {
	base, logs := serve(t, action.HTTPOptions{})
	for _, k := range []action.Kind{action.KindMissingParam, action.KindInvalidParam, action.KindNotFound, action.KindUnauthorized,
		action.KindForbidden, action.KindRateLimited, action.KindTimeout, action.KindConflict, action.KindTooLarge, action.KindInternal} {
		r := do(t, "POST", base+"/api/fail", "application/json", `{"kind":"`+string(k)+`"}`)
		wantHTTPErr(t, r, k.HTTPStatus(), k, "")
	}
	wantHTTPErr(t, do(t, "GET", base+"/api/slow", "", ""), 408, action.KindTimeout, "")
	r := do(t, "GET", base+"/api/boom", "", "")
	wantHTTPErr(t, r, 500, action.KindInternal, "")
	if strings.Contains(r.raw, "panic text") {
		t.Errorf("the panic text reached the client: %s", r.raw)
	}
	if !strings.Contains(logs.String(), "the panic text") {
		t.Error("the panic was not logged")
	}
	const pw = "my-http-secret-1"
	r = do(t, "POST", base+"/api/user", "application/json", `{"name":"taken","password":"`+pw+`"}`)
	wantHTTPErr(t, r, 409, action.KindConflict, "")
	if strings.Contains(r.raw, pw) || strings.Contains(logs.String(), pw) {
		t.Errorf("the secret reached the client or the log: %s", r.raw)
	}
}

func TestHTTPBodyLimit(t *testing.T) {
	base, _ := serve(t, action.HTTPOptions{MaxBodyBytes: 64})
	big := `{"name":"` + strings.Repeat("x", 100) + `","password":"12345678"}`
	wantHTTPErr(t, do(t, "POST", base+"/api/user", "application/json", big), 413, action.KindTooLarge, "")
	// without a Content-Length (chunked), the limit holds while reading
	req, err := http.NewRequest("POST", base+"/api/user", io.MultiReader(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked over-limit body: %d", resp.StatusCode)
	}
	if r := do(t, "POST", base+"/api/user", "application/json", `{"name":"a","password":"12345678"}`); r.status != 200 {
		t.Errorf("a body under the limit: %d %s", r.status, r.raw)
	}
}

func TestHTTPHeadersAndRequestID(t *testing.T) {
	base, _ := serve(t, action.HTTPOptions{})
	for _, path := range []string{"/api/status", "/api/nope"} {
		r := do(t, "GET", base+path, "", "")
		for h, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if r.header.Get(h) != v {
				t.Errorf("%s: %s %q, want %q", path, h, r.header.Get(h), v)
			}
		}
		if len(r.header.Get("X-Request-Id")) != 32 {
			t.Errorf("%s: generated request id %q", path, r.header.Get("X-Request-Id"))
		}
	}
	a, b := do(t, "GET", base+"/api/status", "", ""), do(t, "GET", base+"/api/status", "", "")
	if a.header.Get("X-Request-Id") == b.header.Get("X-Request-Id") {
		t.Error("two requests got the same id")
	}
	if r := do(t, "GET", base+"/api/status", "", "", "X-Request-Id", "abc-123"); r.header.Get("X-Request-Id") != "abc-123" {
		t.Errorf("the client's id was not echoed: %q", r.header.Get("X-Request-Id"))
	}
	if r := do(t, "GET", base+"/api/status", "", "", "X-Request-Id", strings.Repeat("x", 129)); len(r.header.Get("X-Request-Id")) != 32 {
		t.Errorf("an over-long id was kept: %q", r.header.Get("X-Request-Id"))
	}
}

func TestHTTPCORS(t *testing.T) {
	base, _ := serve(t, action.HTTPOptions{AllowedOrigins: []string{"https://app.example"}})
	pre := func(origin string) response {
		return do(t, "OPTIONS", base+"/api/user/1", "", "", "Origin", origin, "Access-Control-Request-Method", "PUT")
	}
	r := pre("https://app.example")
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		r.header.Get("Access-Control-Allow-Credentials") != "true" || r.header.Get("Access-Control-Allow-Methods") != "GET, PUT, OPTIONS" {
		t.Errorf("preflight: %d %v", r.status, r.header)
	}
	wantHTTPErr(t, pre("https://evil.example"), 403, action.KindForbidden, "")
	wantHTTPErr(t, do(t, "GET", base+"/api/status", "", "", "Origin", "https://evil.example"), 403, action.KindForbidden, "")
	// same origin is allowed without being listed
	host := strings.TrimPrefix(base, "http://")
	if r := do(t, "GET", base+"/api/status", "", "", "Origin", "http://"+host); r.status != 200 {
		t.Errorf("same-origin request: %d %s", r.status, r.raw)
	}
	// "*" allows any origin without credentials
	base, _ = serve(t, action.HTTPOptions{AllowedOrigins: []string{"*"}})
	r = do(t, "GET", base+"/api/status", "", "", "Origin", "https://any.example")
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("wildcard: %d %v", r.status, r.header)
	}
}

func TestSwaggerValid(t *testing.T) {
	base, _ := serve(t, action.HTTPOptions{})
	r := do(t, "GET", base+"/api/swagger", "", "")
	if r.status != 200 {
		t.Fatalf("swagger: %d %s", r.status, r.raw)
	}
	doc, err := openapi3.NewLoader().LoadFromData([]byte(r.raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v\n%s", err, r.raw)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi %s", doc.OpenAPI)
	}
	view := doc.Paths.Find("/api/user/{id}")
	if view == nil || view.Get == nil || view.Put == nil || doc.Paths.Find("/api/status").Get == nil || doc.Paths.Find("/api/internal:only") != nil {
		t.Fatalf("paths: %v", doc.Paths.InMatchingOrder())
	}
	if p := view.Get.Parameters.GetByInAndName("path", "id"); p == nil || !p.Required {
		t.Errorf("user:view has no required path param id")
	}
	if p := view.Get.Parameters.GetByInAndName("query", "limit"); p == nil || p.Required {
		t.Errorf("user:view has no optional query param limit")
	}
	create := doc.Paths.Find("/api/user").Post
	body := create.RequestBody.Value.Content.Get("application/json").Schema.Value
	if pw := body.Properties["password"].Value; pw.Format != "password" || !pw.WriteOnly || len(body.Required) != 2 {
		t.Errorf("user:create body schema: %+v", body)
	}
	if create.Responses.Status(409) == nil || create.Responses.Status(200) == nil || create.Responses.Status(408) == nil {
		t.Error("user:create lacks error responses")
	}
	if put := view.Put.RequestBody.Value.Content.Get("application/json").Schema.Value; put.Properties["id"] != nil {
		t.Error("the path param id is in user:update's body schema")
	}
	r = do(t, "POST", base+"/api/swagger", "", "")
	if r.status != 405 {
		t.Errorf("POST swagger: %d", r.status)
	}
}
