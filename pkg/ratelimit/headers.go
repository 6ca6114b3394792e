package ratelimit

import (
	"bytes"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Signal is what one upstream response says about rate limits. The zero Signal says nothing.
type Signal struct {
	Status int
	// RateLimited is true when the upstream refused the call for rate: a 429, a 403 that
	// GitHub-style says so (remaining zero, Retry-After, or "rate limit" in the body), or an
	// x-envoy-ratelimited answer.
	RateLimited bool
	// RetryAt is when the upstream asked to be called again (Retry-After, retry-after-ms);
	// zero when it did not say.
	RetryAt time.Time
	// Requests and Tokens are the advertised request and token quotas.
	Requests Quota
	Tokens   Quota
	// Resource names the quota the response counted against when the upstream says so
	// (GitHub's x-ratelimit-resource: core, search, graphql); empty for the whole upstream.
	Resource string
	// Source is the lower-case name of the header that decided RetryAt or RateLimited,
	// "status" when only the status code did, "body" when only the body did.
	Source string
}

// Quota is an advertised limit. Fields the upstream did not send are zero.
type Quota struct {
	Limit        int64 // calls or tokens per window; zero: not said
	Remaining    int64 // valid when HasRemaining
	HasRemaining bool
	Reset        time.Time     // when Remaining is restored to Limit; zero: not said
	Window       time.Duration // the window, when the upstream states it (IETF w=)
	Source       string        // the lower-case header name it came from
}

func (q Quota) empty() bool { return q.Limit == 0 && !q.HasRemaining && q.Reset.IsZero() }

// maxAhead bounds the resets and windows parsed from headers: one further ahead than this
// is taken as garbage and ignored.
const maxAhead = 48 * time.Hour

// MaxRetryAfter is the longest wait an explicit Retry-After (or retry-after-ms) is read as.
// A longer one is still a wait, however absurd (999999999 seconds, 1e26, a date in year
// 9999): it is read as MaxRetryAfter, so the upstream is blocked that long, the call is not
// retried, and the model is told to wait that long; the first call after the block probes
// whether the ban still holds. A negative or unreadable Retry-After is no time here: a
// rate-limited answer then blocks for the one-second minimum (and invoke does not retry
// the call, since a wait was asked for).
const MaxRetryAfter = 24 * time.Hour

// ParseHeaders reads the rate-limit information of one response received at now. body may
// hold the first bytes of the response body (nil is fine); it is only searched for "rate
// limit" to tell a GitHub rate-limit 403 from another 403. Values that are negative or
// garbage are ignored, as are resets absurdly far ahead; a retry time further ahead than
// MaxRetryAfter is read as MaxRetryAfter. ParseHeaders never panics.
func ParseHeaders(status int, h http.Header, body []byte, now time.Time) Signal {
	s := Signal{Status: status}
	retrySrc := ""
	if t, ok := parseRetryAfter(h.Get("Retry-After"), now); ok {
		s.RetryAt, retrySrc = t, "retry-after"
	}
	for _, name := range []string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		if t, ok := parseMillisAhead(h.Get(name), now); ok && t.After(s.RetryAt) {
			s.RetryAt, retrySrc = t, strings.ToLower(name)
		}
	}

	s.Requests, s.Tokens = quotas(h, now)
	s.Resource = firstToken(h.Get("X-Ratelimit-Resource"))
	if len(s.Resource) > 64 {
		s.Resource = ""
	}

	envoy := strings.EqualFold(strings.TrimSpace(h.Get("X-Envoy-Ratelimited")), "true")
	exhausted := s.Requests.HasRemaining && s.Requests.Remaining == 0
	switch {
	case status == http.StatusTooManyRequests:
		s.RateLimited = true
	case envoy:
		s.RateLimited = true
	case status == http.StatusForbidden && (exhausted || retrySrc != "" || bodySaysRateLimit(body)):
		s.RateLimited = true
	}
	switch {
	case retrySrc != "":
		s.Source = retrySrc
	case !s.RateLimited:
	case exhausted:
		s.Source = s.Requests.Source
	case s.Tokens.HasRemaining && s.Tokens.Remaining == 0:
		s.Source = s.Tokens.Source
	case envoy:
		s.Source = "x-envoy-ratelimited"
	case status == http.StatusForbidden:
		s.Source = "body"
	default:
		s.Source = "status"
	}
	return s
}

// bodySaysRateLimit looks for GitHub's wording in the first bytes of a 403 body:
// "API rate limit exceeded", "You have exceeded a secondary rate limit", "abuse detection".
func bodySaysRateLimit(body []byte) bool {
	if len(body) > 1024 {
		body = body[:1024]
	}
	b := bytes.ToLower(body)
	return bytes.Contains(b, []byte("rate limit")) || bytes.Contains(b, []byte("ratelimit")) ||
		bytes.Contains(b, []byte("abuse detection"))
}

