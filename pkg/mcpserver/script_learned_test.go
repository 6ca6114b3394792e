package mcpserver

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// inFlightUpstream answers 429 (Retry-After: 1) to a request that finds
// more than limit others in flight, and the others after latency.
type inFlightUpstream struct {
	limit     int64
	latency   time.Duration
	inflight  atomic.Int64
	requests  atomic.Int64
	limited   atomic.Int64
	firstSeen atomic.Int64 // requests in flight when the first 429 was sent, itself counted
	h         http.Handler
}

func (u *inFlightUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.requests.Add(1)
	n := u.inflight.Add(1)
	defer u.inflight.Add(-1)
	if n > u.limit {
		if u.limited.Add(1) == 1 {
			u.firstSeen.Store(n)
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	time.Sleep(u.latency) // the upstream's own work, on the bubble's clock
	u.h.ServeHTTP(w, r)
}

// TestScriptCallsHeldByWhatThe429Taught: with no budget configured, a
// 100-call Promise.all against an upstream that allows 2 in flight made 12
// upstream 429s and timed out. What specgate learns from the first 429
// holds the script's calls as it holds the model's: the upstream's 429s
// stay within the calls in flight when the first came, and the run ends.
func TestScriptCallsHeldByWhatThe429Taught(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		up := &inFlightUpstream{limit: 2, latency: 200 * time.Millisecond, h: newScriptBenchUpstream(t, 1000)}
		l, err := ratelimit.New(ratelimit.Options{Endpoints: served.eps})
		if err != nil {
			t.Fatal(err)
		}
		cl := invoke.New(invoke.Options{Timeout: 30 * time.Second, HTTPClient: &http.Client{Transport: handlerTransport{up}}})
		t.Cleanup(cl.Close)
		srv := New(Options{SpecNames: served.cat.SpecNames(), Scripts: ScriptOptions{Timeout: MaxScriptTimeout, AnswerWithin: -1}, // the whole run, however slow
			JQSlots: answer.NewJQSlots(2),
			Caller:  invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l, MaxRetries: 2, MaxRetryWait: 30 * time.Second}},
		})
		srv.Publish(served.cat, served.ix, nil)
		c := connectTB(t, srv, nil)
		start := time.Now()
		out, isErr := callTool(t, c, "run_script", map[string]any{"timeoutSeconds": 300, "code": `
			const ids = Array.from({length: 100}, (_, i) => i + 1);
			const got = await Promise.all(ids.map(async id => {
				try { return (await api.invoke("bench.getItem", {parameters: {id}})).body.id; } catch (e) { return e.code; }
			}));
			return got.filter(x => typeof x === "number").length;`})
		if isErr {
			t.Fatalf("run_script failed: %v", out)
		}
		took := time.Since(start)
		first := up.firstSeen.Load()
		t.Logf("result %v in %v, %d requests, %d 429s, %d in flight at the first", out["result"], took, up.requests.Load(), up.limited.Load(), first)
		if out["result"] != float64(100) {
			t.Errorf("%v of 100 calls answered, want all", out["result"])
		}
		if n := up.limited.Load(); n == 0 || n > first {
			t.Errorf("the upstream sent %d 429s, want at least one and at most the %d calls in flight at the first", n, first)
		}
		// 100 calls, 2 at a time, 200ms each, after a 1s block: about 11s. A requests
		// budget inferred from the 429 (2 a second) took a minute.
		if took > 15*time.Second {
			t.Errorf("the run took %v, want the upstream's 2 in flight kept busy (about 11s)", took)
		}
	})
}
