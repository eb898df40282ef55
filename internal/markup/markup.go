// Package markup writes HTML from Go code: the gateway's pages (the
// dashboard's fragments, the upstream login pages) are built with a
// Writer rather than html/template.
//
// The reason is the binary, not templates: executing any text/template
// reaches reflect.Value.MethodByName, and once that is reachable the
// linker must keep every exported method of every type the program puts
// in an interface, in case a template calls it by name. For hangar that
// was 6.4 MB of the binary and its share of resident text
// (docs/performance.md); cmd/hangar's TestNoMethodKeptForReflection keeps
// it out.
//
// A Writer keeps html/template's guarantee by construction. Markup is of
// type HTML, which only the program's constants are: a string value does
// not convert to it implicitly, and TestHTMLIsConstant refuses an explicit
// conversion anywhere in the module. Every value goes through Text (or
// Attr, Val, URLPart), which escapes it for an element's text and for a
// double-quoted attribute value: the only two places values are put.
// Nothing is ever written into a script, a style, an unquoted attribute or
// an event handler (the pages' CSP runs no inline script or style).
package markup

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
)

// HTML is trusted markup: only constants of the program's source.
type HTML string

// Writer builds an HTML page or fragment.
type Writer struct{ b []byte }

// M writes markup.
func (w *Writer) M(s HTML) { w.b = append(w.b, s...) }

// Text writes a value escaped: & < > " ' become entities, so it is text
// in an element and in a double-quoted attribute value alike.
func (w *Writer) Text(s string) { w.b = append(w.b, html.EscapeString(s)...) }

// Val writes any value as fmt's %v prints it, escaped.
func (w *Writer) Val(v any) { w.Text(fmt.Sprint(v)) }

// Attr writes ` name="value"`, the value escaped; name is markup
// (" data-id").
func (w *Writer) Attr(name HTML, value string) {
	w.M(name)
	w.M(`="`)
	w.Text(value)
	w.M(`"`)
}

// URLPart writes s as one segment of a URL (a path segment, a fragment):
// percent-encoded, then escaped for the attribute.
func (w *Writer) URLPart(s string) { w.Text(url.PathEscape(s)) }

// Bytes is what was written.
func (w *Writer) Bytes() []byte { return w.b }

// String is what was written.
func (w *Writer) String() string { return string(w.b) }

// Serve answers what was written as an HTML page with status (0: 200).
func (w *Writer) Serve(rw http.ResponseWriter, status int) error {
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	if status != 0 {
		rw.WriteHeader(status)
	}
	_, err := rw.Write(w.b)
	return err
}