// quotas picks the first header family present, in order: OpenAI, Anthropic,
// X-RateLimit-*, X-Rate-Limit-*, the IETF RateLimit field, the older RateLimit-* headers.
func quotas(h http.Header, now time.Time) (req, tok Quota) {
	// OpenAI: x-ratelimit-{limit,remaining,reset}-{requests,tokens}, resets as durations.
	req = family(h, now, "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests")
	tok = family(h, now, "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens")
	if !req.empty() || !tok.empty() {
		return req, tok
	}
	// Anthropic: anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}.
	req = family(h, now, "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset")
	tok = family(h, now, "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset")
	for _, kind := range []string{"Input", "Output"} {
		p := "Anthropic-Ratelimit-" + kind + "-Tokens-"
		if q := family(h, now, p+"Limit", p+"Remaining", p+"Reset"); stricter(q, tok) {
			tok = q
		}
	}
	if !req.empty() || !tok.empty() {
		return req, tok
	}
	// GitHub, Envoy, Twitter and most others.
	for _, p := range []string{"X-Ratelimit-", "X-Rate-Limit-"} {
		if req = family(h, now, p+"Limit", p+"Remaining", p+"Reset"); !req.empty() {
			return req, Quota{}
		}
	}
	if req = ietfField(h, now); !req.empty() {
		return req, Quota{}
	}
	return family(h, now, "Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset"), Quota{}
}

// stricter reports whether q leaves fewer tokens than cur.
func stricter(q, cur Quota) bool {
	if q.empty() {
		return false
	}
	if cur.empty() || !cur.HasRemaining {
		return q.HasRemaining
	}
	return q.HasRemaining && q.Remaining < cur.Remaining
}

// family reads one limit/remaining/reset triple.
func family(h http.Header, now time.Time, limit, remaining, reset string) Quota {
	var q Quota
	if v := h.Get(limit); v != "" {
		if n, w, ok := parseLimit(v); ok {
			q.Limit, q.Window, q.Source = n, w, strings.ToLower(limit)
		}
	}
	if v := h.Get(reset); v != "" {
		if t, ok := parseReset(v, now); ok {
			q.Reset, q.Source = t, strings.ToLower(reset)
		}
	}
	if v := h.Get(remaining); v != "" {
		if n, ok := parseCount(firstToken(v)); ok {
			q.Remaining, q.HasRemaining, q.Source = n, true, strings.ToLower(remaining)
		}
	}
	return q
}

// parseLimit reads "100", or the IETF/Envoy form "100, 100;w=60" (also window=60), where
// the window comes from the policy with the same quota, else the first that states one.
func parseLimit(v string) (n int64, window time.Duration, ok bool) {
	items := parseSFList(v)
	if len(items) == 0 {
		return 0, 0, false
	}
	n, ok = parseCount(items[0].name)
	if !ok || n == 0 {
		return 0, 0, false
	}
	for _, it := range items {
		w, found := it.params["w"]
		if !found {
			w, found = it.params["window"]
		}
		s, ok := parseCount(w)
		if !found || !ok || s == 0 || time.Duration(s)*time.Second > maxAhead {
			continue
		}
		if m, _ := parseCount(it.name); m == n || window == 0 {
			window = time.Duration(s) * time.Second
			if m == n {
				break
			}
		}
	}
	return n, window, true
}

// parseCount reads a non-negative integer (a float is floored); garbage is not ok.
func parseCount(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, n >= 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1e15 {
		return 0, false
	}
	return int64(f), true
}

func firstToken(v string) string {
	v, _, _ = strings.Cut(v, ",")
	return strings.TrimSpace(v)
}

// parseRetryAfter reads Retry-After: delay seconds (a fraction is allowed) or an HTTP date,
// at most MaxRetryAfter ahead.
func parseRetryAfter(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if f, ok := parseDelay(v); ok {
		return retryAhead(now, f*float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if t.Sub(now) > MaxRetryAfter {
			return now.Add(MaxRetryAfter), true
		}
		return within(now, t)
	}
	return time.Time{}, false
}

func parseMillisAhead(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	f, ok := parseDelay(v)
	if !ok {
		return time.Time{}, false
	}
	return retryAhead(now, f*float64(time.Millisecond))
}

// parseDelay reads a number of seconds or milliseconds; one too large for float64 is +Inf
// (a long wait all the same), NaN and text are not ok.
func parseDelay(v string) (float64, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	if math.IsNaN(f) {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !('0' <= c && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
			return 0, false // "Inf", hex: not a delay
		}
	}
	return f, true
}

// retryAhead returns now plus d nanoseconds, d at most MaxRetryAfter; a negative d is not
// ok (read as absent).
func retryAhead(now time.Time, d float64) (time.Time, bool) {
	if math.IsNaN(d) || d < 0 {
		return time.Time{}, false
	}
	if d > float64(MaxRetryAfter) {
		return now.Add(MaxRetryAfter), true
	}
	return now.Add(time.Duration(math.Ceil(d))), true
}

// ahead returns now plus d nanoseconds, when d is a sane delay.
func ahead(now time.Time, d float64) (time.Time, bool) {
	if math.IsNaN(d) || d < 0 || d > float64(maxAhead) {
		return time.Time{}, false
	}
	return now.Add(time.Duration(math.Ceil(d))), true
}

// within accepts t when it is no further than maxAhead; a past t becomes now.
func within(now, t time.Time) (time.Time, bool) {
	if t.Sub(now) > maxAhead {
		return time.Time{}, false
	}
	if t.Before(now) {
		return now, true
	}
	return t, true
}

// parseReset reads a reset in any of the forms upstreams use: a Go-style duration ("6m0s",
// "1s", "12ms"), a number of seconds until the reset, epoch seconds (from 1e9) or epoch
// milliseconds (from 1e12), an RFC 3339 time (Anthropic) or an HTTP date.
func parseReset(v string, now time.Time) (time.Time, bool) {
	v = firstToken(v)
	if v == "" {
		return time.Time{}, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case math.IsNaN(f) || f < 0:
			return time.Time{}, false
		case f >= 1e12 && f < 1e14:
			return within(now, time.UnixMilli(int64(f)))
		case f >= 1e9 && f < 1e11:
			sec, frac := math.Modf(f)
			return within(now, time.Unix(int64(sec), int64(frac*1e9)))
		case f >= 1e9:
			return time.Time{}, false
		default:
			return ahead(now, f*float64(time.Second))
		}
	}
	if d, err := time.ParseDuration(v); err == nil {
		return ahead(now, float64(d))
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return within(now, t)
	}
	if t, err := http.ParseTime(v); err == nil {
		return within(now, t)
	}
	return time.Time{}, false
}

