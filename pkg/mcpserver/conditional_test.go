package mcpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// A GET answered with an ETag is sent again with If-None-Match; the upstream's 304 is
// answered with the stored answer, marked revalidated, and with count_not_modified off
// the 304 gives its request back, so a budget of 2 serves four calls of which three are
// revalidated. When the resource changes, the 200 replaces the stored answer.
func TestConditionalRequestsRevalidate(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	version := "v1"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Header.Get("If-None-Match"))
		etag := `"` + version + `"`
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"items":["`+version+`"]}`)
	}))
	defer up.Close()
	l, call := listItemsCaller(t, up.URL, ratelimit.Budget{Requests: 2, Window: time.Minute, OnLimit: ratelimit.Reject, FreeNotModified: true})
	first := call()
	if first["revalidated"] != nil || first["statusCode"] != float64(200) {
		t.Fatalf("first call = %v", first)
	}
	for i := range 3 {
		res := call()
		if res["revalidated"] != true || res["statusCode"] != float64(200) || res["responseId"] != first["responseId"] {
			t.Fatalf("call %d = %v, want the stored answer revalidated", i+2, res)
		}
		if body := string(mustJSON(res["body"])); body != `{"items":["v1"]}` {
			t.Fatalf("call %d body %s", i+2, body)
		}
		if att := res["rateLimit"].(map[string]any)["attempts"].([]any); att[0].(map[string]any)["status"] != float64(304) {
			t.Errorf("call %d attempts %v, want the 304", i+2, att)
		}
	}
	mu.Lock()
	version = "v2"
	mu.Unlock()
	changed := call()
	if changed["revalidated"] != nil || string(mustJSON(changed["body"])) != `{"items":["v2"]}` || changed["responseId"] == first["responseId"] {
		t.Fatalf("after a change = %v", changed)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"", `"v1"`, `"v1"`, `"v1"`, `"v1"`}
	if len(seen) != len(want) {
		t.Fatalf("upstream saw If-None-Match %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("upstream saw If-None-Match %q, want %q", seen, want)
		}
	}
	// the two 200s spent the budget of 2; the three 304s gave theirs back
	if u := l.StatusAt(time.Now(), nil).Upstreams[0]; u.RequestsUsed != 2 {
		t.Errorf("requests used %d, want 2", u.RequestsUsed)
	}
}

// A GET answered with Last-Modified alone is sent again with If-Modified-Since, and its
// 304 is the stored answer, revalidated; with count_not_modified at its default each 304
// counts against the budget as the 200 did.
func TestConditionalRequestsLastModified(t *testing.T) {
	const stamp = "Wed, 02 Dec 2026 15:00:00 GMT"
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Header.Get("If-Modified-Since")+"|"+r.Header.Get("If-None-Match"))
		if r.Header.Get("If-Modified-Since") == stamp {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Last-Modified", stamp)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"items":["v1"]}`)
	}))
	defer up.Close()
	l, call := listItemsCaller(t, up.URL, ratelimit.Budget{Requests: 10, Window: time.Minute, OnLimit: ratelimit.Reject})
	var first map[string]any
	for i := range 3 {
		res := call()
		if i == 0 {
			first = res
			if res["revalidated"] != nil {
				t.Fatalf("first call = %v", res)
			}
			continue
		}
		if res["revalidated"] != true || res["responseId"] != first["responseId"] || string(mustJSON(res["body"])) != `{"items":["v1"]}` {
			t.Fatalf("call %d = %v, want the stored answer revalidated", i+1, res)
		}
	}
	mu.Lock()
	got := strings.Join(seen, ", ")
	mu.Unlock()
	if want := "|, " + stamp + "|, " + stamp + "|"; got != want {
		t.Errorf("upstream saw If-Modified-Since|If-None-Match %q, want %q", got, want)
	}
	// count_not_modified (default true): the two 304s count as the 200 did
	if u := l.StatusAt(time.Now(), nil).Upstreams[0]; u.RequestsUsed != 3 {
		t.Errorf("requests used %d, want 3", u.RequestsUsed)
	}
}

// listItemsCaller serves the quota spec at upURL under budget b (its Match
// set here, to the upstream) and returns the limiter and a func that calls
// quota.listItems once through MCP.
func listItemsCaller(t *testing.T, upURL string, b ratelimit.Budget) (*ratelimit.Limiter, func() map[string]any) {
	t.Helper()
	cat, ix, eps := servedCatalog(t, 0, parseQuotaSpec(t, "quota", upURL))
	b.Match = HostKey(upURL)
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps, Budgets: []ratelimit.Budget{b}})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: cat.SpecNames(), Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}}})
	srv.Publish(cat, ix, nil)
	c := connectTB(t, srv, nil)
	return l, func() map[string]any {
		t.Helper()
		res, isErr := callTool(t, c, "invoke", map[string]any{"endpointId": "quota.listItems"})
		if isErr {
			t.Fatalf("invoke: %v", res)
		}
		return res
	}
}
