package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The environment each file in examples/ reads, set to stand-in values so
// the examples load as they will for a user who exported them.
var examplesEnv = map[string]map[string]string{
	"github.yaml":        {"GITHUB_TOKEN": "ghp_example"},
	"stripe.yaml":        {"STRIPE_API_KEY": "sk_test_example"},
	"fastapi-local.yaml": {},
	"kubernetes.yaml":    {"K8S_BASE_URL": "https://203.0.113.10:6443", "K8S_TOKEN": "example-token"},
	"team-redis.yaml": {
		"ADA_TOKEN": "ada-example", "BOB_TOKEN": "bob-example",
		"REDIS_URL": "redis://127.0.0.1:6379/0", "GITHUB_TOKEN": "ghp_example",
		"SPECGATE_METRICS_TOKEN": "metrics-example",
	},
}

// TestExamplesLoad loads and validates every config in examples/ with the
// variables it names set: each must load as written, name no variable the
// test does not set, and have an entry here (so a new example is tested).
// Specs are not fetched: Load and Validate do no I/O beyond the file.
func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples found in ../../examples")
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			env, ok := examplesEnv[name]
			if !ok {
				t.Fatalf("examples/%s has no entry in examplesEnv", name)
			}
			for k, v := range env {
				t.Setenv(k, v)
			}
			c, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			for _, m := range c.MissingEnv {
				t.Errorf("%s reads ${%s}, which the test does not set", m.Key, m.Var)
			}
			if len(c.Specs) == 0 {
				t.Error("serves no spec")
			}
		})
	}
	for name := range examplesEnv {
		if _, err := os.Stat(filepath.Join("../../examples", name)); err != nil {
			t.Errorf("examplesEnv names %s, which is not in examples/", name)
		}
	}
}

// TestExamplesSayWhatTheyPromise checks the keys the README and docs say the
// examples hold, so an edit cannot quietly drop a budget or a credential.
func TestExamplesSayWhatTheyPromise(t *testing.T) {
	load := func(t *testing.T, name string) *Config {
		t.Helper()
		for k, v := range examplesEnv[name] {
			t.Setenv(k, v)
		}
		c, err := Load(filepath.Join("../../examples", name))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("github", func(t *testing.T) {
		c := load(t, "github.yaml")
		s := c.SpecByName("github")
		if s == nil || s.Location != "https://raw.githubusercontent.com/github/rest-api-description/main/descriptions/api.github.com/api.github.com.json" {
			t.Fatalf("spec github: %+v", s)
		}
		if got := s.Headers["Authorization"].Reveal(); got != "Bearer ghp_example" {
			t.Errorf("Authorization header = %q, want the token from ${GITHUB_TOKEN}", got)
		}
		if len(c.Upstreams) != 1 {
			t.Fatalf("upstreams: %d, want 1", len(c.Upstreams))
		}
		u := c.Upstreams[0]
		if u.Match != "api.github.com" || u.RequestsPerWindow != 5000 || u.Window.String() != "1h0m0s" {
			t.Errorf("budget: %s %d per %s, want api.github.com 5000 per 1h", u.Match, u.RequestsPerWindow, u.Window)
		}
		if !slices.ContainsFunc(u.Classes, func(c Class) bool { return c.Match == "GET /search/**" && c.RequestsPerWindow > 0 }) {
			t.Errorf("no search class in %+v", u.Classes)
		}
	})
	t.Run("stripe", func(t *testing.T) {
		c := load(t, "stripe.yaml")
		s := c.SpecByName("stripe")
		if s == nil || s.Auth["bearerAuth"].Token.Reveal() != "sk_test_example" {
			t.Errorf("stripe's bearerAuth token is not ${STRIPE_API_KEY}")
		}
		if len(c.Upstreams) != 1 || c.Upstreams[0].Match != "api.stripe.com" || c.Upstreams[0].RequestsPerWindow == 0 {
			t.Errorf("no budget for api.stripe.com: %+v", c.Upstreams)
		}
	})
	t.Run("fastapi", func(t *testing.T) {
		c := load(t, "fastapi-local.yaml")
		s := c.Specs[0]
		if s.Location != "http://127.0.0.1:8000/openapi.json" || s.BaseURL != "http://127.0.0.1:8000" {
			t.Errorf("location %q, base_url %q", s.Location, s.BaseURL)
		}
	})
	t.Run("kubernetes", func(t *testing.T) {
		c := load(t, "kubernetes.yaml")
		s := c.SpecByName("k8s")
		if s == nil || s.BaseURL != "https://203.0.113.10:6443" {
			t.Fatalf("base_url is not ${K8S_BASE_URL}: %+v", s)
		}
		if got := s.Auth["BearerToken"].Value.Reveal(); got != "Bearer example-token" {
			t.Errorf("BearerToken value = %q, want the Bearer prefix and ${K8S_TOKEN}", got)
		}
	})
	t.Run("team", func(t *testing.T) {
		c := load(t, "team-redis.yaml")
		if c.Store.Backend != "redis" || len(c.HTTP.Auth.Tokens) == 0 {
			t.Errorf("store %q with %d tokens, want redis with tokens", c.Store.Backend, len(c.HTTP.Auth.Tokens))
		}
	})
}
