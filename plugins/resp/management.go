package resp

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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ManagementArgs are the management tool's arguments.
type ManagementArgs struct {
	Target string `json:"target,omitempty" jsonschema:"a configured target with a management_url (default: the default target)"`
	Method string `json:"method,omitempty" jsonschema:"GET (the default) or POST"`
	Path   string `json:"path" jsonschema:"a relative /api/... or /metrics path on the target's management origin, with its query string if any, e.g. /api/keys?count=20"`
	Body   any    `json:"body,omitempty" jsonschema:"POST: the JSON body, e.g. {\"action\": \"bgsave\"}"`
	// downloads
	DownloadPath     string `json:"download_path,omitempty" jsonschema:"GET: stream the response body to this new file under file_root (relative, or absolute beneath the root) instead of returning it"`
	MaxDownloadBytes int64  `json:"max_download_bytes,omitempty" jsonschema:"with download_path: the most bytes to accept (default and maximum: the download_bytes limit, 1 GiB)"`
}

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

// KindUnknownEffect: a POST failed after it was sent; it may or may not
// have taken effect. Inspect state before sending it again.
const KindUnknownEffect = "unknown_effect"

// management is the state of the management tools: one HTTP client per
// target (reused) and the live handles.
type management struct {
	p       *Plugin
	mu      sync.Mutex
	clients map[string]*http.Client
	live    *liveRegistry
}

// addManagement adds the management and management_live tools when some
// target has a management_url (without one they could reach nothing).
func (p *Plugin) addManagement() error {
	if !slices.ContainsFunc(p.cfg.names(), func(n string) bool { return p.cfg.targets[n].ManagementURL != "" }) {
		return nil
	}
	m := &management{p: p, clients: map[string]*http.Client{}}
	m.live = newLiveRegistry(p.host, m)
	p.mgmt = m
	schema, err := jsonschema.For[ManagementArgs](nil)
	if err != nil {
		return fmt.Errorf("management schema: %w", err)
	}
	schema.Properties["method"].Enum = []any{http.MethodGet, http.MethodPost}
	mcpcore.AddTool(p.host, &mcp.Tool{Name: "management", InputSchema: schema,
		Description: "The target's management HTTP API (e.g. mcpkit resp admin): every GET/POST route under /api and /metrics, on the target's configured management_url with its configured token (never from arguments). " +
			"{path: \"/api/keys?count=20\"}; {method: \"POST\", path: \"/api/storage/action\", body: {\"action\": \"flushdb\", \"confirmed\": true}}. " +
			"Returns status, content_type and body {encoding: json|text|base64, value}; a 4xx/5xx is a real response (isError, http_error). " +
			"Redirects, other origins, traversal and fragments are refused before sending. A POST that fails after sending has an unknown effect (kind unknown_effect). " +
			"{path: \"/api/replication/snapshot\", download_path: \"snap.rdb\"} streams to a new file under file_root and returns bytes and sha256."},
		m.call, mcpcore.ToolOptions{Timeout: mcpcore.MaxToolTimeout, Direct: true})
	if err := m.live.addTool(); err != nil {
		return err
	}
	p.host.OnSessionEnd(m.live.endClientSession)
	m.live.start(p.host.Context())
	return nil
}

// endpoint returns the management target a call names.
func (m *management) endpoint(name string) (*target, error) {
	if name == "" {
		name = m.p.cfg.defaultTarget
	}
	t := m.p.cfg.targets[name]
	if t == nil {
		return nil, &mcpcore.ParamError{Path: "/target", Reason: fmt.Sprintf("%q is not a configured target (configured: %v)", name, m.p.cfg.names())}
	}
	if t.ManagementURL == "" {
		return nil, &mcpcore.ParamError{Path: "/target", Reason: fmt.Sprintf("target %q has no management_url in the configuration", name)}
	}
	return t, nil
}

// client returns the target's HTTP client (reused): its CA, no redirect
// followed, no proxy from the environment (the origin is the configured
// one), HTTP/1.1 (which the live WebSocket needs).
func (m *management) client(t *target) *http.Client {
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

// closeIdle closes the clients' idle connections.
func (m *management) closeIdle() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.clients {
		c.CloseIdleConnections()
	}
}

