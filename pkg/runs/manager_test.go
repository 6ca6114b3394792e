package runs

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newManager(s Store) *Manager {
	return NewManager(Options{Store: s, Logger: quiet()})
}

// blockUntil is a run function that ends when release is closed (answering
// done) or its context ends (answering nothing).
func blockUntil(release <-chan struct{}) func(ctx context.Context, r *Run) Outcome {
	return func(ctx context.Context, r *Run) Outcome {
		r.Update(json.RawMessage(`{"done":1}`), []string{"started"})
		select {
		case <-release:
			return Outcome{Answer: json.RawMessage(`{"status":"done","result":42}`)}
		case <-ctx.Done():
			return Outcome{Progress: json.RawMessage(`{"done":2}`), Logs: []string{"started", "stopped"}}
		}
	}
}

func TestWaitAnswersAsSoonAsTheRunEndsNotAfterItsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(nil)
		release := make(chan struct{})
		r, err := m.Start(t.Context(), "ada", time.Minute, blockUntil(release))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rec, err := m.Wait(t.Context(), "ada", r.ID(), 20*time.Second)
		if err != nil || rec.Status != Running {
			t.Fatalf("Wait = %+v, %v; want running", rec, err)
		}
		if got := time.Since(start); got != 20*time.Second {
			t.Errorf("a wait on a running run took %v, want the whole 20s", got)
		}
		go func() {
			time.Sleep(3 * time.Second)
			close(release)
		}()
		start = time.Now()
		rec, err = m.Wait(t.Context(), "ada", r.ID(), 20*time.Second)
		if err != nil || rec.Status != Done || string(rec.Answer) != `{"status":"done","result":42}` {
			t.Fatalf("Wait = %+v, %v; want done with the answer", rec, err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("the wait answered after %v, want 3s (when the run ended)", got)
		}
	})
}

func TestAnotherPrincipalsRunIsNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(nil)
		release := make(chan struct{})
		defer close(release)
		r, _ := m.Start(t.Context(), "ada", time.Minute, blockUntil(release))
		for _, f := range []func() (*Record, error){
			func() (*Record, error) { return m.Get(t.Context(), "bob", r.ID()) },
			func() (*Record, error) { return m.Wait(t.Context(), "bob", r.ID(), time.Second) },
			func() (*Record, error) { return m.Cancel(t.Context(), "bob", r.ID()) },
		} {
			if _, err := f(); !errors.Is(err, ErrNotFound) {
				t.Errorf("bob reading ada's run: err = %v, want ErrNotFound", err)
			}
		}
		if rec, _ := m.Get(t.Context(), "ada", r.ID()); rec.Status != Running {
			t.Errorf("ada's run after bob's cancel = %s, want running", rec.Status)
		}
	})
}

func TestAnotherReplicaSeesTheRunAliveThroughHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore(MemoryStoreOptions{})
		a, b := newManager(store), newManager(store)
		release := make(chan struct{})
		r, _ := a.Start(t.Context(), "ada", 10*time.Minute, blockUntil(release))
		time.Sleep(2 * time.Minute)
		rec, err := b.Get(t.Context(), "ada", r.ID())
		if err != nil || rec.Status != Running || string(rec.Progress) != `{"done":1}` {
			t.Fatalf("replica b after 2m = %+v, %v; want running with progress", rec, err)
		}
		close(release)
		rec, err = b.Wait(t.Context(), "ada", r.ID(), 20*time.Second)
		if err != nil || rec.Status != Done {
			t.Fatalf("replica b's wait = %+v, %v; want done", rec, err)
		}
	})
}

func TestARecordNotRefreshedFor15sIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore(MemoryStoreOptions{})
		// A replica that wrote a running record and died: nobody refreshes it.
		rec := &Record{ID: NewID(), Principal: "ada", Status: Running, Progress: json.RawMessage(`{"calls":{"total":7}}`),
			Logs: []string{"page 1"}, Started: time.Now(), Updated: time.Now()}
		blob, _ := Encode(rec)
		if err := store.Save(t.Context(), rec, blob, DefaultLostAfter, time.Hour); err != nil {
			t.Fatal(err)
		}
		m := newManager(store)
		time.Sleep(14 * time.Second)
		if got, _ := m.Get(t.Context(), "ada", rec.ID); got.Status != Running {
			t.Fatalf("after 14s: %s, want running", got.Status)
		}
		time.Sleep(2 * time.Second)
		got, err := m.Get(t.Context(), "ada", rec.ID)
		if err != nil || got.Status != Lost || string(got.Progress) != `{"calls":{"total":7}}` || len(got.Logs) != 1 {
			t.Fatalf("after 16s: %+v, %v; want lost with the calls and logs last recorded", got, err)
		}
		// A wait on it answers lost at once, not after its wait.
		start := time.Now()
		if got, _ := m.Wait(t.Context(), "ada", rec.ID, 20*time.Second); got.Status != Lost || time.Since(start) != 0 {
			t.Errorf("wait on a lost run = %s after %v", got.Status, time.Since(start))
		}
	})
}

