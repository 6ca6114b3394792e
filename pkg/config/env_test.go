package config

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestApplyEnvOverridesTopLevelKeys(t *testing.T) {
	c, err := Parse([]byte("rate_limit_interval: 5s\nresult_bytes: 8KiB\nspecs:\n  - location: a.yaml\n"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SPECGATE_RATE_LIMIT_INTERVAL":    "30s",
		"SPECGATE_RESULT_BYTES":           "32KiB",
		"SPECGATE_READ_ONLY":              "true",
		"SPECGATE_BLOCK_PRIVATE_NETWORKS": "false",
		"SPECGATE_ALLOWED_HOSTS":          "a.example, b.example:8443",
		"SPECGATE_AUDIT_LOG":              "",
		"SPECGATE_TEAM_TOKEN":             "not a key: left alone",
	}
	set, err := c.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"allowed_hosts", "block_private_networks", "rate_limit_interval", "read_only", "result_bytes"}; !slices.Equal(set, want) {
		t.Errorf("set %q, want %q", set, want)
	}
	if time.Duration(c.RateLimitInterval) != 30*time.Second || c.ResultBytes != 32<<10 || !c.ReadOnly ||
		c.BlockPrivateNetworks == nil || *c.BlockPrivateNetworks || !slices.Equal(c.AllowedHosts, []string{"a.example", "b.example:8443"}) {
		t.Errorf("config after the environment: %+v", c)
	}
	if len(c.Specs) != 1 || c.AuditLog != "" {
		t.Errorf("keys the environment did not name changed: %+v", c)
	}
}

func TestApplyEnvNamesTheVariableAtFault(t *testing.T) {
	for name, tc := range map[string]struct{ env, want string }{
		"bare number": {"SPECGATE_RATE_LIMIT_INTERVAL=10", "SPECGATE_RATE_LIMIT_INTERVAL (rate_limit_interval)"},
		"not a bool":  {"SPECGATE_READ_ONLY=maybe", "SPECGATE_READ_ONLY (read_only)"},
		"two lines":   {"SPECGATE_PROXY=http://a\nspecs: []", "SPECGATE_PROXY: a value is one line"},
	} {
		t.Run(name, func(t *testing.T) {
			k, v, _ := strings.Cut(tc.env, "=")
			c := Default()
			_, err := c.ApplyEnv(func(s string) (string, bool) { return v, s == k })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// Every top-level key an environment variable can set is a scalar (or
// allowed_hosts), and no section is among them.
func TestEnvKeys(t *testing.T) {
	keys := EnvKeys()
	for _, k := range []string{"rate_limit_interval", "result_bytes", "read_only", "audit_log", "block_private_networks", "allowed_hosts", "approve_writes"} {
		if keys[k] != "SPECGATE_"+strings.ToUpper(k) {
			t.Errorf("%s: %q", k, keys[k])
		}
	}
	for _, k := range []string{"specs", "upstreams", "http", "store", "search", "scripts", "approvals"} {
		if _, ok := keys[k]; ok {
			t.Errorf("section %s is settable from the environment", k)
		}
	}
}

// docs/configuration.md names every variable EnvKeys has.
func TestEnvKeysDocumented(t *testing.T) {
	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range EnvKeys() {
		if !strings.Contains(string(page), "`"+v+"`") {
			t.Errorf("docs/configuration.md does not name %s", v)
		}
	}
}
