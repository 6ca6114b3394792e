package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// parseWith parses data with a fixed environment instead of the process's.
func parseWith(t *testing.T, data string, env map[string]string) (*Config, error) {
	t.Helper()
	return parse([]byte(data), "config.yaml", "", func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
}

func mustParse(t *testing.T, data string, env map[string]string) *Config {
	t.Helper()
	c, err := parseWith(t, data, env)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return c
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // each must appear in the error
	}{
		{
			name: "unknown top-level key names line and suggests",
			yaml: "max_retries: 1\n\nrate_limt_interval: 5s\n",
			want: []string{`config.yaml: line 3: unknown key "rate_limt_interval" (did you mean "rate_limit_interval"?)`},
		},
		{
			name: "unknown key far off gets no suggestion",
			yaml: "colour: blue\n",
			want: []string{`config.yaml: line 1: unknown key "colour"`},
		},
		{
			name: "unknown key inside an upstream entry",
			yaml: "upstreams:\n  - match: api.github.com\n    queue_dept: 3\n",
			want: []string{`line 3: unknown key "queue_dept" (did you mean "queue_depth"?)`},
		},
		{
			name: "unknown key inside an endpoint override",
			yaml: "specs:\n  - location: a.yaml\n    endpoints:\n      getPet: {cooldown: 5s}\n",
			want: []string{`line 4: unknown key "cooldown"`},
		},
		{
			name: "unknown key inside http.inbound",
			yaml: "http:\n  inbound:\n    request_per_window: 5\n",
			want: []string{`line 3: unknown key "request_per_window" (did you mean "requests_per_window"?)`},
		},
		{
			name: "bad duration",
			yaml: "cache_ttl: 10 seconds\n",
			want: []string{`line 1: cache_ttl: "10 seconds" is not a duration`},
		},
		{
			name: "bare number duration",
			yaml: "rate_limit_interval: 10\n",
			want: []string{`line 1: rate_limit_interval: 10 is a bare number: write a duration with a unit, such as "10s"`},
		},
		{
			name: "bad on_limit enum",
			yaml: "upstreams:\n  - match: x\n    on_limit: queue\n",
			want: []string{`line 3: upstreams[0].on_limit: "queue" is not one of wait, reject`},
		},
		{
			name: "bad backend enum",
			yaml: "store:\n  backend: etcd\n",
			want: []string{`line 2: store.backend: "etcd" is not one of memory, redis, redis_cluster`},
		},
		{
			name: "string where an integer goes",
			yaml: "max_retries: two\n",
			want: []string{`line 1: max_retries: "two" is not an integer`},
		},
		{
			name: "bad size",
			yaml: "max_response_bytes: 2 lots\n",
			want: []string{`line 1: max_response_bytes: "2 lots" is not a size`},
		},
		{
			name: "every problem reported at once",
			yaml: "max_retrys: 1\ncache_ttl: 5\nstore: {backend: disk}\n",
			want: []string{`line 1: unknown key "max_retrys"`, `line 2: cache_ttl: 5 is a bare number`, `line 3: store.backend: "disk" is not one of memory, redis, redis_cluster`},
		},
		{
			name: "syntax error",
			yaml: "specs:\n  - name: a\n   location: b\n",
			want: []string{"config.yaml: line "},
		},
		{
			name: "second document",
			yaml: "max_retries: 1\n---\nmax_retries: 2\n",
			want: []string{"line 2: a second YAML document"},
		},
		{
			name: "unsupported expansion form",
			yaml: "audit_log: ${LOG:-/tmp/x}\n",
			want: []string{"audit_log: only ${NAME} references are supported"},
		},
		{
			name: "fraction where an integer goes",
			yaml: "upstreams:\n  - match: a\n    requests_per_window: 1.5\n",
			want: []string{"line 3: upstreams[0].requests_per_window: 1.5 is not an integer"},
		},
		{
			name: "env reference outside a string value",
			yaml: "max_retries: ${RETRIES}\n",
			want: []string{`line 1: max_retries: "${RETRIES}" is not an integer (${NAME} expands only in string values)`},
		},
		{
			name: "mapping where a list goes names the outer key",
			yaml: "specs: {a: 1}\n",
			want: []string{"line 1: specs: a mapping is not a list"},
		},
		{
			name: "list where a secret goes",
			yaml: "specs:\n  - location: x\n    auth:\n      k:\n        value: [a]\n",
			want: []string{"line 5: specs[0].auth.k.value: a list is not a string"},
		},
		{
			name: "list where a mapping goes",
			yaml: "http: [a, b]\n",
			want: []string{"line 1: http: a list is not a mapping"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseWith(t, tt.yaml, nil)
			if err == nil {
				t.Fatal("parse succeeded, want an error")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is %T, want *Error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%s\ndoes not contain\n%s", err, w)
				}
			}
		})
	}
}

