package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

// startOAuthWith runs `mcpkit actions start --http` on a free loopback
// port with the OAuth server on (its issuer that port's origin), oauth
// holding further members of its configuration (`"register_limit": 9`)
// and plugin further members of the plugin's (`"redis": {...}`).
func startOAuthWith(t *testing.T, oauth, plugin string) *httpProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if oauth != "" {
		oauth = ", " + oauth
	}
	if plugin != "" {
		plugin = ", " + plugin
	}
	cfg := writeConfig(t, `{"plugins": {"actions": {"config": {"oauth": {"issuer": "http://`+addr+`"`+oauth+`}`+plugin+`}}}}`)
	return startListening(t, binary(t), "actions", "--log-format", "json", "start", "--http", addr, "--config", cfg)
}

// request sends method url with body (JSON when it starts with '{') and
// headers (name, value pairs) through client and returns the response,
// its body read.
func request(t *testing.T, client *http.Client, method, u, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(body, "{") {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// pageSignIn plays a browser on hp's OAuth sign-in page for client: it
// opens the page and posts the sign-in form with email and password, and
// returns the status and body of the answer.
func pageSignIn(t *testing.T, hp *httpProc, client, email, password string) (int, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier := oauth2.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {stoppedRedirect}, "state": {"s"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	resp, page := request(t, browser, "GET", hp.base+"/oauth/authorize?"+q.Encode(), "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authorize page: %d %s", resp.StatusCode, page)
	}
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(page, -1) {
		form.Set(m[1], m[2])
	}
	form.Set("mode", "signin")
	form.Set("email", email)
	form.Set("password", password)
	resp, body := request(t, browser, "POST", hp.base+"/oauth/authorize", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	return resp.StatusCode, body
}

// TestActionsSignInLimitShared: failed sign-ins through PUT /api/session
// on one instance and through the OAuth sign-in page on another, sharing
// one Redis, count toward one limit per account (10) and one per address
// (20); over either, both ways refuse (429), the right password too.
func TestActionsSignInLimitShared(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	shared := `"redis": {"addr": "` + srv.Addr + `", "prefix": "e2e-signin:"}, "rate_limit": {"unauthenticated": 1000, "authenticated": 1000}, ` + pgData(t)
	a, b := startOAuthWith(t, "", shared), startOAuthWith(t, "", shared)
	const email, password = "ann@example.com", "correct horse battery"
	if code, body := httpDo(t, "PUT", a.base+"/api/user", `{"name":"Ann","email":"`+email+`","password":"`+password+`"}`); code != 200 {
		t.Fatalf("sign up: %d %s", code, body)
	}
	client := registerFor(t, b.base, stoppedRedirect)
	attempt := func(i int, who, pw string) (int, string) {
		if i%2 == 0 {
			return httpDo(t, "PUT", a.base+"/api/session", `{"email":"`+who+`","password":"`+pw+`"}`)
		}
		return pageSignIn(t, b, client, who, pw)
	}
	for i := range 10 {
		if code, body := attempt(i, email, "wrong password "+fmt.Sprint(i)); code != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d %.300s", i, code, body)
		}
	}
	for i := range 2 {
		if code, body := attempt(i, email, password); code != http.StatusTooManyRequests || !strings.Contains(body, "for this account") {
			t.Fatalf("the right password after 10 failures (way %d): %d %.300s; want 429 for this account", i, code, body)
		}
	}
	// The address: 10 more failures on other accounts make 20.
	for i := range 10 {
		if code, body := attempt(i, fmt.Sprintf("nobody%d@example.com", i), "wrong password"); code != http.StatusUnauthorized {
			t.Fatalf("unknown account %d: %d %.300s", i, code, body)
		}
	}
	for i := range 2 {
		if code, body := attempt(i, "bob@example.com", "whatever password"); code != http.StatusTooManyRequests || !strings.Contains(body, "from this address") {
			t.Fatalf("a new account after 20 failures from the address (way %d): %d %.300s; want 429 from this address", i, code, body)
		}
	}
}

// oauthToken signs up email on hp's OAuth page as an MCP client would and
// returns the client's configuration, the code's redirect and the token.
func oauthToken(t *testing.T, hp *httpProc, email string) (*oauth2.Config, string, string, *oauth2.Token) {
	t.Helper()
	conf, prm, _ := discoverClient(t, hp.base, stoppedRedirect)
	verifier := oauth2.GenerateVerifier()
	back, err := signOnPage(t.Context(), conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", prm.Resource)), "signup", email)
	if err != nil {
		t.Fatal(err)
	}
	code := back.Query().Get("code")
	tok, err := conf.Exchange(t.Context(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	return conf, code, verifier, tok
}

// TestActionsAPIIdentifiesCaller: /api counts a signed-in session's
// requests and an OAuth bearer token's under the authenticated limit,
// not the address's; the token's user is the caller of the action; a bad
// token is 401 with a Bearer challenge.
func TestActionsAPIIdentifiesCaller(t *testing.T) {
	t.Parallel()
	hp := startOAuthWith(t, "", `"rate_limit": {"unauthenticated": 4, "authenticated": 50}`)
	_, _, _, tok := oauthToken(t, hp, "ann@example.com")

	// A signed-in session (the sign-in itself is unauthenticated: 1 of 4).
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	if resp, body := request(t, browser, "PUT", hp.base+"/api/session", `{"email":"ann@example.com","password":"correct horse battery"}`); resp.StatusCode != 200 {
		t.Fatalf("sign in: %d %s", resp.StatusCode, body)
	}
	// The address's allowance runs out.
	for i := range 4 {
		want := http.StatusOK
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		if resp, body := request(t, http.DefaultClient, "GET", hp.base+"/api/status", ""); resp.StatusCode != want || resp.Header.Get("X-RateLimit-Limit") != "4" {
			t.Fatalf("anonymous request %d: %d limit %s %s", i, resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"), body)
		}
	}
	for name, c := range map[string]struct {
		client *http.Client
		hdr    []string
	}{"session": {browser, nil}, "bearer": {http.DefaultClient, []string{"Authorization", "Bearer " + tok.AccessToken}}} {
		resp, body := request(t, c.client, "GET", hp.base+"/api/status", "", c.hdr...)
		if resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Limit") != "50" {
			t.Errorf("%s: %d limit %q %s; want 200 under the authenticated limit", name, resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"), body)
		}
		resp, body = request(t, c.client, "POST", hp.base+"/api/messages", `{"channel":"general","text":"by `+name+`"}`, c.hdr...)
		var m struct {
			Author string `json:"author"`
			UserID int64  `json:"user_id"`
		}
		if json.Unmarshal([]byte(body), &m); resp.StatusCode != 200 || m.Author != "Ann" || m.UserID == 0 {
			t.Errorf("%s: POST /api/messages: %d %s; want posted as Ann", name, resp.StatusCode, body)
		}
	}
	resp, body := request(t, http.DefaultClient, "GET", hp.base+"/api/status", "", "Authorization", "Bearer not-a-token")
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") || !strings.Contains(body, `"unauthorized"`) {
		t.Errorf("a bad bearer token: %d %q %s; want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
}

// TestActionsErrorsEchoAPrefix: a long bad value is echoed as a short
// prefix and its length, over HTTP and over MCP.
func TestActionsErrorsEchoAPrefix(t *testing.T) {
	t.Parallel()
	hp := startActions(t)
	long := strings.Repeat("x", 200000)
	code, body := httpDo(t, "POST", hp.base+"/api/messages", `{"channel":"general","text":"`+long+`","author":"ann"}`)
	if code != 400 || len(body) > 1024 || !strings.Contains(body, "…(200000 bytes)") || !strings.Contains(body, `"field":"text"`) {
		t.Errorf("HTTP: %d, %d bytes %.300s; want 400 under 1 KiB naming the length", code, len(body), body)
	}
	huge := strings.Repeat("y", 1<<20)
	cs := hp.connect(t, legacyEra, nil)
	res := callTool(t, cs, "message-post", map[string]any{"channel": "general", "text": huge, "author": "ann"})
	b, _ := json.Marshal(res)
	if !res.IsError || len(b) > 2048 || !strings.Contains(string(b), "…(1048576 bytes)") {
		t.Errorf("MCP: error %v, %d bytes %.300s; want a tool error under 2 KiB naming the length", res.IsError, len(b), b)
	}
}

// TestActionsOAuthRedirectSchemes: a remote redirect URI without https
// (ftp:, ws:, an undotted custom scheme) is refused at registration; a
// native app's reverse-domain scheme and http on loopback are accepted.
func TestActionsOAuthRedirectSchemes(t *testing.T) {
	t.Parallel()
	hp := startOAuthWith(t, `"register_limit": 100`, "")
	for uri, want := range map[string]int{
		"ftp://evil.example/cb":    400,
		"ws://evil.example/cb":     400,
		"myapp://cb":               400,
		"http://evil.example/cb":   400,
		"com.example.app:/cb":      201,
		"http://127.0.0.2:8000/cb": 201,
	} {
		resp, body := request(t, http.DefaultClient, "POST", hp.base+"/oauth/register", `{"redirect_uris":["`+uri+`"]}`)
		if resp.StatusCode != want || want == 400 && !strings.Contains(body, `"invalid_redirect_uri"`) {
			t.Errorf("%s: %d %s; want %d", uri, resp.StatusCode, body, want)
		}
	}
}

// TestActionsOAuthCodeReplayRevokes: exchanging a code a second time is
// refused and revokes the tokens of its first exchange: /mcp and /api
// refuse the access token, the token endpoint the refresh token.
func TestActionsOAuthCodeReplayRevokes(t *testing.T) {
	t.Parallel()
	hp := startOAuthWith(t, "", "")
	conf, code, verifier, tok := oauthToken(t, hp, "ann@example.com")
	if resp, body := request(t, http.DefaultClient, "GET", hp.base+"/api/status", "", "Authorization", "Bearer "+tok.AccessToken); resp.StatusCode != 200 {
		t.Fatalf("the token before the replay: %d %s", resp.StatusCode, body)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "client_id": {conf.ClientID}, "code": {code}, "redirect_uri": {stoppedRedirect}, "code_verifier": {verifier}}
	resp, body := request(t, http.DefaultClient, "POST", hp.base+"/oauth/token", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != 400 || !strings.Contains(body, "invalid_grant") {
		t.Fatalf("replayed code: %d %s", resp.StatusCode, body)
	}
	c := &rawHTTP{hp: hp, token: tok.AccessToken}
	if resp, _ := c.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp with the first exchange's token: %d, want 401", resp.StatusCode)
	}
	if resp, body := request(t, http.DefaultClient, "GET", hp.base+"/api/status", "", "Authorization", "Bearer "+tok.AccessToken); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/api with the first exchange's token: %d %s, want 401", resp.StatusCode, body)
	}
	form = url.Values{"grant_type": {"refresh_token"}, "client_id": {conf.ClientID}, "refresh_token": {tok.RefreshToken}}
	if resp, body := request(t, http.DefaultClient, "POST", hp.base+"/oauth/token", form.Encode(), "Content-Type", "application/x-www-form-urlencoded"); resp.StatusCode != 400 {
		t.Errorf("the first exchange's refresh token: %d %s, want 400", resp.StatusCode, body)
	}
}

// logsAt connects a legacy MCP client to hp that keeps the standalone SSE
// stream and sets its log level to level (none when ""), and returns the
// PubSub messages it gets.
func logsAt(t *testing.T, hp *httpProc, level mcp.LoggingLevel) chan logged {
	t.Helper()
	ch := make(chan logged, 10)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, &mcp.ClientOptions{
		LoggingMessageHandler: pubsubLogs(ch)}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hp.base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: legacyEra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if level != "" {
		if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			t.Fatal(err)
		}
	}
	// A call on the session: its standalone stream is open by the time it
	// is answered.
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestActionsPubSubReachesEveryClient: a message posted through the HTTP
// API reaches every connected legacy MCP client as a log notification,
// one that never set a log level too, in process and with the sessions
// shared through Redis; a client that set a level above info gets none.
// (OAuth is off: this is about notifications, not sign-in.)
func TestActionsPubSubReachesEveryClient(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	for name, plugin := range map[string]string{"in process": `{"oauth": false}`, "redis": `{"oauth": false, "redis": {"addr": "` + srv.Addr + `", "prefix": "e2e-every:"}, ` + pgData(t) + `}`} {
		t.Run(name, func(t *testing.T) {
			cfg := writeConfig(t, `{"plugins": {"actions": {"config": `+plugin+`}}}`)
			hp := startListening(t, binary(t), "actions", "--log-format", "json", "start", "--http", "127.0.0.1:0", "--config", cfg)
			silent, unset, info := logsAt(t, hp, "error"), logsAt(t, hp, ""), logsAt(t, hp, "info")
			if code, body := httpDo(t, "POST", hp.base+"/api/messages", `{"channel":"general","text":"to all","author":"ann"}`); code != 200 {
				t.Fatalf("POST /api/messages: %d %s", code, body)
			}
			for who, ch := range map[string]chan logged{"the client without a level": unset, "the client at info": info} {
				if l := firstLog(t, who, ch); l.channel != "general" || l.text != "to all" {
					t.Errorf("%s got %+v", who, l)
				}
			}
			select {
			case l := <-silent:
				t.Errorf("the client at error got %+v", l)
			case <-time.After(300 * time.Millisecond):
			}
		})
	}
}
