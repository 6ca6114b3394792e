package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/runs"
)

func runManager(s runs.Store) *runs.Manager {
	return runs.NewManager(runs.Options{Store: s, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// testRunStores are a run store on one Redis and one on a Redis Cluster.
func testRunStores(t *testing.T) map[string]*Runs {
	srv := redistest.Start(t)
	one, err := Dial(srv.URL(), false, testPrefix(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = one.Close() })
	cl := redistest.StartCluster(t, 3)
	many, err := Dial(cl.URL(), true, testPrefix(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = many.Close() })
	return map[string]*Runs{"redis": NewRuns(one), "cluster": NewRuns(many)}
}

func TestRunsOnRedisAnotherReplicaAnswersAndCancels(t *testing.T) {
	for name, store := range testRunStores(t) {
		t.Run(name, func(t *testing.T) {
			a, b := runManager(store), runManager(store)
			started := make(chan struct{})
			r, err := a.Start(t.Context(), "ada", time.Minute, func(ctx context.Context, r *runs.Run) runs.Outcome {
				r.Update(json.RawMessage(`{"calls":{"total":3}}`), []string{"page 1"})
				close(started)
				<-ctx.Done()
				return runs.Outcome{Logs: []string{"page 1", "stopped"}}
			})
			if err != nil {
				t.Fatal(err)
			}
			<-started
			rec, err := b.Get(t.Context(), "ada", r.ID())
			if err != nil || rec.Status != runs.Running {
				t.Fatalf("replica b reads %+v, %v; want running", rec, err)
			}
			if _, err := b.Get(t.Context(), "bob", r.ID()); !errors.Is(err, runs.ErrNotFound) {
				t.Errorf("bob reads ada's run: %v, want not found", err)
			}
			rec, err = b.Cancel(t.Context(), "ada", r.ID())
			if err != nil || rec.Status != runs.Cancelled || len(rec.Logs) != 2 {
				t.Fatalf("cancel from replica b = %+v, %v; want cancelled with the logs", rec, err)
			}
		})
	}
}

func TestRunsOnRedisARunWhoseReplicaDiedIsLostByRedisClock(t *testing.T) {
	for name, store := range testRunStores(t) {
		t.Run(name, func(t *testing.T) {
			rec := &runs.Record{ID: runs.NewID(), Principal: "ada", Status: runs.Running, Started: time.Now(), Updated: time.Now()}
			blob, _ := runs.Encode(rec)
			// The replica wrote its record with a short alive time, then died.
			if err := store.Save(t.Context(), rec, blob, 300*time.Millisecond, time.Minute); err != nil {
				t.Fatal(err)
			}
			m := runManager(store)
			if got, err := m.Get(t.Context(), "ada", rec.ID); err != nil || got.Status != runs.Running {
				t.Fatalf("at once: %+v, %v; want running", got, err)
			}
			waitUntil(t, 5*time.Second, func() bool {
				got, err := m.Get(t.Context(), "ada", rec.ID)
				return err == nil && got.Status == runs.Lost
			})
		})
	}
}

func TestRunsOnRedisAHandEditedRecordIsNotTrusted(t *testing.T) {
	srv := redistest.Start(t)
	c, err := Dial(srv.URL(), false, "edit:")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store := NewRuns(c)
	m := runManager(store)
	r, _ := m.Start(t.Context(), "ada", time.Minute, func(ctx context.Context, r *runs.Run) runs.Outcome {
		return runs.Outcome{Answer: json.RawMessage(`{"status":"done"}`)}
	})
	<-r.Done()
	k := store.base("ada", r.ID())
	for _, blob := range []string{`{"id":"` + r.ID() + `","principal":"bob","status":"done","answer":{}}`, `{"status":"x"}`, `<script>`} {
		if err := c.rdb.Set(t.Context(), k, blob, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := m.Get(t.Context(), "ada", r.ID()); err == nil {
			t.Errorf("edited record %s read as %+v", blob, got)
		}
	}
}

func TestRunsOnRedisAnotherReplicaListsTheRunNeverForAnotherPrincipal(t *testing.T) {
	for name, store := range testRunStores(t) {
		t.Run(name, func(t *testing.T) {
			a, b := runManager(store), runManager(store)
			release := make(chan struct{})
			block := func(ctx context.Context, r *runs.Run) runs.Outcome {
				<-release
				return runs.Outcome{Answer: json.RawMessage(`{"status":"done"}`)}
			}
			ada, err := a.Start(t.Context(), "ada", time.Minute, block)
			if err != nil {
				t.Fatal(err)
			}
			bob, err := a.Start(t.Context(), "bob", time.Minute, block)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.List(t.Context(), "ada", runs.MaxListed)
			if err != nil || len(got) != 1 || got[0].ID != ada.ID() || got[0].Status != runs.Running {
				t.Errorf("replica b lists ada's %+v, %v; want her run, running", got, err)
			}
			got, err = b.List(t.Context(), "bob", runs.MaxListed)
			if err != nil || len(got) != 1 || got[0].ID != bob.ID() {
				t.Errorf("replica b lists bob's %+v, %v; want his run only", got, err)
			}
			if got, _ := b.List(t.Context(), "carol", runs.MaxListed); len(got) != 0 {
				t.Errorf("replica b lists carol's %+v, want none", got)
			}
			close(release)
			<-ada.Done()
			<-bob.Done()
			got, err = b.List(t.Context(), "ada", runs.MaxListed)
			if err != nil || len(got) != 1 || got[0].Status != runs.Done {
				t.Errorf("replica b lists ada's %+v, %v; want her run done", got, err)
			}
		})
	}
}

func TestRunsOnRedisListIsBoundedAndExpiresWithItsRecords(t *testing.T) {
	srv := redistest.Start(t)
	c, err := Dial(srv.URL(), false, testPrefix(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store := NewRuns(c)
	start := time.Now()
	var newest []string
	for i := range runs.MaxListed + 3 {
		rec := &runs.Record{ID: runs.NewID(), Principal: "ada", Status: runs.Done, Started: start.Add(time.Duration(i) * time.Millisecond)}
		// The oldest record the list keeps is kept an hour, the later ones
		// a minute: their saves must not cut the list under it.
		keep := time.Minute
		if i == 3 {
			keep = time.Hour
		}
		if err := store.Save(t.Context(), rec, []byte(`{}`), time.Minute, keep); err != nil {
			t.Fatal(err)
		}
		newest = append([]string{rec.ID}, newest...)
	}
	l := store.list("ada")
	if n := c.rdb.ZCard(t.Context(), l).Val(); n != runs.MaxListed {
		t.Errorf("the list holds %d ids, want %d", n, runs.MaxListed)
	}
	if ttl := c.rdb.PTTL(t.Context(), l).Val(); ttl < 59*time.Minute {
		t.Errorf("the list's TTL is %v, want that of its longest kept record (1h)", ttl)
	}
	keys, err := c.rdb.Keys(t.Context(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, testPrefix(t)) || c.rdb.PTTL(t.Context(), k).Val() <= 0 {
			t.Errorf("key %q lacks the prefix or a TTL", k)
		}
	}
	// A record gone by expiry leaves the list when listed.
	c.rdb.Del(t.Context(), store.base("ada", newest[1]))
	got, err := store.List(t.Context(), "ada", 3)
	if err != nil || len(got) != 2 || got[0].ID != newest[0] || got[1].ID != newest[2] {
		t.Errorf("List(3) = %+v, %v; want the newest two still kept", got, err)
	}
	if n := c.rdb.ZCard(t.Context(), l).Val(); n != runs.MaxListed-1 {
		t.Errorf("after listing, the list holds %d ids, want %d", n, runs.MaxListed-1)
	}
}
