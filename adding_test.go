package focusgate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Adding a provider is one declaration and a line in Providers: nothing of
// the gateway's code names Azure OpenAI, the provider added last, outside
// provider_azure.go and the list in provider.go (its tests and the fake
// clouds of internal/cloudtest aside). Every package reads what it needs of
// a provider from its declaration.
func TestAddingAProviderTouchesOnlyItsDeclaration(t *testing.T) {
	allowed := map[string]bool{"provider_azure.go": true, "provider.go": true}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", "cloudtest", "e2e", "bench":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || allowed[path] {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				if n.Name == "AzureProvider" {
					t.Errorf("%s names AzureProvider", fset.Position(n.Pos()))
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				if v, err := strconv.Unquote(n.Value); err == nil && (strings.EqualFold(v, "azure") || strings.HasPrefix(v, "AZURE_")) {
					t.Errorf("%s names the Azure provider: %s", fset.Position(n.Pos()), n.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
