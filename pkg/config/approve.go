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
	// Channel says who asks the person: elicit (the client, by MCP
	// elicitation), page (the governance page at /ui, for every client) or
	// auto (the client where it can ask, else the page). The page asks only
	// where it is served (serve --http, or --ui beside stdio). Default auto.
	Channel Channel `yaml:"channel" json:"channel,omitempty"`
}

// Channel is who asks a person to approve a call (approvals.channel).
type Channel string

// Approval channels.
const (
	ChannelElicit Channel = "elicit"
	ChannelPage   Channel = "page"
	ChannelAuto   Channel = "auto"
)

// ApprovalChannel is approvals.channel, or its default (auto).
func (c *Config) ApprovalChannel() Channel {
	if c.Approvals.Channel == "" {
		return ChannelAuto
	}
	return c.Approvals.Channel
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
	switch a.Channel {
	case "", ChannelElicit, ChannelPage, ChannelAuto:
	default:
		v.add("approvals.channel", "must be elicit, page or auto")
	}
	if a.Key.IsSet() && len(a.Key.Reveal()) < 32 {
		v.add("approvals.key", "must be at least 32 bytes (e.g. openssl rand -hex 32)")
	}
}
