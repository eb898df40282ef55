package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/mcpconn"
)

// Try: a form for a tool, a prompt or a resource template, built here from
// what the read model knows of it (the tool's input schema, the prompt's
// arguments, the template's variables). Run (try.js) sends what the form
// holds to /mcp, with the caller's token and the 2026-07-28 headers, as
// any client would: the gateway's scopes, servers, policy and audit apply
// as they do to every call, and nothing here decides whether it may run.

// Kinds of tryForm.
const (
	tryTool     = "tool"
	tryPrompt   = "prompt"
	tryTemplate = "template"
	tryResource = "resource"
)

// Field types: how try.js reads an input into an argument.
const (
	fieldString  = "string"
	fieldNumber  = "number"
	fieldInteger = "integer"
	fieldBoolean = "boolean"
	fieldEnum    = "enum"
	fieldJSON    = "json" // objects, arrays, anything else: a JSON text
)

// tryForm is the Try dialog's data.
type tryForm struct {
	Kind   string
	Server string // "" for a gateway tool
	// Name is the tool's or prompt's name on the server, or the
	// resource's URI (template).
	Name, Title, Description string
	// Method, CallName and Via are how Run calls it: Method with
	// params.name (or uri) CallName; Via "hangar_call" wraps a tool call
	// of a server the front door does not list.
	Method, CallName, Via string
	Fields                []field
	// Raw is the arguments the form starts with, as JSON.
	Raw string
	// Scope is what the call needs; Lacks is set when the caller does
	// not hold it (or may not reach the server): the gateway will refuse.
	Scope string
	Lacks string
	// Note says why the form is only a JSON text (a schema it cannot
	// show field by field).
	Note string
}

// field is one input of the form: one property of the schema.
type field struct {
	ID, Name, Type, Description string
	Required                    bool
	// Value is what the input starts with.
	Value    string
	Options  []option // an enum's, or a boolean's
	Min, Max string   // of a number
}

// option is one choice of a select; Value is its JSON.
type option struct {
	Label, Value string
	Selected     bool
}

// try serves the Try form: ?tool=NAME (of ?server=ID, else one of the
// gateway's own), or of ?server=ID its tool ?callable=NAME (by its
// front-door name), ?prompt=NAME, ?template=URI or ?resource=URI.
func (d *Dashboard) try(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := auth.Caller(r.Context())
	srv := q.Get("server")
	var form *tryForm
	switch {
	case srv == "" && q.Has("tool"):
		for _, t := range d.views.GatewayTools() {
			if t.Name == q.Get("tool") {
				form = toolForm(t)
				form.Method, form.CallName = "tools/call", t.Name
				form.Scope = auth.ToolScope(t.Name)
			}
		}
	case srv != "" && id.MayReach(srv):
		det := d.views.Details(r.Context(), srv, 0)
		if !det.Served() {
			break
		}
		switch {
		case q.Has("tool") || q.Has("callable"):
			for _, t := range det.CatalogTools() {
				if (q.Has("tool") && t.Name == q.Get("tool")) || (q.Has("callable") && det.ToolNames[t.Name] == q.Get("callable")) {
					form = toolForm(t)
					form.Server, form.Method, form.Scope = srv, "tools/call", auth.ScopeCall
					if c := det.ToolNames[t.Name]; c != "" {
						form.CallName = c
					} else {
						form.CallName, form.Via = "hangar_call", "hangar_call"
					}
				}
			}
		case q.Has("prompt"):
			for _, raw := range det.Prompts {
				if p, ok := promptForm(raw, q.Get("prompt")); ok && det.PromptNames[p.Name] != "" {
					form = p
					form.Server, form.CallName, form.Scope = srv, det.PromptNames[p.Name], auth.ScopeCall
				}
			}
		case q.Has("template"):
			for _, raw := range det.ResourceTemplates {
				if f, ok := templateForm(raw, q.Get("template")); ok {
					form = f
					form.Server, form.Scope = srv, auth.ScopeCall
				}
			}
		case q.Has("resource"):
			for _, raw := range det.Resources {
				if f, ok := resourceForm(raw, q.Get("resource")); ok {
					form = f
					form.Server, form.Scope = srv, auth.ScopeCall
				}
			}
		}
	}
	if form == nil {
		d.render(w, tryUnknownFragment())
		return
	}
	if e := id.Check(form.Scope, form.Server); e != nil {
		form.Lacks = e.Message
	}
	d.render(w, tryFragment(form))
}

