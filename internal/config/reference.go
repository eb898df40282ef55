package config

import (
	"fmt"
	"slices"
	"strings"
)

// Reference returns the configuration reference in Markdown, rendered from
// Keys: a section per top-level mapping with a row per key (its type,
// default, environment variable and description). docs/configuration.md
// holds it between ReferenceBegin and ReferenceEnd.
func Reference() (string, error) {
	root, err := Keys()
	if err != nil {
		return "", err
	}
	m := &mdRenderer{server: serverNodeOf(root)}
	var b strings.Builder

	// Scalars and aliases of the top level first, then mcp_servers, then
	// the sections in the order the loader reads them.
	var top []*keyDef
	var sections []*keyDef
	for _, k := range root.Props {
		switch {
		case k.Name == aliasKey || !slices.Contains(k.Types, "object"):
			top = append(top, k)
		case k.Name == serversKey:
			sections = slices.Insert(sections, 0, k)
		default:
			sections = append(sections, k)
		}
	}
	b.WriteString("### Top level\n\n")
	m.table(&b, m.rowsOf(top, walkAt{env: []string{}, flat: true}))
	for _, k := range sections {
		fmt.Fprintf(&b, "\n### `%s`\n\n%s\n\n", k.Name, mdText(k.Doc))
		if e := k.Entry; e != nil && slices.Contains(e.Types, "object") {
			what := "a mapping of the keys below"
			if e == m.server {
				what = "a server: its mode says which of the keys below it takes"
			}
			fmt.Fprintf(&b, "Each entry is `%s.%s`: %s.\n\n", k.Name, k.EntryName, what)
		}
		m.table(&b, m.rows(k, walkAt{path: k.Name, env: []string{k.Name}}))
	}
	return b.String(), nil
}

// The markers around the generated reference in docs/configuration.md.
const (
	ReferenceBegin = "<!-- BEGIN generated reference: `make docs` writes it from the loader's definitions (internal/config); do not edit by hand -->"
	ReferenceEnd   = "<!-- END generated reference -->"
)

type mdRow struct {
	path, typ, def, env, doc string
}

type mdRenderer struct {
	server *keyDef
}

// walkAt is where the renderer is: the path of the keys' parent, the
// segments of their variables (nil: they have none, being in a list),
// whether they are a server's, only the keys read in ctx (0: all), and
// flat: no rows for the keys under them.
type walkAt struct {
	path   string
	env    []string
	server bool
	only   ctxMask
	flat   bool
}

func (w walkAt) under(name string) walkAt {
	c := walkAt{path: name, env: w.env}
	if w.path != "" {
		c.path = w.path + "." + name
	}
	if w.env != nil {
		c.env = append(slices.Clone(w.env), name)
	}
	return c
}

// rows are the rows of every key under k at w.
func (m *mdRenderer) rows(k *keyDef, w walkAt) []mdRow {
	var out []mdRow
	if e := k.Entry; e != nil && slices.Contains(e.Types, "object") {
		ew := w.under(k.EntryName)
		if ew.env != nil {
			ew.env[len(ew.env)-1] = strings.ToUpper(k.EntryName)
		}
		ew.server = e == m.server
		out = append(out, m.rowsOf(e.Props, ew)...)
	}
	return append(out, m.rowsOf(k.Props, w)...)
}

// rowsOf renders keys, and the keys under them, at w.
func (m *mdRenderer) rowsOf(keys []*keyDef, w walkAt) []mdRow {
	var out []mdRow
	for _, k := range keys {
		if w.server && k.ctx == ctxMember || w.only != 0 && k.ctx != w.only {
			continue // a member's own keys are listed under members
		}
		kw := w.under(k.Name)
		doc := mdText(k.Doc)
		if w.server || w.only != 0 {
			doc = serverDoc(k, doc, func(modes string) string { return "*" + modes + ":* " })
		}
		row := mdRow{path: kw.path, typ: m.typeText(k), def: defaultText(k), doc: doc}
		if kw.env != nil && scalar(k) {
			row.env = envName(kw.env)
		}
		out = append(out, row)
		if w.flat {
			continue
		}
		if slices.Contains(k.Types, "object") {
			out = append(out, m.rows(k, kw)...)
		}
		if it := k.Items; it != nil {
			iw := walkAt{path: kw.path + "[]"}
			switch {
			case it == m.server:
				iw.only = ctxMember
				out = append(out, m.rowsOf(it.Props, iw)...)
			case len(it.Props) > 0:
				out = append(out, m.rows(it, iw)...)
			}
		}
	}
	return out
}

