package mcpserver

import (
	"testing"
	"time"

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

// TestScriptCooldownKeysOnDeclaredArguments: inside a script the cooldown
// keyed on the arguments as written, so an identical request repeated with
// an extra header the operation does not declare, a number written as a
// string, or a parameter named by its location went out each time. It keys
// on what the declared arguments send: those repeats are refused, nothing
// sent; a declared parameter's other value is another request, and goes.
func TestScriptCooldownKeysOnDeclaredArguments(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{cooldown: time.Minute})
	a := callText(t, f.client, "run_script", map[string]any{"code": `
		const call = async args => {
			try { await api.invoke("paging.listPulls", args); return "sent"; } catch (e) { return e.code; }
		};
		const p = {owner: "rails", repo: "rails"};
		return [
			await call({parameters: {...p, per_page: 1}}),
			await call({parameters: {...p, per_page: 1}, headers: {"X-Nonce": "1"}}),
			await call({parameters: {...p, per_page: "1"}}),
			await call({parameters: {...p, "query.per_page": 1}}),
			await call({parameters: {...p, per_page: 2}}),
		].join(" ");`}).ok(t)
	if got, want := a.m["result"], "sent rate_limit rate_limit rate_limit sent"; got != want {
		t.Errorf("result %q, want %q", got, want)
	}
	if n := f.pages.Count(upstreamtest.GitHubStyle); n != 2 {
		t.Errorf("upstream saw %d requests, want 2", n)
	}
}
