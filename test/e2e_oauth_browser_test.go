package test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"golang.org/x/oauth2"
)

// chromium is Debian's Chromium (scripts/install-deps.sh installs it).
const chromium = "/usr/bin/chromium"

// artifactDir is where the browser test writes its screenshots:
// $MCPKIT_ARTIFACTS/oauth, else mcpkit-artifacts/oauth in the temp dir.
func artifactDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("MCPKIT_ARTIFACTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "mcpkit-artifacts")
	}
	dir := filepath.Join(root, "oauth")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// headlessChromium starts Chromium (a 1280×900 window) for the test
// and returns its context, which ends after timeout; the browser stops
// with the test.
func headlessChromium(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s is missing: run scripts/install-deps.sh (%v)", chromium, err)
	}
	alloc, cancel := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))...)
	t.Cleanup(cancel)
	browser, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancel := context.WithTimeout(browser, timeout)
	t.Cleanup(cancel)
	return ctx
}

// signUpSteps play the user on a loaded authorize page: open the sign-up
// tab, fill it in (the password "correct horse battery") and submit it
// from the keyboard (Enter in the password field).
func signUpSteps(name, email string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Click(chromedp.CSS(`label[for="tab-signup"]`)),
		chromedp.WaitVisible(chromedp.ID("signup-name")),
		chromedp.SendKeys(chromedp.ID("signup-name"), name),
		chromedp.SendKeys(chromedp.ID("signup-email"), email),
		chromedp.SendKeys(chromedp.ID("signup-password"), "correct horse battery"+kb.Enter),
	)
}

// TestOAuthBrowser drives the whole flow a user sees in headless
// Chromium: an MCP client meets /mcp's 401, discovers the metadata and
// registers (discoverClient), the user opens the authorize page
// (screenshots at desktop and phone width), switches to the sign-up tab,
// fills it in and submits with the keyboard, and the browser lands on the
// client's callback with code, state and iss; the client exchanges the
// code with golang.org/x/oauth2 (PKCE) and calls a tool as that user. Then
// the same user signs in from a new client.
func TestOAuthBrowser(t *testing.T) {
	hp := startOAuth(t)
	got := make(chan url.Values, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/callback" {
			select {
			case got <- r.URL.Query():
			default:
			}
		}
		_, _ = w.Write([]byte("<!doctype html><title>client</title><p>back at the client</p>"))
	}))
	t.Cleanup(cb.Close)

	ctx := headlessChromium(t, 60*time.Second)

	// signOn plays a new MCP client (401, discovery, registration) and
	// the user on its authorize page (actions), and returns the token the
	// client gets for the code it is sent back.
	signOn := func(name string, actions ...chromedp.Action[chromedp.Void]) *oauth2.Token {
		t.Helper()
		conf, prm, _ := discoverClient(t, hp.base, cb.URL+"/callback")
		verifier := oauth2.GenerateVerifier()
		steps := append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(conf.AuthCodeURL(name, oauth2.S256ChallengeOption(verifier),
			oauth2.SetAuthURLParam("resource", prm.Resource))),
			chromedp.WaitVisible(chromedp.CSS(`form`))}, actions...)
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var q url.Values
		select {
		case q = <-got:
		case <-time.After(20 * time.Second):
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("%s: the browser never reached the callback; it is at %s: %s", name, loc, text)
		}
		if q.Get("state") != name || q.Get("iss") != hp.base || q.Get("code") == "" {
			t.Fatalf("%s: callback %v", name, q)
		}
		tok, err := conf.Exchange(t.Context(), q.Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	dir := artifactDir(t)
	shot := func(file string, w, h int64) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h)); err != nil {
				return err
			}
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				return err
			}
			t.Logf("screenshot %s", filepath.Join(dir, file))
			return os.WriteFile(filepath.Join(dir, file), png, 0o644)
		})
	}
	tok := signOn("signup",
		shot("authorize-desktop.png", 1280, 900),
		shot("authorize-phone.png", 390, 844),
		signUpSteps("Bea", "bea@example.com"),
	)
	author, user := postAs(t, hp.connect(t, legacyEra, (&oauth2.Config{}).Client(t.Context(), tok)), "from the browser")
	if author != "Bea" || user == 0 {
		t.Fatalf("posted as %q (user %d)", author, user)
	}
	tok = signOn("signin", // the sign-in tab is the one open
		chromedp.SendKeys(chromedp.ID("signin-email"), "bea@example.com"),
		chromedp.SendKeys(chromedp.ID("signin-password"), "correct horse battery"+kb.Enter),
	)
	if author2, user2 := postAs(t, hp.connect(t, legacyEra, (&oauth2.Config{}).Client(t.Context(), tok)), "signed in again"); user2 != user || author2 != "Bea" {
		t.Fatalf("signed in as %q (user %d), want Bea (user %d)", author2, user2, user)
	}
}