func TestCancelAskedOnAnotherReplicaStopsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore(MemoryStoreOptions{})
		a, b := newManager(store), newManager(store)
		release := make(chan struct{})
		defer close(release)
		r, _ := a.Start(t.Context(), "ada", 10*time.Minute, blockUntil(release))
		start := time.Now()
		rec, err := b.Cancel(t.Context(), "ada", r.ID())
		if err != nil || rec.Status != Cancelled {
			t.Fatalf("cancel from b = %+v, %v; want cancelled", rec, err)
		}
		if got := time.Since(start); got > 2*time.Second {
			t.Errorf("the cancel took %v to reach the replica running the run", got)
		}
		if len(rec.Logs) != 2 || string(rec.Progress) != `{"done":2}` {
			t.Errorf("cancelled record = %+v; want the last progress and logs", rec)
		}
		// A second cancel, and any later read, say the same.
		for range 2 {
			if rec, _ := a.Cancel(t.Context(), "ada", r.ID()); rec.Status != Cancelled {
				t.Errorf("later cancel = %s", rec.Status)
			}
		}
	})
}

func TestTwoCancelsAtOnceBothSayCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(nil)
		r, _ := m.Start(t.Context(), "ada", time.Minute, blockUntil(nil))
		got := make(chan Status, 2)
		for range 2 {
			go func() {
				rec, err := m.Cancel(t.Context(), "ada", r.ID())
				if err != nil {
					t.Error(err)
				}
				got <- rec.Status
			}()
		}
		for range 2 {
			if s := <-got; s != Cancelled {
				t.Errorf("status = %s, want cancelled", s)
			}
		}
	})
}

func TestDrainLetsRunsFinishThenRecordsTheRestLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(nil)
		quick, slow := make(chan struct{}), make(chan struct{})
		defer close(slow)
		rq, _ := m.Start(t.Context(), "ada", time.Hour, blockUntil(quick))
		rs, _ := m.Start(t.Context(), "ada", time.Hour, blockUntil(slow))
		go func() {
			time.Sleep(5 * time.Second)
			close(quick)
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		m.Drain(ctx)
		if _, err := m.Start(t.Context(), "ada", time.Minute, blockUntil(nil)); !errors.Is(err, ErrDraining) {
			t.Errorf("Start while draining: %v, want ErrDraining", err)
		}
		if rec, _ := m.Get(t.Context(), "ada", rq.ID()); rec.Status != Done {
			t.Errorf("the run that ended within the drain: %s, want done", rec.Status)
		}
		if rec, _ := m.Get(t.Context(), "ada", rs.ID()); rec.Status != Lost {
			t.Errorf("the run cut by shutdown: %s, want lost", rec.Status)
		}
	})
}

func TestARunFailingWhileItsProcessShutsDownIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(nil)
		refused := make(chan struct{})
		r, _ := m.Start(t.Context(), "ada", time.Hour, func(ctx context.Context, r *Run) Outcome {
			<-refused // its next call is refused as the limiter drains
			return Outcome{Answer: json.RawMessage(`{"error":{"code":"script_error"}}`), IsError: true}
		})
		go func() {
			time.Sleep(time.Second)
			close(refused)
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		m.Drain(ctx)
		if rec, _ := m.Get(t.Context(), "ada", r.ID()); rec.Status != Lost {
			t.Errorf("a run failing during the drain: %s, want lost", rec.Status)
		}
	})
}

// failingStore fails every write while down is true.
type failingStore struct {
	*MemoryStore
	down atomic.Bool
}

func (f *failingStore) Save(ctx context.Context, r *Record, blob []byte, alive, keep time.Duration) error {
	if f.down.Load() {
		return errors.New("store away")
	}
	return f.MemoryStore.Save(ctx, r, blob, alive, keep)
}

