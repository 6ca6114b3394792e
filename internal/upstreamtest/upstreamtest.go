// Package upstreamtest is a quota-enforcing HTTP upstream for tests and benchmarks: it
// admits requests under a sliding-window, fixed-window or GCRA quota, answers 429 with the
// configured rate-limit headers when over it, and counts every request and every 429.
//
// A Server is an http.Handler; serve it with httptest.NewServer. The quota maths is a pure
// function of an explicit time (AdmitAt), so tests drive it with a fixed clock.
//
// Pages (pages.go) is a second upstream: lists served in pages in the styles of GitHub,
// Stripe, Slack and Kubernetes, described by testdata/paging.yaml, recording every request.
package upstreamtest

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Model is how the upstream counts its quota.
type Model int

const (
	// SlidingWindow admits a request when fewer than Limit were admitted in the rolling
	// Window before it: no half-open interval of length Window ever holds more than Limit.
	SlidingWindow Model = iota
	// FixedWindow admits Limit requests per window aligned to multiples of Window since the
	// zero time (so a 1m window starts on the minute); the count resets at each boundary.
	FixedWindow
	// GCRA is the generic cell rate algorithm: one request every Window/Limit, with a burst
	// of Limit when the upstream has been idle for a Window.
	GCRA
)

func (m Model) String() string {
	switch m {
	case SlidingWindow:
		return "sliding"
	case FixedWindow:
		return "fixed"
	case GCRA:
		return "gcra"
	}
	return "model(" + strconv.Itoa(int(m)) + ")"
}

// Headers selects the rate-limit headers the upstream sends. Values combine with |.
type Headers uint8

const (
	// RetryAfterSeconds sends Retry-After as whole seconds (rounded up) on every 429.
	RetryAfterSeconds Headers = 1 << iota
	// RetryAfterDate sends Retry-After as an HTTP date (rounded up to the second) on every
	// 429. With RetryAfterSeconds too, the seconds form wins.
	RetryAfterDate
	// XRateLimit sends X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (epoch
	// seconds, rounded up, when the quota is whole again) on every answer.
	XRateLimit
	// IETF sends the IETF fields on every answer: RateLimit: "default";r=R;t=T and
	// RateLimit-Policy: "default";q=Limit;w=Window (seconds, rounded up).
	IETF
)

// Options configure a Server. The zero Options admit nothing useful: set Limit and Window.
type Options struct {
	// Model is how the quota is counted. Zero: SlidingWindow.
	Model Model
	// Limit is the requests admitted per Window. Zero or less: every request is refused.
	Limit int
	// Window is the quota's window. Zero: one second.
	Window time.Duration
	// Latency delays every answer, after the request was counted. Zero: none.
	Latency time.Duration
	// Jitter adds a random delay in [0, Jitter) to Latency, drawn from a rand seeded with
	// Seed, so runs are repeatable. Zero: none.
	Jitter time.Duration
	// Seed seeds the jitter. Zero: 1.
	Seed uint64
	// Headers are the rate-limit headers to send. Zero: none, a bare 429.
	Headers Headers
	// Clock is the time the quota is counted at. If nil, time.Now. Latency always uses the
	// real clock (or the synctest bubble's).
	Clock func() time.Time
}

// Decision is the quota's answer to one request.
type Decision struct {
	Admitted bool
	// Remaining is what the quota has left after this request.
	Remaining int
	// RetryAfter is, for a refused request, the exact time until one would be admitted.
	RetryAfter time.Duration
	// Reset is when the quota is whole again (Remaining back to Limit), counting this
	// request when admitted.
	Reset time.Time
}

// Server is a quota-enforcing upstream. It is safe for concurrent use.
type Server struct {
	opts   Options
	window time.Duration
	clock  func() time.Time

	requests atomic.Int64
	admitted atomic.Int64
	limited  atomic.Int64

	mu         sync.Mutex
	log        []time.Time // sliding window: admissions still in the window, oldest first
	fixedStart time.Time   // fixed window: start of the current window
	fixedCount int
	tat        time.Time // GCRA: theoretical arrival time
	admits     []time.Time
	refusals   []time.Time
	rng        *rand.Rand
}

var _ http.Handler = (*Server)(nil)

// New returns a Server for opts.
func New(opts Options) *Server {
	s := &Server{opts: opts, window: opts.Window, clock: opts.Clock}
	if s.window <= 0 {
		s.window = time.Second
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	seed := opts.Seed
	if seed == 0 {
		seed = 1
	}
	s.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return s
}

// AdmitAt decides at now whether one request is admitted, and counts it if so. It does not
// touch the request counters nor record times (ServeHTTP does).
func (s *Server) AdmitAt(now time.Time) Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitLocked(now)
}

