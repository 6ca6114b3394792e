package mock

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/spec"
)

// `specgate mock` refused the calls invoke makes to Stripe (issue 33 item
// 3): every list call with a query parameter was 400 for expand, a
// deepObject array kin-openapi cannot decode that the call did not send,
// and every form POST for a property kin-openapi cannot decode
// (tax_id_data). Parameters and form bodies kin-openapi cannot decode are
// accepted, as invoke accepts them; a value it can read is still checked.
func TestMockAcceptsStripeCallsKinOpenAPICannotDecode(t *testing.T) {
	path := filepath.Join(sharedSpecs, "stripe.json")
	if _, err := os.Stat(path); err != nil {
		t.Skip("no " + path)
	}
	s, err := spec.Load(t.Context(), path, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	const form = "application/x-www-form-urlencoded"
	tests := []struct {
		name, method, target, body string
		want                       int
	}{
		{"list with limit", "GET", "/v1/customers?limit=2", "", 200},
		{"list with deepObject query", "GET", "/v1/customers?created[gt]=1700000000&expand[0]=data.tax&limit=3", "", 200},
		{"list with paging", "GET", "/v1/customers?limit=2&starting_after=cus_123", "", 200},
		{"form with nested objects", "POST", "/v1/customers", "address[city]=Paris&address[line1]=1+rue+X&email=jo%40example.com&expand[0]=tax&metadata[order_id]=6735", 200},
		{"form with tax_id_data", "POST", "/v1/customers", "tax_id_data[0][type]=eu_vat&tax_id_data[0][value]=DE123456789", 200},
		{"form with items", "POST", "/v1/subscriptions", "customer=cus_1&items[0][price]=price_1&items[0][quantity]=2", 200},
		{"a limit that is not a number", "GET", "/v1/customers?limit=many", "", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.target, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.body != "" {
				req.Header.Set("Content-Type", form)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
		})
	}
}
