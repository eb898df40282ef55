package mcpconn

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// CatalogVersion is a catalog's catalog_version: a hash of its tools, the
// same for the same tools in any order. The front door, the stored
// catalogs and the management protocol all show this one value.
func CatalogVersion(tools []Tool) string {
	sorted := append([]Tool(nil), tools...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	b, _ := json.Marshal(sorted)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
