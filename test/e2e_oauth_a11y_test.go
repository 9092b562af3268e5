package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"golang.org/x/oauth2"
)

// Scripts the accessibility test evaluates in the page.
const (
	// unlabelledJS lists the form controls without an accessible name: no
	// label (label[for] or wrapping), aria-label or aria-labelledby text,
	// nor, for a button, text of its own.
	unlabelledJS = `[...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')].filter(e => {
		let name = [...(e.labels || [])].map(l => l.textContent).join(' ') + (e.getAttribute('aria-label') || '');
		for (const id of (e.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean)) name += document.getElementById(id)?.textContent || '';
		if (e.tagName === 'BUTTON') name += e.textContent;
		return name.trim() === '';
	}).map(e => e.id || e.name || e.outerHTML)`
	// focusedJS describes the focused element and where it is drawn.
	focusedJS = `(() => { const e = document.activeElement, r = e.getBoundingClientRect();
		return {id: e.id || (e.tagName.toLowerCase() + ':' + e.textContent.trim()), top: r.top, left: r.left}; })()`
	// overflowJS is how many CSS pixels the page is wider than the viewport.
	overflowJS = `document.documentElement.scrollWidth - document.documentElement.clientWidth`
	// announcedJS is the text of the live regions (role alert or status,
	// aria-live) that are shown.
	announcedJS = `[...document.querySelectorAll('[role=alert], [role=status], [aria-live]:not([aria-live=off])')]
		.filter(e => e.offsetParent !== null).map(e => e.textContent.trim()).join(' | ')`
	// noAutocompleteJS lists the text, email and password inputs without an
	// autocomplete token (WCAG 1.3.5).
	noAutocompleteJS = `[...document.querySelectorAll('input[type=text], input[type=email], input[type=password]')]
		.filter(e => !e.getAttribute('autocomplete')).map(e => e.id || e.name)`
	// shownJS names the form shown and the tab checked.
	shownJS = `[...document.querySelectorAll('form')].filter(f => f.offsetParent !== null).map(f => f.getAttribute('aria-label')).join(',') +
		'/' + document.querySelector('input[name=tab]:checked').id`
)

type focused struct {
	ID   string  `json:"id"`
	Top  float64 `json:"top"`
	Left float64 `json:"left"`
}

// TestOAuthAuthorizePageAccessible checks the authorize page in headless
// Chromium as keyboard and screen-reader users meet it (authorizePageProblems),
// and, so that the checks are known to catch what they look for, runs
// them on a page built from templates broken on purpose (templates_dir):
// every kind of problem is found there.
func TestOAuthAuthorizePageAccessible(t *testing.T) {
	t.Parallel()
	ctx := headlessChromium(t, 90*time.Second)
	if problems := authorizePageProblems(t, ctx, startOAuth(t).base); len(problems) > 0 {
		t.Errorf("the authorize page:\n%s", strings.Join(problems, "\n"))
	}

	dir := t.TempDir()
	if out, err := exec.Command(binary(t), "actions", "templates", dir).CombinedOutput(); err != nil {
		t.Fatalf("mcpkit actions templates: %v\n%s", err, out)
	}
	breakFile(t, filepath.Join(dir, "oauth-authorize.html"),
		`<html lang="en">`, `<html>`, // no language
		`<label for="signin-{{name}}">`, `<label>`, // sign-in fields unnamed
		`<button type="submit">Sign in</button>`, `<button type="button" tabindex="1">Sign in</button>`, // no Enter, focus first
		`id="tab-signin" class="tab-radio"`, `id="tab-signin" class="tab-radio" tabindex="-1"`, // tabs out of the Tab order
		`{{{errorHtml}}}`, ``, // errors not shown
		`{{#autocomplete}} autocomplete="{{autocomplete}}"{{/autocomplete}}`, ``, // no autocomplete tokens
	)
	breakFile(t, filepath.Join(dir, "oauth-common.css"), `.card {`, `.card { min-width: 30rem;`) // wider than a phone
	broken := startOAuth(t, `"templates_dir": "`+dir+`"`)
	found := strings.Join(authorizePageProblems(t, ctx, broken.base), "\n")
	for _, kind := range []string{"lang:", "name:", "order:", "tabs:", "submit:", "alert:", "autocomplete:", "width:"} {
		if !strings.Contains(found, kind) {
			t.Errorf("on the broken page the checks found no %s problem; they found:\n%s", kind, found)
		}
	}
}