func TestParseEmptyAndNullKeepDefaults(t *testing.T) {
	for _, data := range []string{"", "# nothing\n", "http:\nstore:\nrate_limit_interval:\n"} {
		c := mustParse(t, data, nil)
		c.Source = ""
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("parse(%q) = %+v, want the defaults", data, c)
		}
	}
}

func TestParseKeepsDefaultsOfOmittedKeys(t *testing.T) {
	c := mustParse(t, "http:\n  listen: 127.0.0.1:9000\nmax_retries: 0\n", nil)
	if got, want := c.HTTP.Inbound.RequestsPerWindow, 600; got != want {
		t.Errorf("http.inbound.requests_per_window = %d, want default %d", got, want)
	}
	if c.HTTP.Listen != "127.0.0.1:9000" {
		t.Errorf("http.listen = %q", c.HTTP.Listen)
	}
	if c.MaxRetries != 0 {
		t.Errorf("max_retries = %d, want the explicit 0", c.MaxRetries)
	}
}

func TestLoadErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("specs: []\nrate_limt_interval: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := path + `: line 2: unknown key "rate_limt_interval" (did you mean "rate_limit_interval"?)`
	if err == nil || err.Error() != want {
		t.Errorf("Load error = %v, want %s", err, want)
	}
}

func TestDurationAndSize(t *testing.T) {
	c := mustParse(t, `
rate_limit_interval: 1m30s
cache_ttl: 0
max_retry_wait: "250ms"
max_response_bytes: 1MiB
max_spec_bytes: 1000
http:
  max_body_bytes: 2MB
`, nil)
	if got, want := time.Duration(c.RateLimitInterval), 90*time.Second; got != want {
		t.Errorf("rate_limit_interval = %v, want %v", got, want)
	}
	if c.CacheTTL != 0 {
		t.Errorf("cache_ttl = %v, want 0", c.CacheTTL)
	}
	if got, want := time.Duration(c.MaxRetryWait), 250*time.Millisecond; got != want {
		t.Errorf("max_retry_wait = %v, want %v", got, want)
	}
	if got, want := int64(c.MaxResponseBytes), int64(1<<20); got != want {
		t.Errorf("max_response_bytes = %d, want %d", got, want)
	}
	if got, want := int64(c.MaxSpecBytes), int64(1000); got != want {
		t.Errorf("max_spec_bytes = %d, want %d", got, want)
	}
	if got, want := int64(c.HTTP.MaxBodyBytes), int64(2_000_000); got != want {
		t.Errorf("http.max_body_bytes = %d, want %d", got, want)
	}
	for _, tc := range []struct {
		b    ByteSize
		want string
	}{{256 << 10, "256KiB"}, {64 << 20, "64MiB"}, {1000, "1000"}, {0, "0"}, {3 << 30, "3GiB"}} {
		if got := tc.b.String(); got != tc.want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", int64(tc.b), got, tc.want)
		}
	}
}