func (s *Server) admitLocked(now time.Time) Decision {
	limit, w := s.opts.Limit, s.window
	if limit <= 0 {
		return Decision{RetryAfter: w, Reset: now.Add(w)}
	}
	switch s.opts.Model {
	case FixedWindow:
		start := now.Truncate(w)
		if !start.Equal(s.fixedStart) {
			s.fixedStart, s.fixedCount = start, 0
		}
		end := start.Add(w)
		if s.fixedCount >= limit {
			return Decision{RetryAfter: end.Sub(now), Reset: end}
		}
		s.fixedCount++
		return Decision{Admitted: true, Remaining: limit - s.fixedCount, Reset: end}
	case GCRA:
		t := w / time.Duration(limit) // emission interval
		tau := w - t                  // burst tolerance: limit at once when idle
		tat := s.tat
		if tat.Before(now) {
			tat = now
		}
		if allowAt := tat.Add(-tau); now.Before(allowAt) {
			return Decision{RetryAfter: allowAt.Sub(now), Reset: tat}
		}
		s.tat = tat.Add(t)
		rem := int(math.Floor(float64(now.Add(tau).Sub(s.tat))/float64(t))) + 1
		return Decision{Admitted: true, Remaining: max(rem, 0), Reset: s.tat}
	default:
		// drop admissions that left the window: one at t counts during [t, t+w)
		i := 0
		for i < len(s.log) && !s.log[i].Add(w).After(now) {
			i++
		}
		s.log = s.log[i:]
		if len(s.log) >= limit {
			oldest := s.log[len(s.log)-limit]
			return Decision{RetryAfter: oldest.Add(w).Sub(now), Reset: s.log[len(s.log)-1].Add(w)}
		}
		s.log = append(s.log, now)
		return Decision{Admitted: true, Remaining: limit - len(s.log), Reset: now.Add(w)}
	}
}

// ServeHTTP answers 200 with a small JSON body when the request is within the quota and 429
// with the configured headers when it is not, after the configured latency.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	now := s.clock() // under the lock, so the logs stay in time order
	d := s.admitLocked(now)
	if d.Admitted {
		s.admits = append(s.admits, now)
	} else {
		s.refusals = append(s.refusals, now)
	}
	delay := s.opts.Latency
	if s.opts.Jitter > 0 {
		delay += time.Duration(s.rng.Int64N(int64(s.opts.Jitter)))
	}
	s.mu.Unlock()
	if d.Admitted {
		s.admitted.Add(1)
	} else {
		s.limited.Add(1)
	}

	if delay > 0 {
		if err := sleep(r.Context(), delay); err != nil {
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	s.setHeaders(h, d, now)
	if !d.Admitted {
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"error":"rate limit exceeded"}`))
		return
	}
	w.Write([]byte(`{"ok":true,"path":` + strconv.Quote(r.URL.Path) + `,"remaining":` + strconv.Itoa(d.Remaining) + `}`))
}

func (s *Server) setHeaders(h http.Header, d Decision, now time.Time) {
	hs := s.opts.Headers
	if !d.Admitted {
		switch {
		case hs&RetryAfterSeconds != 0:
			h.Set("Retry-After", strconv.FormatInt(ceilSeconds(d.RetryAfter), 10))
		case hs&RetryAfterDate != 0:
			h.Set("Retry-After", ceilTime(now.Add(d.RetryAfter)).UTC().Format(http.TimeFormat))
		}
	}
	if hs&XRateLimit != 0 {
		h.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.Limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilTime(d.Reset).Unix(), 10))
	}
	if hs&IETF != 0 {
		h.Set("RateLimit", `"default";r=`+strconv.Itoa(d.Remaining)+`;t=`+strconv.FormatInt(ceilSeconds(d.Reset.Sub(now)), 10))
		h.Set("RateLimit-Policy", `"default";q=`+strconv.Itoa(s.opts.Limit)+`;w=`+strconv.FormatInt(ceilSeconds(s.window), 10))
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ceilSeconds rounds d up to whole seconds, at least one: waiting that long must succeed.
func ceilSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// ceilTime rounds t up to the whole second.
func ceilTime(t time.Time) time.Time {
	if tr := t.Truncate(time.Second); !tr.Equal(t) {
		return tr.Add(time.Second)
	}
	return t
}

// Requests returns the requests received.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Admitted returns the requests answered within the quota.
func (s *Server) Admitted() int64 { return s.admitted.Load() }

// Limited returns the 429s sent.
func (s *Server) Limited() int64 { return s.limited.Load() }

// Admissions returns the times (by Clock) of the admitted requests, in arrival order.
func (s *Server) Admissions() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.admits...)
}

// Refusals returns the times (by Clock) of the requests answered 429, in arrival order.
func (s *Server) Refusals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.refusals...)
}

// MaxInWindow returns the most of times (sorted ascending) that fall in any half-open
// interval of length w.
func MaxInWindow(times []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range times {
		for times[i].Sub(times[j]) >= w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}