// breakFile replaces, in the file at path, each old string of pairs (which
// must be there) with the new one after it.
func breakFile(t *testing.T, path string, pairs ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("%s has no %q to break", path, pairs[i])
		}
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// authorizePageProblems opens the authorize page of the server at base
// for a new client in the browser and returns what keyboard and
// screen-reader users would meet, each problem prefixed by its kind:
// name (a control without an accessible name), lang (no page language),
// autocomplete (a text, email or password input without its token),
// order (Tab from the first field does not walk the sign-in fields, then
// its button, down the page), tabs (Shift+Tab from the first field does
// not reach the tabs, an arrow key does not switch them, or Tab does not
// then enter the panel shown), submit (Enter in the password field does
// not submit), alert (the refused sign-in's error is not in a live
// region, not focused, not in the title, or its tab is not kept open)
// and width (the page scrolls sideways at 375 or 320 px).
func authorizePageProblems(t *testing.T, ctx context.Context, base string) []string {
	t.Helper()
	conf := &oauth2.Config{ClientID: registerFor(t, base, stoppedRedirect), RedirectURL: stoppedRedirect, Scopes: []string{"mcp"},
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth/authorize"}}
	authURL := conf.AuthCodeURL("a11y", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	var problems []string
	problem := func(kind, format string, args ...any) {
		problems = append(problems, kind+": "+fmt.Sprintf(format, args...))
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	current := func() focused { t.Helper(); return evaluate[focused](t, ctx, focusedJS) }
	key := func(k string, mods ...chromedp.Modifier) chromedp.Action[chromedp.Void] {
		return chromedp.KeyEvent(k, chromedp.KeyModifiers(mods...))
	}
	noSidewaysScroll := func(when string) {
		t.Helper()
		for _, w := range []int64{375, 320} {
			run("viewport", chromedp.EmulateViewport(w, 740))
			if over := evaluate[float64](t, ctx, overflowJS); over > 0 {
				problem("width", "%s at %d px is %v px wider than the viewport", when, w, over)
			}
		}
		run("viewport", chromedp.EmulateViewport(1280, 900))
	}
	// submitted waits for the page the form's post answers with, up to
	// 3 s, and reports whether it came.
	submitted := func() bool {
		t.Helper()
		// Generous: under load the POST, its redirect and the new page
		// took over 3 s (the broken page, which never submits, waits it out).
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			// Asked from here: the page's own context goes with the old page.
			if fresh, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.a11yOld === undefined && document.readyState === 'complete'`)); err == nil && fresh {
				return true
			}
			time.Sleep(50 * time.Millisecond)
		}
		return false
	}

	run("open the authorize page", chromedp.Navigate(authURL), chromedp.WaitVisible(chromedp.CSS(`form`)))
	if unnamed := evaluate[[]string](t, ctx, unlabelledJS); len(unnamed) > 0 {
		problem("name", "controls without an accessible name: %v", unnamed)
	}
	if evaluate[string](t, ctx, `document.documentElement.lang`) == "" {
		problem("lang", "the page does not declare its language")
	}
	if missing := evaluate[[]string](t, ctx, noAutocompleteJS); len(missing) > 0 {
		problem("autocomplete", "inputs without an autocomplete token: %v", missing)
	}

	// Focus order: the sign-in fields, then its button, down the page.
	run("focus the first field", chromedp.Focus(chromedp.ID("signin-email")))
	walk := []focused{current()}
	for range 2 {
		run("Tab", key(kb.Tab))
		walk = append(walk, current())
	}
	var ids []string
	for i, f := range walk {
		ids = append(ids, f.ID)
		if i > 0 && f.Top <= walk[i-1].Top {
			problem("order", "focus moves up the page: %s (top %v) after %s (top %v)", f.ID, f.Top, walk[i-1].ID, walk[i-1].Top)
		}
	}
	if got := strings.Join(ids, " "); got != "signin-email signin-password button:Sign in" {
		problem("order", "Tab from the first field walks %q, want the sign-in fields then its button", got)
	}
	run("Shift+Tab", chromedp.Focus(chromedp.ID("signin-email")), key(kb.Tab, chromedp.ModifierShift))
	if f := current(); f.ID != "tab-signin" {
		problem("tabs", "Shift+Tab from the first field reaches %s, want the tabs (tab-signin)", f.ID)
	}

	// The tabs, by keyboard: an arrow switches, Tab enters the panel.
	for _, step := range []struct{ key, want, first string }{
		{kb.ArrowRight, "Sign up/tab-signup", "signup-name"},
		{kb.ArrowLeft, "Sign in/tab-signin", "signin-email"},
	} {
		run("arrow on the tabs", chromedp.Focus(chromedp.CSS(`input[name=tab]:checked`)), key(step.key))
		if shown := evaluate[string](t, ctx, shownJS); shown != step.want {
			problem("tabs", "after %q on the tabs: shown %q, want %q", step.key, shown, step.want)
		}
		run("Tab into the panel", key(kb.Tab))
		if f := current(); f.ID != step.first {
			problem("tabs", "Tab from the tabs reaches %s, want %s", f.ID, step.first)
		}
	}
	noSidewaysScroll("the authorize page")

	// Enter in the password field submits; the refusal is announced.
	run("sign in with a wrong password", chromedp.Evaluate[chromedp.Void](`window.a11yOld = true`),
		chromedp.SendKeys(chromedp.ID("signin-email"), "nobody@example.com"),
		chromedp.SendKeys(chromedp.ID("signin-password"), "not the password"+kb.Enter))
	if !submitted() {
		problem("submit", "Enter in the password field did not submit the form")
		run("submit the form", chromedp.Submit(chromedp.ID("signin-password")))
		if !submitted() {
			t.Fatal("the sign-in form could not be submitted at all")
		}
	}
	announced := evaluate[string](t, ctx, announcedJS)
	if announced == "" {
		problem("alert", "the refusal is not in a shown live region")
	}
	if inAlert := evaluate[bool](t, ctx, `!!document.activeElement.closest('[role=alert]')`); !inAlert {
		problem("alert", "the refusal is not focused as the page loads")
	}
	if title := evaluate[string](t, ctx, `document.title`); !strings.HasPrefix(title, "Error") {
		problem("alert", "the title %q does not say there is an error", title)
	}
	if shown := evaluate[string](t, ctx, shownJS); shown != "Sign in/tab-signin" {
		problem("alert", "after a refused sign-in the page shows %q, want the sign-in tab", shown)
	}
	t.Logf("%s announced %q", base, announced)
	noSidewaysScroll("the page with an error")
	return problems
}

// evaluate runs js in the browser's page and returns its value.
func evaluate[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %.60q: %v", js, err)
	}
	return v
}
