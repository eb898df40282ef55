package store

// ProviderQuarantine is the Fingerprint of a Decision (Kind
// DecisionQuarantined) recording a provider-level quarantine: a served
// server whose tools or image changed (tool_schema_changed, image_changed,
// signature_invalid). Its Source is the server's catalog source, so this
// marker keeps it apart from discovery's records of candidates that were
// never registered.
const ProviderQuarantine = "provider"
