package frontdoor

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/auth"
	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/endpoint"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// A call by callable name can come before the front door has listed the
// name: right after start, while the prefetch still runs, or for a server
// or group that never ran. Then the name is resolved before mcp-go looks
// the tool up: the catalogs of the servers that could own it (the caller
// may reach, not known yet, whose prefix the name starts with) are read,
// starting them like a call would (joining the start of a prefetch of the
// same server, which then keeps it running), and the listing is
// refreshed. A name no known server
// can own is answered at once, as unknown, by mcp-go.

var toolsCallMethod = []byte(`"` + string(mcp.MethodToolsCall) + `"`)

// onToolCall resolves the name of a tools/call that nothing lists yet.
func (f *FrontDoor) onToolCall(ctx context.Context, _ any, message any) error {
	var name string
	if env, overHTTP := endpoint.RequestEnvelope(ctx); overHTTP {
		// The envelope holds the params already: the name is read from
		// them, not from the whole message again.
		if env.Method != string(mcp.MethodToolsCall) {
			return nil
		}
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(env.Params, &p) != nil {
			return nil // mcp-go answers what is malformed
		}
		name = p.Name
	} else {
		raw, ok := message.(json.RawMessage)
		if !ok || !bytes.Contains(raw, toolsCallMethod) {
			return nil
		}
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Method != string(mcp.MethodToolsCall) {
			return nil // mcp-go answers what is malformed
		}
		name = m.Params.Name
	}
	if name == "" {
		return nil
	}
	if srv := f.mcp.Load(); srv == nil || srv.GetTool(name) != nil {
		return nil
	}
	f.resolve(ctx, name)
	return nil
}

// owners are the servers whose unknown catalog could hold name and that
// the caller may call.
func (f *FrontDoor) owners(ctx context.Context, name string) []string {
	id, identified := auth.FromContext(ctx)
	if identified && !id.Has(auth.ScopeCall) {
		return nil
	}
	f.mu.RLock()
	versions := f.versions
	f.mu.RUnlock()
	var out []string
	for _, sv := range f.src.Servable() {
		if _, known := versions[sv.ID]; known || sv.Hidden || (identified && !id.MayReach(sv.ID)) {
			continue
		}
		if f.naming != config.NamingFlat {
			prefix := sv.ID
			if sv.Spec != nil && sv.Spec.Prefix != "" {
				prefix = sv.Spec.Prefix
			}
			if !strings.HasPrefix(name, sanitize(prefix)+"__") {
				continue
			}
		}
		out = append(out, sv.ID)
	}
	return out
}

// resolve reads the catalogs of name's possible owners and lists them;
// it returns when they are listed, or ctx ends.
func (f *FrontDoor) resolve(ctx context.Context, name string) {
	owners := f.owners(ctx, name)
	if len(owners) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, id := range owners {
		wg.Go(func() {
			// Not the caller's context: a read others share must not
			// end with the first caller that gives up. Not the
			// prefetch's flight either: a start the call joins (the
			// provider's own single flight) counts as the call's
			// demand, so the prefetch leaves the provider running.
			ch := f.learning.DoChan("call\x00"+id, func() (any, error) {
				return nil, f.src.Learn(context.WithoutCancel(ctx), id)
			})
			select {
			case r := <-ch:
				if r.Err != nil {
					f.log.Warn("catalog not read for a call", telemetry.FieldServer, id, telemetry.FieldTool, name, telemetry.FieldError, r.Err)
				}
			case <-ctx.Done():
			}
		})
	}
	wg.Wait()
	if ctx.Err() == nil {
		f.Refresh(ctx)
	}
}
