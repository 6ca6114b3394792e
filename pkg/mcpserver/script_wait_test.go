package mcpserver

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// waitFixture serves the bench spec in memory with a budget of 1 request
// per 40s (on_limit wait, queue_timeout 1m) and call_timeout 30s: a second
// call waits 40s for the budget, longer than the call's own deadline.
func waitFixture(t *testing.T, served *scriptBenchServed) (*Server, *scriptBenchUpstream) {
	return waitFixtureSlow(t, served, 0)
}

// waitFixtureSlow is waitFixture with an upstream that takes slow to
// answer item 2 (or until the request is cancelled).
func waitFixtureSlow(t *testing.T, served *scriptBenchServed, slow time.Duration) (*Server, *scriptBenchUpstream) {
	t.Helper()
	up := newScriptBenchUpstream(t, 100)
	var h http.Handler = up
	if slow > 0 {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/items/2") {
				select {
				case <-time.After(slow):
				case <-r.Context().Done():
					return
				}
			}
			up.ServeHTTP(w, r)
		})
	}
	l, err := ratelimit.New(ratelimit.Options{Endpoints: served.eps, Budgets: []ratelimit.Budget{{Match: HostKey(served.base),
		Requests: 1, Window: 40 * time.Second, OnLimit: ratelimit.Wait, QueueDepth: 4, QueueTimeout: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{Timeout: 30 * time.Second, HTTPClient: &http.Client{Transport: ctxTransport{handlerTransport{h}}}})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: served.cat.SpecNames(),
		Scripts: ScriptOptions{Timeout: MaxScriptTimeout, AnswerWithin: -1}, JQSlots: answer.NewJQSlots(1),
		Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}},
	})
	srv.Publish(served.cat, served.ix, nil)
	return srv, up
}

// ctxTransport fails a request whose context ended while the handler ran,
// as a network transport does.
type ctxTransport struct{ rt http.RoundTripper }

func (t ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.rt.RoundTrip(r)
	if cerr := r.Context().Err(); err == nil && cerr != nil {
		res.Body.Close()
		return nil, cerr
	}
	return res, err
}

// TestScriptCallWaitsPastCallTimeout: inside run_script, an api.invoke's
// wait for a budget counts against the script's deadline (2m here) and the
// queue timeout (1m), not call_timeout (30s), which bounds the exchange once
// the call is admitted. A direct invoke's own deadline is call_timeout: the
// same 40s wait is refused at once, as before, and nothing is sent.
func TestScriptCallWaitsPastCallTimeout(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	t.Run("script", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, up := waitFixture(t, served)
			c := connectTB(t, srv, nil)
			start := time.Now()
			out, isErr := callTool(t, c, "run_script", map[string]any{"timeoutSeconds": 120, "code": `
				const a = await api.invoke("bench.getItem", {parameters: {id: 1}});
				const b = await api.invoke("bench.getItem", {parameters: {id: 2}});
				return [a.body.id, b.body.id];`})
			took := time.Since(start)
			if isErr {
				t.Fatalf("run_script failed: %v", out)
			}
			if got, ok := out["result"].([]any); !ok || len(got) != 2 || got[0] != float64(1) || got[1] != float64(2) {
				t.Errorf("result = %v, want [1 2]", out["result"])
			}
			wait, _ := out["rateLimit"].(map[string]any)["queueWaitMs"].(float64)
			if wait < 40000 || took < 40*time.Second || took > 41*time.Second {
				t.Errorf("queued %vms, took %v: want the second call held about 40s", wait, took)
			}
			if n := up.requests.Load(); n != 2 {
				t.Errorf("upstream got %d requests, want 2", n)
			}
		})
	})
	t.Run("script exchange bounded from admission", func(t *testing.T) {
		// Admitted after its 40s wait, the second call's exchange has the
		// whole call_timeout: an upstream taking 25s answers (65s in all); one
		// taking 35s times out 30s after admission (70s in all).
		for _, tt := range []struct {
			slow time.Duration
			want string
			took time.Duration
		}{{25 * time.Second, "2", 65 * time.Second}, {35 * time.Second, "timeout", 70 * time.Second}} {
			synctest.Test(t, func(t *testing.T) {
				srv, _ := waitFixtureSlow(t, served, tt.slow)
				c := connectTB(t, srv, nil)
				start := time.Now()
				out, isErr := callTool(t, c, "run_script", map[string]any{"timeoutSeconds": 120, "code": `
					await api.invoke("bench.getItem", {parameters: {id: 1}});
					try { return String((await api.invoke("bench.getItem", {parameters: {id: 2}})).body.id); } catch (e) { return e.code; }`})
				took := time.Since(start)
				if isErr || out["result"] != tt.want || took < tt.took || took > tt.took+time.Second {
					t.Errorf("upstream %v: %v after %v, want %q after %v", tt.slow, out, took, tt.want, tt.took)
				}
			})
		}
	})
	t.Run("invoke", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, up := waitFixture(t, served)
			c := connectTB(t, srv, nil)
			if out, isErr := callTool(t, c, "invoke", map[string]any{"endpointId": "bench.getItem", "parameters": map[string]any{"id": 1}}); isErr {
				t.Fatalf("first invoke failed: %v", out)
			}
			start := time.Now()
			out, isErr := callTool(t, c, "invoke", map[string]any{"endpointId": "bench.getItem", "parameters": map[string]any{"id": 2}})
			if !isErr {
				t.Fatalf("second invoke = %v, want refused: its 40s wait is past its 30s deadline", out)
			}
			e := out["error"].(map[string]any)
			secs, _ := e["retryAfterSeconds"].(float64)
			if e["code"] != codes.RateLimit || e["scope"] != "proxy" || secs < 39 || secs > 40.5 {
				t.Errorf("error = %v, want rate_limit, scope proxy, retry after about 40s", e)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("the refusal took %v, want at once", took)
			}
			if n := up.requests.Load(); n != 1 {
				t.Errorf("upstream got %d requests, want 1", n)
			}
		})
	})
}
