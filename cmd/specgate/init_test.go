package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/config"
)

var envRef = regexp.MustCompile(`\$\{([A-Z0-9_]+)\}`)

// initThenCheck runs `specgate init` into a fresh directory and `specgate
// check` on what it wrote; it returns the file's text.
func initThenCheck(t *testing.T, specPath string, extra ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sub", "specgate.yaml")
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, append([]string{"init", specPath, "--out", out}, extra...)...)
	if code != 0 {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCmd(t, "check", "--config", out, "--no-cache", "--validate=false")
	if code != 0 {
		t.Fatalf("check of the written config: exit %d\n%s%s\n--- config:\n%s", code, stdout, stderr, data)
	}
	if !strings.Contains(stdout, "ok   ") {
		t.Errorf("check did not load the spec:\n%s", stdout)
	}
	return string(data)
}

func TestInitPetstoreLoadsAsWritten(t *testing.T) {
	text := initThenCheck(t, petstorePath(t))
	for _, want := range []string{
		"name: \"petstore-v3\"\n",
		`value: "${PETSTORE_V3_API_KEY_VALUE}"`,
		`client_id: "${PETSTORE_V3_PETSTORE_AUTH_CLIENT_ID}"`,
		`rate_limit_interval: "10s"`,
		"# upstreams:\n#   - match: \"petstore3.swagger.io\"\n#     requests_per_window: 60\n#     window: \"1m\"",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config lacks %q:\n%s", want, text)
		}
	}
	// Written under a subdirectory, the location climbs out: it is absolute.
	if !strings.Contains(text, "location: \""+petstorePath(t)+"\"") {
		t.Errorf("location is not the spec's absolute path:\n%s", text)
	}
}

func TestInitStripeNamesCredentials(t *testing.T) {
	const stripe = "../../../shared/specs/stripe.json"
	if _, err := os.Stat(stripe); err != nil {
		t.Skip("shared Stripe spec not present")
	}
	text := initThenCheck(t, stripe)
	refs := envRef.FindAllStringSubmatch(text, -1)
	var names []string
	for _, m := range refs {
		names = append(names, m[1])
	}
	got := strings.Join(names, ",")
	if !strings.Contains(got, "STRIPE_BEARER_AUTH_TOKEN") || !strings.Contains(got, "STRIPE_BASIC_AUTH_USERNAME") {
		t.Errorf("credentials named %s", got)
	}
}

func TestInitStatedLimitAndRelativeServer(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "limited.yaml")
	doc := `openapi: 3.0.3
info: {title: Limited, version: "1", description: "Clients may send 100 requests per minute."}
servers: [{url: /api/v1}]
components:
  securitySchemes:
    APIKeyHeader: {type: apiKey, in: header, name: X-Key}
    oidc: {type: openIdConnect, openIdConnectUrl: "https://id.example/.well-known/openid-configuration"}
paths:
  /things: {get: {operationId: listThings, responses: {"200": {description: ok}}}}
`
	if err := os.WriteFile(specPath, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	text := initThenCheck(t, specPath)
	for _, want := range []string{
		`base_url: "${LIMITED_BASE_URL}"`,
		"upstream: \"limited\"\n",
		"upstreams:\n  - match: \"limited\"\n    requests_per_window: 100\n    window: \"1m\"\n",
		`value: "${LIMITED_API_KEY_HEADER_VALUE}"`,
		"# oidc: openIdConnect credentials are not supported",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config lacks %q:\n%s", want, text)
		}
	}
	// With the base URL set, the budget applies to the spec's calls.
	t.Setenv("LIMITED_BASE_URL", "https://api.limited.example/api/v1")
	cfgPath := filepath.Join(dir, "specgate.yaml")
	if err := os.WriteFile(cfgPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sc := cfg.SpecByName("limited")
	if b := cfg.Budget(sc.UpstreamKey("api.limited.example:443")); b == nil || b.RequestsPerWindow != 100 {
		t.Errorf("budget = %+v", b)
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "specgate.yaml")
	if err := os.WriteFile(out, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "init", petstorePath(t), "--out", out)
	if code != 1 || !strings.Contains(stderr, "exists: pass --force to overwrite it") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if data, _ := os.ReadFile(out); string(data) != "keep me\n" {
		t.Error("the existing file was changed")
	}
	code, _, stderr = runCmd(t, "init", petstorePath(t), "--out", out, "--force")
	if code != 0 {
		t.Fatalf("--force: exit %d %s", code, stderr)
	}
	if data, _ := os.ReadFile(out); !strings.Contains(string(data), "name: \"petstore-v3\"") {
		t.Error("--force did not write the config")
	}
}

