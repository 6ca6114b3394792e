package inauth

import "context"

// Scope is what a tool call needs of the caller's token, when the HTTP
// transport checks scopes. The zero value needs nothing.
type Scope int

const (
	// ScopeNone: any valid token may make the call.
	ScopeNone Scope = iota
	// ScopeRead: reading (search, inspect, status, GET and HEAD invokes).
	ScopeRead
	// ScopeInvoke: calls that may change the upstream's state.
	ScopeInvoke
	// ScopeAdmin: changing specgate's own limits.
	ScopeAdmin
)

// Scopes names the OAuth scopes specgate checks. With all three empty,
// scopes are not checked: any valid token may call any tool.
type Scopes struct {
	// Read covers search, inspect, rate_limit_status, read_response,
	// begin_task, end_task and GET/HEAD invokes.
	Read string
	// Invoke covers what Read covers and every other invoke.
	Invoke string
	// Admin covers set_rate_limit.
	Admin string
}

// Enabled reports whether any scope is configured, and so checked.
func (s Scopes) Enabled() bool { return s.Read != "" || s.Invoke != "" || s.Admin != "" }

// Names lists the configured scope names, for the metadata.
func (s Scopes) Names() []string {
	var out []string
	for _, n := range []string{s.Read, s.Invoke, s.Admin} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Has reports whether granted holds the scope name need, or one that
// covers it: Invoke covers Read.
func (s Scopes) Has(granted []string, need string) bool {
	for _, g := range granted {
		if g == need || (need == s.Read && g == s.Invoke && s.Invoke != "") {
			return true
		}
	}
	return false
}

// Name is the scope name that covers need; "" when none is configured for
// it, and then nothing is checked.
func (s Scopes) Name(need Scope) string {
	switch need {
	case ScopeRead:
		return s.Read
	case ScopeInvoke:
		return s.Invoke
	case ScopeAdmin:
		return s.Admin
	}
	return ""
}

// Missing is the configured scope name that covers need and is not among
// granted; "" when granted suffices or nothing is checked for need.
func (s Scopes) Missing(granted []string, need Scope) string {
	if !s.Enabled() {
		return ""
	}
	if name := s.Name(need); name != "" && !s.Has(granted, name) {
		return name
	}
	return ""
}

// grantKey is the context key of the scopes a caller's token carries, set
// by the HTTP transport when it checks scopes.
type grantKey struct{}

type grant struct {
	scopes  Scopes
	granted []string
}

// WithGrant returns ctx carrying the scope names in force and those the
// caller's token carries.
func WithGrant(ctx context.Context, sc Scopes, granted []string) context.Context {
	return context.WithValue(ctx, grantKey{}, grant{scopes: sc, granted: granted})
}

// MissingFrom is the scope name a call that needs need lacks, under the
// grant ctx carries; "" when ctx carries none (the transport checks no
// scopes) or the grant suffices.
func MissingFrom(ctx context.Context, need Scope) string {
	g, ok := ctx.Value(grantKey{}).(grant)
	if !ok {
		return ""
	}
	return g.scopes.Missing(g.granted, need)
}
