package invoke

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"

	"github.com/specgate/specgate/pkg/spec"
)

// Principal is who a call is made for: the subject and organisation the
// MCP client's token named, and the scopes it carries. It chooses
// by_principal credentials, owns stored answers and cached results, and
// takes its turn in the wait queue; the client's token itself never goes
// upstream. It is the one type of a caller, carried in the context once
// (WithPrincipal) by the HTTP transport.
type Principal struct {
	Subject string
	Org     string
	// Scopes the caller's token carries; checked only when HTTP serving
	// names scopes.
	Scopes []string
}

// Key returns an unambiguous key for what belongs to the principal: subject
// "ada@acme" without an org and subject "ada" of org "acme" are both named
// ada@acme, but their keys differ.
func (p Principal) Key() string {
	return url.PathEscape(p.Org) + "/" + url.PathEscape(p.Subject)
}

// String names the principal for logs: subject, or subject@org.
func (p Principal) String() string {
	if p.Org == "" {
		return p.Subject
	}
	return p.Subject + "@" + p.Org
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p as the caller.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// LocalPrincipal is the key of the caller when the transport names none
// (stdio, HTTP without auth): the one local user. A principal's own key
// always holds a "/", so it is never this.
const LocalPrincipal = "local"

// PrincipalKey returns the key of ctx's principal (Principal.Key), or
// LocalPrincipal when ctx carries none: whose stored answers and cached
// results a call reads and keeps.
func PrincipalKey(ctx context.Context) string {
	if p, ok := PrincipalFrom(ctx); ok {
		return p.Key()
	}
	return LocalPrincipal
}

// PrincipalCredential is a credential for one principal. An entry matches a
// principal whose subject and org are both equal (an entry without org
// matches principals without one).
type PrincipalCredential struct {
	Subject string
	Org     string
	Credential
}

// forPrincipal chooses the credential a call for ctx's principal uses: its
// by_principal entry, else the plain form when it holds anything. ok is
// false when the scheme has entries per principal but none for this one
// and no plain default.
func (cr Credential) forPrincipal(ctx context.Context) (Credential, bool) {
	if len(cr.ByPrincipal) == 0 {
		return cr, true
	}
	if p, has := PrincipalFrom(ctx); has {
		for _, e := range cr.ByPrincipal {
			if e.Subject == p.Subject && e.Org == p.Org {
				c := e.Credential
				if c.TokenURL == "" {
					c.TokenURL = cr.TokenURL
				}
				if c.Scopes == nil {
					c.Scopes = cr.Scopes
				}
				c.MissingEnv = append(c.MissingEnv, cr.MissingEnv...)
				return c, true
			}
		}
	}
	plain := cr
	plain.ByPrincipal = nil
	if plain.Value == "" && plain.Token == "" && plain.Username == "" && plain.Password == "" && plain.ClientID == "" && plain.ClientSecret == "" {
		return Credential{}, false
	}
	return plain, true
}

// CredentialFingerprint identifies the credentials the call sends, without
// revealing them: a hex SHA-256 over the chosen schemes and their values.
// Two calls with the same fingerprint send the same credentials, so a
// result cache keyed on it never serves one principal's answer to another
// with different upstream keys. "" when the call sends none.
func (c *Call) CredentialFingerprint() string { return c.auth.fingerprint() }

// CredentialFingerprint is the fingerprint of the credentials a call to e
// made with ctx (its principal) would send, as Call.CredentialFingerprint,
// known before the call is prepared. "" when it would send none, or when
// the call would fail with an AuthError.
func (c *Client) CredentialFingerprint(ctx context.Context, e *spec.Endpoint) string {
	plan, err := c.planAuth(ctx, e)
	if err != nil {
		return ""
	}
	return plan.fingerprint()
}

func (p authPlan) fingerprint() string {
	if len(p.steps) == 0 {
		return ""
	}
	h := sha256.New()
	for _, st := range p.steps {
		for _, s := range []string{st.scheme, st.cred.Value, st.cred.Token, st.cred.Username, st.cred.Password, st.cred.ClientID, st.cred.ClientSecret} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