func (m *mdRenderer) table(b *strings.Builder, rows []mdRow) {
	b.WriteString("| Key | Type | Default | Environment variable | Description |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		env := "—"
		if r.env != "" {
			env = "`" + r.env + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", r.path, r.typ, r.def, env, r.doc)
	}
}

// typeText says what a key takes.
func (m *mdRenderer) typeText(k *keyDef) string {
	switch k.Unit {
	case unitSeconds:
		return "seconds" + rangeText(k)
	case unitBytes:
		return "size (512m, 1g)" + rangeText(k)
	case unitCPUs:
		return "CPUs" + rangeText(k)
	}
	var parts []string
	for _, t := range k.Types {
		switch t {
		case "integer", "number", "boolean":
			if !slices.Contains(k.Types, "string") { // else YAML's 1 and true are taken as text
				parts = append(parts, t+rangeText(k))
			}
		case "string":
			switch {
			case len(k.Enum) > 0:
				parts = append(parts, enumText(k.Enum))
			case k.Format == "uri":
				parts = append(parts, "URL")
			case k.Format == "date-time":
				parts = append(parts, "RFC 3339 time")
			default:
				parts = append(parts, "string")
			}
		case "array":
			parts = append(parts, m.listText(k.Items))
		case "object":
			switch {
			case k.Entry == m.server && k.Entry != nil:
				parts = append(parts, "mapping of "+k.EntryName+" to server")
			case k.Entry != nil && slices.Contains(k.Entry.Types, "object"):
				parts = append(parts, "mapping of "+k.EntryName+" to mapping")
			case k.Entry != nil:
				parts = append(parts, "mapping of strings")
			default:
				parts = append(parts, "mapping")
			}
		}
	}
	return mdText(strings.Join(parts, " or "))
}

func (m *mdRenderer) listText(it *keyDef) string {
	switch {
	case it == nil:
		return "list"
	case it == m.server:
		return "list of servers"
	case slices.Contains(it.Types, "object"):
		return "list of mappings"
	case len(it.Enum) > 0:
		return "list of " + enumText(it.Enum)
	}
	return "list of strings"
}

func rangeText(k *keyDef) string {
	switch {
	case k.Min != nil && k.Max != nil:
		return ", " + num(*k.Min) + "–" + num(*k.Max)
	case k.Min != nil && k.Unit == unitBytes:
		return ", at least " + sizeText(int64(*k.Min))
	case k.Min != nil:
		return ", at least " + num(*k.Min)
	}
	return ""
}

func enumText(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "`" + v + "`"
	}
	return strings.Join(q, " | ")
}

// defaultText is the Default column: the value, the values by mode,
// "required" or "—" (unset).
func defaultText(k *keyDef) string {
	if k.Required {
		return "required"
	}
	if v, ok := singleDefault(k); ok {
		return "`" + yamlText(v) + "`"
	}
	if t := modeDefaults(k, func(v any) string { return "`" + yamlText(v) + "`" }); t != "" {
		return t
	}
	return "—"
}

// mdText escapes what Markdown would read as markup in a table cell.
func mdText(s string) string {
	var b strings.Builder
	code := false
	for _, c := range s {
		switch {
		case c == '`':
			code = !code
		case c == '|':
			b.WriteString(`\|`)
			continue
		case code:
		case c == '<':
			b.WriteString("&lt;")
			continue
		case c == '>':
			b.WriteString("&gt;")
			continue
		case c == '*':
			b.WriteString(`\*`)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}
