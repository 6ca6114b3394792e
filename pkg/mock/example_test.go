package mock_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/specgate/specgate/pkg/mock"
	"github.com/specgate/specgate/pkg/spec"
)

func ExampleNew() {
	s, err := spec.Load(context.Background(), "../../specs/petstore.yaml", spec.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := mock.New(s, mock.Options{RequestsPerWindow: 1, Window: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(m)
	defer srv.Close()
	for _, path := range []string{"/api/v3/pet/1", "/api/v3/pet/1", "/api/v3/nowhere"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d remaining=%s retry-after=%q\n", path, resp.StatusCode,
			resp.Header.Get("X-RateLimit-Remaining"), resp.Header.Get("Retry-After"))
	}
	// Output:
	// /api/v3/pet/1 200 remaining=0 retry-after=""
	// /api/v3/pet/1 429 remaining=0 retry-after="10"
	// /api/v3/nowhere 404 remaining=0 retry-after=""
}
