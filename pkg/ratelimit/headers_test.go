package ratelimit

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestParseHeaders(t *testing.T) {
	now := t0 // 2026-11-30T10:00:00Z, epoch 1795946400
	epoch := func(d time.Duration) string { return itoa(now.Add(d).Unix()) }
	q := func(limit, remaining int64, reset time.Duration, src string) Quota {
		x := Quota{Limit: limit, Remaining: remaining, HasRemaining: remaining >= 0, Source: src}
		if remaining < 0 {
			x.Remaining = 0
		}
		if reset >= 0 {
			x.Reset = now.Add(reset)
		}
		return x
	}
	tests := []struct {
		name   string
		status int
		h      http.Header
		body   string
		want   Signal
	}{
		// Retry-After
		{"retry-after seconds on 429", 429, hdr("Retry-After", "30"),
			"", Signal{RateLimited: true, RetryAt: now.Add(30 * time.Second), Source: "retry-after"}},
		{"retry-after http date", 429, hdr("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)),
			"", Signal{RateLimited: true, RetryAt: now.Add(90 * time.Second), Source: "retry-after"}},
		{"retry-after date in the past is now", 429, hdr("Retry-After", now.Add(-time.Hour).Format(http.TimeFormat)),
			"", Signal{RateLimited: true, RetryAt: now, Source: "retry-after"}},
		{"retry-after zero", 429, hdr("Retry-After", "0"),
			"", Signal{RateLimited: true, RetryAt: now, Source: "retry-after"}},
		{"retry-after fraction", 429, hdr("Retry-After", "1.5"),
			"", Signal{RateLimited: true, RetryAt: now.Add(1500 * time.Millisecond), Source: "retry-after"}},
		{"retry-after on 503 is not a rate limit", 503, hdr("Retry-After", "120"),
			"", Signal{RetryAt: now.Add(2 * time.Minute), Source: "retry-after"}},
		{"429 with nothing", 429, hdr(), "", Signal{RateLimited: true, Source: "status"}},
		{"200 with nothing", 200, hdr(), "", Signal{}},
		// odd values
		{"retry-after negative ignored", 429, hdr("Retry-After", "-5"), "", Signal{RateLimited: true, Source: "status"}},
		{"retry-after negative ms ignored", 429, hdr("Retry-After-Ms", "-5"), "", Signal{RateLimited: true, Source: "status"}},
		{"retry-after garbage ignored", 429, hdr("Retry-After", "soon"), "", Signal{RateLimited: true, Source: "status"}},
		// TestRetryAfterFarFutureBlocks: a long or absurd wait is still a wait, read as the longest.
		{"retry-after huge is the longest wait", 429, hdr("Retry-After", "99999999999"), "", Signal{RateLimited: true, RetryAt: now.Add(MaxRetryAfter), Source: "retry-after"}},
		{"retry-after 999999999 is the longest wait", 429, hdr("Retry-After", "999999999"), "", Signal{RateLimited: true, RetryAt: now.Add(MaxRetryAfter), Source: "retry-after"}},
		{"retry-after 1e26 is the longest wait", 429, hdr("Retry-After", "1e26"), "", Signal{RateLimited: true, RetryAt: now.Add(MaxRetryAfter), Source: "retry-after"}},
		{"retry-after beyond float64 is the longest wait", 429, hdr("Retry-After", "1e400"), "", Signal{RateLimited: true, RetryAt: now.Add(MaxRetryAfter), Source: "retry-after"}},
		{"retry-after 30h is the longest wait", 429, hdr("Retry-After", "108000"), "", Signal{RateLimited: true, RetryAt: now.Add(MaxRetryAfter), Source: "retry-after"}},
		{"retry-after date in year 9999 is the longest wait", 429, hdr("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"), "", Signal{RateLimited: true, RetryAt: now.Add(MaxRetryAfter), Source: "retry-after"}},
		{"retry-after-ms huge is the longest wait", 429, hdr("Retry-After-Ms", "1e20"), "", Signal{RateLimited: true, RetryAt: now.Add(MaxRetryAfter), Source: "retry-after-ms"}},
		{"retry-after Inf ignored", 429, hdr("Retry-After", "Inf"), "", Signal{RateLimited: true, Source: "status"}},
		{"retry-after NaN ignored", 429, hdr("Retry-After", "NaN"), "", Signal{RateLimited: true, Source: "status"}},
		{"remaining negative ignored", 200, hdr("X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "-1"),
			"", Signal{Requests: Quota{Limit: 60, Source: "x-ratelimit-limit"}}},
		{"limit garbage ignored", 200, hdr("X-RateLimit-Limit", "lots", "X-RateLimit-Remaining", "3"),
			"", Signal{Requests: q(0, 3, -1, "x-ratelimit-remaining")}},
		{"reset garbage ignored", 200, hdr("X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "tomorrow"),
			"", Signal{Requests: q(0, 3, -1, "x-ratelimit-remaining")}},
		{"reset epoch far future ignored", 200, hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "9999999999"),
			"", Signal{Requests: q(0, 0, -1, "x-ratelimit-remaining")}},
		// retry-after-ms (OpenAI, Azure)
		{"retry-after-ms", 429, hdr("Retry-After-Ms", "563"),
			"", Signal{RateLimited: true, RetryAt: now.Add(563 * time.Millisecond), Source: "retry-after-ms"}},
		{"retry-after-ms and seconds: the later wins", 429, hdr("Retry-After", "1", "Retry-After-Ms", "563"),
			"", Signal{RateLimited: true, RetryAt: now.Add(time.Second), Source: "retry-after"}},
		{"azure x-ms-retry-after-ms", 429, hdr("X-Ms-Retry-After-Ms", "2000"),
			"", Signal{RateLimited: true, RetryAt: now.Add(2 * time.Second), Source: "x-ms-retry-after-ms"}},
		// GitHub
		{"github core", 200, hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", epoch(time.Hour),
			"X-RateLimit-Used", "1", "X-RateLimit-Resource", "core"),
			"", Signal{Requests: q(5000, 4999, time.Hour, "x-ratelimit-remaining"), Resource: "core"}},
		{"github search", 200, hdr("X-RateLimit-Limit", "30", "X-RateLimit-Remaining", "12", "X-RateLimit-Reset", epoch(42*time.Second),
			"X-RateLimit-Resource", "search"),
			"", Signal{Requests: q(30, 12, 42*time.Second, "x-ratelimit-remaining"), Resource: "search"}},
		{"github primary 403", 403, hdr("X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(20*time.Minute),
			"X-RateLimit-Resource", "core"), `{"message":"API rate limit exceeded for 1.2.3.4."}`,
			Signal{RateLimited: true, Requests: q(60, 0, 20*time.Minute, "x-ratelimit-remaining"), Resource: "core", Source: "x-ratelimit-remaining"}},
		{"github secondary 403 with retry-after", 403, hdr("Retry-After", "60", "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4000",
			"X-RateLimit-Reset", epoch(30*time.Minute)), `{"message":"You have exceeded a secondary rate limit."}`,
			Signal{RateLimited: true, RetryAt: now.Add(time.Minute), Requests: q(5000, 4000, 30*time.Minute, "x-ratelimit-remaining"), Source: "retry-after"}},
		{"github secondary 403 by body only", 403, hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4000"),
			`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes"}`,
			Signal{RateLimited: true, Requests: q(5000, 4000, -1, "x-ratelimit-remaining"), Source: "body"}},
		{"github 403 not a rate limit", 403, hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4000"),
			`{"message":"Resource not accessible by integration"}`,
			Signal{Requests: q(5000, 4000, -1, "x-ratelimit-remaining")}},
		{"github 429", 429, hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(5*time.Minute)),
			"", Signal{RateLimited: true, Requests: q(5000, 0, 5*time.Minute, "x-ratelimit-remaining"), Source: "x-ratelimit-remaining"}},
		// OpenAI
		{"openai ok", 200, hdr("X-Ratelimit-Limit-Requests", "60", "X-Ratelimit-Limit-Tokens", "150000",
			"X-Ratelimit-Remaining-Requests", "59", "X-Ratelimit-Remaining-Tokens", "149984",
			"X-Ratelimit-Reset-Requests", "1s", "X-Ratelimit-Reset-Tokens", "6m0s"),
			"", Signal{Requests: q(60, 59, time.Second, "x-ratelimit-remaining-requests"), Tokens: q(150000, 149984, 6*time.Minute, "x-ratelimit-remaining-tokens")}},
		{"openai ms resets", 200, hdr("X-Ratelimit-Limit-Requests", "5000", "X-Ratelimit-Remaining-Requests", "4999",
			"X-Ratelimit-Reset-Requests", "12ms", "X-Ratelimit-Limit-Tokens", "2000000", "X-Ratelimit-Remaining-Tokens", "1999000",
			"X-Ratelimit-Reset-Tokens", "20ms"),
			"", Signal{Requests: q(5000, 4999, 12*time.Millisecond, "x-ratelimit-remaining-requests"), Tokens: q(2000000, 1999000, 20*time.Millisecond, "x-ratelimit-remaining-tokens")}},
		{"openai 429 tokens exhausted", 429, hdr("X-Ratelimit-Limit-Tokens", "40000", "X-Ratelimit-Remaining-Tokens", "0",
			"X-Ratelimit-Reset-Tokens", "1m30.5s", "Retry-After-Ms", "90500"),
			"", Signal{RateLimited: true, RetryAt: now.Add(90500 * time.Millisecond), Tokens: q(40000, 0, 90500*time.Millisecond, "x-ratelimit-remaining-tokens"), Source: "retry-after-ms"}},
		{"openai 429 without retry", 429, hdr("X-Ratelimit-Limit-Requests", "3", "X-Ratelimit-Remaining-Requests", "0",
			"X-Ratelimit-Reset-Requests", "20s"),
			"", Signal{RateLimited: true, Requests: q(3, 0, 20*time.Second, "x-ratelimit-remaining-requests"), Source: "x-ratelimit-remaining-requests"}},
		// Anthropic
		{"anthropic ok", 200, hdr("Anthropic-Ratelimit-Requests-Limit", "50", "Anthropic-Ratelimit-Requests-Remaining", "49",
			"Anthropic-Ratelimit-Requests-Reset", now.Add(time.Minute).Format(time.RFC3339),
			"Anthropic-Ratelimit-Tokens-Limit", "80000", "Anthropic-Ratelimit-Tokens-Remaining", "79000",
			"Anthropic-Ratelimit-Tokens-Reset", now.Add(30*time.Second).Format(time.RFC3339)),
			"", Signal{Requests: q(50, 49, time.Minute, "anthropic-ratelimit-requests-remaining"), Tokens: q(80000, 79000, 30*time.Second, "anthropic-ratelimit-tokens-remaining")}},
		{"anthropic input tokens stricter", 200, hdr("Anthropic-Ratelimit-Requests-Limit", "50", "Anthropic-Ratelimit-Requests-Remaining", "49",
			"Anthropic-Ratelimit-Input-Tokens-Limit", "40000", "Anthropic-Ratelimit-Input-Tokens-Remaining", "100",
			"Anthropic-Ratelimit-Input-Tokens-Reset", now.Add(10*time.Second).Format(time.RFC3339),
			"Anthropic-Ratelimit-Output-Tokens-Limit", "8000", "Anthropic-Ratelimit-Output-Tokens-Remaining", "7000"),
			"", Signal{Requests: q(50, 49, -1, "anthropic-ratelimit-requests-remaining"), Tokens: q(40000, 100, 10*time.Second, "anthropic-ratelimit-input-tokens-remaining")}},
		{"anthropic 429", 429, hdr("Retry-After", "7", "Anthropic-Ratelimit-Requests-Limit", "50", "Anthropic-Ratelimit-Requests-Remaining", "0",
			"Anthropic-Ratelimit-Requests-Reset", now.Add(7*time.Second).Format(time.RFC3339Nano)),
			"", Signal{RateLimited: true, RetryAt: now.Add(7 * time.Second), Requests: q(50, 0, 7*time.Second, "anthropic-ratelimit-requests-remaining"), Source: "retry-after"}},
		// Stripe
		{"stripe 429", 429, hdr("Stripe-Should-Retry", "true", "Request-Id", "req_123"), "", Signal{RateLimited: true, Source: "status"}},
		{"stripe 429 lock timeout with retry", 429, hdr("Retry-After", "2", "Stripe-Rate-Limited-Reason", "global-rate"),
			"", Signal{RateLimited: true, RetryAt: now.Add(2 * time.Second), Source: "retry-after"}},
		// IETF drafts
		{"ietf draft-08 structured", 200, hdr("RateLimit", `"default";r=50;t=30`, "RateLimit-Policy", `"default";q=100;w=60`),
			"", Signal{Requests: Quota{Limit: 100, Remaining: 50, HasRemaining: true, Reset: now.Add(30 * time.Second), Window: time.Minute, Source: "ratelimit"}}},
		{"ietf structured two policies, stricter chosen", 200, hdr("RateLimit", `"hour";r=500;t=3000, "burst";r=0;t=2`,
			"RateLimit-Policy", `"hour";q=1000;w=3600, "burst";q=10;w=10`),
			"", Signal{Requests: Quota{Limit: 10, Remaining: 0, HasRemaining: true, Reset: now.Add(2 * time.Second), Window: 10 * time.Second, Source: "ratelimit"}}},
		{"ietf draft-05 dictionary", 200, hdr("RateLimit", "limit=100, remaining=50, reset=5"),
			"", Signal{Requests: q(100, 50, 5*time.Second, "ratelimit")}},
		{"ietf old separate headers", 200, hdr("RateLimit-Limit", "100", "RateLimit-Remaining", "99", "RateLimit-Reset", "60"),
			"", Signal{Requests: q(100, 99, time.Minute, "ratelimit-remaining")}},
		{"ietf draft-03 limit with policy", 200, hdr("RateLimit-Limit", "10, 10;w=1, 1000;w=3600", "RateLimit-Remaining", "9", "RateLimit-Reset", "1"),
			"", Signal{Requests: Quota{Limit: 10, Remaining: 9, HasRemaining: true, Reset: now.Add(time.Second), Window: time.Second, Source: "ratelimit-remaining"}}},
		{"ietf older policy form", 200, hdr("RateLimit", `"default";r=5;t=10`, "RateLimit-Policy", "100;w=60"),
			"", Signal{Requests: Quota{Limit: 100, Remaining: 5, HasRemaining: true, Reset: now.Add(10 * time.Second), Window: time.Minute, Source: "ratelimit"}}},
		{"ietf 429 remaining zero", 429, hdr("RateLimit", `"default";r=0;t=12`),
			"", Signal{RateLimited: true, Requests: q(0, 0, 12*time.Second, "ratelimit"), Source: "ratelimit"}},
		{"ietf garbage", 200, hdr("RateLimit", `"default";r=x;t=;;,,"`), "", Signal{}},
		// Envoy
		{"envoy ratelimited", 429, hdr("X-Envoy-Ratelimited", "true"), "", Signal{RateLimited: true, Source: "x-envoy-ratelimited"}},
		{"envoy ratelimited on other status", 503, hdr("X-Envoy-Ratelimited", "true"), "", Signal{RateLimited: true, Source: "x-envoy-ratelimited"}},
		{"envoy descriptor headers", 200, hdr("X-RateLimit-Limit", "10, 10;w=60", "X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "36"),
			"", Signal{Requests: Quota{Limit: 10, Remaining: 7, HasRemaining: true, Reset: now.Add(36 * time.Second), Window: time.Minute, Source: "x-ratelimit-remaining"}}},
		// others
		{"twitter x-rate-limit", 200, hdr("X-Rate-Limit-Limit", "900", "X-Rate-Limit-Remaining", "899", "X-Rate-Limit-Reset", epoch(15*time.Minute)),
			"", Signal{Requests: q(900, 899, 15*time.Minute, "x-rate-limit-remaining")}},
		{"reset as epoch milliseconds", 200, hdr("X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", itoa(now.Add(2500*time.Millisecond).UnixMilli())),
			"", Signal{Requests: q(100, 1, 2500*time.Millisecond, "x-ratelimit-remaining")}},
		{"reset as seconds until", 200, hdr("X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "59"),
			"", Signal{Requests: q(100, 1, 59*time.Second, "x-ratelimit-remaining")}},
		{"reset as fractional epoch", 200, hdr("X-RateLimit-Remaining", "1", "X-RateLimit-Reset", itoa(now.Unix()+10)+".5"),
			"", Signal{Requests: q(0, 1, 10500*time.Millisecond, "x-ratelimit-remaining")}},
		{"reset epoch in the past is now", 200, hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(-time.Minute)),
			"", Signal{Requests: q(0, 0, 0, "x-ratelimit-remaining")}},
		{"lower-case keys from a raw map", 200, http.Header{"X-Ratelimit-Remaining": {"4"}, "X-Ratelimit-Limit": {"5"}},
			"", Signal{Requests: q(5, 4, -1, "x-ratelimit-remaining")}},
		{"github resource too long ignored", 200, hdr("X-RateLimit-Remaining", "4", "X-RateLimit-Resource", string(make([]byte, 100))),
			"", Signal{Requests: q(0, 4, -1, "x-ratelimit-remaining")}},
	}
	if len(tests) < 40 {
		t.Fatalf("only %d header sets", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseHeaders(tt.status, tt.h, []byte(tt.body), now)
			tt.want.Status = tt.status
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseHeaders (-want +got):\n%s", diff)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func FuzzParseHeaders(f *testing.F) {
	f.Add(429, "Retry-After", "30", "X-RateLimit-Reset", "1795946400", []byte("rate limit"))
	f.Add(200, "RateLimit", `"default";r=50;t=30`, "RateLimit-Policy", `"default";q=100;w=60`, []byte(nil))
	f.Add(200, "X-Ratelimit-Reset-Tokens", "6m0s", "X-Ratelimit-Remaining-Tokens", "0", []byte(nil))
	f.Add(403, "X-RateLimit-Limit", "10, 10;w=60", "X-RateLimit-Remaining", "0", []byte("{}"))
	f.Add(200, "RateLimit", "limit=100, remaining=50, reset=5", "Anthropic-Ratelimit-Requests-Reset", "2026-11-30T10:00:08Z", []byte(nil))
	f.Add(429, "Retry-After", "999999999", "Retry-After-Ms", "-5", []byte(nil))
	f.Add(429, "Retry-After", "1e26", "Retry-After-Ms", "1e400", []byte(nil))
	f.Fuzz(func(t *testing.T, status int, k1, v1, k2, v2 string, body []byte) {
		h := http.Header{}
		h.Set(k1, v1)
		h.Add(k2, v2)
		// also put the values under the names the parser reads
		for _, name := range []string{"Retry-After", "Ratelimit", "Ratelimit-Policy", "X-Ratelimit-Reset", "X-Ratelimit-Limit"} {
			h.Add(name, v1)
		}
		sig := ParseHeaders(status, h, body, t0)
		if !sig.RetryAt.IsZero() && (sig.RetryAt.Before(t0) || sig.RetryAt.Sub(t0) > MaxRetryAfter) {
			t.Fatalf("RetryAt %v out of bounds", sig.RetryAt)
		}
		for _, q := range []Quota{sig.Requests, sig.Tokens} {
			if q.Remaining < 0 || q.Limit < 0 || q.Window < 0 {
				t.Fatalf("negative quota %+v", q)
			}
		}
		l, _ := New(Options{Endpoints: []Endpoint{{ID: "e", Upstream: "u"}}})
		tk, err := l.AdmitAt(Request{Endpoint: "e"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		tk.ObserveAt(sig, t0)
		tk.ReleaseAt(t0)
		if w := l.ReadyAt("e", t0); w < 0 || w > maxAhead+time.Second {
			t.Fatalf("wait %v after %+v", w, sig)
		}
	})
}
