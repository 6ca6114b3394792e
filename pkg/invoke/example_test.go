package invoke_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/spec"
)

func Example() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-RateLimit-Remaining", "59")
		_, _ = io.WriteString(w, `{"id":7,"name":"Rex"}`)
	}))
	defer upstream.Close()

	doc := `{"openapi":"3.0.3","info":{"title":"pets","version":"1"},"paths":{"/pets/{petId}":{"get":{
	  "operationId":"getPetById",
	  "parameters":[{"name":"petId","in":"path","required":true,"schema":{"type":"integer"}}],
	  "responses":{"200":{"description":"ok"}}}}}}`
	ctx := context.Background()
	s, err := spec.Parse(ctx, "petstore.json", []byte(doc), spec.Options{BaseURL: upstream.URL})
	if err != nil {
		panic(err)
	}
	e := s.Endpoints[0]
	client := invoke.New(invoke.Options{})

	// Invalid arguments are refused before anything is sent.
	_, err = client.Prepare(ctx, e, invoke.Args{Parameters: map[string]any{"petId": "seven", "verbose": true}})
	var argErr *invoke.ArgError
	if errors.As(err, &argErr) {
		for _, p := range argErr.Problems {
			fmt.Println("problem:", p)
		}
	}

	// Prepare, then (after charging the rate limiter) Do.
	call, err := client.Prepare(ctx, e, invoke.Args{Parameters: map[string]any{"petId": 7}})
	if err != nil {
		panic(err)
	}
	res, err := call.Do(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.StatusCode, res.Headers["x-ratelimit-remaining"])
	fmt.Printf("%s\n", res.RawBody)
	// Output:
	// problem: unknown parameter "verbose": not declared by this operation
	// problem: parameter "petId" (path): value must be an integer
	// 200 59
	// {"id":7,"name":"Rex"}
}
