package respengine

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// ManagementReply is the management tool's result: the HTTP response, or
// for a download the file written. A 4xx or 5xx status is a real response
// of the management API (the action did not succeed): the call is then
// marked isError with this reply.
type ManagementReply struct {
	Target      string        `json:"target"`
	Method      string        `json:"method"`
	Path        string        `json:"path"`
	Status      int           `json:"status"`
	ContentType string        `json:"content_type"`
	Body        *Body         `json:"body,omitempty"`
	Download    *DownloadInfo `json:"download,omitempty"`
	HTTPError   bool          `json:"http_error,omitempty" jsonschema:"the status is 4xx or 5xx: a real HTTP response, not a successful action"`
	Warning     string        `json:"warning,omitempty" jsonschema:"set when a POST was answered 5xx: its effect is unknown"`
}

// Body is a response body: JSON when the response is JSON, else text when
// it is UTF-8, else base64. A body larger than the reply_bytes limit fails
// the call with a limit error (download it with download_path instead).
type Body struct {
	Encoding string `json:"encoding" jsonschema:"json, text or base64"`
	Value    any    `json:"value"`
}

// DownloadInfo describes a file written by a download.
type DownloadInfo struct {
	Path   string `json:"path" jsonschema:"the absolute path of the new file"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256" jsonschema:"hex SHA-256 of the file's bytes"`
}

// Names of the limits [Management] and [Live] report in a [*LimitError].
const (
	LimitReplyBytes     = "reply_bytes"
	LimitDownloadBytes  = "download_bytes"
	LimitMaxLiveHandles = "max_live_handles"
)

// ManagementOptions configure [Management].
type ManagementOptions struct {
	// FileRoot is the existing directory downloads are confined to ("":
	// downloads are refused).
	FileRoot string
	// MaxBodyBytes bounds a response body returned (LimitReplyBytes);
	// MaxDownloadBytes a download (LimitDownloadBytes).
	MaxBodyBytes     int64
	MaxDownloadBytes int64
}

// Management is the client of the targets' management HTTP APIs (what
// 'mcpkit resp admin' serves): one HTTP client per target, reused, that
// reaches only the target's configured origin, with its configured token,
// and follows no redirect. It starts no goroutine; CloseIdle drops its idle
// connections.
type Management struct {
	opts    ManagementOptions
	mu      sync.Mutex
	clients map[string]*http.Client
}

// NewManagement returns a client; it connects to nothing.
func NewManagement(opts ManagementOptions) *Management {
	return &Management{opts: opts, clients: map[string]*http.Client{}}
}

// ManagementRequest is one request to a management API.
type ManagementRequest struct {
	Method string // GET (the default, "") or POST
	Path   string // /api/... or /metrics, with its query string
	Body   any    // POST: marshalled as the JSON body
	// DownloadPath (GET) streams the body to this new file under FileRoot
	// (relative, or absolute beneath the root) instead of returning it, up
	// to MaxDownloadBytes (0: ManagementOptions.MaxDownloadBytes).
	DownloadPath     string
	MaxDownloadBytes int64
}

// client returns the target's HTTP client (reused): its CA, no redirect
// followed, no proxy from the environment (the origin is the configured
// one), HTTP/1.1 (which the live WebSocket needs).
func (m *Management) client(t *Target) *http.Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.clients[t.Name]; c != nil {
		return c
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: t.ManagementCAs},
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
	}
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	m.clients[t.Name] = c
	return c
}

// CloseIdle closes the clients' idle connections.
func (m *Management) CloseIdle() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.clients {
		c.CloseIdleConnections()
	}
}

// managementURL checks a tool's path and returns the URL on t's origin:
// only /api, /api/... and /metrics, no scheme, host, credentials, fragment,
// backslash, control character, or "." or ".." segment (also encoded).
// arg names the argument for a refusal ([*ArgError]).
func managementURL(t *Target, arg, path string) (*url.URL, error) {
	bad := func(reason string) error { return &ArgError{Arg: arg, Reason: reason} }
	if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") {
		return nil, bad("want a relative path starting with /api/ or /metrics (not a URL, not //host)")
	}
	if strings.ContainsAny(path, "#\\") {
		return nil, bad("fragments (#) and backslashes are refused")
	}
	for _, r := range path {
		if r < 0x20 || r == 0x7f {
			return nil, bad("control characters are refused")
		}
	}
	u, err := url.Parse(path)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return nil, bad("want a relative path on the configured management origin")
	}
	if u.Path != "/api" && !strings.HasPrefix(u.Path, "/api/") && u.Path != "/metrics" {
		return nil, bad(fmt.Sprintf("%q is outside /api/... and /metrics", u.Path))
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, bad("traversal (. or .. segments, also percent-encoded) is refused")
		}
	}
	origin, err := url.Parse(t.ManagementURL)
	if err != nil {
		return nil, fmt.Errorf("management_url of %s: %w", t.Name, err)
	}
	full := &url.URL{Scheme: origin.Scheme, Host: origin.Host, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
	if full.Scheme != origin.Scheme || full.Host != origin.Host {
		return nil, bad("the path would change the origin")
	}
	return full, nil
}

