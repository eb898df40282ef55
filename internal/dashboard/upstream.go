package dashboard

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mcp-hangar/hangar/internal/audit"
	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/readmodel"
	"github.com/mcp-hangar/hangar/internal/store"
	"github.com/mcp-hangar/hangar/internal/upstreamauth"
)

// Upstream credentials (upstream_auth, docs/upstream-auth.md) on a
// server's page: whether the calling identity is connected, since when
// and until when, and Disconnect, which drops the caller's own login and
// nobody else's (Model.Disconnect, as mcp/server/disconnect does).

// ActionDisconnect is the audit action of a Disconnect: the upstream
// credential manager's own (it records each disconnect it makes); the
// dashboard records under it the ones it refuses.
const ActionDisconnect = audit.ActionUpstreamAuth + upstreamauth.EventDisconnect

// upstreamView is what a server's page shows of the caller's upstream
// credential.
type upstreamView struct {
	Status *upstreamauth.Status
	// Caller is the identity the page is shown to; Anonymous: it can hold
	// no credential of its own.
	Caller    string
	Anonymous bool
	// CanDisconnect: the dashboard can run Disconnect (it can audit it).
	CanDisconnect bool
}

func (d *Dashboard) canDisconnect() bool { return d.Audit != nil }

// upstreamSection is the caller's upstream credential for the server.
func (f *frag) upstreamSection(p *serverPage) {
	u := p.Upstream
	st := u.Status
	f.M(`<section class="sec upstream"`)
	f.Attr(` data-type`, st.Type)
	if st.Connected {
		f.M(` data-connected="true"`)
	} else {
		f.M(` data-connected="false"`)
	}
	f.M(`><h3>Upstream login</h3>
<dl class="facts"><dt>Credentials</dt><dd>`)
	switch st.Type {
	case config.UpstreamOAuth:
		f.M(`each caller logs in with their own account (oauth); hangar keeps and refreshes the token`)
	case config.UpstreamTokenExchange:
		f.M(`each caller's bearer JWT is exchanged for a token of theirs (token_exchange)`)
	case config.UpstreamClientCredentials:
		f.M(`one service identity for every caller (client_credentials)`)
	default:
		f.Text(st.Type)
	}
	f.M(`</dd>
<dt>You</dt><dd><b>`)
	f.Text(u.Caller)
	f.M(`</b> `)
	switch {
	case st.Connected:
		f.M(`<span class="pill health-ok">connected</span>`)
	case u.Anonymous && st.PerIdentity:
		f.M(`<span class="pill muted-pill">not connected</span> <span class="hint">anonymous callers cannot hold a login: use a token</span>`)
	case st.Type == config.UpstreamOAuth:
		f.M(`<span class="pill muted-pill">not connected</span> <span class="hint">your next call of its tools asks you to log in (your MCP client opens the link)</span>`)
	default:
		f.M(`<span class="pill muted-pill">not connected</span>`)
	}
	f.M(`</dd>`)
	if st.Since != nil {
		f.M(`
<dt>Logged in</dt><dd class="since">`)
		f.Text(when(*st.Since))
		f.M(`</dd>`)
	}
	if st.Expires != nil {
		f.M(`
<dt>Token ends</dt><dd class="expires">`)
		f.Text(when(*st.Expires))
		f.M(` <span class="muted">(refreshed before)</span></dd>`)
	}
	f.M(`</dl>
`)
	if st.Connected && st.Type == config.UpstreamOAuth && u.CanDisconnect {
		f.M(`<button type="button" class="reject"`)
		f.Attr(` data-disconnect`, p.ID)
		f.M(` title="drops your upstream token, nobody else's: your next call asks you to log in again">Disconnect</button>`)
	}
	f.M(`
</section>`)
}

// disconnectTimeout bounds a Disconnect (a keystore delete).
const disconnectTimeout = 30 * time.Second

// disconnect drops the caller's own upstream credential for the server.
// The guard has required hangar:call (the scope that uses the credential,
// as mcp/server/disconnect requires) and audited a refusal; a server
// outside the caller's servers is refused and audited here, naming the
// server asked for and never whether it exists. The credential manager
// audits the disconnect itself.
func (d *Dashboard) disconnect(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("id")
	if !d.canDisconnect() {
		http.Error(w, "actions are not available", http.StatusNotImplemented)
		return
	}
	id := auth.Caller(r.Context())
	if e := id.Check("", name); e != nil {
		d.Audit(r.Context(), store.AuditEntry{Server: name, Identity: id.Name, Action: ActionDisconnect,
			Outcome: audit.OutcomeDenied, Reason: audit.ForbiddenReason(e)})
		auth.WriteError(w, http.StatusForbidden, nil, e)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), disconnectTimeout)
	defer cancel()
	had, err := d.views.Disconnect(ctx, name, id)
	out := actionResult{Server: name}
	status := http.StatusOK
	switch {
	case errors.Is(err, readmodel.ErrNoUpstreamAuth):
		out.Message, status = "no upstream_auth of type oauth: hangar keeps nothing of yours to disconnect there", http.StatusConflict
	case err != nil:
		d.log.Warn("upstream credential not dropped", "mcp_server", name, "identity", id.Name, "error", err)
		out.Message, status = "not disconnected: "+err.Error(), http.StatusConflict
	case had:
		out.OK, out.Message = true, "disconnected: your next call there asks you to log in again"
	default:
		out.OK, out.Message = true, "you were not connected: nothing to drop"
	}
	d.send(w, status, actionFragment(out))
}
