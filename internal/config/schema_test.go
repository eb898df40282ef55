package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's generated reference (make docs)")

const repoRoot = "../.."

// compiledSchema is JSONSchema compiled by a validator that checks it
// against the draft 2020-12 meta-schema first.
var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	b, err := JSONSchema()
	if err != nil {
		return nil, err
	}
	return compileSchema(b)
})

// draft7Schema is JSONSchema read as a draft-07 schema, as editors whose
// YAML support stops at draft-07 read it (VS Code's YAML extension).
var draft7Schema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	b, err := JSONSchema()
	if err != nil {
		return nil, err
	}
	return compileSchema(bytes.Replace(b, []byte(SchemaDialect), []byte("http://json-schema.org/draft-07/schema#"), 1))
})

func compileSchema(b []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("hangar.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("hangar.schema.json")
}

// validateYAML validates a YAML config against the schema, as an editor
// does.
func validateYAML(t *testing.T, data []byte) error {
	t.Helper()
	return validateWith(t, compiledSchema, data)
}

func validateWith(t *testing.T, schema func() (*jsonschema.Schema, error), data []byte) error {
	t.Helper()
	sch, err := schema()
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	if v == nil {
		v = map[string]any{}
	}
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(inst)
}

// sampleConfigs are the repository's config files meant to load: the
// example, the compose stacks', the image's, the shared samples and the
// loader's test data that loads.
func sampleConfigs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{
		"config.example.yaml", "compose/*.yaml", "compose/*/*.yaml", "examples/*/*.yaml",
		"images/gateway/config.yaml", "testdata/configs/*.yaml", "internal/config/testdata/TestLoad/config.yaml",
	} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 7 {
		t.Fatalf("found %d sample configs: %v", len(files), files)
	}
	return files
}

// varRef is a ${VAR} reference of a sample.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)

