package invoke

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/specgate/specgate/pkg/serialize"
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

// base64Encodings are the four base64 alphabets a secret may be echoed in.
var base64Encodings = []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding}

// secretForms expands each secret into every form it is sent or may come
// back in, deduplicated, longest first (so a longer form is replaced before
// a shorter one it contains): the value itself and its base64 in the
// standard, URL-safe and unpadded alphabets; each of those as the query
// encoder sends it (serialize.EscapeQuery), as url.QueryEscape, url.PathEscape, a
// cookie value and a form value write it, and as a JSON string holds it
// (with "\/" as PHP writes it); each percent-encoded form with upper- and
// lower-case hex. Forms shorter than 4 bytes are left out: replacing them
// would shred unrelated text.
func secretForms(raw []string) []string {
	seen := map[string]bool{}
	var out []string
	put := func(s string) {
		if len(s) >= 4 && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range raw {
		bases := []string{s}
		for _, enc := range base64Encodings {
			bases = append(bases, enc.EncodeToString([]byte(s)))
		}
		for _, b := range bases {
			for _, f := range []string{b, serialize.EscapeQuery(b), url.QueryEscape(b), url.PathEscape(b), serialize.EscapeCookie(b), serialize.FormEscapeReserved(b)} {
				put(f)
				put(lowerHexEscapes(f))
			}
			if j, err := json.Marshal(b); err == nil {
				inner := string(j[1 : len(j)-1])
				put(inner)
				put(strings.ReplaceAll(inner, "/", `\/`))
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// lowerHexEscapes rewrites every %XX escape of s with lower-case hex
// digits, as some servers echo a URL.
func lowerHexEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' && isHex(b[i+1]) && isHex(b[i+2]) {
			b[i+1], b[i+2] = toLowerASCII(b[i+1]), toLowerASCII(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func toLowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
