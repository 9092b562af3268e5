package conformance

import (
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFixtures: the plugin serves the suite's names without a prefix, and
// its watched-resource announcer stops with the server. (The suite itself
// runs against the binary in test/conformance_test.go.)
func TestFixtures(t *testing.T) {
	cs, _, err := mcptest.Connect(t, mcpcore.Options{Plugins: []string{"conformance"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "test_simple_text"})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "This is a simple text response for testing." {
		t.Fatalf("test_simple_text: %v %+v", err, res)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "test_image_content"})
	if img, ok := res.Content[0].(*mcp.ImageContent); err != nil || !ok || img.MIMEType != "image/png" || len(img.Data) == 0 {
		t.Fatalf("test_image_content: %v %+v", err, res)
	}
	if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "test_prompt_with_arguments",
		Arguments: map[string]string{"arg1": "a", "arg2": "b"}}); err != nil {
		t.Fatal(err)
	}
}

// TestRequestStateSealed: a request state the server minted opens to its
// payload; one altered anywhere, or minted with another key, does not.
func TestRequestStateSealed(t *testing.T) {
	state := seal("round=2;name=ada")
	if got, ok := open(state); !ok || got != "round=2;name=ada" {
		t.Fatalf("open(seal) = %q, %v", got, ok)
	}
	for _, bad := range []string{
		state + "-TAMPERED",
		strings.Replace(state, "ada", "bob", 1),
		"round=2;name=ada",
		"round=2;name=ada.AAAA",
		"",
	} {
		if _, ok := open(bad); ok {
			t.Errorf("open(%q) accepted an altered state", bad)
		}
	}
}