// Do sends req to t's management origin and returns the response: its
// body (encoded, at most MaxBodyBytes), or for a download the file
// written. A 4xx or 5xx status is a real response (HTTPError), not an
// error. A request that got no response fails with [ErrUnavailable] (not
// sent), [ErrConnectionLost] (sent) or, for a POST that was sent,
// [ErrUnknownEffect] (wrapping ctx's error when ctx ended); a redirect
// with [ErrRefused]. Every argument is checked before anything is sent.
func (m *Management) Do(ctx context.Context, t *Target, in ManagementRequest) (ManagementReply, error) {
	method := in.Method
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodGet, http.MethodPost:
	default:
		return ManagementReply{}, &ArgError{Arg: "method", Reason: fmt.Sprintf("%q is not GET or POST", in.Method)}
	}
	u, err := managementURL(t, "path", in.Path)
	if err != nil {
		return ManagementReply{}, err
	}
	var body []byte
	switch {
	case in.Body != nil && method != http.MethodPost:
		return ManagementReply{}, &ArgError{Arg: "body", Reason: "a body goes with method POST"}
	case method == http.MethodPost:
		if body, err = json.Marshal(in.Body); err != nil {
			return ManagementReply{}, &ArgError{Arg: "body", Reason: err.Error()}
		}
	}
	var dl *download
	if in.DownloadPath != "" || in.MaxDownloadBytes != 0 {
		if method != http.MethodGet {
			return ManagementReply{}, &ArgError{Arg: "download_path", Reason: "downloads are GET requests"}
		}
		if dl, err = m.prepareDownload(in.DownloadPath, in.MaxDownloadBytes); err != nil {
			return ManagementReply{}, err
		}
	}
	res, err := m.send(ctx, t, method, u, in.Path, body)
	if err != nil {
		return ManagementReply{}, err
	}
	defer res.Body.Close()
	return m.response(ctx, t, res, method, in.Path, dl)
}

// send sends one request with t's token and returns the response.
func (m *Management) send(ctx context.Context, t *Target, method string, u *url.URL, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("management request: %w", err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if tok := t.ManagementToken(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	var sent atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { sent.Store(true) }}))
	res, err := m.client(t).Do(req)
	if err != nil {
		return nil, m.transportError(ctx, t, method, path, sent.Load(), err)
	}
	return res, nil
}

// response reads res into a reply, or into the download dl.
func (m *Management) response(ctx context.Context, t *Target, res *http.Response, method, path string, dl *download) (ManagementReply, error) {
	reply := ManagementReply{Target: t.Name, Method: method, Path: path, Status: res.StatusCode, ContentType: res.Header.Get("Content-Type")}
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		return ManagementReply{}, errorf(ErrRefused, "the management API answered %d with a redirect to %q, which is not followed (only the configured origin and path are reached)", res.StatusCode, res.Header.Get("Location"))
	}
	reply.HTTPError = res.StatusCode >= 400
	if dl != nil && !reply.HTTPError {
		info, err := dl.write(ctx, res.Body, res.ContentLength)
		if err != nil {
			return ManagementReply{}, err
		}
		reply.Download = info
		return reply, nil
	}
	limit := m.opts.MaxBodyBytes
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return ManagementReply{}, m.transportError(ctx, t, method, path, true, err)
	}
	if int64(len(data)) > limit {
		return ManagementReply{}, &LimitError{Limit: LimitReplyBytes, Max: limit, Detail: "the management response body is larger; nothing was returned (download it with download_path)"}
	}
	reply.Body = encodeBody(reply.ContentType, data)
	if method == http.MethodPost && res.StatusCode >= 500 {
		reply.Warning = "the POST was sent and failed on the server's side: its effect is unknown; inspect state before sending it again"
	}
	return reply, nil
}

// transportError reports a request that got no response: not sent
// (unavailable: nothing happened), or sent (a POST then has an unknown
// effect). A cancelled or timed-out ctx is returned as is, or for a POST
// that was sent wrapped in an [ErrUnknownEffect] error.
func (m *Management) transportError(ctx context.Context, t *Target, method, path string, sent bool, err error) error {
	if ctx.Err() != nil {
		if sent && method == http.MethodPost {
			return errorf(ErrUnknownEffect, "the POST was sent before the call ended: its effect is unknown; inspect state before sending it again: %w", ctx.Err())
		}
		return ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is in the message already
	}
	if sent && method == http.MethodPost {
		return errorf(ErrUnknownEffect, "POST %s on %s: sent, then %v: its effect is unknown; inspect state before sending it again", path, t.Name, err)
	}
	if sent {
		return errorf(ErrConnectionLost, "%s %s on %s: %v", method, path, t.Name, err)
	}
	return errorf(ErrUnavailable, "%s %s on %s: not sent: %v", method, path, t.Name, err)
}

// encodeBody chooses a body's encoding: json when the content type is
// JSON and the body parses, text when it is UTF-8, else base64.
func encodeBody(contentType string, data []byte) *Body {
	mt, _, _ := mime.ParseMediaType(contentType)
	if (mt == "application/json" || strings.HasSuffix(mt, "+json")) && json.Valid(data) {
		return &Body{Encoding: "json", Value: json.RawMessage(data)}
	}
	if utf8.Valid(data) {
		return &Body{Encoding: "text", Value: string(data)}
	}
	return &Body{Encoding: "base64", Value: base64.StdEncoding.EncodeToString(data)}
}