// docBlocks are the plain ```yaml blocks of README.md and docs/*.md that
// the loader takes (with their ${VAR} set): the hangar configs. Other YAML
// says what it is (```yaml compose), and a plain block that does not load
// is TestDocsConfigBlocks' to report.
func docBlocks(t *testing.T) map[string][]byte {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	block := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")
	for _, p := range append(pages, filepath.Join(repoRoot, "README.md")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range block.FindAllSubmatch(b, -1) {
			var env []string
			for _, ref := range varRef.FindAllSubmatch(m[1], -1) {
				env = append(env, string(ref[1])+"=x")
			}
			if _, err := Parse(m[1], env); err == nil {
				out[filepath.Base(p)+" block "+strconv.Itoa(i+1)] = m[1]
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d yaml blocks that load", len(out))
	}
	return out
}

// TestSchemaValidatesSamples: every sample config of the repository loads
// and is valid under the schema, as an editor would check it; so is every
// config block of the README and docs that loads.
func TestSchemaValidatesSamples(t *testing.T) {
	t.Parallel()
	env := []string{"API_KEY=k", "DOCS_TOKEN=t", "OTLP_KEY=k"}
	samples := map[string][]byte{}
	for _, f := range sampleConfigs(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		samples[rel] = b
	}
	for _, name := range sortedKeys(samples) {
		data := samples[name]
		if _, err := Parse(data, env); err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || !onlyFiles(ve) {
				t.Errorf("%s does not load: %v", name, err)
			}
		}
		if err := validateYAML(t, data); err != nil {
			t.Errorf("%s is not valid under the schema: %v", name, err)
		}
		if err := validateWith(t, draft7Schema, data); err != nil {
			t.Errorf("%s is not valid under the schema read as draft-07: %v", name, err)
		}
	}
	blocks := docBlocks(t)
	for _, name := range sortedKeys(blocks) {
		if err := validateYAML(t, blocks[name]); err != nil {
			t.Errorf("%s loads but is not valid under the schema: %v\n%s", name, err, blocks[name])
		}
	}
}

// onlyFiles reports whether every problem is a file the sample names that
// is not on this machine (a token file, an env file of a deployment).
func onlyFiles(ve *ValidationError) bool {
	for _, p := range ve.Problems {
		if !strings.Contains(p.Message, "no such file or directory") {
			return false
		}
	}
	return true
}

// TestSchemaAndLoaderAgree: what the loader refuses (an unknown or
// misspelt key, a key of another mode, a value out of range, not one of
// the allowed values, not the pattern) the schema refuses too, and both
// take what is right.
func TestSchemaAndLoaderAgree(t *testing.T) {
	t.Parallel()
	docker := "mcp_servers:\n  m: {mode: docker, image: img%s}\n"
	cases := []struct {
		name, yaml string
		ok         bool
	}{
		{"minimal server", `mcp_servers: {m: {mode: docker, image: img}}`, true},
		{"misspelt server key", `mcp_servers: {m: {mode: docker, imgae: img}}`, false},
		{"misspelt section", `loggin: {level: INFO}`, false},
		{"misspelt key of a section", `batch: {max_call: 5}`, false},
		{"misspelt key in a list", `auth: {tokens: [{name: a, token_sha256: "` + strings.Repeat("a", 64) + `", scopes: [hangar:read], scope: x}]}`, false},
		{"misspelt nested key", strings.Replace(docker, "%s", ", resources: {memroy: 512m}", 1), false},
		{"key of another mode", `mcp_servers: {m: {mode: remote, endpoint: "https://x", image: img}}`, false},
		{"member key at the top", strings.Replace(docker, "%s", ", weight: 2", 1), false},
		{"out of range", `batch: {max_calls: 0}`, false},
		{"in range", `batch: {max_calls: 10000}`, true},
		{"above the range", strings.Replace(docker, "%s", ", idle_ttl_s: 86401", 1), false},
		{"not an allowed value", `logging: {level: LOUD}`, false},
		{"an allowed value", `logging: {level: WARNING}`, true},
		{"not a server id", `mcp_servers: {"-m": {mode: docker, image: img}}`, false},
		{"not a prefix", strings.Replace(docker, "%s", ", prefix: \"a b\"", 1), false},
		{"a size", strings.Replace(docker, "%s", ", resources: {memory: 1.5Gi, cpu: \"0.5\"}", 1), true},
		{"not a size", strings.Replace(docker, "%s", ", resources: {memory: lots}", 1), false},
		{"a required key missing", `mcp_servers: {m: {image: img}}`, false},
		{"not a mapping", `batch: [1]`, false},
		{"both mcp_servers and providers", "mcp_servers: {}\nproviders: {}\n", false},
		{"pinned as a list", strings.Replace(docker, "%s", ", pinned: [add]", 1), true},
		{"predefined tools", strings.Replace(docker, "%s", ", tools: [{name: add, inputSchema: {type: object}}]", 1), true},
		{"a group", "mcp_servers:\n  g: {mode: group, strategy: priority, members: [{id: a, mode: docker, image: img, priority: 2}]}\n", true},
		{"a policy in a member", "mcp_servers:\n  g: {mode: group, members: [{id: a, mode: docker, image: img, policy: {}}]}\n", false},
		{"a rule's effect", `policy: {rules: [{name: r, effect: maybe, when: "true"}]}`, false},
	}
	for _, tc := range cases {
		_, loadErr := Parse([]byte(tc.yaml), nil)
		if (loadErr == nil) != tc.ok {
			t.Errorf("%s: the loader says %v, want ok=%v\n%s", tc.name, loadErr, tc.ok, tc.yaml)
		}
		// The schema uses only keywords draft-07 has, with the same
		// meaning: editors that stop at draft-07 check configs the same.
		for draft, sch := range map[string]func() (*jsonschema.Schema, error){"2020-12": compiledSchema, "draft-07": draft7Schema} {
			if err := validateWith(t, sch, []byte(tc.yaml)); (err == nil) != tc.ok {
				t.Errorf("%s: the schema read as %s says %v, want ok=%v\n%s", tc.name, draft, err, tc.ok, tc.yaml)
			}
		}
	}
}

// TestEveryKeyIsDescribed: every key the loader's walk reads is in the
// schema with a description and a type.
func TestEveryKeyIsDescribed(t *testing.T) {
	t.Parallel()
	root, err := Keys()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	seen := map[*keyDef]bool{}
	var walk func(k *keyDef, path string)
	walk = func(k *keyDef, path string) {
		if seen[k] {
			return
		}
		seen[k] = true
		for _, p := range k.Props {
			n++
			at := join(path, p.Name)
			if strings.TrimSpace(p.Doc) == "" || len(p.Types) == 0 {
				t.Errorf("%s: description %q, types %v", at, p.Doc, p.Types)
			}
			walk(p, at)
		}
		if k.Entry != nil {
			walk(k.Entry, path+".<entry>")
		}
		if k.Items != nil {
			walk(k.Items, path+"[]")
		}
	}
	walk(root, "")
	if n < 150 {
		t.Errorf("the walk read %d keys; the loader reads more", n)
	}
}

// definers are the section methods that read a key, with the index of
// their description argument.
var definers = map[string]int{
	"intIn": 4, "floatIn": 4, "seconds": 4, "boolean": 2, "str": 2, "enum": 2, "strList": 2,
	"strMap": 2, "size": 4, "cpus": 4, "sub": 1, "list": 1, "raw": 1, "entries": 1, "def": 1,
}

// TestLoaderKeysAreInTheSchema reads the loader's source: every key it
// reads (a string literal given to a section method that reads a key, or
// the key of a table of keys and descriptions) must be a key of the
// schema, and every description written there must say something. A key
// read in a branch the exemplars do not walk fails here.
func TestLoaderKeysAreInTheSchema(t *testing.T) {
	t.Parallel()
	root, err := Keys()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	seen := map[*keyDef]bool{}
	var collect func(k *keyDef)
	collect = func(k *keyDef) {
		if k == nil || seen[k] {
			return
		}
		seen[k] = true
		for _, p := range k.Props {
			names[p.Name] = true
			collect(p)
		}
		collect(k.Entry)
		collect(k.Items)
	}
	collect(root)

	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	keys := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		consts := constStrings(file)
		structs := map[string]*ast.StructType{}
		ast.Inspect(file, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					structs[ts.Name.Name] = st
				}
			}
			return true
		})
		ast.Inspect(file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				sel, ok := x.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				docAt, ok := definers[sel.Sel.Name]
				if !ok || len(x.Args) <= docAt {
					return true
				}
				if key, ok := stringValue(x.Args[0], consts); ok {
					keys++
					if !names[key] {
						t.Errorf("%s: the loader reads %q, which is not in the schema: the exemplars (keys.go) never reach it", fset.Position(x.Pos()), key)
					}
				}
				if doc, ok := stringValue(x.Args[docAt], consts); ok && strings.TrimSpace(doc) == "" {
					t.Errorf("%s: %s reads a key with an empty description", fset.Position(x.Pos()), sel.Sel.Name)
				}
			case *ast.CompositeLit:
				// A table of keys: []struct{key, doc string; …}{{"name", "description", …}, …}.
				keyAt, docAt, ok := keyTable(x, structs)
				if !ok {
					return true
				}
				for _, e := range x.Elts {
					row, ok := e.(*ast.CompositeLit)
					if !ok || len(row.Elts) <= max(keyAt, docAt) {
						continue
					}
					key, ok := stringValue(row.Elts[keyAt], consts)
					if !ok {
						continue
					}
					keys++
					if !names[key] {
						t.Errorf("%s: the loader's table names %q, which is not in the schema", fset.Position(row.Pos()), key)
					}
					if doc, ok := stringValue(row.Elts[docAt], consts); !ok || strings.TrimSpace(doc) == "" {
						t.Errorf("%s: the loader's table gives %q no description", fset.Position(row.Pos()), key)
					}
				}
			}
			return true
		})
	}
	if keys < 150 {
		t.Errorf("found %d keys read in the loader's source; the pattern of its calls changed", keys)
	}
}

