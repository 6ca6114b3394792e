package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"gopkg.in/yaml.v3"
)

// redacted is what every printer shows in place of a set secret.
const redacted = "[redacted]"

// Secret holds a credential: an API key, token, password, client secret, a
// header value or a URL that may carry a password. Every way of printing it
// (fmt with any verb, encoding/json, yaml, encoding.TextMarshaler, slog)
// shows "[redacted]" when it is set and "" when it is not; the value itself
// comes only from Reveal, so a call site that reads it is easy to find.
//
// In the file a secret is a literal string, a string holding ${NAME}
// references to environment variables, or (for the fields that have a
// sibling *_file key) the trimmed contents of a file. The zero value is an
// unset secret. A Secret is immutable after Load and safe for concurrent use.
type Secret struct {
	raw     string   // as written in the file, before expansion
	value   string   // after expansion or read from file
	file    string   // the file the value was read from, if any
	vars    []string // ${NAME}s referenced by raw, in order
	missing []string // the subset of vars that were unset at load
}

// NewSecret returns a secret holding v, as if written literally in the file.
func NewSecret(v string) Secret { return Secret{raw: v, value: v} }

// Reveal returns the secret's value. Call it only where the value goes on
// the wire; never log or return what it gives.
func (s Secret) Reveal() string { return s.value }

// IsSet reports whether the secret has a non-empty value.
func (s Secret) IsSet() bool { return s.value != "" }

// IsConfigured reports whether the file gave this secret at all (a literal,
// a ${NAME} reference, or a file), even if the reference expanded to empty.
func (s Secret) IsConfigured() bool { return s.raw != "" || s.file != "" }

// EnvVars returns the names of the environment variables the secret
// references, for messages such as "set PETSTORE_KEY". Never the values.
func (s Secret) EnvVars() []string { return slices.Clone(s.vars) }

// MissingEnv returns the referenced environment variables that were unset
// when the config was loaded. A credential with missing variables is a
// warning at start and an auth_error naming them when a call needs it.
func (s Secret) MissingEnv() []string { return slices.Clone(s.missing) }

// File returns the path the value was read from, or "".
func (s Secret) File() string { return s.file }

// String returns "[redacted]" for a set secret and "" for an unset one.
func (s Secret) String() string {
	if s.value == "" {
		return ""
	}
	return redacted
}

// GoString redacts %#v.
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", s.String()) }

// Format redacts every fmt verb, including %x and %q, which would otherwise
// print a string's bytes.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s.GoString())
		return
	}
	_, _ = io.WriteString(f, s.String())
}

// MarshalJSON redacts the secret in JSON output.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText redacts the secret for text encoders.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalYAML redacts the secret in YAML output.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// LogValue redacts the secret in log/slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// UnmarshalYAML takes any scalar as the secret's text (an API key of digits
// is still a string); ${NAME} references are expanded after decoding.
func (s *Secret) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return nodeError(n, "a string")
	}
	*s = Secret{raw: n.Value, value: n.Value}
	return nil
}

var (
	_ fmt.Formatter  = Secret{}
	_ fmt.Stringer   = Secret{}
	_ fmt.GoStringer = Secret{}
	_ json.Marshaler = Secret{}
	_ yaml.Marshaler = Secret{}
	_ slog.LogValuer = Secret{}
)
