package store

import "strings"

// ProviderQuarantine is the Fingerprint of a Decision (Kind
// DecisionQuarantined) recording a provider-level quarantine: a served
// server whose tools or image changed (tool_schema_changed, image_changed,
// signature_invalid). Its Source is the server's catalog source, so this
// marker keeps it apart from discovery's records of candidates that were
// never registered. An image verdict's fingerprint also names the image
// reference it was about: ProviderQuarantine + "@" + image.
const ProviderQuarantine = "provider"

// ProviderQuarantineFingerprint is the Fingerprint of a provider
// quarantine about image ("" for one about tools).
func ProviderQuarantineFingerprint(image string) string {
	if image == "" {
		return ProviderQuarantine
	}
	return ProviderQuarantine + "@" + image
}

// IsProviderQuarantine reports whether d records a provider quarantine,
// and the image reference it was about ("" when about tools).
func IsProviderQuarantine(d Decision) (string, bool) {
	if d.Kind != DecisionQuarantined {
		return "", false
	}
	if d.Fingerprint == ProviderQuarantine {
		return "", true
	}
	if image, ok := strings.CutPrefix(d.Fingerprint, ProviderQuarantine+"@"); ok {
		return image, true
	}
	return "", false
}