// managementURL checks a tool's path and returns the URL on t's origin:
// only /api, /api/... and /metrics, no scheme, host, credentials, fragment,
// backslash, control character, or "." or ".." segment (also encoded).
// pointer is the argument's JSON Pointer for a refusal.
func managementURL(t *target, pointer, path string) (*url.URL, error) {
	bad := func(reason string) error { return &mcpcore.ParamError{Path: pointer, Reason: reason} }
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

func (m *management) call(ctx context.Context, _ *mcp.CallToolRequest, in ManagementArgs) (any, error) {
	t, err := m.endpoint(in.Target)
	if err != nil {
		return nil, err
	}
	method := in.Method
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodGet, http.MethodPost:
	default:
		return nil, &mcpcore.ParamError{Path: "/method", Reason: fmt.Sprintf("%q is not GET or POST", in.Method)}
	}
	u, err := managementURL(t, "/path", in.Path)
	if err != nil {
		return nil, err
	}
	var body []byte
	switch {
	case in.Body != nil && method != http.MethodPost:
		return nil, &mcpcore.ParamError{Path: "/body", Reason: "a body goes with method POST"}
	case method == http.MethodPost:
		if body, err = json.Marshal(in.Body); err != nil {
			return nil, &mcpcore.ParamError{Path: "/body", Reason: err.Error()}
		}
	}
	var dl *download
	if in.DownloadPath != "" || in.MaxDownloadBytes != 0 {
		if method != http.MethodGet {
			return nil, &mcpcore.ParamError{Path: "/download_path", Reason: "downloads are GET requests"}
		}
		if dl, err = m.prepareDownload(in.DownloadPath, in.MaxDownloadBytes); err != nil {
			return nil, err
		}
	}
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
		return nil, m.transportError(ctx, t, method, in.Path, sent.Load(), err)
	}
	defer res.Body.Close()
	reply := ManagementReply{Target: t.Name, Method: method, Path: in.Path, Status: res.StatusCode, ContentType: res.Header.Get("Content-Type")}
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		return nil, mcpcore.Errorf(KindRefused, "the management API answered %d with a redirect to %q, which is not followed (only the configured origin and path are reached)", res.StatusCode, res.Header.Get("Location"))
	}
	reply.HTTPError = res.StatusCode >= 400
	if dl != nil && !reply.HTTPError {
		info, err := dl.write(ctx, res.Body, res.ContentLength)
		if err != nil {
			return nil, err
		}
		reply.Download = info
		return reply, nil
	}
	limit := m.p.host.Limit(LimitReplyBytes)
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, m.transportError(ctx, t, method, in.Path, true, err)
	}
	if int64(len(data)) > limit {
		return nil, &mcpcore.LimitError{Limit: LimitReplyBytes, Max: limit, Detail: "the management response body is larger; nothing was returned (download it with download_path)"}
	}
	reply.Body = encodeBody(reply.ContentType, data)
	if method == http.MethodPost && res.StatusCode >= 500 {
		reply.Warning = "the POST was sent and failed on the server's side: its effect is unknown; inspect state before sending it again"
	}
	if reply.HTTPError {
		return nil, mcpcore.ErrorResult(reply)
	}
	return reply, nil
}

// transportError reports a request that got no response: not sent
// (unavailable: nothing happened), or sent (a POST then has an unknown
// effect). A cancelled or timed-out ctx is returned as is for the host.
func (m *management) transportError(ctx context.Context, t *target, method, path string, sent bool, err error) error {
	if ctx.Err() != nil {
		if sent && method == http.MethodPost {
			return mcpcore.ErrorResult(map[string]any{"warning": "the POST was sent before the call ended: its effect is unknown; inspect state before sending it again"})
		}
		return ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is in the message already
	}
	if sent && method == http.MethodPost {
		return mcpcore.Errorf(KindUnknownEffect, "POST %s on %s: sent, then %v: its effect is unknown; inspect state before sending it again", path, t.Name, err)
	}
	if sent {
		return mcpcore.Errorf(KindConnectionLost, "%s %s on %s: %v", method, path, t.Name, err)
	}
	return mcpcore.Errorf(KindConnection, "%s %s on %s: not sent: %v", method, path, t.Name, err)
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
