package mcpserver

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

func (s Scopes) enabled() bool { return s.Read != "" || s.Invoke != "" || s.Admin != "" }

// names lists the configured scope names, for the metadata.
func (s Scopes) names() []string {
	var out []string
	for _, n := range []string{s.Read, s.Invoke, s.Admin} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}
