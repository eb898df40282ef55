package gateway

// DirectCalls is how many tools/call requests g ran directly (calls.go).
func DirectCalls(g *Gateway) int64 { return g.directCount.Load() }