func TestAStoreGoneMidRunCatchesUpAndNothingIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &failingStore{MemoryStore: NewMemoryStore(MemoryStoreOptions{})}
		a := newManager(fs)
		b := newManager(fs.MemoryStore)
		release := make(chan struct{})
		r, _ := a.Start(t.Context(), "ada", time.Hour, blockUntil(release))
		fs.down.Store(true)
		time.Sleep(30 * time.Second)
		close(release)
		synctest.Wait()
		// The run ended while the store was away: here it is known.
		if rec, _ := a.Get(t.Context(), "ada", r.ID()); rec.Status != Done {
			t.Fatalf("running replica: %s, want done", rec.Status)
		}
		fs.down.Store(false)
		time.Sleep(1500 * time.Millisecond)
		if rec, err := b.Get(t.Context(), "ada", r.ID()); err != nil || rec.Status != Done {
			t.Fatalf("other replica after the store came back: %+v, %v; want done", rec, err)
		}
	})
}

func TestAHandEditedRecordIsDataNotTrusted(t *testing.T) {
	id := NewID()
	for _, tc := range []struct {
		name, blob string
		want       error
	}{
		{"another principal", `{"id":"` + id + `","principal":"bob","status":"done","answer":{}}`, ErrNotFound},
		{"another id", `{"id":"run-000000000000","principal":"ada","status":"done","answer":{}}`, ErrNotFound},
		{"unknown status", `{"id":"` + id + `","principal":"ada","status":"pwned"}`, nil},
		{"done without answer", `{"id":"` + id + `","principal":"ada","status":"done"}`, nil},
		{"not JSON", `{"id":`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.blob), "ada", id)
			if err == nil {
				t.Fatal("a bad record decoded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestARecordWhoseAnswerIsNoObjectIsRefused: a hand-edited record whose
// answer was a JSON string or array was answered as the run's final answer,
// as a tool result's structuredContent, which MCP holds to an object.
func TestARecordWhoseAnswerIsNoObjectIsRefused(t *testing.T) {
	id := NewID()
	for name, blob := range map[string]string{
		"answer a string":   `{"id":"` + id + `","principal":"ada","status":"done","answer":"function(){}"}`,
		"answer an array":   `{"id":"` + id + `","principal":"ada","status":"failed","isError":true,"answer":[1]}`,
		"progress a number": `{"id":"` + id + `","principal":"ada","status":"running","progress":5}`,
	} {
		if rec, err := Decode([]byte(blob), "ada", id); err == nil {
			t.Errorf("%s: decoded as %s", name, rec.Answer)
		}
	}
}

func TestValidID(t *testing.T) {
	for s, want := range map[string]bool{
		NewID():                           true,
		"run-0123456789ab":                true,
		"run-":                            false,
		"run-0123456789AB":                false,
		"run-0123456789ab'":               false,
		"../0123456789ab":                 false,
		"run-" + string(make([]byte, 40)): false,
	} {
		if got := ValidID(s); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestClipLogsKeepsTheLastLinesAndSaysHowManyWentOut(t *testing.T) {
	var logs []string
	for range 5000 {
		logs = append(logs, "line of the run")
	}
	got := clipLogs(logs)
	n := 0
	for _, l := range got {
		n += len(l) + 8
	}
	if n > MaxLogBytes+64 || got[len(got)-1] != "line of the run" || got[0][0] != '(' {
		t.Errorf("clipLogs kept %d bytes in %d lines, first %q", n, len(got), got[0])
	}
}

func TestAFullStoreDropsTheBusiestPrincipalsRecordFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewMemoryStore(MemoryStoreOptions{MaxRecords: 3})
		save := func(principal string) string {
			r := &Record{ID: NewID(), Principal: principal, Status: Done, Answer: json.RawMessage(`{}`)}
			blob, _ := Encode(r)
			if err := s.Save(t.Context(), r, blob, 0, time.Hour); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			return r.ID
		}
		ada := save("ada")
		save("bob")
		save("bob")
		save("bob") // full: one of bob's goes, not ada's older one
		if _, _, err := s.Load(t.Context(), "ada", ada); err != nil {
			t.Errorf("ada's record was dropped for bob's: %v", err)
		}
	})
}

func TestAllListsEveryPrincipalsRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(nil)
		release := make(chan struct{})
		a, _ := m.Start(t.Context(), "ada", time.Minute, blockUntil(release))
		b, _ := m.Start(t.Context(), "bob", time.Minute, blockUntil(release))
		got := map[string]string{}
		for _, rec := range m.All() {
			got[rec.ID] = rec.Principal
		}
		if len(got) != 2 || got[a.ID()] != "ada" || got[b.ID()] != "bob" {
			t.Errorf("All = %v, want ada's and bob's runs", got)
		}
		close(release)
		<-a.Done()
		<-b.Done()
		synctest.Wait()
		if n := len(m.All()); n != 0 {
			t.Errorf("All after both ended: %d runs, want 0", n)
		}
	})
}