// keyTable reports whether x is a list of structs with fields key and doc
// (a table of keys), and where those fields are.
func keyTable(x *ast.CompositeLit, structs map[string]*ast.StructType) (keyAt, docAt int, ok bool) {
	arr, isArr := x.Type.(*ast.ArrayType)
	if !isArr {
		return 0, 0, false
	}
	st, isStruct := arr.Elt.(*ast.StructType)
	if id, isIdent := arr.Elt.(*ast.Ident); isIdent {
		st, isStruct = structs[id.Name]
	}
	if !isStruct {
		return 0, 0, false
	}
	keyAt, docAt, i := -1, -1, 0
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			switch n.Name {
			case "key":
				keyAt = i
			case "doc":
				docAt = i
			}
			i++
		}
	}
	return keyAt, docAt, keyAt >= 0 && docAt >= 0
}

// constStrings are the package-level and local string constants of file.
func constStrings(file *ast.File) map[string]string {
	out := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		if d, ok := n.(*ast.GenDecl); ok && d.Tok == token.CONST {
			for _, s := range d.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							out[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
		return true
	})
	return out
}

// stringValue is the value of a string literal or of a string constant.
func stringValue(e ast.Expr, consts map[string]string) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[x.Name]
		return s, ok
	}
	return "", false
}

