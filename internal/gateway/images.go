package gateway

import (
	"fmt"

	"github.com/mcp-hangar/hangar/internal/backend"
)

// ImageInfo is what the gateway shows of a docker server's image: a pull
// in progress and the digest it resolved to. backend.ImageGate implements it.
type ImageInfo interface {
	Status(server string) backend.ImageStatus
}

var _ ImageInfo = (*backend.ImageGate)(nil)

func (g *Gateway) imageStatus(id string) backend.ImageStatus {
	if g.Images == nil {
		return backend.ImageStatus{}
	}
	return g.Images.Status(id)
}

// pullingField is the "pulling" field of hangar_status and hangar_details:
// nil unless the server's image is downloading.
func pullingField(st backend.ImageStatus) any {
	if st.Pulling == nil {
		return nil
	}
	m := map[string]any{"image": st.Pulling.Ref, "bytes": st.Pulling.Current, "total_bytes": st.Pulling.Total, "percent": nil}
	if pct := st.Pulling.Percent(); pct >= 0 {
		m["percent"] = float64(int(pct*10)) / 10
	}
	return m
}

// pullingNote is the dashboard line's note on a pull in progress.
func pullingNote(st backend.ImageStatus) string {
	if st.Pulling == nil {
		return ""
	}
	if pct := st.Pulling.Percent(); pct >= 0 {
		return fmt.Sprintf(", pulling image %.0f%%", pct)
	}
	return ", pulling image"
}
