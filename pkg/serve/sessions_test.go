package serve

import (
	"slices"
	"testing"
	"time"
)

// TestHTTPSessionsTable: a session serves only its owner; idle past its
// time or the least recently used when full, it ends, and sweep hands it
// over once to be closed in mcp-go.
func TestHTTPSessionsTable(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tb := newHTTPSessions(time.Minute, 2, func() time.Time { return now })
	ada := tb.ResolveSessionIdManager(nil).(sessionIDs)
	ada.owner = "ada"
	a1 := ada.Generate()
	now = now.Add(time.Second)
	a2 := ada.Generate()
	if _, err := (sessionIDs{t: tb, owner: "bob"}).Validate(a1); err == nil {
		t.Errorf("bob validated ada's session")
	}
	if notAllowed, _ := (sessionIDs{t: tb, owner: "bob"}).Terminate(a1); !notAllowed {
		t.Errorf("bob ended ada's session")
	}
	if _, err := ada.Validate(""); err != nil {
		t.Errorf("no session: %v, want served on its own", err)
	}
	now = now.Add(time.Second)
	if _, err := ada.Validate(a1); err != nil { // a1 is now the most recent
		t.Fatal(err)
	}
	a3 := ada.Generate() // full: a2, the least recently used, ends
	if got := tb.sweep(now); len(got) != 1 || got[0] != a2 {
		t.Errorf("ended %v, want [%s]", got, a2)
	}
	if _, err := ada.Validate(a2); err == nil {
		t.Errorf("the evicted session still validates")
	}
	now = now.Add(time.Minute + time.Second)
	got := tb.sweep(now)
	if len(got) != 2 || !slices.Contains(got, a1) || !slices.Contains(got, a3) || len(tb.sweep(now)) != 0 {
		t.Errorf("idle sweep ended %v, want %s and %s once", got, a1, a3)
	}
}

// TestHTTPSessionsFullEndsTheHeaviestPrincipals: when the table is full, a
// principal opening sessions in a loop ends its own least recently used,
// not another principal's.
func TestHTTPSessionsFullEndsTheHeaviestPrincipals(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tb := newHTTPSessions(time.Hour, 4, func() time.Time { return now })
	ada, bob := sessionIDs{t: tb, owner: "ada"}, sessionIDs{t: tb, owner: "bob"}
	b1 := bob.Generate()
	var first string
	for i := range 20 {
		now = now.Add(time.Second)
		id := ada.Generate()
		if i == 0 {
			first = id
		}
	}
	if _, err := bob.Validate(b1); err != nil {
		t.Fatalf("bob's only session ended while ada opened 20: %v", err)
	}
	if _, err := ada.Validate(first); err == nil {
		t.Errorf("ada's oldest session still validates")
	}
	if got := len(tb.byID); got != 4 {
		t.Errorf("the table holds %d sessions, want its bound 4", got)
	}
	// a newcomer when the table is full of one principal's sessions gets one
	now = now.Add(time.Second)
	c1 := sessionIDs{t: tb, owner: "cy"}.Generate()
	if _, err := (sessionIDs{t: tb, owner: "cy"}).Validate(c1); err != nil || len(tb.byID) != 4 {
		t.Errorf("cy's session: %v, table %d", err, len(tb.byID))
	}
}

// TestHTTPSessionsFullEndsTheOpenersOwn: with the table full, opening a
// session ended the least recently used of anyone's, so one principal
// opening sessions in a loop ended every other principal's (an approval
// waiting in one lost with it); it ends the opener's own while it holds the
// most.
func TestHTTPSessionsFullEndsTheOpenersOwn(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tb := newHTTPSessions(time.Hour, 4, func() time.Time { now = now.Add(time.Second); return now })
	ada, bob := sessionIDs{t: tb, owner: "ada"}, sessionIDs{t: tb, owner: "bob"}
	a := ada.Generate()
	for range 20 {
		bob.Generate()
	}
	if _, err := ada.Validate(a); err != nil {
		t.Errorf("bob's twenty sessions ended ada's: %v", err)
	}
	ended := tb.sweep(now)
	if len(ended) != 17 || slices.Contains(ended, a) {
		t.Errorf("ended %d sessions (ada's among them: %v), want bob's 17", len(ended), slices.Contains(ended, a))
	}
	// Ada two, bob two (his oldest of three ended), both last used before
	// ada's: at the tie cy's session ends the least recently used, bob's.
	a2 := ada.Generate()
	c := sessionIDs{t: tb, owner: "cy"}.Generate()
	for _, id := range []string{a, a2} {
		if _, err := ada.Validate(id); err != nil {
			t.Errorf("ada's %s ended: %v", id, err)
		}
	}
	if _, err := (sessionIDs{t: tb, owner: "cy"}).Validate(c); err != nil {
		t.Errorf("cy's new session: %v", err)
	}
	if got := tb.sweep(now); len(got) != 2 {
		t.Errorf("ended %d more, want bob's two", len(got))
	}
}
