package invoke

import (
	"context"
	"testing"
)

func TestCredentialForPrincipal(t *testing.T) {
	cr := Credential{Value: "default-key", ByPrincipal: []PrincipalCredential{
		{Subject: "ada", Org: "acme", Credential: Credential{Value: "ada-key"}},
		{Subject: "bob", Credential: Credential{Value: "bob-key"}},
	}}
	tests := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"exact match", WithPrincipal(t.Context(), Principal{Subject: "ada", Org: "acme"}), "ada-key"},
		{"entry without org matches no org", WithPrincipal(t.Context(), Principal{Subject: "bob"}), "bob-key"},
		{"org must match too", WithPrincipal(t.Context(), Principal{Subject: "ada"}), "default-key"},
		{"entry without org does not match an org", WithPrincipal(t.Context(), Principal{Subject: "bob", Org: "acme"}), "default-key"},
		{"no principal", t.Context(), "default-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := cr.forPrincipal(tt.ctx)
			if !ok || got.Value != tt.want {
				t.Errorf("got %q, %v; want %q", got.Value, ok, tt.want)
			}
		})
	}
	cr.Value = ""
	if _, ok := cr.forPrincipal(WithPrincipal(t.Context(), Principal{Subject: "carol"})); ok {
		t.Errorf("a principal with no entry and no default got a credential")
	}
}

func TestCredentialFingerprint(t *testing.T) {
	a := &Call{auth: authPlan{steps: []authStep{{scheme: "k", cred: Credential{Value: "one"}}}}}
	b := &Call{auth: authPlan{steps: []authStep{{scheme: "k", cred: Credential{Value: "two"}}}}}
	if a.CredentialFingerprint() == b.CredentialFingerprint() || a.CredentialFingerprint() == "" {
		t.Errorf("fingerprints %q %q", a.CredentialFingerprint(), b.CredentialFingerprint())
	}
	if (&Call{}).CredentialFingerprint() != "" {
		t.Errorf("a call without credentials has a fingerprint")
	}
}

// TestClientCredentialFingerprint: the fingerprint known before a call is
// the one the prepared call has, and it tells principals with different
// keys apart.
func TestClientCredentialFingerprint(t *testing.T) {
	s := parseSpec(t, "a", authDoc, "https://api.example")
	h := endpoint(t, s, "h")
	c := New(Options{Specs: map[string]SpecOptions{"a": {Auth: map[string]Credential{"hdr": {
		Value: "default-key",
		ByPrincipal: []PrincipalCredential{
			{Subject: "ada", Org: "acme", Credential: Credential{Value: "ada-key"}},
			{Subject: "ada@acme", Credential: Credential{Value: "other-key"}},
		},
	}}}}})
	t.Cleanup(c.Close)
	fingerprint := func(p Principal) string {
		t.Helper()
		ctx := WithPrincipal(t.Context(), p)
		call, err := c.Prepare(ctx, h, Args{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.CredentialFingerprint(ctx, h), call.CredentialFingerprint(); got != want || got == "" {
			t.Fatalf("%v: before the call %q, the call's %q", p, got, want)
		}
		return call.CredentialFingerprint()
	}
	ada, other, carol := fingerprint(Principal{Subject: "ada", Org: "acme"}), fingerprint(Principal{Subject: "ada@acme"}), fingerprint(Principal{Subject: "carol"})
	if ada == other || ada == carol || other == carol {
		t.Errorf("fingerprints ada %s, ada@acme %s, carol (the default) %s: want three", ada, other, carol)
	}
	if got := c.CredentialFingerprint(t.Context(), endpoint(t, s, "open")); got != "" {
		t.Errorf("an endpoint without security has fingerprint %q", got)
	}
}

// as returns ctx carrying the principal of subject name.
func as(ctx context.Context, name string) context.Context {
	return WithPrincipal(ctx, Principal{Subject: name})
}