// TestSchemaDescribesEveryProperty: in the JSON Schema itself, every
// property has a description, and sections the loader closes refuse
// other keys.
func TestSchemaDescribesEveryProperty(t *testing.T) {
	t.Parallel()
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	props := 0
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			if p, ok := x["properties"].(map[string]any); ok {
				for name, s := range p {
					props++
					if d, _ := s.(map[string]any)["description"].(string); d == "" {
						t.Errorf("%s.%s has no description", path, name)
					}
				}
			}
			for k, e := range x {
				if k != "if" { // a condition's properties are not keys
					walk(e, path+"/"+k)
				}
			}
		case []any:
			for i, e := range x {
				walk(e, path+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "#")
	if props < 150 {
		t.Errorf("%d properties in the schema", props)
	}
	if doc["additionalProperties"] != false {
		t.Error("the top level takes unknown keys; the loader refuses them")
	}
}

// TestConfigurationReferenceIsCurrent: docs/configuration.md holds the
// reference rendered from the loader's definitions (make docs writes it).
func TestConfigurationReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(repoRoot, "docs", "configuration.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	begin := strings.Index(page, ReferenceBegin)
	end := strings.Index(page, ReferenceEnd)
	if begin < 0 || end < begin {
		t.Fatalf("docs/configuration.md lacks the markers %q and %q", ReferenceBegin, ReferenceEnd)
	}
	want := page[:begin] + ReferenceBegin + "\n\n" + ref + "\n" + page[end:]
	if page == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("docs/configuration.md's reference is not the loader's: run make docs")
}

// TestEnvironmentVariablesSetKeys: every variable the reference names
// sets its key. Set to a value other than the key's default, it either
// changes the loaded config or the loader refuses the value as that key's
// (a problem naming the variable that is not "unknown key").
func TestEnvironmentVariablesSetKeys(t *testing.T) {
	t.Parallel()
	ref, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		ModeDocker:     "{mode: docker, image: img}",
		ModeRemote:     `{mode: remote, endpoint: "https://example.com/mcp"}`,
		ModeSubprocess: "{mode: subprocess, command: [srv]}",
		ModeGroup:      "{mode: group, members: [{id: m1, mode: docker, image: img}]}",
	}
	vars := regexp.MustCompile("`(HANGAR_[A-Z0-9_<>]+)`").FindAllStringSubmatch(ref, -1)
	if len(vars) < 100 {
		t.Fatalf("the reference names %d variables", len(vars))
	}
	for _, m := range vars {
		name := m[1]
		k, ok := envKey(name)
		if !ok {
			t.Errorf("%s: IsKeyEnv says it sets no key", name)
			continue
		}
		cfgs := []string{"runtimes: {npx: {}, bunx: {image: bun}}\n"}
		if strings.Contains(name, "<ID>") {
			cfgs = nil
			for _, mode := range serverModes {
				if top := strings.ToLower(strings.Split(strings.SplitN(name, "__<ID>__", 2)[1], "__")[0]); modeTakes(mode, top) {
					cfgs = append(cfgs, "mcp_servers:\n  m: "+base[mode]+"\n")
				}
			}
		}
		name = strings.NewReplacer("<ID>", "M", "<RUNNER>", "NPX").Replace(name)
		for _, cfg := range cfgs {
			before, err := Parse([]byte(cfg), nil)
			if err != nil {
				t.Fatalf("base config: %v\n%s", err, cfg)
			}
			var results []string
			path := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, envPrefix), envDelim, "."))
			read := slices.ContainsFunc(otherValues(k), func(value string) bool {
				after, err := Parse([]byte(cfg), []string{name + "=" + value})
				var ve *ValidationError
				switch {
				case err == nil:
					results = append(results, value+": no change")
					return !reflect.DeepEqual(before, after)
				case errors.As(err, &ve):
					results = append(results, value+": "+err.Error())
					// Refused, but for what the value means as the key (a
					// mode whose other keys are missing): not as a key the
					// loader does not know there.
					return !slices.ContainsFunc(ve.Problems, func(p Problem) bool {
						return p.Path == path && (strings.HasPrefix(p.Message, "unknown key") || strings.HasPrefix(p.Message, "not allowed"))
					})
				}
				results = append(results, value+": "+err.Error())
				return false
			})
			if !read {
				t.Errorf("%s does not set its key in\n%s%s", name, cfg, strings.Join(results, "\n"))
			}
		}
	}
}

// otherValues are values for k besides its default.
func otherValues(k *keyDef) []string {
	def, _ := singleDefault(k)
	switch {
	case len(k.Enum) > 0:
		return slices.DeleteFunc(slices.Clone(k.Enum), func(e string) bool { return e == def })
	case slices.Contains(k.Types, "boolean") && !slices.Contains(k.Types, "string"):
		if def == true {
			return []string{"false"}
		}
		return []string{"true"}
	case k.Min != nil:
		out := []string{num(*k.Min * 2)}
		if k.Max != nil {
			out = append(out, num(*k.Max))
		}
		return append(out, num(*k.Min))
	}
	return []string{"x-1"}
}
