package serve_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/inauth/inauthtest"
	"github.com/specgate/specgate/pkg/mcpserver"
	"github.com/specgate/specgate/pkg/serve"
)

// BenchmarkRefuse1MBToken measures the handler refusing a 1 MB bearer
// token (the request itself is built once, outside the loop).
func BenchmarkRefuse1MBToken(b *testing.B) {
	v, _ := inauthtest.NewVerifier(b)
	srv := mcpserver.New(mcpserver.Options{})
	h := serve.NewHandler(srv, serve.Options{JWT: v})
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+strings.Repeat("a", 1<<20))
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusUnauthorized {
			b.Fatalf("status %d", w.Code)
		}
	}
}