func TestInitErrors(t *testing.T) {
	code, _, stderr := runCmd(t, "init", petstorePath(t), "--out", filepath.Join(t.TempDir(), "no", "such", "dir", "c.yaml"))
	if code != 1 || !strings.Contains(stderr, "cannot write") {
		t.Errorf("missing directory: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCmd(t, "init", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != 1 || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("missing spec: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := runCmd(t, "init"); code != 2 {
		t.Errorf("no argument: exit %d, want 2", code)
	}
}

func TestInitToStdout(t *testing.T) {
	code, stdout, _ := runCmd(t, "init", petstorePath(t), "--name", "pets")
	if code != 0 || !strings.Contains(stdout, "name: \"pets\"\n") || !strings.Contains(stdout, "${PETS_API_KEY_VALUE}") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

func TestEnvName(t *testing.T) {
	tests := []struct {
		parts []string
		want  string
	}{
		{[]string{"stripe", "bearerAuth", "token"}, "STRIPE_BEARER_AUTH_TOKEN"},
		{[]string{"petstore-v3", "api_key", "value"}, "PETSTORE_V3_API_KEY_VALUE"},
		{[]string{"github", "APIKeyHeader", "value"}, "GITHUB_API_KEY_HEADER_VALUE"},
		{[]string{"x", "oauth2", "client_id"}, "X_OAUTH2_CLIENT_ID"},
		{[]string{"twilio", "accountSid_authToken", "username"}, "TWILIO_ACCOUNT_SID_AUTH_TOKEN_USERNAME"},
	}
	for _, tt := range tests {
		if got := envName(tt.parts...); got != tt.want {
			t.Errorf("envName(%q) = %q, want %q", tt.parts, got, tt.want)
		}
	}
}

// A spec file named "x: y #z.yaml" gave a config check refused ("mapping
// values are not allowed"): init wrote the name bare. Every value is quoted
// now, a "${" in a location is escaped so Load does not expand it, and
// the spec's name is made of the characters a name may hold.
func TestInitQuotesHostileFileNames(t *testing.T) {
	spec, err := os.ReadFile(petstorePath(t))
	if err != nil {
		t.Fatal(err)
	}
	for base, name := range map[string]string{
		"x: y #z":                      "x-y-z",
		"a${HOME}b":                    "a-HOME-b",
		"null":                         "null",
		"- [x] {y}: 'q' \"d\" \\ & *r": "x-y-q-d-r",
		"two\nlines: yes":              "two-lines-yes",
	} {
		t.Run(base, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), base+".yaml")
			if err := os.WriteFile(path, spec, 0o600); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "specgate.yaml")
			if code, stdout, stderr := runCmd(t, "init", path, "--out", out); code != 0 {
				t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
			}
			data, _ := os.ReadFile(out)
			if code, stdout, stderr := runCmd(t, "check", "--config", out, "--no-cache", "--validate=false"); code != 0 {
				t.Fatalf("check: exit %d\n%s%s\n--- config:\n%s", code, stdout, stderr, data)
			}
			c, err := config.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Specs[0]; got.Name != name || got.Location != path {
				t.Errorf("the config names %q at %q, want %q at %q", got.Name, got.Location, name, path)
			}
		})
	}
}
