package markup_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-hangar/hangar/internal/markup"
)

const hostile = `<script>alert("x")</script><img src=x onerror='alert(1)'> & +`

// Values are text wherever they are put: in an element and in a
// double-quoted attribute, never markup.
func TestWriterEscapes(t *testing.T) {
	t.Parallel()
	var w markup.Writer
	w.M(`<p`)
	w.Attr(` title`, hostile)
	w.M(`><a href="#server/`)
	w.URLPart(`a/b c"<&`)
	w.M(`">`)
	w.Text(hostile)
	w.M(`</a> `)
	w.Val(42)
	w.M(`</p>`)
	want := `<p title="&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=&#39;alert(1)&#39;&gt; &amp; +">` +
		`<a href="#server/a%2Fb%20c%22%3C&amp;">&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=&#39;alert(1)&#39;&gt; &amp; +</a> 42</p>`
	if got := w.String(); got != want {
		t.Errorf("wrote\n%s\nwant\n%s", got, want)
	}
	rec := httptest.NewRecorder()
	if err := w.Serve(rec, 404); err != nil || rec.Code != 404 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || rec.Body.String() != want {
		t.Errorf("served %d %v %q", rec.Code, rec.Header(), rec.Body.String())
	}
}

// Markup can only be a constant: nowhere in the module (tests aside) is a
// value converted to markup.HTML, nor an alias of it declared, so every
// HTML value is made of the program's string constants.
func TestHTMLIsConstant(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || n == "bin" || n == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, bad := range conversions(f) {
			t.Errorf("%s: converts a value to markup.HTML (or aliases it): markup is a constant; write values with Text", fset.Position(bad))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d files under %s: not the module", files, root)
	}
}

// conversions are the places f converts a value to markup.HTML or
// declares an alias of it.
func conversions(f *ast.File) []token.Pos {
	const path = "github.com/mcp-hangar/hangar/internal/markup"
	local := ""   // the package's name in f, "" when f does not import it
	self := false // f is package markup itself
	if f.Name.Name == "markup" {
		self = true
	}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			local = "markup"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	isHTML := func(e ast.Expr) bool {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return self && x.Name == "HTML"
		case *ast.SelectorExpr:
			id, ok := x.X.(*ast.Ident)
			return ok && local != "" && id.Name == local && x.Sel.Name == "HTML"
		}
		return false
	}
	var out []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			if isHTML(x.Fun) {
				out = append(out, x.Pos())
			}
		case *ast.TypeSpec:
			if x.Assign.IsValid() && isHTML(x.Type) {
				out = append(out, x.Pos())
			}
		}
		return true
	})
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = up
	}
}

// The check finds what it must.
func TestConversionsFound(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		src  string
		want int
	}{
		{`package x; import "github.com/mcp-hangar/hangar/internal/markup"; func f(s string) { var w markup.Writer; w.M(markup.HTML(s)) }`, 1},
		{`package x; import m "github.com/mcp-hangar/hangar/internal/markup"; type h = m.HTML; func f(s string) m.HTML { return (m.HTML)(s) }`, 2},
		{`package x; import "github.com/mcp-hangar/hangar/internal/markup"; func f() markup.HTML { return "<b>" }`, 0},
		{`package markup; func f(s string) HTML { return HTML(s) }`, 1},
		{`package y; func f(s string) HTML { return HTML(s) }`, 0}, // another package's own HTML
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", c.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(conversions(f)); got != c.want {
			t.Errorf("%s: %d found, want %d", c.src, got, c.want)
		}
	}
}
