package actions

import (
	"strings"
	"testing"
)

func TestRenderMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		depth    int
		want     string
	}{
		{"flat object", `{"name":"ex","version":"1.0","up":12.50,"ok":true,"none":null}`, 5,
			"- **name**: ex\n- **version**: 1.0\n- **up**: 12.50\n- **ok**: true\n- **none**: null\n"},
		{"nested object", `{"a":1,"sub":{"b":2,"deeper":{"c":3}},"tail":"t"}`, 5,
			"- **a**: 1\n- **tail**: t\n\n## sub\n\n- **b**: 2\n\n### deeper\n\n- **c**: 3\n"},
		{"uniform objects table", `{"rows":[{"id":1,"text":"a|b"},{"id":2,"text":"line1\nline2"}]}`, 5,
			"## rows\n\n| id | text |\n| --- | --- |\n| 1 | a\\|b |\n| 2 | line1 line2 |\n"},
		{"primitive array", `["x",2,false]`, 5, "- x\n- 2\n- false\n"},
		{"empty array and object", `{"a":[],"o":{}}`, 5, "## a\n\n_(none)_\n\n## o\n\n_(empty)_\n"},
		{"mixed array", `[1,{"a":1}]`, 5, "```json\n[\n  1,\n  {\n    \"a\": 1\n  }\n]\n```\n"},
		{"objects with different keys", `[{"a":1},{"b":2}]`, 5, "```json\n[\n  {\n    \"a\": 1\n  },\n  {\n    \"b\": 2\n  }\n]\n```\n"},
		{"scalar", `"plain text"`, 5, "plain text\n"},
		{"beyond depth", `{"a":1,"sub":{"b":{"c":[1,2]}}}`, 2,
			"- **a**: 1\n\n## sub\n\n### b\n\n```json\n{\n  \"c\": [\n    1,\n    2\n  ]\n}\n```\n"},
		{"depth 1 keeps the top level", `{"a":{"b":1}}`, 1, "## a\n\n```json\n{\n  \"b\": 1\n}\n```\n"},
		{"fence longer than content", `{"a":{"s":"` + "```" + `"}}`, 1, "## a\n\n````json\n{\n  \"s\": \"```\"\n}\n````\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderMarkdown([]byte(tc.in), tc.depth)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// Headings stop at h6; deeper levels are bold.
func TestRenderMarkdownHeadingLevels(t *testing.T) {
	in := `{"l2":{"l3":{"l4":{"l5":{"l6":{"l7":{"x":1}}}}}}}`
	got, err := RenderMarkdown([]byte(in), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## l2\n", "### l3\n", "#### l4\n", "##### l5\n", "###### l6\n", "**l7**\n", "- **x**: 1\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "#######") {
		t.Errorf("a heading deeper than h6:\n%s", got)
	}
}

func TestRenderMarkdownInvalid(t *testing.T) {
	for _, in := range []string{`{`, `{"a":1} {}`, ``} {
		if _, err := RenderMarkdown([]byte(in), 5); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
