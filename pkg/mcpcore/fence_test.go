package mcpcore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestFastPathFenced: the direct tools/call path's hooks are not part of
// the API a plugin author reads (`go doc ./pkg/mcpcore`): they live in
// internal/fastpath, for the bundled plugins only.
func TestFastPathFenced(t *testing.T) {
	hooks := []string{"ArgumentsDecoder", "ArgumentsPrefixDecoder", "EncodedJSON", "EncodedJSONText",
		"EncodedJSONParts", "ResultBuffer", "ResultMemory", "NewResultMemory"}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					exported[d.Name.Name] = d.Name.IsExported()
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok {
						exported[ts.Name.Name] = ts.Name.IsExported()
						checkToolOptions(t, ts)
					}
				}
			}
		}
	}
	for _, h := range hooks {
		if exported[h] {
			t.Errorf("pkg/mcpcore exports %s, a hook of the direct path (internal/fastpath's)", h)
		}
	}
}

// checkToolOptions fails when ToolOptions has the direct path's field.
func checkToolOptions(t *testing.T, ts *ast.TypeSpec) {
	st, ok := ts.Type.(*ast.StructType)
	if ts.Name.Name != "ToolOptions" || !ok {
		return
	}
	for _, field := range st.Fields.List {
		for _, id := range field.Names {
			if id.Name == "Direct" {
				t.Error("ToolOptions has field Direct: the direct path's mark is internal/fastpath.Direct")
			}
		}
	}
}