// sfItem is one member of an IETF structured-field list: a name (token, quoted string or
// bare integer) and its parameters.
type sfItem struct {
	name   string
	params map[string]string
}

// parseSFList splits a structured-field list such as `"default";r=50;t=30, "burst";r=0;t=2`.
// It is lenient: anything it cannot read is skipped.
func parseSFList(v string) []sfItem {
	var items []sfItem
	for _, member := range splitOutsideQuotes(v, ',') {
		parts := splitOutsideQuotes(member, ';')
		if len(parts) == 0 {
			continue
		}
		it := sfItem{name: strings.Trim(strings.TrimSpace(parts[0]), `"`), params: map[string]string{}}
		for _, p := range parts[1:] {
			k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			it.params[strings.ToLower(k)] = strings.Trim(val, `"`)
		}
		items = append(items, it)
		if len(items) == 16 {
			break
		}
	}
	return items
}

func splitOutsideQuotes(v string, sep byte) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			quoted = !quoted
		case sep:
			if !quoted {
				out = append(out, v[start:i])
				start = i + 1
			}
		}
	}
	return append(out, v[start:])
}

// ietfField reads the IETF RateLimit field with RateLimit-Policy: the structured form
// (`"default";r=50;t=30` with `"default";q=100;w=60`) and the dictionary form of the
// earlier drafts (`limit=100, remaining=50, reset=5`).
func ietfField(h http.Header, now time.Time) Quota {
	v := h.Get("Ratelimit")
	if v == "" {
		return Quota{}
	}
	var q Quota
	items := parseSFList(v)
	if len(items) > 0 && strings.Contains(items[0].name, "=") {
		// dictionary form: each member is key=value
		for _, it := range items {
			k, val, _ := strings.Cut(it.name, "=")
			switch strings.TrimSpace(strings.ToLower(k)) {
			case "limit":
				if n, _, ok := parseLimit(val); ok {
					q.Limit = n
				}
			case "remaining":
				if n, ok := parseCount(val); ok {
					q.Remaining, q.HasRemaining = n, true
				}
			case "reset":
				if t, ok := parseDeltaSeconds(val, now); ok {
					q.Reset = t
				}
			}
		}
		if !q.empty() {
			q.Source = "ratelimit"
		}
		return q
	}
	// structured form: choose the most constraining item
	var best *sfItem
	var bestRem int64
	for i := range items {
		it := &items[i]
		r, ok := parseCount(it.params["r"])
		if !ok {
			continue
		}
		if best == nil || r < bestRem {
			best, bestRem = it, r
		}
	}
	if best == nil {
		return Quota{}
	}
	q.Remaining, q.HasRemaining, q.Source = bestRem, true, "ratelimit"
	if t, ok := parseDeltaSeconds(best.params["t"], now); ok {
		q.Reset = t
	}
	for _, p := range parseSFList(h.Get("Ratelimit-Policy")) {
		if p.name != best.name && !(best.name == "" || isNumber(p.name)) {
			continue
		}
		if n, ok := parseCount(p.params["q"]); ok && n > 0 {
			q.Limit = n
		} else if n, ok := parseCount(p.name); ok && n > 0 {
			q.Limit = n // older form: 100;w=60
		}
		if w, ok := parseCount(p.params["w"]); ok && w > 0 && time.Duration(w)*time.Second <= maxAhead {
			q.Window = time.Duration(w) * time.Second
		}
		break
	}
	return q
}

func isNumber(s string) bool { _, err := strconv.ParseInt(s, 10, 64); return err == nil }

func parseDeltaSeconds(v string, now time.Time) (time.Time, bool) {
	n, ok := parseCount(v)
	if !ok {
		return time.Time{}, false
	}
	return ahead(now, float64(n)*float64(time.Second))
}