func TestEnvExpansion(t *testing.T) {
	env := map[string]string{
		"PETSTORE_KEY": "k-123",
		"API_HOST":     "api.example.com",
		"EMPTY":        "",
	}
	c := mustParse(t, `
audit_log: /var/log/${MISSING_DIR}/audit.jsonl
specs:
  - name: petstore
    location: https://${API_HOST}/openapi.json
    base_url: "https://${API_HOST}/v3"
    headers: {X-Tenant: "${TENANT}", X-Literal: "$${NOT_EXPANDED} costs $5"}
    auth:
      api_key: {value: "${PETSTORE_KEY}"}
      basicAuth: {username: "${USER_NAME}", password: "${EMPTY}"}
`, env)
	s := &c.Specs[0]
	if got, want := s.Location, "https://api.example.com/openapi.json"; got != want {
		t.Errorf("location = %q, want %q", got, want)
	}
	if got, want := s.BaseURL, "https://api.example.com/v3"; got != want {
		t.Errorf("base_url = %q, want %q", got, want)
	}
	if got, want := c.AuditLog, "/var/log//audit.jsonl"; got != want {
		t.Errorf("audit_log = %q, want %q", got, want)
	}
	if got, want := s.Headers["X-Literal"].Reveal(), "${NOT_EXPANDED} costs $5"; got != want {
		t.Errorf("X-Literal = %q, want %q", got, want)
	}

	key := s.Auth["api_key"].Value
	if key.Reveal() != "k-123" || !slices.Equal(key.EnvVars(), []string{"PETSTORE_KEY"}) || len(key.MissingEnv()) != 0 {
		t.Errorf("api_key value: reveal %q, vars %v, missing %v", key.Reveal(), key.EnvVars(), key.MissingEnv())
	}
	user := s.Auth["basicAuth"].Username
	if user.IsSet() || !user.IsConfigured() || !slices.Equal(user.MissingEnv(), []string{"USER_NAME"}) {
		t.Errorf("username: set %v, configured %v, missing %v", user.IsSet(), user.IsConfigured(), user.MissingEnv())
	}
	if pw := s.Auth["basicAuth"].Password; len(pw.MissingEnv()) != 0 {
		t.Errorf("a variable set to empty is not missing: got %v", pw.MissingEnv())
	}

	want := []EnvRef{
		{Key: "audit_log", Var: "MISSING_DIR"},
		{Key: "specs[petstore].headers.X-Tenant", Var: "TENANT"},
		{Key: "specs[petstore].auth.basicAuth.username", Var: "USER_NAME"},
	}
	if !sameRefs(c.MissingEnv, want) {
		t.Errorf("MissingEnv = %v, want %v", c.MissingEnv, want)
	}
}

