package invoke

import (
	"net/http/httptest"
	"os"
	"testing"

	"github.com/specgate/specgate/internal/upstreamtest"
	"github.com/specgate/specgate/pkg/paging"
	"github.com/specgate/specgate/pkg/spec"
)

// Every style of the paging test upstream walked through invoke: each next
// page paging.Next offers passes invoke's validation, and the walk reads every
// item once in exactly as many calls as there are pages.
func TestNextPageWalksPagingUpstream(t *testing.T) {
	const items = 23
	pages, err := upstreamtest.NewPages(upstreamtest.PagesOptions{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pages)
	t.Cleanup(srv.Close)
	doc, err := os.ReadFile(upstreamtest.TestdataFile("paging.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse(t.Context(), "paging.yaml", doc, spec.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	client := New(Options{MaxResponseBytes: 8 << 20})
	t.Cleanup(client.Close)

	tests := []struct {
		style  upstreamtest.Style
		op     string
		params map[string]any
		list   func(body any) []any
		calls  int
	}{
		{upstreamtest.GitHubStyle, "listPulls", map[string]any{"owner": "rails", "repo": "rails", "state": "all", "per_page": 10},
			func(b any) []any { l, _ := b.([]any); return l }, 3},
		{upstreamtest.StripeStyle, "listCustomers", map[string]any{"limit": 10},
			func(b any) []any { l, _ := field(b, "data").([]any); return l }, 3},
		{upstreamtest.SlackStyle, "listUsers", map[string]any{"limit": 5},
			func(b any) []any { l, _ := field(b, "members").([]any); return l }, 5},
		{upstreamtest.KubernetesStyle, "listPods", map[string]any{"namespace": "default", "limit": 10},
			func(b any) []any { l, _ := field(b, "items").([]any); return l }, 3},
	}
	for _, tt := range tests {
		t.Run(string(tt.style), func(t *testing.T) {
			e := endpoint(t, s, tt.op)
			before := pages.Count(tt.style)
			params, read, calls := tt.params, 0, 0
			for params != nil {
				if calls++; calls > items+1 {
					t.Fatal("paging does not end")
				}
				call, err := client.Prepare(t.Context(), e, Args{Parameters: params})
				if err != nil {
					t.Fatalf("call %d with %v: %v", calls, params, err)
				}
				res, err := call.Do(t.Context())
				if err != nil {
					t.Fatalf("call %d: %v", calls, err)
				}
				body := decodeBody(t, string(res.RawBody))
				read += len(tt.list(body))
				params = paging.Next(paging.Request{Endpoint: e, URL: call.URL(), Params: params}, res.RawHeaders, body)
			}
			if read != items {
				t.Errorf("read %d items, want %d", read, items)
			}
			if calls != tt.calls || pages.Count(tt.style)-before != tt.calls {
				t.Errorf("calls: %d, upstream saw %d, want %d", calls, pages.Count(tt.style)-before, tt.calls)
			}
		})
	}
}

// field is the value of key in an object body, nil when there is none.
func field(body any, key string) any {
	m, _ := body.(map[string]any)
	return m[key]
}
