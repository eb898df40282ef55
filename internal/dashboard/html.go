package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/markup"
)

// The fragments are written by Go code with a markup.Writer, not by
// html/template (the package comment of internal/markup says why): markup
// is only ever a constant of the source, and every value goes through
// Text, Attr, Val or URLPart, which escape it.

// frag is one fragment being written, with the dashboard's own pieces.
type frag struct{ markup.Writer }

// serverLink writes a link to a server's page.
func (f *frag) serverLink(id string) {
	f.M(`<a href="#server/`)
	f.URLPart(id)
	f.M(`">`)
	f.Text(id)
	f.M(`</a>`)
}

// pill writes a pill of class prefix+value showing value.
func (f *frag) pill(prefix markup.HTML, value string) {
	f.M(`<span class="pill `)
	f.M(prefix)
	f.Text(value)
	f.M(`">`)
	f.Text(value)
	f.M(`</span>`)
}

// orDash writes s, or an em dash when it is empty.
func (f *frag) orDash(s string) {
	if s == "" {
		f.M("—")
		return
	}
	f.Text(s)
}

// render sends the fragment.
func (d *Dashboard) render(w http.ResponseWriter, f *frag) {
	d.send(w, 0, f)
}

// send sends the fragment with status.
func (d *Dashboard) send(w http.ResponseWriter, status int, f *frag) {
	if err := f.Serve(w, status); err != nil {
		d.log.Debug("dashboard fragment not sent", "error", err)
	}
}

// Values as the fragments show them.

// when is a time as UTC, or an em dash for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago is how long ago t was, roughly.
func ago(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := time.Since(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

func rate(f float64) string { return fmt.Sprintf("%.2f", f) }

// ms is a duration in milliseconds, or an em dash for none.
func ms(f float64) string {
	if f == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", f)
}

// short cuts a sha256 digest to its first 12 hex digits, and a container
// or engine ID to 12 characters.
func short(s string) string {
	if len(s) > 19 && strings.HasPrefix(s, "sha256:") {
		return s[:19]
	}
	if len(s) == 64 && !strings.ContainsAny(s, ":/") {
		return s[:12]
	}
	return s
}

// indented is v as indented JSON.
func indented(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
