package mcpserver

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/spec"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A model that repeats an identical idempotent call within cache_ttl is
// served the last result, at no cooldown cost; other arguments are not.
func TestResultCacheServesRepeats(t *testing.T) {
	f := newFixture(t, time.Hour)
	now := time.Unix(1_800_000_000, 0)
	f.srv.now = func() time.Time { return now }
	f.srv.call.Now = f.srv.now
	f.srv.call.CacheTTL = func(e *spec.Endpoint) time.Duration { return time.Minute }
	audit := &lockedBuffer{}
	f.srv.opts.Audit = audit

	args := map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 7}}
	first, isErr := f.call(t, "invoke", args)
	if isErr || first["cached"] == true {
		t.Fatalf("first call: %v", first)
	}
	now = now.Add(30 * time.Second)
	second, isErr := f.call(t, "invoke", args)
	if isErr || second["cached"] != true || second["ageSeconds"] != float64(30) {
		t.Fatalf("repeat within the TTL: %v", second)
	}
	if f.upstream.count() != 1 {
		t.Fatalf("upstream saw %d requests, want 1", f.upstream.count())
	}
	// Other arguments are another call: refused by the cooldown.
	other, isErr := f.call(t, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 8}})
	if !isErr || errorOf(t, other)["code"] != "rate_limit" {
		t.Fatalf("different arguments: %v", other)
	}
	// Past the TTL the cache no longer answers.
	now = now.Add(31 * time.Second)
	late, isErr := f.call(t, "invoke", args)
	if !isErr || errorOf(t, late)["code"] != "rate_limit" {
		t.Fatalf("after the TTL: %v", late)
	}

	lines := strings.Split(strings.TrimSpace(audit.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("audit has %d lines, want 4:\n%s", len(lines), audit.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["endpoint"] != "petstore.getPetById" || rec["cached"] != true || rec["outcome"] != "ok" {
		t.Errorf("audit line = %v", rec)
	}
	if err := json.Unmarshal([]byte(lines[2]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["outcome"] != "rate_limit" || rec["scope"] != "proxy" || rec["limit"] != "cooldown" {
		t.Errorf("audit line = %v", rec)
	}
	// No argument values in the audit log.
	if strings.Contains(audit.String(), "petId") || strings.Contains(audit.String(), `"8"`) {
		t.Errorf("audit log holds argument values:\n%s", audit.String())
	}
}

// Non-idempotent calls are never served from the cache.
func TestResultCacheSkipsUnsafeMethods(t *testing.T) {
	f := newFixture(t, 0)
	f.srv.call.CacheTTL = func(e *spec.Endpoint) time.Duration { return time.Minute }
	args := map[string]any{"endpointId": "petstore.addPet", "requestBody": map[string]any{"name": "rex", "photoUrls": []any{}}}
	for range 2 {
		if res, isErr := f.call(t, "invoke", args); isErr || res["cached"] == true {
			t.Fatalf("POST: %v", res)
		}
	}
	if f.upstream.count() != 2 {
		t.Errorf("upstream saw %d POSTs, want 2", f.upstream.count())
	}
}
