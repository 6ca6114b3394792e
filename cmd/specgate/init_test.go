package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/spec"
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
		// The API's name is the host's (petstore3.swagger.io); the apiKey
		// alternative comes first in the spec: the oauth2 one (implicit
		// flow only: a pre-issued token) is commented.
		"    auth:\n      \"api_key\":  # apiKey in header api_key\n        value: \"${SWAGGER_API_KEY}\"\n",
		`#   token: "${SWAGGER_ACCESS_TOKEN}"`,
		`rate_limit_interval: "10s"`,
		"# upstreams:\n#   - match: \"petstore3.swagger.io\"\n#     requests_per_window: 60\n#     window: \"1m\"",
		"#     classes:\n#       - {match: \"POST /**\", min_interval: \"1s\"}\n#       - {match: \"PUT /**\", min_interval: \"1s\"}\n#       - {match: \"DELETE /**\", min_interval: \"1s\"}\n",
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

// init names the variables people already have, writes one alternative
// and comments the others, and gives a spec with no security scheme a
// commented Authorization header; check warns once per variable written.
func TestInitCorpusNames(t *testing.T) {
	tests := []struct {
		spec      string
		written   []string // uncommented ${VAR}s
		commented []string
	}{
		{"openai.yaml", []string{"OPENAI_API_KEY"}, []string{"OPENAI_ADMIN_API_KEY"}},
		{"stripe.json", []string{"STRIPE_API_KEY"}, []string{"STRIPE_USERNAME", "STRIPE_PASSWORD"}},
		{"github-rest.json", nil, []string{"GITHUB_TOKEN"}},
		{"coingecko.yaml", []string{"COINGECKO_API_KEY"}, []string{"COINGECKO_API_KEY"}},
		{"discord.json", []string{"DISCORD_TOKEN"}, []string{"DISCORD_CLIENT_ID", "DISCORD_CLIENT_SECRET"}},
		{"twilio-api-v2010.yaml", []string{"TWILIO_USERNAME", "TWILIO_PASSWORD"}, nil},
		{"asana.yaml", []string{"ASANA_TOKEN"}, []string{"ASANA_ACCESS_TOKEN"}},
		{"openweathermap.yaml", []string{"OPENWEATHERMAP_API_KEY"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			path := filepath.Join("../../../shared/specs", tt.spec)
			if _, err := os.Stat(path); err != nil {
				t.Skip("../shared/specs is absent")
			}
			text := initThenCheck(t, path)
			var written, commented []string
			for _, line := range strings.Split(text, "\n") {
				for _, m := range envRef.FindAllStringSubmatch(line, -1) {
					if strings.HasPrefix(strings.TrimSpace(line), "#") {
						commented = append(commented, m[1])
					} else if !strings.HasSuffix(m[1], "_BASE_URL") {
						written = append(written, m[1])
					}
				}
			}
			if !slices.Equal(written, tt.written) {
				t.Errorf("written %q, want %q:\n%s", written, tt.written, text)
			}
			for _, v := range tt.commented {
				if !slices.Contains(commented, v) {
					t.Errorf("no commented ${%s} (commented: %q):\n%s", v, commented, text)
				}
			}
			if tt.written == nil && !strings.Contains(text, `# headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}`) {
				t.Errorf("no commented Authorization header:\n%s", text)
			}
		})
	}
}

// init wrote API keys that go in Authorization bare, and client_id and
// client_secret for OAuth2 schemes with no client-credentials flow: every
// first call was a 401 (issue 33 item 4). The key's scheme word is in the
// value, and such OAuth2 schemes get a pre-issued token.
func TestInitWritesCredentialsThatWork(t *testing.T) {
	tests := []struct {
		spec string
		want []string
	}{
		{"k8s.json", []string{`value: "Bearer ${KUBERNETES_TOKEN}"`}},
		{"discord.json", []string{`value: "Bot ${DISCORD_TOKEN}"`}},
		{"okta-oauth.yaml", []string{`value: "SSWS ${OKTA_TOKEN}"`, `#   token: "${OKTA_ACCESS_TOKEN}"`}},
		{"slack-web.json", []string{"\n        token: \"${SLACK_ACCESS_TOKEN}\"\n", "a pre-issued access token"}},
		{"box.json", []string{"\n        token: \"${BOX_ACCESS_TOKEN}\"\n"}},
		{"spotify.yaml", []string{"\n        token: \"${SPOTIFY_ACCESS_TOKEN}\"\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			path := filepath.Join("../../../shared/specs", tt.spec)
			if _, err := os.Stat(path); err != nil {
				t.Skip("../shared/specs is absent")
			}
			text := initThenCheck(t, path)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("config lacks %q:\n%s", w, text)
				}
			}
			if strings.Contains(text, "\n        client_id:") {
				t.Errorf("client credentials proposed:\n%s", text)
			}
		})
	}
}

func TestAPIName(t *testing.T) {
	tests := []struct {
		title, base, want string
	}{
		{"OpenAI API", "https://api.openai.com/v1", "OPENAI"},
		{"GitHub v3 REST API", "https://api.github.com", "GITHUB"},
		{"Anything", "https://www.example.co.uk/api", "EXAMPLE"},
		{"Stripe API", "", "STRIPE"},
		{"GitHub v3 REST API", "http://127.0.0.1:8080", "GITHUB"},
		{"Swagger Petstore - OpenAPI 3.0", "/api/v3", "PETSTORE"},
		{"3.0", "", "FILE_NAME"},
	}
	for _, tt := range tests {
		if got := apiName(&spec.Spec{Title: tt.title, BaseURL: tt.base}, "file-name"); got != tt.want {
			t.Errorf("apiName(%q, %q) = %q, want %q", tt.title, tt.base, got, tt.want)
		}
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
  /things:
    get: {operationId: listThings, responses: {"200": {description: ok}}}
    post: {operationId: addThing, responses: {"201": {description: ok}}}
`
	if err := os.WriteFile(specPath, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	text := initThenCheck(t, specPath)
	for _, want := range []string{
		`base_url: "${LIMITED_BASE_URL}"`,
		"upstream: \"limited\"\n",
		"upstreams:\n  - match: \"limited\"\n    requests_per_window: 100\n    window: \"1m\"\n",
		// a class for the spec's writes, which check loads
		"    classes:\n      - {match: \"POST /**\", min_interval: \"1s\"}\n",
		`value: "${LIMITED_API_KEY}"`,
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
	if code != 0 || !strings.Contains(stdout, "name: \"pets\"\n") || !strings.Contains(stdout, "${PETS_API_KEY}") {
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
