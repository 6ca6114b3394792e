package paging_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/specgate/specgate/pkg/paging"
	"github.com/specgate/specgate/pkg/spec"
)

func ExampleNext() {
	doc := `{"openapi":"3.0.3","info":{"title":"gh","version":"1"},"paths":{"/repos/{owner}/{repo}/pulls":{"get":{
	  "operationId":"pulls/list",
	  "parameters":[
	    {"name":"owner","in":"path","required":true,"schema":{"type":"string"}},
	    {"name":"repo","in":"path","required":true,"schema":{"type":"string"}},
	    {"name":"per_page","in":"query","schema":{"type":"integer"}},
	    {"name":"page","in":"query","schema":{"type":"integer"}}],
	  "responses":{"200":{"description":"ok"}}}}}}`
	s, err := spec.Parse(context.Background(), "gh.json", []byte(doc), spec.Options{BaseURL: "https://api.github.com"})
	if err != nil {
		panic(err)
	}
	sent, _ := url.Parse("https://api.github.com/repos/rails/rails/pulls?per_page=30")
	h := http.Header{"Link": {`<https://api.github.com/repositories/8514/pulls?per_page=30&page=2>; rel="next", ` +
		`<https://api.github.com/repositories/8514/pulls?per_page=30&page=17>; rel="last"`}}

	next := paging.Next(paging.Request{
		Endpoint: s.Endpoints[0],
		URL:      sent,
		Params:   map[string]any{"owner": "rails", "repo": "rails", "per_page": 30},
	}, h, nil)
	fmt.Println(next)

	// A link to another origin is never offered.
	h.Set("Link", `<https://evil.example/repos/rails/rails/pulls?page=2>; rel="next"`)
	fmt.Println(paging.Next(paging.Request{Endpoint: s.Endpoints[0], URL: sent}, h, nil) == nil)
	// Output:
	// map[owner:rails page:2 per_page:30 repo:rails]
	// true
}
