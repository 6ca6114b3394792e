package invoke

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// Credentials and the structures holding them print without their values
// under every fmt verb, so a stray log line or %+v cannot leak a secret.

// String returns "invoke.Credential([redacted])".
func (c Credential) String() string { return "invoke.Credential([redacted])" }

// GoString redacts %#v.
func (c Credential) GoString() string { return c.String() }

// Format redacts every verb.
func (c Credential) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// String names the settings without header or credential values.
func (o SpecOptions) String() string {
	var b strings.Builder
	b.WriteString("invoke.SpecOptions{")
	if len(o.Headers) > 0 {
		names := make([]string, 0, len(o.Headers))
		for k := range o.Headers {
			names = append(names, k)
		}
		slices.Sort(names)
		b.WriteString("headers: " + strings.Join(names, ",") + " [redacted] ")
	}
	if len(o.Auth) > 0 {
		names := make([]string, 0, len(o.Auth))
		for k := range o.Auth {
			names = append(names, k)
		}
		slices.Sort(names)
		b.WriteString("auth: " + strings.Join(names, ",") + " [redacted] ")
	}
	fmt.Fprintf(&b, "timeout: %v maxResponseBytes: %d allowedHosts: %v}", o.Timeout, o.MaxResponseBytes, o.AllowedHosts)
	return b.String()
}

// GoString redacts %#v.
func (o SpecOptions) GoString() string { return o.String() }

// Format redacts every verb.
func (o SpecOptions) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, o.String()) }

// String returns "invoke.Client".
func (c *Client) String() string { return "invoke.Client" }

// Format prints no option values.
func (c *Client) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// String returns the method and URL (without credentials: they are added
// when sending).
func (c *Call) String() string {
	return "invoke.Call(" + c.endpoint.ID + " " + c.method + " " + c.url.String() + ")"
}

// Format prints the method and URL only.
func (c *Call) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// redactHeader returns h with every secret replaced in its values.
func redactHeader(h http.Header, secrets []string) http.Header {
	if len(secrets) == 0 {
		return h
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		cp := make([]string, len(vs))
		for i, v := range vs {
			cp[i] = redactString(v, secrets)
		}
		out[k] = cp
	}
	return out
}