func sameRefs(a, b []EnvRef) bool {
	key := func(r EnvRef) string { return r.Key + "=" + r.Var }
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		as[i] = key(a[i])
	}
	for i := range b {
		bs[i] = key(b[i])
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key.txt"), []byte("  from-file-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "team.txt"), []byte("team-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECRETS_DIR", dir)
	cfg := filepath.Join(dir, "config.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	write(`
audit_log: audit.jsonl
specs:
  - name: a
    location: specs/a.yaml
    auth:
      k: {value_file: key.txt}
      b: {token_file: "${SECRETS_DIR}/key.txt"}
http:
  auth:
    tokens: [{token_file: team.txt, subject: ada}]
`)
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Specs[0].Auth["k"].Value; got.Reveal() != "from-file-key" || got.File() != filepath.Join(dir, "key.txt") {
		t.Errorf("value_file: got %q from %q", got.Reveal(), got.File())
	}
	if got := c.Specs[0].Auth["b"].Token.Reveal(); got != "from-file-key" {
		t.Errorf("token_file with ${}: got %q", got)
	}
	if got := c.HTTP.Auth.Tokens[0].Token.Reveal(); got != "team-token" {
		t.Errorf("http token_file: got %q", got)
	}
	if got, want := c.Specs[0].Location, filepath.Join(dir, "specs/a.yaml"); got != want {
		t.Errorf("location = %q, want %q (relative to the config file)", got, want)
	}
	if got, want := c.AuditLog, filepath.Join(dir, "audit.jsonl"); got != want {
		t.Errorf("audit_log = %q, want %q", got, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}

	write("specs:\n  - location: a.yaml\n    auth:\n      k: {value_file: nope.txt}\n")
	if _, err := Load(cfg); err == nil || !strings.Contains(err.Error(), "specs[0].auth.k.value_file: open ") {
		t.Errorf("missing secret file: err = %v", err)
	}

	write("specs:\n  - location: a.yaml\n    auth:\n      k: {value: literal, value_file: key.txt}\n")
	c, err = Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "specs[0].auth.k: set value or value_file, not both") {
		t.Errorf("both value and value_file: Validate = %v", err)
	}
}

func TestUpstreamDefaults(t *testing.T) {
	c := mustParse(t, `
upstreams:
  - match: api.github.com
    requests_per_window: 30
    window: 1m
  - match: slow
    on_limit: wait
    queue_depth: 0
  - {match: tried, requests_per_window: 5, window: 1s, enforce: false}
`, nil)
	if mc := c.Upstreams[2].MaxConcurrent; mc != (Concurrency{}) {
		t.Errorf("no max_concurrent: %+v", mc)
	}
	if c.Upstreams[2].Enforced() {
		t.Error("enforce: false is enforced")
	}
	got := c.Upstreams[0]
	want := Upstream{
		Match:             "api.github.com",
		RequestsPerWindow: 30,
		Window:            Duration(time.Minute),
		WindowPad:         Duration(250 * time.Millisecond),
		OnLimit:           OnLimitWait,
		QueueDepth:        16,
		QueueTimeout:      Duration(20 * time.Second),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("upstream = %+v, want %+v", got, want)
	}
	if !got.Enforced() {
		t.Error("a budget with no enforce key is a shadow; want enforced")
	}
	if c.Upstreams[1].QueueDepth != 0 {
		t.Errorf("explicit queue_depth: 0 became %d", c.Upstreams[1].QueueDepth)
	}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "upstreams[slow].queue_depth: must be positive with on_limit: wait") {
		t.Errorf("Validate = %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // empty: valid
	}{
		{name: "defaults", yaml: ""},
		{
			name: "negative durations",
			yaml: "rate_limit_interval: -1s\ncache_ttl: -5s\nmax_retry_wait: -1ms\n",
			want: []string{"rate_limit_interval: must not be negative (got -1s)", "cache_ttl: must not be negative", "max_retry_wait: must not be negative"},
		},
		{
			name: "zero where positive is needed",
			yaml: "call_timeout: 0s\nmax_response_bytes: 0\nspec_fetch_timeout: 0s\n",
			want: []string{"call_timeout: must be positive", "max_response_bytes: must be positive", "spec_fetch_timeout: must be positive"},
		},
		{name: "proxy none", yaml: "proxy: none\n"},
		{name: "proxy URL", yaml: "proxy: http://proxy.corp:3128\n"},
		{name: "proxy socks5", yaml: "proxy: socks5://10.0.0.2:1080\n"},
		{
			name: "proxy not a proxy URL",
			yaml: "proxy: ftp://proxy.corp\n",
			want: []string{`proxy: must be an http://, https:// or socks5:// URL with a host`},
		},
		{
			name: "proxy without a host",
			yaml: "proxy: proxy.corp:3128\n",
			want: []string{`proxy: must be an http://, https:// or socks5:// URL with a host`},
		},
		{name: "otlp endpoint", yaml: "otlp_endpoint: http://127.0.0.1:4318\n"},
		{
			name: "otlp endpoint without a scheme",
			yaml: "otlp_endpoint: collector:4318\n",
			want: []string{`otlp_endpoint: must be an http:// or https:// URL with a host`},
		},
		{
			name: "scripts: bounds out of range",
			yaml: "scripts:\n  timeout: 61m\n  answer_within: 2m\n  max_calls: 0\n  max_concurrent: -1\n  per_principal: 0\n  max_memory: 1MiB\n",
			want: []string{
				"scripts.timeout: may be at most 1h",
				"scripts.answer_within: must be from 0s (answer at the end) to 1m",
				"scripts.max_calls: must be from 1 to 1048576 (got 0)",
				"scripts.max_concurrent: must be from 1 to 1048576 (got -1)",
				"scripts.per_principal: must be from 1 to 1048576 (got 0)",
				"scripts.max_memory: must be at least 8MiB",
			},
		},
		{
			name: "scripts: negative timeout",
			yaml: "scripts:\n  timeout: -1s\n",
			want: []string{"scripts.timeout: must be positive"},
		},
		{
			name: "negative retries",
			yaml: "max_retries: -1\n",
			want: []string{"max_retries: must not be negative"},
		},
		{
			name: "specs: duplicate names, missing location, bad name, bad base_url",
			yaml: `
specs:
  - {name: pets, location: a.yaml}
  - {name: pets, location: b.yaml}
  - {name: other}
  - {name: "bad.name", location: c.yaml, base_url: "ftp://x"}
`,
			want: []string{
				`specs[pets].name: "pets" is already used by specs[pets]`,
				"specs[other].location: is required",
				`specs[bad.name].name: "bad.name": use letters, digits`,
				`specs[bad.name].base_url: "ftp://x" is not an absolute http(s) URL`,
			},
		},
		{
			name: "spec and endpoint overrides",
			yaml: `
specs:
  - name: s
    location: s.yaml
    rate_limit_interval: -1s
    call_timeout: 0s
    endpoints:
      getPet: {cache_ttl: -1s, call_timeout: -2s}
`,
			want: []string{"specs[s].rate_limit_interval: must not be negative", "specs[s].call_timeout: must be positive", "specs[s].endpoints.getPet.cache_ttl: must not be negative", "specs[s].endpoints.getPet.call_timeout: must be positive"},
		},
		{
			name: "headers",
			yaml: "specs:\n  - location: s.yaml\n    headers: {\"Bad Header\": x}\n",
			want: []string{`specs[0].headers["Bad Header"]: is not a valid header name`},
		},
		{
			name: "allowed hosts written as URLs",
			yaml: "allowed_hosts: [\"https://api.example.com\"]\n",
			want: []string{`allowed_hosts[0]: "https://api.example.com": write a host or host:port`},
		},
		{
			name: "adaptive max_concurrent",
			yaml: "upstreams:\n  - {match: a, max_concurrent: {min: 4, max: 2}}\n  - {match: b, max_concurrent: auto}\n  - {match: c, max_concurrent: {min: 1, max: 8}}\n",
			want: []string{"upstreams[a].max_concurrent: min 4 is above max 2"},
		},
		{
			name: "upstream weights",
			yaml: "upstreams:\n  - {match: w, weights: {ada: 0, bob: 1001, cy: 2.5}}\n",
			want: []string{"upstreams[w].weights.ada: must be a number above 0", "upstreams[w].weights.bob: must be a number above 0"},
		},
		{
			name: "upstreams",
			yaml: `
upstreams:
  - {requests_per_window: 5, window: 1s}
  - {match: a, requests_per_window: 5}
  - {match: A, max_concurrent: -1, window_pad: -1ms}
  - {match: b, on_limit: reject, queue_depth: 0, queue_timeout: 0s}
`,
			want: []string{
				"upstreams[0].match: is required",
				"upstreams[a].window: must be positive when requests_per_window",
				`upstreams[A].match: "A" is already matched by upstreams[a]`,
				"upstreams[A].max_concurrent: must not be negative",
				"upstreams[A].window_pad: must not be negative",
			},
		},
		{
			name: "fallback_share out of range",
			yaml: "store: {fallback_share: 0}\n",
			want: []string{"store.fallback_share: must be in (0, 1] (got 0)"},
		},
		{
			name: "fallback_share above one",
			yaml: "store: {fallback_share: 1.5}\n",
			want: []string{"store.fallback_share: must be in (0, 1]"},
		},
		{
			name: "fallback_share of one",
			yaml: "store: {fallback_share: 1}\n",
		},
		{
			name: "store timeout of zero",
			yaml: "store: {timeout: 0s}\n",
			want: []string{"store.timeout: must be positive (got 0s)"},
		},
		{
			name: "store timeout past the connection's bound",
			yaml: "store: {timeout: 5s}\n",
			want: []string{"store.timeout: may be at most 3s (got 5s)"},
		},
		{
			name: "store timeout of a second",
			yaml: "store: {timeout: 1s}\n",
		},
		{
			name: "redis without url",
			yaml: "store: {backend: redis, redis_url: \"${NO_SUCH_REDIS}\"}\n",
			want: []string{"store.redis_url: is empty: set NO_SUCH_REDIS"},
		},
		{
			name: "redis with odd url",
			yaml: "store: {backend: redis, redis_url: \"http://user:hunter2@x\"}\n",
			want: []string{"store.redis_url: must start with redis://"},
		},
		{
			name: "redis_cluster with seeds",
			yaml: "store: {backend: redis_cluster, redis_url: \"redis://:pw@10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000\"}\n",
		},
		{
			name: "redis_cluster with no seed",
			yaml: "store: {backend: redis_cluster, redis_url: \"redis://?addr=:7001\"}\n",
			want: []string{"store.redis_url: names no seed node"},
		},
		{
			name: "redis_cluster over a unix socket",
			yaml: "store: {backend: redis_cluster, redis_url: \"unix:///tmp/r.sock\"}\n",
			want: []string{"store.redis_url: must start with redis:// or rediss://"},
		},
		{
			name: "http: public listen without auth, bad proxies and origins",
			yaml: `
http:
  listen: 0.0.0.0:8080
  trusted_proxies: [10.0.0.0/8, 192.168.1.7, nonsense]
  allowed_origins: ["https://app.example.com", "app.example.com", "*"]
  inbound: {window: 0s, max_tracked: 0}
`,
			want: []string{
				`http.listen: "0.0.0.0:8080" is not a loopback address`,
				`http.trusted_proxies[2]: "nonsense" is not a CIDR`,
				`http.allowed_origins[1]: "app.example.com" is not an origin`,
				"http.inbound.window: must be positive",
				"http.inbound.max_tracked: must be positive",
			},
		},
		{
			name: "http: public listen with jwt",
			yaml: "http:\n  listen: 0.0.0.0:8080\n  auth:\n    jwt: {jwks: https://id.example/jwks.json, issuer: https://id.example, audience: specgate}\n",
		},
		{
			name: "http: public listen with only a jwt issuer and a resource",
			yaml: "http:\n  listen: 0.0.0.0:8080\n  auth:\n    resource: https://mcp.example/mcp\n    jwt: {issuer: https://id.example}\n",
		},
		{
			name: "http: jwt without issuer or audience, bad resource, token without subject",
			yaml: "http:\n  auth:\n    resource: mcp.example/mcp\n    scopes: {read: r}\n    authorization_servers: [id.example]\n    jwt: {jwks: jwks.json}\n    tokens: [{token: a}, {token: a, subject: b}, {subject: c}]\n",
			want: []string{
				`http.auth.resource: "mcp.example/mcp" is not this server's absolute http(s) /mcp URL`,
				"http.auth.scopes: name all of read, invoke and admin, or none",
				`http.auth.authorization_servers[0]: "id.example" is not an absolute http(s) URL`,
				"http.auth.jwt.issuer: is required with jwks",
				`http.auth.jwt.jwks: "jwks.json" is not an absolute http(s) URL`,
				"http.auth.tokens[0].subject: is required",
				"http.auth.tokens[1].token: is the same as http.auth.tokens[0].token",
				"http.auth.tokens[2].token: is required (or token_file)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.yaml, nil)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate passed, want problems")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%s\ndoes not contain\n%s", err, w)
				}
			}
			if got := len(err.(*Error).Problems); got != len(tt.want) {
				t.Errorf("%d problems, want %d:\n%s", got, len(tt.want), err)
			}
		})
	}
}

func TestValidateDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestScriptsDefaults: run_script's bounds default to what the issue and
// DESIGN.md state, and a config that sets only some keeps the others.
func TestScriptsDefaults(t *testing.T) {
	want := Scripts{Timeout: Duration(10 * time.Minute), AnswerWithin: Duration(20 * time.Second), MaxCalls: 200, MaxConcurrent: 4, PerPrincipal: 2, MaxMemory: 64 << 20}
	if got := Default().Scripts; got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	c := mustParse(t, "scripts:\n  allow_writes: true\n  max_calls: 50\n", nil)
	want.AllowWrites, want.MaxCalls = true, 50
	if c.Scripts != want {
		t.Errorf("parsed %+v, want %+v", c.Scripts, want)
	}
}

func TestForEndpoint(t *testing.T) {
	c := mustParse(t, `
rate_limit_interval: 10s
cache_ttl: 0s
call_timeout: 30s
specs:
  - name: petstore
    location: petstore.yaml
    rate_limit_interval: 5s
    cache_ttl: 1m
    endpoints:
      getPetById: {rate_limit_interval: 30s}
      petstore.findPetsByStatus: {disable_ratelimiter: true, call_timeout: 2s}
      get_store_inventory: {cache_ttl: 0s}
  - name: plain
    location: plain.yaml
    disable_ratelimiter: true
    endpoints:
      listThings: {disable_ratelimiter: false}
`, nil)
	pet, plain := c.SpecByName("petstore"), c.SpecByName("plain")
	s := func(d time.Duration) time.Duration { return d }
	tests := []struct {
		name        string
		spec        *Spec
		id, opID    string
		want        EndpointSettings
		wantOverKey string
	}{
		{
			name: "no spec entry: globals",
			spec: nil, id: "cli.op", opID: "op",
			want: EndpointSettings{RateLimitInterval: s(10 * time.Second), CallTimeout: s(30 * time.Second)},
		},
		{
			name: "spec level",
			spec: pet, id: "petstore.addPet", opID: "addPet",
			want: EndpointSettings{RateLimitInterval: s(5 * time.Second), CacheTTL: s(time.Minute), CallTimeout: s(30 * time.Second)},
		},
		{
			name: "endpoint keyed by operationId",
			spec: pet, id: "petstore.getPetById", opID: "getPetById",
			want:        EndpointSettings{RateLimitInterval: s(30 * time.Second), CacheTTL: s(time.Minute), CallTimeout: s(30 * time.Second)},
			wantOverKey: "getPetById",
		},
		{
			name: "endpoint keyed by full id",
			spec: pet, id: "petstore.findPetsByStatus", opID: "findPetsByStatus",
			want:        EndpointSettings{RateLimitInterval: s(5 * time.Second), DisableRateLimiter: true, CacheTTL: s(time.Minute), CallTimeout: s(2 * time.Second)},
			wantOverKey: "petstore.findPetsByStatus",
		},
		{
			name: "endpoint without operationId keyed by slug",
			spec: pet, id: "petstore.get_store_inventory", opID: "",
			want:        EndpointSettings{RateLimitInterval: s(5 * time.Second), CallTimeout: s(30 * time.Second)},
			wantOverKey: "get_store_inventory",
		},
		{
			name: "explicit false at endpoint beats true at spec",
			spec: plain, id: "plain.listThings", opID: "listThings",
			want:        EndpointSettings{RateLimitInterval: s(10 * time.Second), CallTimeout: s(30 * time.Second)},
			wantOverKey: "listThings",
		},
		{
			name: "spec true applies elsewhere",
			spec: plain, id: "plain.other", opID: "other",
			want: EndpointSettings{RateLimitInterval: s(10 * time.Second), DisableRateLimiter: true, CallTimeout: s(30 * time.Second)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.ForEndpoint(tt.spec, tt.id, tt.opID); got != tt.want {
				t.Errorf("ForEndpoint = %+v, want %+v", got, tt.want)
			}
			key, _, _ := tt.spec.Override(tt.id, tt.opID)
			if key != tt.wantOverKey {
				t.Errorf("Override key = %q, want %q", key, tt.wantOverKey)
			}
		})
	}

	unknown := pet.UnknownEndpointKeys([]EndpointName{
		{ID: "petstore.getPetById", OperationID: "getPetById"},
		{ID: "petstore.findPetsByStatus", OperationID: "findPetsByStatus"},
	})
	if !slices.Equal(unknown, []string{"get_store_inventory"}) {
		t.Errorf("UnknownEndpointKeys = %v", unknown)
	}
}

