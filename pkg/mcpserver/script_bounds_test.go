package mcpserver

import (
	"testing"

	"github.com/specgate/specgate/internal/upstreamtest"
)

// TestScriptMaxCallsCountsPages: scripts.max_calls counted api calls, so
// max_calls: 10 with pages: 5 made 50 requests. Each page is one of the
// run's requests now: two calls of five pages spend ten, and the rest are
// refused with nothing sent; a call with fewer left follows fewer pages.
func TestScriptMaxCallsCountsPages(t *testing.T) {
	for _, tt := range []struct {
		name, code string
		want       string
		requests   int
	}{
		{"five pages a call", `
			let ok = 0, refused = 0;
			for (let i = 0; i < 10; i++) {
				try { await api.invoke("paging.listPulls", {parameters: {owner: "rails", repo: "r" + i, per_page: 5}, pages: 5}); ok++; }
				catch (e) { if (e.code === "validation_failed" && e.message.includes("max_calls")) refused++; else throw e; }
			}
			return ok + " ok, " + refused + " refused";`, "2 ok, 8 refused", 10},
		{"fewer left than pages", `
			for (let i = 0; i < 8; i++) await api.invoke("paging.listPulls", {parameters: {owner: "rails", repo: "r" + i, per_page: 5}});
			const r = await api.invoke("paging.listPulls", {parameters: {owner: "rails", repo: "last", per_page: 5}, pages: 5});
			return r.body.length + " items, next page " + (r.nextPage !== null && r.nextPage !== undefined);`, "10 items, next page true", 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newPagingFixture(t, pagingOptions{server: Options{Scripts: ScriptOptions{MaxCalls: 10}}})
			a := callText(t, f.client, "run_script", map[string]any{"code": tt.code}).ok(t)
			if a.m["result"] != tt.want {
				t.Errorf("result %v, want %q", a.m["result"], tt.want)
			}
			if n := f.pages.Count(upstreamtest.GitHubStyle); n != tt.requests {
				t.Errorf("upstream saw %d requests, want %d (scripts.max_calls)", n, tt.requests)
			}
		})
	}
}
