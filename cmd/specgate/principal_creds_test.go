package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/spec"
)

const principalSpec = `openapi: 3.0.3
info: {title: creds, version: "1"}
servers: [{url: "%s"}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
    bearer: {type: http, scheme: bearer}
    basic: {type: http, scheme: basic}
paths:
  /k: {get: {operationId: k, security: [{key: []}], responses: {"200": {description: ok}}}}
  /t: {get: {operationId: t, security: [{bearer: []}], responses: {"200": {description: ok}}}}
  /b: {get: {operationId: b, security: [{basic: []}], responses: {"200": {description: ok}}}}
`

// TestByPrincipalFromConfig: by_principal entries written in the config,
// ${ENV} included, reach the wire for their principal in each credential
// form (value, token, username/password); the plain form is the default for
// others; inspect's "configured" follows the same choice.
func TestByPrincipalFromConfig(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("X-Key")+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "creds.yaml")
	if err := os.WriteFile(specPath, []byte(strings.Replace(principalSpec, "%s", up.URL, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ADA_KEY", "ada-key")
	cfg, err := config.Parse([]byte(`specs:
  - name: creds
    location: ` + specPath + `
    auth:
      key:
        value: default-key
        by_principal:
          - {subject: ada, org: acme, value: "${ADA_KEY}"}
          - {subject: bob, value: "${BOB_KEY_UNSET}"}
      bearer:
        by_principal: [{subject: ada, org: acme, token: ada-token}]
      basic:
        by_principal: [{subject: ada, org: acme, username: ada, password: ada-pass}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(t.Context(), specPath, spec.Options{Name: "creds"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(cfg)
	t.Cleanup(c.Close)
	configured := credentialsFunc(cfg)
	ada := invoke.WithPrincipal(t.Context(), invoke.Principal{Subject: "ada", Org: "acme"})
	bob := invoke.WithPrincipal(t.Context(), invoke.Principal{Subject: "bob"})
	carol := invoke.WithPrincipal(t.Context(), invoke.Principal{Subject: "carol"})
	ep := func(id string) *spec.Endpoint {
		for _, e := range s.Endpoints {
			if e.ID == "creds."+id {
				return e
			}
		}
		t.Fatalf("no endpoint %s", id)
		return nil
	}
	tests := []struct {
		name       string
		ctx        context.Context
		id, scheme string
		sent       string // what the upstream saw; "" when the call must fail before it
		configured bool
	}{
		{"ada's key", ada, "k", "key", "/k ada-key", true},
		{"carol gets the default key", carol, "k", "key", "/k default-key", true},
		{"no principal: the default key", t.Context(), "k", "key", "/k default-key", true},
		{"bob's variable is unset", bob, "k", "key", "", false},
		{"ada's bearer token", ada, "t", "bearer", "/t Bearer ada-token", true},
		{"carol has no bearer token", carol, "t", "bearer", "", false},
		{"ada's basic credentials", ada, "b", "basic", "/b Basic YWRhOmFkYS1wYXNz", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := configured(tt.ctx, "creds", tt.scheme); got != tt.configured {
				t.Errorf("configured = %v, want %v", got, tt.configured)
			}
			mu.Lock()
			seen = nil
			mu.Unlock()
			call, err := c.Prepare(tt.ctx, ep(tt.id), invoke.Args{})
			if err == nil {
				_, err = call.Do(tt.ctx)
			}
			mu.Lock()
			defer mu.Unlock()
			if tt.sent == "" {
				if err == nil || len(seen) != 0 {
					t.Errorf("sent %v, err %v; want an auth error before the call", seen, err)
				}
				return
			}
			if err != nil || len(seen) != 1 || seen[0] != tt.sent {
				t.Errorf("sent %v, err %v; want %q", seen, err, tt.sent)
			}
		})
	}
}

func TestByPrincipalValidation(t *testing.T) {
	cfg, err := config.Parse([]byte(`specs:
  - name: creds
    location: creds.yaml
    auth:
      key:
        by_principal:
          - {subject: ada, org: acme, value: a}
          - {org: acme, value: b}
          - {subject: ada, org: acme, value: c}
          - {subject: ada, value: d}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	for _, want := range []string{
		"specs[creds].auth.key.by_principal[1].subject: is required",
		"specs[creds].auth.key.by_principal[2]: is for the same subject and org as by_principal[0]",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "by_principal[3]") {
		t.Errorf("ada without an org is another principal: %v", err)
	}
}
