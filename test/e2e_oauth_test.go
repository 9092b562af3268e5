package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// startOAuth runs `mcpkit actions start --http` on a free loopback port
// with the OAuth server on (its issuer that port's origin) and returns the
// server. more are further members of the oauth configuration
// (`"templates_dir": "/x"`).
func startOAuth(t *testing.T, more ...string) *httpProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	members := append([]string{`"issuer": "http://` + addr + `"`}, more...)
	cfg := writeConfig(t, `{"plugins": {"actions": {"config": {"oauth": {`+strings.Join(members, ", ")+`}}}}}`)
	return startListening(t, binary(t), "actions", "--log-format", "json", "start", "--http", addr, "--config", cfg)
}

// registerFor registers a public client with redirect at the server base
// and returns its id.
func registerFor(t *testing.T, base, redirect string) string {
	t.Helper()
	return registerAt(t, base+"/oauth/register", redirect)
}

// registerAt registers a public client with redirect at the registration
// endpoint (RFC 7591) and returns its id.
func registerAt(t *testing.T, endpoint, redirect string) string {
	t.Helper()
	reg, err := oauthex.RegisterClient(t.Context(), endpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect}, ClientName: "e2e", TokenEndpointAuthMethod: "none"}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	return reg.ClientID
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// signOnPage plays the user in a browser: it opens the authorize URL,
// fills in the sign-up (or sign-in) form with the CSRF token the page
// carries, posts it and returns the redirect it answers with.
func signOnPage(ctx context.Context, authURL, mode, email string) (*url.URL, error) {
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(ctx, "GET", authURL, nil)
	resp, err := browser.Do(req)
	if err != nil {
		return nil, err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("authorize page: %d %s", resp.StatusCode, page)
	}
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], m[2])
	}
	if form.Get("csrf_token") == "" {
		return nil, errors.New("the page has no CSRF token")
	}
	for k, v := range map[string]string{"mode": mode, "name": "Ann", "email": email, "password": "correct horse battery"} {
		form.Set(k, v)
	}
	base, _ := url.Parse(authURL)
	req, _ = http.NewRequestWithContext(ctx, "POST", base.Scheme+"://"+base.Host+base.Path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = browser.Do(req)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("sign %s: %d %s", mode, resp.StatusCode, body)
	}
	return url.Parse(resp.Header.Get("Location"))
}

// postAs posts a message without an author and returns who the app says
// posted it.
func postAs(t *testing.T, cs *mcp.ClientSession, text string) (author string, userID int64) {
	t.Helper()
	res := callTool(t, cs, "message-post", map[string]any{"channel": "general", "text": text})
	if res.IsError {
		t.Fatalf("message-post: %s", resultText(res))
	}
	var m struct {
		Author string `json:"author"`
		UserID int64  `json:"user_id"`
	}
	if err := json.Unmarshal([]byte(resultText(res)), &m); err != nil {
		t.Fatal(err)
	}
	return m.Author, m.UserID
}

// discoverClient plays an MCP client that knows only the server at base:
// it meets /mcp's 401, follows its WWW-Authenticate to the protected
// resource's metadata and from there to the authorization server's,
// registers there with redirect and returns the OAuth configuration
// (golang.org/x/oauth2) and both metadata documents.
func discoverClient(t *testing.T, base, redirect string) (*oauth2.Config, *oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta) {
	t.Helper()
	code, challenge := challenge(t, base, strings.TrimPrefix(base, "http://"))
	m := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(challenge)
	if code != http.StatusUnauthorized || m == nil {
		t.Fatalf("unauthenticated /mcp: %d %q", code, challenge)
	}
	prm, err := oauthex.GetProtectedResourceMetadata(t.Context(), m[1], base+"/mcp", http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	asm, err := oauthex.GetAuthServerMeta(t.Context(), prm.AuthorizationServers[0]+"/.well-known/oauth-authorization-server", prm.AuthorizationServers[0], http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	return &oauth2.Config{ClientID: registerAt(t, asm.RegistrationEndpoint, redirect), RedirectURL: redirect, Scopes: []string{"mcp"},
		Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}, prm, asm
}

// TestOAuthE2E: an MCP client gets 401, discovers the servers' metadata,
// registers, signs up on the authorize page, exchanges the code with
// golang.org/x/oauth2 (PKCE) and calls a tool as that user; the same user
// signs in through the go-sdk's own OAuth client
// (auth.NewAuthorizationCodeHandler on StreamableClientTransport).
func TestOAuthE2E(t *testing.T) {
	hp := startOAuth(t)
	ctx := t.Context()

	conf, prm, asm := discoverClient(t, hp.base, stoppedRedirect)
	verifier := oauth2.GenerateVerifier()
	back, err := signOnPage(ctx, conf.AuthCodeURL("s1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", prm.Resource)), "signup", "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if back.Query().Get("state") != "s1" || back.Query().Get("iss") != asm.Issuer {
		t.Fatalf("redirect %s", back)
	}
	tok, err := conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	cs := hp.connect(t, legacyEra, conf.Client(ctx, tok))
	author, user := postAs(t, cs, "hello")
	if author != "Ann" || user == 0 {
		t.Fatalf("posted as %q (user %d)", author, user)
	}

	// The go-sdk's OAuth client, signing in as the same user.
	h := sdkOAuthHandler(t, "signin", "ann@example.com", asm.AuthorizationEndpoint)
	for _, era := range eras {
		sdk, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: hp.base + "/mcp", OAuthHandler: h, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatalf("go-sdk OAuth client (%s): %v\n%s", era, err, hp.stderr.String())
		}
		author2, user2 := postAs(t, sdk, "again")
		sdk.Close()
		if author2 != "Ann" || user2 != user {
			t.Fatalf("%s: the go-sdk client posted as %q (user %d), want Ann (user %d)", era, author2, user2, user)
		}
	}
}

// stoppedRedirect is the redirect URI of clients whose user signOnPage
// plays: it stops at the redirect, so nothing listens there.
const stoppedRedirect = "http://127.0.0.1:1/callback"

// sdkOAuthHandler is the go-sdk's OAuth client (auth.NewAuthorizationCodeHandler,
// for StreamableClientTransport.OAuthHandler): it registers dynamically
// and signs on as email (mode "signin" or "signup") with signOnPage at
// the authorize URL it is sent to, which must be authorizeEndpoint.
func sdkOAuthHandler(t *testing.T, mode, email, authorizeEndpoint string) *auth.AuthorizationCodeHandler {
	t.Helper()
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{stoppedRedirect}, ClientName: "go-sdk e2e", TokenEndpointAuthMethod: "none"}},
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if !strings.HasPrefix(args.URL, authorizeEndpoint+"?") {
				return nil, fmt.Errorf("the client was sent to %s, not %s", args.URL, authorizeEndpoint)
			}
			u, err := signOnPage(ctx, args.URL, mode, email)
			if err != nil {
				return nil, err
			}
			q := u.Query()
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
