package test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sourceMarker names the file a code block of docs/plugins.md is copied
// from: <!-- source: PATH --> on the line before the block's fence.
var sourceMarker = regexp.MustCompile(`^<!-- source: (\S+) -->$`)

// TestPluginGuideExcerpts keeps docs/plugins.md from going stale: every
// block it marks with a source path must be a verbatim excerpt of that file
// (a line "// ..." stands for lines left out; the parts around it must
// appear in that order), and every Go block must carry a marker, so none
// escapes the check.
func TestPluginGuideExcerpts(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "plugins.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	checked := 0
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		fence := i
		for i++; i < len(lines) && lines[i] != "```"; i++ {
		}
		if i == len(lines) {
			t.Fatalf("docs/plugins.md:%d: unterminated code block", fence+1)
		}
		var m []string
		if fence > 0 {
			m = sourceMarker.FindStringSubmatch(lines[fence-1])
		}
		if m == nil {
			if lines[fence] == "```go" {
				t.Errorf("docs/plugins.md:%d: a Go block without a source marker", fence+1)
			}
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(m[1])))
		if err != nil {
			t.Errorf("docs/plugins.md:%d: %v", fence, err)
			continue
		}
		if line, ok := excerptOf(lines[fence+1:i], strings.Split(string(src), "\n")); !ok {
			t.Errorf("docs/plugins.md:%d: the block is not an excerpt of %s: from %q on, it differs from the source", fence+1, m[1], line)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d excerpts checked: the markers are not being found", checked)
	}
}

// excerptOf reports whether block, split at "// ..." lines, appears in src
// as contiguous runs of lines in order; if not, it returns the first line
// of the run that was not found.
func excerptOf(block, src []string) (string, bool) {
	var runs [][]string
	run := []string{}
	for _, l := range block {
		if strings.TrimSpace(l) == "// ..." {
			runs = append(runs, run)
			run = []string{}
			continue
		}
		run = append(run, l)
	}
	runs = append(runs, run)
	at := 0
	for _, r := range runs {
		if len(r) == 0 {
			continue
		}
		found := -1
		for j := at; j+len(r) <= len(src); j++ {
			if slices.Equal(src[j:j+len(r)], r) {
				found = j
				break
			}
		}
		if found < 0 {
			return r[0], false
		}
		at = found + len(r)
	}
	return "", true
}