// toolForm is the form of a tool's input schema: one field per property.
func toolForm(t mcpconn.Tool) *tryForm {
	f := &tryForm{Kind: tryTool, Name: t.Name, Title: t.Title, Description: t.Description, Raw: "{}"}
	fields, note := schemaFields(t.InputSchema)
	f.Fields, f.Note = fields, note
	f.Raw = startingArgs(fields)
	return f
}

// schema is what the form reads of a JSON Schema.
type schema struct {
	Type        json.RawMessage   `json:"type"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Enum        []json.RawMessage `json:"enum"`
	Default     json.RawMessage   `json:"default"`
	Minimum     *float64          `json:"minimum"`
	Maximum     *float64          `json:"maximum"`
	Required    []string          `json:"required"`
}

// typeOf is the schema's type: the first of a list that is not "null";
// "" when it names none.
func (s schema) typeOf() string {
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(s.Type, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
	}
	return ""
}

// schemaFields are the fields of an object schema's properties, in the
// order the schema lists them; note is set when the schema is not an
// object of properties (the raw JSON is the form then).
func schemaFields(raw json.RawMessage) ([]field, string) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, ""
	}
	var top struct {
		schema
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, "Its input schema is not JSON: write the arguments as JSON."
	}
	if t := top.typeOf(); t != "" && t != "object" {
		return nil, "Its input schema is not an object: write the arguments as JSON."
	}
	props, err := orderedObject(top.Properties)
	if err != nil {
		return nil, "Its input schema's properties are not an object: write the arguments as JSON."
	}
	required := map[string]bool{}
	for _, n := range top.Required {
		required[n] = true
	}
	out := make([]field, 0, len(props))
	for i, p := range props {
		var s schema
		_ = json.Unmarshal(p.value, &s) // a property that is not a schema is a JSON field
		f := field{ID: "try-f" + strconv.Itoa(i), Name: p.key, Description: s.Description, Required: required[p.key]}
		if f.Description == "" {
			f.Description = s.Title
		}
		switch t := s.typeOf(); {
		case len(s.Enum) > 0:
			f.Type = fieldEnum
			for _, v := range s.Enum {
				f.Options = append(f.Options, option{Label: enumLabel(v), Value: string(v), Selected: bytes.Equal(v, s.Default)})
			}
		case t == "string":
			f.Type = fieldString
			_ = json.Unmarshal(s.Default, &f.Value)
		case t == "number" || t == "integer":
			f.Type = fieldNumber
			if t == "integer" {
				f.Type = fieldInteger
			}
			var n json.Number
			if json.Unmarshal(s.Default, &n) == nil {
				f.Value = n.String()
			}
			f.Min, f.Max = bound(s.Minimum), bound(s.Maximum)
		case t == "boolean":
			f.Type = fieldBoolean
			var b bool
			set := json.Unmarshal(s.Default, &b) == nil
			f.Options = []option{{Label: "true", Value: "true", Selected: set && b}, {Label: "false", Value: "false", Selected: set && !b}}
		default:
			f.Type = fieldJSON
			if len(s.Default) > 0 {
				f.Value = indent(s.Default)
			}
		}
		out = append(out, f)
	}
	return out, ""
}

// startingArgs are the arguments the fields start with, as JSON (the raw
// mode's first text).
func startingArgs(fields []field) string {
	var b strings.Builder
	b.WriteString("{")
	n := 0
	for _, f := range fields {
		var v string
		switch f.Type {
		case fieldString:
			if f.Value != "" {
				q, _ := json.Marshal(f.Value)
				v = string(q)
			}
		case fieldNumber, fieldInteger, fieldJSON:
			v = f.Value
		case fieldEnum, fieldBoolean:
			for _, o := range f.Options {
				if o.Selected {
					v = o.Value
				}
			}
		}
		if v == "" || !json.Valid([]byte(v)) {
			continue
		}
		if n > 0 {
			b.WriteString(",")
		}
		k, _ := json.Marshal(f.Name)
		b.WriteString("\n  " + string(k) + ": " + v)
		n++
	}
	if n > 0 {
		b.WriteString("\n")
	}
	b.WriteString("}")
	return b.String()
}

func enumLabel(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

func bound(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

func indent(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

type member struct {
	key   string
	value json.RawMessage
}

// orderedObject is a JSON object's members in the order it lists them
// (a Go map would lose it, and a form's order is the schema's); null or
// nothing is no members.
func orderedObject(raw json.RawMessage) ([]member, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key: key, value: v})
	}
	return out, nil
}

// promptForm is the form of the prompt in raw named name: one text field
// per argument.
func promptForm(raw json.RawMessage, name string) (*tryForm, bool) {
	var p struct {
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Arguments   []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Required    bool   `json:"required"`
		} `json:"arguments"`
	}
	if json.Unmarshal(raw, &p) != nil || p.Name != name {
		return nil, false
	}
	f := &tryForm{Kind: tryPrompt, Name: p.Name, Title: p.Title, Description: p.Description, Method: "prompts/get", Raw: "{}"}
	for i, a := range p.Arguments {
		f.Fields = append(f.Fields, field{ID: "try-f" + strconv.Itoa(i), Name: a.Name, Type: fieldString, Description: a.Description, Required: a.Required})
	}
	return f, true
}

// uriVariable is a variable of an RFC 6570 URI template, operator and
// modifiers aside: {id}, {+path}, {?q,lang}.
var uriVariable = regexp.MustCompile(`\{[+#./;?&]?([A-Za-z0-9_.%,*:]+)\}`)

// templateForm is the form of the resource template in raw whose
// uriTemplate is uri: one text field per variable.
func templateForm(raw json.RawMessage, uri string) (*tryForm, bool) {
	var t struct {
		URITemplate string `json:"uriTemplate"`
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
	}
	if json.Unmarshal(raw, &t) != nil || t.URITemplate != uri {
		return nil, false
	}
	f := &tryForm{Kind: tryTemplate, Name: t.URITemplate, Title: t.Name, Description: t.Description, Method: "resources/read", Raw: "{}"}
	seen := map[string]bool{}
	for _, m := range uriVariable.FindAllStringSubmatch(t.URITemplate, -1) {
		for _, v := range strings.Split(m[1], ",") {
			v = strings.TrimRight(strings.SplitN(v, ":", 2)[0], "*")
			if v == "" || seen[v] {
				continue
			}
			seen[v] = true
			f.Fields = append(f.Fields, field{ID: "try-f" + strconv.Itoa(len(f.Fields)), Name: v, Type: fieldString, Required: true})
		}
	}
	return f, true
}

// resourceForm is the form of the resource in raw whose uri is uri: no
// fields, Run reads it.
func resourceForm(raw json.RawMessage, uri string) (*tryForm, bool) {
	var r struct {
		URI         string `json:"uri"`
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		MIMEType    string `json:"mimeType"`
	}
	if json.Unmarshal(raw, &r) != nil || r.URI != uri {
		return nil, false
	}
	return &tryForm{Kind: tryResource, Name: r.URI, Title: r.Name, Description: r.Description, Method: "resources/read", CallName: r.URI, Raw: "{}"}, true
}

func tryUnknownFragment() *frag {
	f := &frag{}
	f.M(`<p class="empty">Nothing of that name to try here.</p>`)
	return f
}

// tryFragment is the Try dialog's form. try.js reads how to run it from
// its data- attributes, and each input's argument from its data-name and
// data-type (no control has a name=: one named like a property of the
// form, id or action, would shadow it in the script).
func tryFragment(t *tryForm) *frag {
	f := &frag{}
	f.M(`<form class="try" id="try-form"`)
	if t.Note != "" {
		f.M(` data-raw-only`)
	}
	f.Attr(` data-kind`, t.Kind)
	f.Attr(` data-method`, t.Method)
	f.Attr(` data-call`, t.CallName)
	f.Attr(` data-via`, t.Via)
	f.Attr(` data-server`, t.Server)
	f.Attr(` data-target`, t.Name)
	f.M(` novalidate>
<p class="try-what"><span class="tag">`)
	f.Text(t.Kind)
	f.M(`</span> <code>`)
	f.Text(t.Name)
	f.M(`</code>`)
	if t.Server != "" {
		f.M(` on <b>`)
		f.Text(t.Server)
		f.M(`</b>`)
	} else {
		f.M(` of the gateway`)
	}
	if t.CallName != "" && t.CallName != t.Name {
		f.M(` <span class="muted">called as <code>`)
		f.Text(t.CallName)
		f.M(`</code></span>`)
	}
	f.M("</p>\n")
	if t.Title != "" {
		f.M(`<p class="try-title">`)
		f.Text(t.Title)
		f.M(`</p>`)
	}
	f.M("\n")
	if t.Description != "" {
		f.M(`<p class="desc">`)
		f.Text(t.Description)
		f.M(`</p>`)
	}
	f.M("\n")
	if t.Lacks != "" {
		f.M(`<p class="note warn" data-lacks>`)
		f.Text(t.Lacks)
		f.M(`: the gateway will refuse this, as it would any client's.</p>`)
	}
	f.M("\n")
	if t.Note != "" {
		f.M(`<p class="note">`)
		f.Text(t.Note)
		f.M(`</p>`)
	}
	f.M(`
<div class="fields" data-mode="form">
`)
	for _, x := range t.Fields {
		f.field(x)
	}
	if len(t.Fields) == 0 && t.Note == "" {
		if t.Kind == tryResource {
			f.M(`<p class="hint">Nothing to fill in: Read reads it.</p>`)
		} else {
			f.M(`<p class="hint">It takes no arguments.</p>`)
		}
	}
	f.M(`
</div>
<div class="raw" hidden><label for="try-raw">`)
	if t.Kind == tryTemplate {
		f.M(`Variables`)
	} else {
		f.M(`Arguments`)
	}
	f.M(` as JSON</label><textarea id="try-raw" rows="8" spellcheck="false"`)
	f.Attr(` data-start`, t.Raw)
	f.M(`>`)
	f.Text(t.Raw)
	f.M(`</textarea></div>
<p class="form-error err" role="alert" hidden></p>
<div class="buttons"><button type="submit" class="primary" id="try-run">`)
	switch t.Kind {
	case tryResource, tryTemplate:
		f.M(`Read`)
	case tryPrompt:
		f.M(`Get`)
	default:
		f.M(`Run`)
	}
	f.M("</button>\n")
	if t.Kind != tryResource {
		f.M(`<button type="button" class="ghost" data-raw aria-pressed="false">Raw JSON</button>`)
	}
	f.M(`
<span class="muted how">`)
	f.Text(t.Method)
	f.M(` through /mcp with your credentials</span></div>
</form>`)
	return f
}

// field writes one input of the Try form, labelled by its property.
func (f *frag) field(x field) {
	f.M(`<div class="field"`)
	f.Attr(` data-field`, x.Name)
	f.M(`>
<label`)
	f.Attr(` for`, x.ID)
	f.M(`><span class="fname">`)
	f.Text(x.Name)
	f.M(`</span>`)
	if x.Required {
		f.M(` <abbr class="req" title="required" aria-label="required">*</abbr>`)
	}
	f.M(` <span class="ftype">`)
	f.Text(x.Type)
	f.M("</span></label>\n")
	// common are the attributes every control has after its own.
	common := func() {
		if x.Required {
			f.M(` required aria-required="true"`)
		}
		if x.Description != "" {
			f.Attr(` aria-describedby`, x.ID+"-d")
		}
	}
	switch x.Type {
	case fieldEnum, fieldBoolean:
		f.M(`<select`)
		f.Attr(` id`, x.ID)
		f.Attr(` data-name`, x.Name)
		f.Attr(` data-type`, x.Type)
		common()
		f.M(`>`)
		if !x.Required {
			f.M(`<option value="">(not set)</option>`)
		}
		for _, o := range x.Options {
			f.M(`<option`)
			f.Attr(` value`, o.Value)
			if o.Selected {
				f.M(` selected`)
			}
			f.M(`>`)
			f.Text(o.Label)
			f.M(`</option>`)
		}
		f.M(`</select>`)
	case fieldJSON:
		f.M(`<textarea`)
		f.Attr(` id`, x.ID)
		f.Attr(` data-name`, x.Name)
		f.M(` data-type="json" rows="3" spellcheck="false" placeholder="JSON"`)
		common()
		f.M(`>`)
		f.Text(x.Value)
		f.M(`</textarea>`)
	case fieldNumber, fieldInteger:
		f.M(`<input`)
		f.Attr(` id`, x.ID)
		f.Attr(` data-name`, x.Name)
		f.Attr(` data-type`, x.Type)
		if x.Type == fieldInteger {
			f.M(` type="number" step="1"`)
		} else {
			f.M(` type="number" step="any"`)
		}
		if x.Min != "" {
			f.Attr(` min`, x.Min)
		}
		if x.Max != "" {
			f.Attr(` max`, x.Max)
		}
		f.Attr(` value`, x.Value)
		common()
		f.M(`>`)
	default:
		f.M(`<input`)
		f.Attr(` id`, x.ID)
		f.Attr(` data-name`, x.Name)
		f.M(` data-type="string" type="text"`)
		f.Attr(` value`, x.Value)
		f.M(` autocomplete="off"`)
		common()
		f.M(`>`)
	}
	f.M("\n")
	if x.Description != "" {
		f.M(`<small`)
		f.Attr(` id`, x.ID+"-d")
		f.M(` class="hint">`)
		f.Text(x.Description)
		f.M(`</small>`)
	}
	f.M(`
</div>
`)
}
