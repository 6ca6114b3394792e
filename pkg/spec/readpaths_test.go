package spec

import (
	"encoding/json"
	"reflect"
	"sync/atomic"
	"testing"
)

func TestEachParallelCallsEveryIndexOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 8} {
		calls := make([]atomic.Int32, 100)
		eachParallel(len(calls), workers, func(i, w int) {
			if w < 0 || w >= workers {
				t.Errorf("worker %d of %d", w, workers)
			}
			calls[i].Add(1)
		})
		for i := range calls {
			if n := calls[i].Load(); n != 1 {
				t.Errorf("%d workers: index %d called %d times", workers, i, n)
			}
		}
	}
}

// A panic reaches the caller as a loop in order would raise it: the one of
// the first index that panics.
func TestEachParallelRaisesTheFirstPanic(t *testing.T) {
	for _, workers := range []int{1, 2, 8} {
		got := func() (r any) {
			defer func() { r = recover() }()
			eachParallel(50, workers, func(i, _ int) {
				if i >= 20 && i%5 == 0 {
					panic(i)
				}
			})
			return nil
		}()
		if got != 20 {
			t.Errorf("%d workers: recovered %v, want 20", workers, got)
		}
	}
}

// rawComponents and rawEntries read valid JSON as json.Unmarshal and
// objectEntries do: repeated keys, escaped keys, null sections.
func TestRawReadersAgreeWithEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		`null`,
		`{}`,
		`{"schemas":{"A":{"type":"string"},"A":{"type":"integer"}},"schemas":{"B":{}}}`,
		`{"schemas":null,"responses":{"ok":null,"caf\u00e9":{"description":"x"}}}`,
		`{ "schemas" : { "A" : [1, {"b": "}"}] , "C\"D" : "e" } }`,
		`{"schemas":[]}`,
		`{"schemas":{"A":{}},"x":"y"}`,
		`[]`,
	} {
		var want map[string]map[string]json.RawMessage
		wantErr := json.Unmarshal([]byte(doc), &want)
		got, ok := rawComponents([]byte(doc))
		if ok != (wantErr == nil) {
			t.Errorf("%s: rawComponents ok %t, json.Unmarshal err %v", doc, ok, wantErr)
			continue
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: rawComponents = %q, want %q", doc, got, want)
		}
		wantEntries, entErr := objectEntries([]byte(doc))
		gotEntries, ok := rawEntries([]byte(doc))
		if ok != (entErr == nil) || (ok && !reflect.DeepEqual(gotEntries, wantEntries)) {
			t.Errorf("%s: rawEntries = %q, %t; objectEntries = %q, %v", doc, gotEntries, ok, wantEntries, entErr)
		}
	}
}
