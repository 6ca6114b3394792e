package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/spec"
)

const chargeSpec = `{"openapi":"3.0.3","info":{"title":"pay","version":"1"},"paths":{
 "/charges":{"post":{"operationId":"createCharge",
   "parameters":[{"name":"Idempotency-Key","in":"header","schema":{"type":"string"}}],
   "requestBody":{"content":{"application/json":{"schema":{"type":"object"}}}},
   "responses":{"200":{"description":"ok"}}},
  "get":{"operationId":"listCharges","responses":{"200":{"description":"ok"}}}}}}`

// An upstream that refuses its first two calls with a short
// retry-after-ms, then answers.
func flakyUpstream(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			w.Header().Set("retry-after-ms", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"ch_1"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func retryFixture(t *testing.T, base string) *fixture {
	t.Helper()
	s, err := spec.Parse(t.Context(), "pay.json", []byte(chargeSpec), spec.Options{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	cat, ix, _ := servedCatalog(t, 0, s)
	// No limiter: this is the retry policy alone, waiting the upstream's
	// 30 ms (a limiter would hold every call for at least a second).
	srv := New(Options{Caller: invoke.Caller{Governed: invoke.Governed{Client: invoke.New(invoke.Options{}), MaxRetries: 2, MaxRetryWait: 5 * time.Second}}})
	srv.Publish(cat, ix, nil)
	return &fixture{srv: srv, client: connectTB(t, srv, nil), cat: cat}
}

// A POST is retried after a 429 only when it carries the idempotency key
// the operation declares.
func TestRetryNeedsIdempotencyForPOST(t *testing.T) {
	up, n := flakyUpstream(t)
	f := retryFixture(t, up.URL)

	res, isErr := f.call(t, "invoke", map[string]any{"endpointId": "pay.createCharge", "requestBody": map[string]any{"amount": 5}})
	if !isErr || errorOf(t, res)["code"] != "upstream_rate_limit" {
		t.Fatalf("POST without a key: %v", res)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("POST without a key was sent %d times", got)
	}

	res, isErr = f.call(t, "invoke", map[string]any{"endpointId": "pay.createCharge", "requestBody": map[string]any{"amount": 5},
		"parameters": map[string]any{"Idempotency-Key": "k-1"}})
	if isErr {
		t.Fatalf("POST with a key was not retried: %v", res)
	}
	attempts := res["rateLimit"].(map[string]any)["attempts"].([]any)
	if len(attempts) != 2 || attempts[0].(map[string]any)["status"] != float64(429) || attempts[1].(map[string]any)["status"] != float64(200) {
		t.Errorf("attempts = %v", attempts)
	}
	if first := attempts[0].(map[string]any); first["source"] == "" || first["waitBeforeSeconds"] == nil {
		t.Errorf("first attempt does not say what set the wait: %v", first)
	}
}

// A GET is retried up to max_retries without a key; past them the model
// gets upstream_rate_limit with the wait.
func TestRetryIdempotentGET(t *testing.T) {
	up, n := flakyUpstream(t)
	f := retryFixture(t, up.URL)
	res, isErr := f.call(t, "invoke", map[string]any{"endpointId": "pay.listCharges"})
	if isErr {
		t.Fatalf("GET: %v", res)
	}
	if got := len(res["rateLimit"].(map[string]any)["attempts"].([]any)); got != 3 || n.Load() != 3 {
		t.Errorf("%d attempts, %d requests; want 3 and 3", got, n.Load())
	}
	f.srv.call.MaxRetries = 1
	n.Store(0)
	res, isErr = f.call(t, "invoke", map[string]any{"endpointId": "pay.listCharges"})
	if !isErr || errorOf(t, res)["code"] != "upstream_rate_limit" || errorOf(t, res)["retryAfterSeconds"] != 0.03 {
		t.Errorf("past max_retries: %v", res)
	}
}
