package store

import "testing"

func TestIsProviderQuarantine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d          Decision
		image      string
		isProvider bool
	}{
		{Decision{Kind: DecisionQuarantined, Fingerprint: ProviderQuarantineFingerprint("")}, "", true},
		{Decision{Kind: DecisionQuarantined, Fingerprint: ProviderQuarantineFingerprint("r:5000/a@sha256:1")}, "r:5000/a@sha256:1", true},
		{Decision{Kind: DecisionApproved, Fingerprint: ProviderQuarantine}, "", false},
		{Decision{Kind: DecisionQuarantined, Fingerprint: "sha256:abc"}, "", false}, // discovery's
		{Decision{Kind: DecisionQuarantined, Fingerprint: "providers"}, "", false},
	}
	for _, tt := range tests {
		image, ok := IsProviderQuarantine(tt.d)
		if image != tt.image || ok != tt.isProvider {
			t.Errorf("IsProviderQuarantine(%+v) = %q, %v; want %q, %v", tt.d, image, ok, tt.image, tt.isProvider)
		}
	}
}
