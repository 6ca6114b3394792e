package config

import "time"

// Approvals says how an approval asked of the user is bound to its call.
type Approvals struct {
	// Key signs the requestState of an input_required round trip (MCP
	// 2026-07-28), binding the answer to the principal, the endpoint and the
	// call's arguments. Replicas behind one load balancer must share it.
	// Default: with a Redis store, one key the replicas share there; else a
	// key generated at start (one replica only).
	Key Secret `yaml:"key" json:"key,omitzero"`
	// TTL is how long a requestState stays valid: the user's time to answer.
	// Default 5m.
	TTL Duration `yaml:"ttl" json:"ttl"`
}

// DefaultApprovalTTL is approvals.ttl when unset.
const DefaultApprovalTTL = 5 * time.Minute

// ApprovesWrites reports whether a write to the endpoint (full id and
// operationId) of spec s asks the user first: approve_writes, then the
// spec's, then the endpoint's.
func (c *Config) ApprovesWrites(s *Spec, endpointID, operationID string) bool {
	on := c.ApproveWrites
	if s == nil {
		return on
	}
	setBool(&on, s.ApproveWrites)
	if _, e, ok := s.Override(endpointID, operationID); ok {
		setBool(&on, e.ApproveWrites)
	}
	return on
}

// ApprovalTTL is approvals.ttl, or its default.
func (c *Config) ApprovalTTL() time.Duration {
	if c.Approvals.TTL > 0 {
		return time.Duration(c.Approvals.TTL)
	}
	return DefaultApprovalTTL
}

// approvals checks the approvals block.
func (v *validator) approvals(a Approvals) {
	v.nonNegative("approvals.ttl", a.TTL)
	if a.Key.IsSet() && len(a.Key.Reveal()) < 32 {
		v.add("approvals.key", "must be at least 32 bytes (e.g. openssl rand -hex 32)")
	}
}
