package dockerrt

// Labels on every container the gateway creates. Reverse-DNS keys so they
// never clash with labels an image or an operator sets.
const (
	LabelManaged = "io.mcp-hangar.managed" // "true"
	LabelServer  = "io.mcp-hangar.server"  // provider ID
	// LabelOwner names the gateway instance that created the container, so
	// that the reaper of one gateway never removes another's containers when
	// several share an engine.
	LabelOwner = "io.mcp-hangar.owner"
	// LabelReplica names the replica of the instance that created the
	// container when replicas share a store: a replica reaps only its own,
	// and a live one those of a replica whose heartbeat stopped.
	LabelReplica = "io.mcp-hangar.replica"
	// LabelCreate carries a nonce of one creation, so that the reaper
	// recognises a container whose creation is still under way.
	LabelCreate = "io.mcp-hangar.create"
	// LabelRole marks what the gateway creates besides provider containers:
	// RoleEgressProxy on egress proxies, RoleEgressNetwork on their
	// internal networks. LabelServer then names the server they serve.
	LabelRole = "io.mcp-hangar.role"
)

// Roles of LabelRole.
const (
	RoleEgressProxy   = "egress-proxy"
	RoleEgressNetwork = "egress-network"
)
