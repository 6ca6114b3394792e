package runs

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func ids(recs []Record) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

func TestListHasAnotherReplicasRunsNeverAnotherPrincipals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore(MemoryStoreOptions{})
		a, b := newManager(store), newManager(store)
		release, stop := make(chan struct{}), make(chan struct{})
		defer close(stop)
		first, err := a.Start(t.Context(), "ada", time.Minute, blockUntil(release))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		second, err := b.Start(t.Context(), "ada", time.Minute, blockUntil(stop))
		if err != nil {
			t.Fatal(err)
		}
		bobs, err := a.Start(t.Context(), "bob", time.Minute, blockUntil(stop))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for name, m := range map[string]*Manager{"a": a, "b": b} {
			got, err := m.List(t.Context(), "ada", MaxListed)
			if want := []string{second.ID(), first.ID()}; err != nil || !slices.Equal(ids(got), want) {
				t.Errorf("replica %s lists ada's %v, %v; want %v, newest first", name, ids(got), err, want)
			}
			got, _ = m.List(t.Context(), "bob", MaxListed)
			if want := []string{bobs.ID()}; !slices.Equal(ids(got), want) {
				t.Errorf("replica %s lists bob's %v, want %v", name, ids(got), want)
			}
			if got, _ := m.List(t.Context(), "carol", MaxListed); len(got) != 0 {
				t.Errorf("replica %s lists carol's %v, want none", name, ids(got))
			}
		}
		close(release)
		<-first.Done()
		got, _ := b.List(t.Context(), "ada", 1)
		if want := []string{second.ID()}; !slices.Equal(ids(got), want) {
			t.Errorf("a listing of 1 is %v, want the newest %v", ids(got), want)
		}
		got, _ = b.List(t.Context(), "ada", MaxListed)
		if len(got) != 2 || got[1].Status != Done {
			t.Errorf("replica b lists %+v, want ada's first run done", got)
		}
	})
}

func TestListReadsARunWhoseReplicaDiedAsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore(MemoryStoreOptions{})
		rec := &Record{ID: NewID(), Principal: "ada", Status: Running, Started: time.Now(), Updated: time.Now()}
		blob, _ := Encode(rec)
		if err := store.Save(t.Context(), rec, blob, 15*time.Second, time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(16 * time.Second)
		got, err := newManager(store).List(t.Context(), "ada", MaxListed)
		if err != nil || len(got) != 1 || got[0].Status != Lost {
			t.Fatalf("List = %+v, %v; want the run lost", got, err)
		}
	})
}

func TestMemoryStoreListIsBoundedNewestFirst(t *testing.T) {
	store := NewMemoryStore(MemoryStoreOptions{})
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range MaxListed + 5 {
		rec := &Record{ID: NewID(), Principal: "ada", Status: Done, Started: start.Add(time.Duration(i) * time.Second)}
		if err := store.Save(context.Background(), rec, []byte(`{}`), time.Minute, time.Hour); err != nil {
			t.Fatal(err)
		}
		want = append([]string{rec.ID}, want...)
	}
	for _, limit := range []int{0, 3, MaxListed, MaxListed + 5} {
		got, err := store.List(t.Context(), "ada", limit)
		if err != nil {
			t.Fatal(err)
		}
		n := min(limit, MaxListed)
		gotIDs := make([]string, 0, len(got))
		for _, st := range got {
			gotIDs = append(gotIDs, st.ID)
		}
		if !slices.Equal(gotIDs, want[:n]) {
			t.Errorf("List(limit %d) = %d ids, want the newest %d in order", limit, len(got), n)
		}
	}
}
