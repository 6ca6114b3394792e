package serve_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/mcpserver"
	"github.com/specgate/specgate/pkg/serve"
)

// A team bridge: static tokens name principals, and each principal has a
// budget of requests per minute.
func ExampleNewHandler() {
	srv := mcpserver.New(mcpserver.Options{})
	ts := httptest.NewServer(serve.NewHandler(srv, serve.Options{
		Tokens:            map[string]inauth.Principal{"s3cret": {Subject: "ci", Org: "acme"}},
		RequestsPerWindow: 600,
	}))
	defer ts.Close()

	for _, token := range []string{"", "s3cret"} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("X-RateLimit-Remaining"))))
	}
	// Output:
	// 401
	// 200 599
}