func TestForSpec(t *testing.T) {
	c := mustParse(t, `
allowed_hosts: [cdn.example.com]
allow_external_refs: true
specs:
  - {name: remote, location: "https://api.example.com/openapi.json", allowed_hosts: [uploads.example.com], max_response_bytes: 1MiB}
  - {name: local, location: local.yaml, allow_external_refs: false, allow_credential_headers: true}
  - {name: forced, location: local.yaml, block_private_networks: true}
`, nil)
	remote := c.ForSpec(c.SpecByName("remote"))
	if !remote.BlockPrivateNetworks || !remote.AllowExternalRefs || remote.MaxResponseBytes != 1<<20 {
		t.Errorf("remote = %+v", remote)
	}
	if !slices.Equal(remote.AllowedHosts, []string{"cdn.example.com", "uploads.example.com"}) {
		t.Errorf("remote allowed hosts = %v", remote.AllowedHosts)
	}
	local := c.ForSpec(c.SpecByName("local"))
	if local.BlockPrivateNetworks || local.AllowExternalRefs || !local.AllowCredentialHeaders || local.MaxResponseBytes != 8<<20 {
		t.Errorf("local = %+v", local)
	}
	if !c.ForSpec(c.SpecByName("forced")).BlockPrivateNetworks {
		t.Error("forced: block_private_networks: true ignored")
	}
	off := false
	c.BlockPrivateNetworks = &off
	if c.ForSpec(c.SpecByName("remote")).BlockPrivateNetworks {
		t.Error("global block_private_networks: false ignored for a URL spec")
	}
}

