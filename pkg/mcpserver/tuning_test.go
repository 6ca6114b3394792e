package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/upstreamtest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// TestSetRateLimitOnShadowBudgetSaysShadow: set_rate_limit on a shadow
// budget (enforce: false) answered the new limit as if it held calls; it
// holds none, and the answer now says so. The calls past the new limit go.
func TestSetRateLimitOnShadowBudgetSaysShadow(t *testing.T) {
	for _, tt := range []struct {
		name   string
		shadow bool
	}{{"shadow", true}, {"enforced", false}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newGovFixture(t, govConfig{
				upstream: upstreamtest.Options{Limit: 100, Window: time.Second},
				budgets: func(key string) []ratelimit.Budget {
					return []ratelimit.Budget{{Match: key, Requests: 100, Window: time.Minute, OnLimit: ratelimit.Reject, Shadow: tt.shadow}}
				},
				tuning: true,
			})
			res := f.callOK(t, "set_rate_limit", map[string]any{"upstream": f.key, "requestsPerWindow": 1})
			note, _ := res["note"].(string)
			if got := res["shadow"] == true && strings.Contains(note, "shadow"); got != tt.shadow {
				t.Errorf("set_rate_limit answered %v: says shadow %v, want %v", res, got, tt.shadow)
			}
			f.invokeOK(t, "quota.listItems")
			if tt.shadow {
				f.invokeOK(t, "quota.listItems")
			} else {
				f.invokeFail(t, "quota.listItems", "rate_limit")
			}
		})
	}
}
