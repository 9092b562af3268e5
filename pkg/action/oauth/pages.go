package oauth

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/cbroglie/mustache"

	"github.com/mcpkit/mcpkit/pkg/action"
)

//go:embed templates
var defaultTemplates embed.FS

// TemplateNames are the page files: two Mustache templates and the
// assets they link (served under /oauth/assets/).
var TemplateNames = []string{"oauth-authorize.html", "oauth-success.html", "oauth-common.css", "mcpkit.svg"}

// pages are the loaded templates and assets.
type pages struct {
	authorize, success *mustache.Template
	assets             map[string][]byte
}

// loadPages reads every file of TemplateNames from dir when it has it,
// else the embedded default, and parses the templates.
func loadPages(dir string) (*pages, error) {
	files := map[string][]byte{}
	for _, name := range TemplateNames {
		b, err := fs.ReadFile(defaultTemplates, "templates/"+name)
		if err != nil {
			return nil, fmt.Errorf("oauth: embedded template %s: %w", name, err)
		}
		if dir != "" {
			own, err := os.ReadFile(filepath.Join(dir, name))
			switch {
			case err == nil:
				b = own
			case !errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("oauth: template %s: %w", name, err)
			}
		}
		files[name] = b
	}
	p := &pages{assets: map[string][]byte{"oauth-common.css": files["oauth-common.css"], "mcpkit.svg": files["mcpkit.svg"]}}
	var err error
	if p.authorize, err = mustache.ParseString(string(files["oauth-authorize.html"])); err != nil {
		return nil, fmt.Errorf("oauth: template oauth-authorize.html: %w", err)
	}
	if p.success, err = mustache.ParseString(string(files["oauth-success.html"])); err != nil {
		return nil, fmt.Errorf("oauth: template oauth-success.html: %w", err)
	}
	return p, nil
}

// WriteDefaultTemplates writes the embedded default pages into dir
// (created when absent) for customising; an existing file is not
// overwritten (the error says which).
func WriteDefaultTemplates(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("templates directory: %w", err)
	}
	for _, name := range TemplateNames {
		b, err := fs.ReadFile(defaultTemplates, "templates/"+name)
		if err != nil {
			return fmt.Errorf("embedded template %s: %w", name, err)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("write template: %w", err)
		}
		_, err = f.Write(b)
		if err = errors.Join(err, f.Close()); err != nil {
			return fmt.Errorf("write template %s: %w", name, err)
		}
	}
	return nil
}

// pageHeaders are the security headers of every page and asset.
func pageHeaders(h http.Header) {
	// No form-action: the form's post redirects to the client's redirect
	// URI, which browsers would check against it.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends the
	// form's post with "Origin: null", which the server's origin check
	// refuses (the browser test caught it).
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, ok := s.pages.assets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	pageHeaders(w.Header())
	w.Header().Set("Cache-Control", "public, max-age=3600")
	ct := "text/css; charset=utf-8"
	if strings.HasSuffix(name, ".svg") {
		ct = "image/svg+xml"
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(b)
}

// fields are the form fields of act's inputs (Keryx's field objects:
// name, label, type, required, minlength, maxlength), in declaration order:
// labels from descriptions (else the capitalised name), type password for
// secret inputs, email for an input named so, text otherwise. Each also
// has the autocomplete token (WCAG 1.3.5) that tells browsers and password
// managers what it asks for, when mcpkit knows it: a password is the
// current one on the sign-in form and a new one on the sign-up form, an
// email is the sign-in form's username and the sign-up form's email, and
// an input named "name" is the user's name.
func fields(act *action.Action, signup bool) []map[string]any {
	if act == nil {
		return nil
	}
	s := act.InputSchema()
	names := slices.Clone(s.PropertyOrder)
	if len(names) == 0 {
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	var out []map[string]any
	for _, n := range names {
		p := s.Properties[n]
		if p == nil {
			continue
		}
		f := map[string]any{"name": n, "label": label(n, p.Description), "type": "text",
			"required": slices.Contains(s.Required, n)}
		switch {
		case p.WriteOnly || p.Format == "password":
			f["type"], f["autocomplete"] = "password", pick(signup, "new-password", "current-password")
		case strings.Contains(strings.ToLower(n), "email"):
			f["type"], f["autocomplete"] = "email", pick(signup, "email", "username")
		case n == "name":
			f["autocomplete"] = "name"
		}
		if p.MinLength != nil {
			f["minlength"] = *p.MinLength
		}
		if p.MaxLength != nil {
			f["maxlength"] = *p.MaxLength
		}
		out = append(out, f)
	}
	return out
}

// pick is a if cond holds, else b.
func pick(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

// label is a field's label: its description, else its name capitalised.
func label(name, desc string) string {
	if desc != "" {
		r := []rune(desc)
		r[0] = unicode.ToUpper(r[0])
		return string(r)
	}
	r := []rune(strings.ReplaceAll(name, "_", " "))
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
