package config

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const examplePath = "../../config.example.yaml"

func TestExampleLoadsWithDefaults(t *testing.T) {
	for _, v := range []string{"SPECGATE_TEAM_TOKEN", "PETSTORE_API_KEY"} {
		t.Setenv(v, "") // set but empty: the example must load either way
	}
	c, err := Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	// Everything outside the example lists is exactly the defaults.
	got, want := *c, *Default()
	got.Specs, got.Upstreams, got.HTTP.Auth.Tokens = nil, nil, nil
	got.Source, got.MissingEnv = "", nil
	// The example shows search.embeddings, which is off by default, with
	// its defaults.
	emb := got.Search.Embeddings
	got.Search.Embeddings = nil
	if emb == nil || emb.BatchSize != DefaultEmbeddingsBatch || time.Duration(emb.Timeout) != DefaultEmbeddingsTimeout ||
		emb.Weight == nil || *emb.Weight != 0.25 || emb.Model != "nomic-embed-text" {
		t.Errorf("search.embeddings = %+v", emb)
	}
	if !reflect.DeepEqual(got, want) {
		gj, wj := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want)
		t.Errorf("example differs from Default():\n got %s\nwant %s", gj, wj)
	}

	// The example entries decode as their comments say.
	s := c.SpecByName("petstore")
	if s == nil || !strings.HasSuffix(s.Location, "specs/petstore.yaml") || s.Upstream != "petstore-gateway" {
		t.Fatalf("spec entry = %+v", s)
	}
	if got := c.ForEndpoint(s, "petstore.getPetById", "getPetById"); got.RateLimitInterval != 30*time.Second || got.CacheTTL != 5*time.Second {
		t.Errorf("getPetById settings = %+v", got)
	}
	if got := c.ForEndpoint(s, "petstore.findPetsByStatus", "findPetsByStatus"); !got.DisableRateLimiter || got.RateLimitInterval != 5*time.Second {
		t.Errorf("findPetsByStatus settings = %+v", got)
	}
	u := c.Budget(s.UpstreamKey("127.0.0.1:8080"))
	if u == nil || u.RequestsPerWindow != 30 || u.OnLimit != OnLimitWait {
		t.Errorf("budget = %+v", u)
	}
	up := defaultUpstream()
	if u.WindowPad != up.WindowPad || u.QueueDepth != up.QueueDepth || u.QueueTimeout != up.QueueTimeout {
		t.Errorf("example upstream does not show the defaults: %+v", u)
	}
}

// TestExampleDocumentsEveryKey walks the Config type and the example's YAML
// together: every yaml key of every struct must appear in the example (in at
// least one entry of a list or map), so config.example.yaml stays complete.
func TestExampleDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	var missing []string
	var visit func(typ reflect.Type, nodes []*yaml.Node, path string)
	visit = func(typ reflect.Type, nodes []*yaml.Node, path string) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch {
		case typ == secretType || typ.Kind() != reflect.Struct && typ.Kind() != reflect.Slice && typ.Kind() != reflect.Map:
			return
		case typ.Kind() == reflect.Slice:
			var elems []*yaml.Node
			for _, n := range nodes {
				if n.Kind == yaml.SequenceNode {
					elems = append(elems, n.Content...)
				}
			}
			visit(typ.Elem(), elems, path+"[]")
			return
		case typ.Kind() == reflect.Map:
			var vals []*yaml.Node
			for _, n := range nodes {
				if n.Kind == yaml.MappingNode {
					for i := 1; i < len(n.Content); i += 2 {
						vals = append(vals, n.Content[i])
					}
				}
			}
			visit(typ.Elem(), vals, path+"{}")
			return
		}
		for i := 0; i < typ.NumField(); i++ {
			name := yamlName(typ.Field(i))
			if name == "" {
				continue
			}
			var vals []*yaml.Node
			for _, n := range nodes {
				if n.Kind != yaml.MappingNode {
					continue
				}
				for j := 0; j+1 < len(n.Content); j += 2 {
					if n.Content[j].Value == name {
						vals = append(vals, n.Content[j+1])
					}
				}
			}
			key := strings.TrimPrefix(path+"."+name, ".")
			if len(vals) == 0 {
				missing = append(missing, key)
				continue
			}
			visit(typ.Field(i).Type, vals, key)
		}
	}
	visit(reflect.TypeFor[Config](), root.Content, "")
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("config.example.yaml does not document %s", m)
	}
}

func ExampleParse() {
	c, err := Parse([]byte(`
rate_limit_interval: 5s
specs:
  - name: petstore
    location: https://petstore3.swagger.io/api/v3/openapi.json
    endpoints:
      getPetById: {rate_limit_interval: 30s}
    auth:
      api_key: {value: not-a-real-key}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	pet := c.SpecByName("petstore")
	fmt.Println(c.ForEndpoint(pet, "petstore.getPetById", "getPetById").RateLimitInterval)
	fmt.Println(c.ForEndpoint(pet, "petstore.addPet", "addPet").RateLimitInterval)
	fmt.Println(c.ForSpec(pet).BlockPrivateNetworks)
	fmt.Printf("%v\n", pet.Auth["api_key"].Value)

	_, err = Parse([]byte("rate_limt_interval: 5s\n"))
	fmt.Println(err)
	// Output:
	// 30s
	// 5s
	// true
	// [redacted]
	// line 1: unknown key "rate_limt_interval" (did you mean "rate_limit_interval"?)
}
