package invoke

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/ratelimit"
)

const getDoc = `{"openapi":"3.0.3","info":{"title":"g","version":"1"},
 "components":{"securitySchemes":{"key":{"type":"apiKey","in":"header","name":"X-API-Key"}}},
 "security":[{"key":[]}],
 "paths":{"/thing":{"get":{"operationId":"getThing","responses":{"200":{"description":"ok"}}}}}}`

// callThing prepares and sends getThing against url with opts.
func callThing(t *testing.T, baseURL string, opts Options) (*Result, error) {
	t.Helper()
	s := parseSpec(t, "g", getDoc, baseURL)
	call, err := New(opts).Prepare(t.Context(), endpoint(t, s, "getThing"), Args{})
	if err != nil {
		t.Fatal(err)
	}
	return call.Do(t.Context())
}

// A Result is the answer as read from the wire, whatever its type: what
// the model reads of it is package answer's.
func TestResultKeepsTheWireAnswer(t *testing.T) {
	tests := []struct {
		name string
		ct   string
		body []byte
	}{
		{"json", "application/json; charset=utf-8", []byte(`{"a":[1,2]}`)},
		{"problem+json", "application/problem+json", []byte(`{"title":"x"}`)},
		{"malformed json", "application/json", []byte(`{"a":`)},
		{"text", "text/plain", []byte("héllo")},
		{"no type json", "", []byte(` [1]`)},
		{"binary", "image/png", []byte{0x89, 'P', 'N', 'G', 0, 1}},
		{"empty", "application/json", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ct)
				if tt.ct == "" {
					w.Header()["Content-Type"] = nil
				}
				w.Header().Set("X-RateLimit-Remaining", "41")
				w.Header().Set("RateLimit-Policy", "100;w=60")
				w.Header().Set("Anthropic-Ratelimit-Requests-Limit", "50")
				w.Header().Set("X-Rate-Limit-Reset", "5")
				w.Header().Set("Set-Cookie", "s=1")
				w.Header().Set("Server", "test")
				_, _ = w.Write(tt.body)
			})
			res, err := callThing(t, up.URL, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.RawBody, tt.body) {
				t.Errorf("body %q, want %q", res.RawBody, tt.body)
			}
			for _, h := range []string{"x-ratelimit-remaining", "ratelimit-policy", "anthropic-ratelimit-requests-limit", "x-rate-limit-reset"} {
				if res.Headers[h] == "" {
					t.Errorf("header %s missing from %v", h, res.Headers)
				}
			}
			for _, h := range []string{"set-cookie", "server", "date"} {
				if _, ok := res.Headers[h]; ok {
					t.Errorf("header %s kept", h)
				}
			}
			if res.RawHeaders.Get("Server") != "test" || res.Size != int64(len(tt.body)) || res.Truncated {
				t.Errorf("raw headers %v size %d truncated %v", res.RawHeaders, res.Size, res.Truncated)
			}
		})
	}
}

func TestHugeResponseIsTruncated(t *testing.T) {
	const huge = 2 << 30
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(huge))
		chunk := make([]byte, 32<<10)
		for i := range chunk {
			chunk[i] = 'a'
		}
		for n := 0; n < huge; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	res, err := callThing(t, up.URL, Options{MaxResponseBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.Size != huge || !strings.Contains(res.TruncatedReason, "1000 byte limit") {
		t.Errorf("truncated %v size %d reason %q", res.Truncated, res.Size, res.TruncatedReason)
	}
	if len(res.RawBody) != 1000 {
		t.Errorf("body len %d", len(res.RawBody))
	}
}

func TestEndlessResponseIsTruncated(t *testing.T) {
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for {
			if _, err := io.WriteString(w, strings.Repeat("x", 4096)); err != nil {
				return
			}
		}
	})
	res, err := callThing(t, up.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.Size != -1 || !strings.Contains(res.TruncatedReason, "full size unknown") {
		t.Errorf("truncated %v size %d reason %q", res.Truncated, res.Size, res.TruncatedReason)
	}
	if len(res.RawBody) != DefaultMaxResponseBytes {
		t.Errorf("body len %d", len(res.RawBody))
	}
}