func TestBudget(t *testing.T) {
	c := mustParse(t, `
upstreams:
  - {match: api.github.com}
  - {match: "api.github.com:8443"}
  - {match: gateway}
specs:
  - {name: a, location: a.yaml, upstream: gateway}
  - {name: b, location: b.yaml}
`, nil)
	tests := []struct {
		key  string
		want string // match of the budget, "" for none
	}{
		{"api.github.com:443", "api.github.com"},
		{"API.GitHub.com:443", "api.github.com"},
		{"api.github.com:8443", "api.github.com:8443"},
		{"gateway", "gateway"},
		{"example.com:443", ""},
	}
	for _, tt := range tests {
		got := ""
		if u := c.Budget(tt.key); u != nil {
			got = u.Match
		}
		if got != tt.want {
			t.Errorf("Budget(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
	if got := c.SpecByName("a").UpstreamKey("pets.example.com:443"); got != "gateway" {
		t.Errorf("UpstreamKey with group = %q", got)
	}
	if got := c.SpecByName("b").UpstreamKey("pets.example.com:443"); got != "pets.example.com:443" {
		t.Errorf("UpstreamKey without group = %q", got)
	}
}

func TestTrustedProxyPrefixes(t *testing.T) {
	h := HTTP{TrustedProxies: []string{"10.1.2.3/8", "192.168.0.1", "::1", "junk"}}
	var got []string
	for _, p := range h.TrustedProxyPrefixes() {
		got = append(got, p.String())
	}
	if want := []string{"10.0.0.0/8", "192.168.0.1/32", "::1/128"}; !slices.Equal(got, want) {
		t.Errorf("TrustedProxyPrefixes = %v, want %v", got, want)
	}
}

func TestCurationKeys(t *testing.T) {
	c, err := Parse([]byte(`read_only: true
specs:
  - name: a
    location: a.yaml
    include: ["tag:pet", "GET /store/*"]
    exclude: ["deletePet"]
  - name: b
    location: b.yaml
    read_only: false
    include: ["", "tag:x"]
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.SpecByName("a"), c.SpecByName("b")
	if !c.ForSpec(a).ReadOnly || c.ForSpec(b).ReadOnly || !c.ForSpec(nil).ReadOnly {
		t.Errorf("read_only: a %v, b %v, global %v", c.ForSpec(a).ReadOnly, c.ForSpec(b).ReadOnly, c.ForSpec(nil).ReadOnly)
	}
	if len(a.Include) != 2 || a.Exclude[0] != "deletePet" {
		t.Errorf("a = %+v", a)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "specs[b].include[0]: is empty") {
		t.Errorf("Validate = %v, want specs[b].include[0] named", err)
	}
}

func TestEmbeddingsConfig(t *testing.T) {
	c, err := Parse([]byte("search:\n  embeddings: {url: \"http://127.0.0.1:11434/v1/embeddings\", model: nomic-embed-text}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Search.Embeddings
	if e == nil || e.BatchSize != 64 || time.Duration(e.Timeout) != 2*time.Second || e.Weight != nil {
		t.Fatalf("defaults: %+v", e)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c, _ := Parse([]byte("specs: []\n")); c.Search.Embeddings != nil {
		t.Fatal("embeddings on without the section")
	}
	c, err = Parse([]byte("search:\n  embeddings: {url: \"ftp://x\", batch_size: 5000, weight: -1, timeout: -1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	for _, want := range []string{"search.embeddings.url", "search.embeddings.model", "search.embeddings.batch_size",
		"search.embeddings.weight", "search.embeddings.timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want a problem with %s", err, want)
		}
	}
}

func TestConcurrencyForms(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want Concurrency
		err  string
	}{
		{yaml: "4", want: Concurrency{Limit: 4}},
		{yaml: "auto", want: Concurrency{Auto: true}},
		{yaml: "{min: 2, max: 6}", want: Concurrency{Auto: true, Min: 2, Limit: 6}},
		{yaml: "\"4\"", err: `"auto", or {min: 1, max: 8}`},
		{yaml: "{min: 1, most: 3}", err: `"most" is not a key of an adaptive max_concurrent`},
		{yaml: "[1, 2]", err: `"auto", or {min: 1, max: 8}`},
	} {
		c, err := Parse([]byte("upstreams:\n  - {match: u, max_concurrent: " + tc.yaml + "}\n"))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.yaml, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.yaml, err)
			continue
		}
		if got := c.Upstreams[0].MaxConcurrent; got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.yaml, got, tc.want)
		}
		b, _ := json.Marshal(c.Upstreams[0].MaxConcurrent)
		if tc.yaml == "auto" && string(b) != `"auto"` || tc.yaml == "4" && string(b) != "4" {
			t.Errorf("%s marshals as %s", tc.yaml, b)
		}
	}
}
