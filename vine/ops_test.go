package vine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestOpsListsEveryOperation: every Op* constant of the package is in Ops,
// Apply handles every operation Ops lists, and each takes exactly the
// arguments its spec names.
func TestOpsListsEveryOperation(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Op") || len(name.Name) < 3 || name.Name[2] < 'A' || name.Name[2] > 'Z' || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						consts = append(consts, v)
					}
				}
			}
		}
	}
	if len(consts) < 11 {
		t.Fatalf("found only %d Op constants: %v", len(consts), consts)
	}
	names := OpNames()
	for _, c := range consts {
		if !slices.Contains(names, c) {
			t.Errorf("operation %q is not in Ops()", c)
		}
	}
	g := mustParse(t, "vine 1.2.0\n---\n[root] Root (notstarted)\n")
	for _, s := range Ops() {
		if s.Effect == "" {
			t.Errorf("%s has no effect text", s.Name)
		}
		_, err := Apply(g, []Op{{Op: s.Name}})
		if err != nil && strings.Contains(err.Error(), "unknown op") {
			t.Errorf("Apply does not handle %s: %v", s.Name, err)
		}
		// An argument outside the spec is refused, naming the spec's.
		_, err = Apply(g, []Op{{Op: s.Name, URI: "x", RefName: "y", DepID: "z"}})
		if err == nil {
			t.Errorf("%s accepted arguments it does not take", s.Name)
		} else if len(s.Args) > 0 && !strings.Contains(err.Error(), "it takes "+strings.Join(s.fields(), ", ")) && !strings.Contains(err.Error(), "is required") {
			t.Errorf("%s: %v; want it to name %v", s.Name, err, s.fields())
		}
	}
	if sig := (OpSpec{Name: "x", Args: []string{"a", "b?"}}).Signature(); sig != "x {a, b?}" {
		t.Errorf("Signature = %q", sig)
	}
}
