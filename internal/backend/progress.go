package backend

import (
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-hangar/hangar/internal/dockerrt"
)

// PullProgressParams is the notifications/progress payload for a pull:
// progress and total in bytes when the size is known, and a message a
// person can read.
func PullProgressParams(token mcp.ProgressToken, p dockerrt.Progress) map[string]any {
	params := map[string]any{"progressToken": token, "progress": p.Current}
	msg := "pulling image " + p.Ref
	if pct := p.Percent(); pct >= 0 {
		params["total"] = p.Total
		msg += fmt.Sprintf(": %.0f%% of %s", pct, humanBytes(p.Total))
	}
	if p.Done {
		msg = "pulled image " + p.Ref
	}
	params["message"] = msg
	return params
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
