package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A budget written for localhost does not hold for an operation whose own
// server is written 127.0.0.1: check says so, as serve's log does.
func TestCheckWarnsLoopbackBudgetNearMiss(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "near.json")
	if err := os.WriteFile(specPath, []byte(`{"openapi":"3.0.3","info":{"title":"near","version":"1"},
	  "servers":[{"url":"http://localhost:9"}],"paths":{
	  "/a":{"get":{"operationId":"a","responses":{"200":{"description":"ok"}}}},
	  "/b":{"get":{"operationId":"b","servers":[{"url":"http://127.0.0.1:9"}],"responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, tt := range []struct {
		name, budget string
		want         []string
	}{
		{"localhost budget", "localhost:9", []string{`upstream 127.0.0.1:9 matches no budget, but budget "localhost:9" names the same machine another way`}},
		{"bare host budget", "localhost", []string{`upstream 127.0.0.1:9 matches no budget, but budget "localhost" names`}},
		{"a budget for each", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			upstreams := "  - {match: localhost:9, requests_per_window: 5, window: 1m}\n  - {match: 127.0.0.1:9, requests_per_window: 5, window: 1m}\n"
			if tt.budget != "" {
				upstreams = fmt.Sprintf("  - {match: %q, requests_per_window: 5, window: 1m}\n", tt.budget)
			}
			cfg := writeConfig(t, fmt.Sprintf("specs:\n  - {name: near, location: %s}\nupstreams:\n%s", specPath, upstreams))
			code, stdout, stderr := runCmd(t, "check", "--config", cfg, "--validate=false")
			if code != 0 {
				t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
			}
			got := 0
			for _, line := range strings.Split(stdout, "\n") {
				if strings.Contains(line, "matches no budget") {
					got++
				}
			}
			if got != len(tt.want) {
				t.Errorf("%d near-miss warnings, want %d:\n%s", got, len(tt.want), stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// A class of an upstream paces the calls it matches and no others: through
// the binary, a second POST within the class's min_interval is refused
// naming the class, while GETs of the same upstream go on, each charging
// its cost; a class pattern that does not parse stops the server with its
// key.
func TestClassesThroughTheBinary(t *testing.T) {
	bin := specgateBinary(t)
	up, log := petUpstream(t)
	spec, err := filepath.Abs("../../testdata/petstore-v3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(up.URL, "http://")
	cfg := writeConfig(t, fmt.Sprintf(`rate_limit_interval: 0s
cache_ttl: 0s
specs:
  - name: pets
    location: %q
    base_url: %q
    endpoints: {getPetById: {cost: 30}}
upstreams:
  - match: %q
    requests_per_window: 100
    window: 1m
    classes:
      - {match: "POST /**", min_interval: 1h, on_limit: reject}
`, spec, up.URL+"/api/v3", host))
	c, _ := stdioClient(t, bin, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "serve", "--config", cfg)
	pet := map[string]any{"endpointId": "pets.addPet", "requestBody": map[string]any{"name": "rex", "photoUrls": []any{}}}
	if res, isErr := callJSON(t, c, "invoke", pet); isErr {
		t.Fatalf("first POST: %v", res)
	}
	res, isErr := callJSON(t, c, "invoke", pet)
	e, _ := res["error"].(map[string]any)
	if !isErr || e["code"] != "rate_limit" || e["limit"].(map[string]any)["key"] != host+" POST /**" || e["limit"].(map[string]any)["kind"] != "interval" {
		t.Fatalf("second POST = %v, want rate_limit by the POST class", res)
	}
	for id := range 3 {
		if res, isErr := callJSON(t, c, "invoke", map[string]any{"endpointId": "pets.getPetById", "parameters": map[string]any{"petId": id + 1}}); isErr {
			t.Fatalf("GET %d: %v", id, res)
		}
	}
	// each GET costs 30 units of the 100: a fourth does not fit beside the POST's 1
	res, isErr = callJSON(t, c, "invoke", map[string]any{"endpointId": "pets.getPetById", "parameters": map[string]any{"petId": 4}})
	if e, _ := res["error"].(map[string]any); !isErr || e["limit"].(map[string]any)["kind"] != "requests" {
		t.Fatalf("a fourth GET of cost 30 = %v, want the requests budget spent", res)
	}
	if got := log.list(); len(got) != 4 || !strings.HasPrefix(got[0], "POST ") {
		t.Errorf("upstream saw %v, want one POST and three GETs", got)
	}

	bad := writeConfig(t, fmt.Sprintf("specs:\n  - {name: pets, location: %q}\nupstreams:\n  - {match: x, classes: [{match: \"FETCH /x\", min_interval: 1s}]}\n", spec))
	code, stdout, stderr := runCmd(t, "check", "--config", bad, "--validate=false")
	if code == 0 || !strings.Contains(stdout+stderr, `upstreams[x].classes[0].match: "FETCH /x"`) {
		t.Errorf("a bad class pattern: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A budget written as the spec's URL, or with a mistyped host, passed
// check and limited nothing (issue 33 item 2): a URL is read as its host,
// and a match no spec's upstream uses fails check and serve, naming the
// hosts the specs call.
func TestBudgetThatMatchesNothingIsAnError(t *testing.T) {
	petstore, err := filepath.Abs("../../specs/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, tt := range []struct {
		name, match, group string
		want               string // "" when the budget holds
	}{
		{"the spec's URL", "https://petstore3.swagger.io/api/v3", "", ""},
		{"bare host", "petstore3.swagger.io", "", ""},
		{"host:port", "petstore3.swagger.io:443", "", ""},
		{"joined group", "pets", "pets", ""},
		{"mistyped host", "petstore3.swager.io", "", `upstreams[petstore3.swager.io].match matches no spec's upstream, so it limits nothing; the specs call "petstore3.swagger.io:443" (did you mean "petstore3.swagger.io"?)`},
		{"wrong port", "petstore3.swagger.io:80", "", `(did you mean "petstore3.swagger.io:443"?)`},
		{"group no spec joins", "pets", "", `upstreams[pets].match matches no spec's upstream`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			join := ""
			if tt.group != "" {
				join = ", upstream: " + tt.group
			}
			cfg := writeConfig(t, fmt.Sprintf("specs:\n  - {name: petstore, location: %s%s}\nupstreams:\n  - {match: %q, requests_per_window: 5, window: 1m}\n",
				petstore, join, tt.match))
			code, stdout, stderr := runCmd(t, "check", "--config", cfg, "--validate=false")
			if tt.want == "" {
				if code != 0 || strings.Contains(stdout, "matches no") {
					t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
				}
				return
			}
			if code == 0 || !strings.Contains(stdout, "FAIL upstreams: ") || !strings.Contains(stdout, tt.want) {
				t.Fatalf("check: exit %d, want %q:\n%s%s", code, tt.want, stdout, stderr)
			}
			// serve's start refuses it too (invoke shares it)
			code, stdout, stderr = runCmd(t, "invoke", "--config", cfg, "--log-level", "error", "petstore.getInventory")
			if code == 0 || !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("invoke: exit %d, want %q:\n%s%s", code, tt.want, stdout, stderr)
			}
		})
	}
}