func TestSlowDripStopsAtDeadline(t *testing.T) {
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := io.WriteString(w, "["); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	})
	start := time.Now()
	res, err := callThing(t, up.URL, Options{Timeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	if !res.Truncated || !strings.Contains(res.TruncatedReason, "call deadline") {
		t.Errorf("truncated %v reason %q", res.Truncated, res.TruncatedReason)
	}
	if len(res.RawBody) == 0 || json.Valid(res.RawBody) {
		t.Errorf("cut JSON body %q, want the part read", res.RawBody)
	}
}

func TestNoHeadersIsTimeout(t *testing.T) {
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	_, err := callThing(t, up.URL, Options{Timeout: 100 * time.Millisecond})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Timeout != 100*time.Millisecond {
		t.Errorf("got %T %v", err, err)
	}
}

func TestCancelled(t *testing.T) {
	started := make(chan struct{})
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { close(started); <-r.Context().Done() })
	s := parseSpec(t, "g", getDoc, up.URL)
	call, err := New(Options{}).Prepare(t.Context(), endpoint(t, s, "getThing"), Args{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	_, err = call.Do(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %T %v", err, err)
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = callThing(t, "http://"+addr, Options{})
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Error(), "connection refused") {
		t.Errorf("got %T %v", err, err)
	}
	// TLS to a plain HTTP server.
	up := newRecorder(t, nil)
	_, err = callThing(t, strings.Replace(up.URL, "http://", "https://", 1), Options{})
	if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "TLS") {
		t.Errorf("got %T %v", err, err)
	}
}

func TestBlockPrivateNetworks(t *testing.T) {
	up := newRecorder(t, nil)
	_, err := callThing(t, up.URL, Options{BlockPrivateNetworks: true})
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "private") {
		t.Errorf("got %T %v", err, err)
	}
	if up.count() != 0 {
		t.Error("request reached a private address")
	}
	// A name that resolves to loopback is refused too: the check is on the
	// resolved address.
	port := up.URL[strings.LastIndex(up.URL, ":")+1:]
	_, err = callThing(t, "http://localhost:"+port, Options{BlockPrivateNetworks: true})
	if !errors.As(err, &ue) {
		t.Errorf("got %T %v", err, err)
	}
	// Off per spec.
	off := false
	if _, err := callThing(t, up.URL, Options{BlockPrivateNetworks: true, Specs: map[string]SpecOptions{"g": {BlockPrivateNetworks: &off}}}); err != nil {
		t.Errorf("got %v", err)
	}
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.0.1", "169.254.169.254", "::1", "fe80::1", "fc00::1", "0.0.0.0", "100.64.0.1", "::ffff:127.0.0.1"} {
		if refusePrivate("tcp", net.JoinHostPort(a, "80"), nil) == nil {
			t.Errorf("%s allowed", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "2606:4700::1111"} {
		if err := refusePrivate("tcp", net.JoinHostPort(a, "443"), nil); err != nil {
			t.Errorf("%s refused", a)
		}
	}
}

func TestRedirects(t *testing.T) {
	other := newRecorder(t, nil)
	var upURL string
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/thing":
			http.Redirect(w, r, upURL+"/moved", http.StatusFound)
		case "/moved":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"moved":true}`)
		}
	})
	upURL = up.URL
	opts := Options{Specs: map[string]SpecOptions{"g": {Auth: map[string]Credential{"key": {Value: "k-123456"}}}}}
	res, err := callThing(t, up.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || up.last(t).Header.Get("X-API-Key") != "k-123456" {
		t.Errorf("same-host redirect: status %d, key %q", res.StatusCode, up.last(t).Header.Get("X-API-Key"))
	}

	// To another host: not followed, the 3xx comes back.
	offsite := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	})
	res, err = callThing(t, offsite.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 302 || res.Headers["location"] != other.URL+"/steal" || other.count() != 0 {
		t.Errorf("status %d location %q other got %d", res.StatusCode, res.Headers["location"], other.count())
	}

	// To an allowed host: followed, credentials dropped.
	otherHost := strings.TrimPrefix(other.URL, "http://")
	allowed := opts
	allowed.AllowedHosts = []string{otherHost}
	res, err = callThing(t, offsite.URL, allowed)
	if err != nil {
		t.Fatal(err)
	}
	got := other.last(t)
	if res.StatusCode != 200 || got.Header.Get("X-API-Key") != "" || got.Header.Get("Authorization") != "" {
		t.Errorf("allowed redirect: status %d headers %v", res.StatusCode, got.Header)
	}
}

func TestStatusErrors(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		check   func(t *testing.T, err error)
		withKey bool
	}{
		{name: "429 seconds", status: 429, header: map[string]string{"Retry-After": "7"}, check: func(t *testing.T, err error) {
			var e *UpstreamRateLimitError
			if !errors.As(err, &e) || e.RetryAfter != 7*time.Second || e.RetryAt.IsZero() {
				t.Errorf("got %T %+v", err, err)
			}
		}},
		{name: "429 date", status: 429, header: map[string]string{"Retry-After": now.Add(time.Hour).UTC().Format(http.TimeFormat)}, check: func(t *testing.T, err error) {
			var e *UpstreamRateLimitError
			if !errors.As(err, &e) || e.RetryAfter < 58*time.Minute || e.RetryAfter > time.Hour {
				t.Errorf("got %T %+v", err, err)
			}
		}},
		{name: "429 bare", status: 429, check: func(t *testing.T, err error) {
			var e *UpstreamRateLimitError
			if !errors.As(err, &e) || e.RetryAfter != 0 {
				t.Errorf("got %T %+v", err, err)
			}
		}},
		{name: "github 403", status: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(now.Add(90*time.Second).Unix(), 10)},
			body: `{"message":"API rate limit exceeded"}`, withKey: true, check: func(t *testing.T, err error) {
				var e *UpstreamRateLimitError
				if !errors.As(err, &e) || e.StatusCode != 403 || e.RetryAfter < 80*time.Second || e.RetryAfter > 91*time.Second {
					t.Errorf("got %T %+v", err, err)
				}
			}},
		{name: "github secondary 403", status: 403, body: `{"message":"You have exceeded a secondary rate limit"}`, withKey: true, check: func(t *testing.T, err error) {
			var e *UpstreamRateLimitError
			if !errors.As(err, &e) {
				t.Errorf("got %T %+v", err, err)
			}
		}},
		{name: "401 with key", status: 401, withKey: true, body: `{"error":"bad key"}`, check: func(t *testing.T, err error) {
			var e *AuthError
			if !errors.As(err, &e) || !e.Refused || !strings.Contains(e.Error(), "specs[g].auth.key.value") {
				t.Errorf("got %T %v", err, err)
			}
		}},
		{name: "401 without key", status: 401, check: func(t *testing.T, err error) {
			var e *AuthError
			if !errors.As(err, &e) || e.Refused || !strings.Contains(e.Error(), "set specs[g].auth.key.value") {
				t.Errorf("got %T %v", err, err)
			}
		}},
		{name: "404", status: 404, body: `{"message":"no such thing"}`, check: func(t *testing.T, err error) {
			var e *HTTPError
			if !errors.As(err, &e) || e.StatusCode != 404 || e.Body != `{"message":"no such thing"}` || e.Retryable() {
				t.Errorf("got %T %+v", err, err)
			}
		}},
		{name: "500 long body", status: 500, body: strings.Repeat("e", 10000), check: func(t *testing.T, err error) {
			var e *HTTPError
			if !errors.As(err, &e) || len(e.Body) > errorExcerpt+4 || !e.Retryable() {
				t.Errorf("got %T len %d", err, len(e.Body))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			opts := Options{}
			if tt.withKey {
				opts.Specs = map[string]SpecOptions{"g": {Auth: map[string]Credential{"key": {Value: "k-123456"}}}}
			}
			res, err := callThing(t, up.URL, opts)
			if res == nil || res.StatusCode != tt.status {
				t.Fatalf("result %+v", res)
			}
			if len(err.Error()) > 300 {
				t.Errorf("error too long: %q", err.Error())
			}
			tt.check(t, err)
		})
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"120"}}, 120 * time.Second, true},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{http.Header{"Retry-After": {"Mon, 30 Nov 2026 10:00:30 GMT"}}, 30 * time.Second, true},
		{http.Header{"Retry-After": {"Mon, 30 Nov 2026 09:00:30 GMT"}}, 0, true},
		{http.Header{"X-Ratelimit-Reset": {strconv.FormatInt(now.Add(time.Minute).Unix(), 10)}}, time.Minute, true},
		{http.Header{"Ratelimit-Reset": {"12"}}, 12 * time.Second, true},
		{http.Header{"X-Ratelimit-Reset": {"6m0s"}}, 6 * time.Minute, true},
		{http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		// A long ban is a long wait, never an absent one.
		{http.Header{"Retry-After": {"999999999"}}, ratelimit.MaxRetryAfter, true},
		{http.Header{"Retry-After": {"1e26"}}, ratelimit.MaxRetryAfter, true},
		{http.Header{"Retry-After": {"-5"}}, 0, false},
		{http.Header{}, 0, false},
	}
	for _, tt := range tests {
		e, limited := upstreamRateLimit(http.StatusTooManyRequests, tt.h, nil, now)
		if !limited {
			t.Fatalf("%v: a 429 not taken as a rate limit", tt.h)
		}
		if got, ok := e.RetryAfter, !e.RetryAt.IsZero(); got != tt.want || ok != tt.ok {
			t.Errorf("%v: got %v %v, want %v %v", tt.h, got, ok, tt.want, tt.ok)
		}
	}
}

// The server keeps serving after hostile answers: one Client survives them
// all and still makes a plain call.
func TestClientSurvivesHostileUpstreams(t *testing.T) {
	c := New(Options{Timeout: 200 * time.Millisecond, MaxResponseBytes: 512})
	hostile := []http.HandlerFunc{
		func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) },
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, "short")
		},
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte{0xff, 0xfe, '{'})
		},
		func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
	}
	for i, h := range hostile {
		up := newRecorder(t, h)
		s := parseSpec(t, "g", getDoc, up.URL)
		call, err := c.Prepare(t.Context(), endpoint(t, s, "getThing"), Args{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := call.Do(t.Context())
		if err == nil && res == nil {
			t.Errorf("%d: no result and no error", i)
		}
	}
	up := newRecorder(t, nil)
	s := parseSpec(t, "g", getDoc, up.URL)
	call, err := c.Prepare(t.Context(), endpoint(t, s, "getThing"), Args{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := call.Do(t.Context()); err != nil || res.StatusCode != 200 {
		t.Errorf("plain call after hostile ones: %v %v", res, err)
	}
}
