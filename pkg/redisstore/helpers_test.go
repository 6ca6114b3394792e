package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// backend is a Redis for a test: one server, or a cluster.
type backend interface{ URL() string }

// newTestStore returns a store on b with keys apart from every other test's.
func newTestStore(t testing.TB, b backend, share float64) *Store {
	t.Helper()
	_, cluster := b.(*redistest.Cluster)
	st, err := New(t.Context(), Options{
		URL:           b.URL(),
		Cluster:       cluster,
		KeyPrefix:     testPrefix(t),
		FallbackShare: share,
		ProbeInterval: 20 * time.Millisecond,
		// the machine running the tests may be loaded: a store call that times out
		// would put a replica on its fallback share, which these tests do not expect
		Timeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// testPrefix is a key prefix of its own per test, the same for every replica of it.
var (
	prefixMu sync.Mutex
	prefixes = map[string]string{}
)

func testPrefix(t testing.TB) string {
	prefixMu.Lock()
	defer prefixMu.Unlock()
	if p, ok := prefixes[t.Name()]; ok {
		return p
	}
	p := fmt.Sprintf("test:%s:%x:", strings.ReplaceAll(t.Name(), "/", "."), rand.Uint32())
	prefixes[t.Name()] = p
	return p
}

func newLimiter(t testing.TB, opts ratelimit.Options) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// limitErr asserts err is a *LimitError and returns it.
func limitErr(t testing.TB, err error) *ratelimit.LimitError {
	t.Helper()
	var le *ratelimit.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("got error %v, want a *LimitError", err)
	}
	if le.RetryAfter <= 0 {
		t.Fatalf("RetryAfter = %v, want > 0", le.RetryAfter)
	}
	return le
}

// part is a replica's fallback share of n: floor(share × n), at least 1.
func part(share float64, n int) int { return max(int(math.Floor(share*float64(n))), 1) }

// stretched is a cooldown on the fallback share.
func stretched(d time.Duration, share float64) time.Duration {
	return time.Duration(math.Ceil(float64(d) / share))
}

// recording is a Store that tells the caller of Acquire the store's clock of an admission
// it charged, through the call's context (see atStore).
type recording struct{ *Store }

// storeNow is the context key of the *time.Time a recording sets.
type storeNow struct{}

// atStore returns a context under which a recording store writes, into *at, the store's
// clock of the admission it charges; *at stays zero when the call is admitted on the
// fallback share.
func atStore(ctx context.Context, at *time.Time) context.Context {
	return context.WithValue(ctx, storeNow{}, at)
}

func (r recording) Admit(ctx context.Context, a *ratelimit.Admission) (ratelimit.Decision, error) {
	d, err := r.Store.Admit(ctx, a)
	if p, ok := ctx.Value(storeNow{}).(*time.Time); ok && err == nil && d.OK && a.Charge {
		*p = d.Now
	}
	return d, err
}

// waitUntil polls cond (the state of another process, not limiter time) until it holds.
func waitUntil(t testing.TB, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newWindow(t *testing.T, opts ratelimit.WindowOptions) *ratelimit.Window {
	t.Helper()
	w, err := ratelimit.NewWindow(opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
