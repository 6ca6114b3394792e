package spec

import "testing"

func TestRateLimitCost(t *testing.T) {
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
	  "/search":{"get":{"operationId":"search","x-ratelimit-cost":5,"responses":{"200":{"description":"ok"}}}},
	  "/quoted":{"get":{"operationId":"quoted","x-ratelimit-cost":"3","responses":{"200":{"description":"ok"}}}},
	  "/silly":{"get":{"operationId":"silly","x-ratelimit-cost":{"n":2},"responses":{"200":{"description":"ok"}}}},
	  "/huge":{"get":{"operationId":"huge","x-ratelimit-cost":100000,"responses":{"200":{"description":"ok"}}}},
	  "/plain":{"get":{"operationId":"plain","responses":{"200":{"description":"ok"}}}}}}`
	s, err := Parse(t.Context(), "t.json", []byte(doc), Options{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"t.search": 5, "t.quoted": 3, "t.silly": 0, "t.huge": 0, "t.plain": 0}
	for _, e := range s.Endpoints {
		if got := e.RateLimitCost(); got != want[e.ID] {
			t.Errorf("%s: cost %d, want %d", e.ID, got, want[e.ID])
		}
	}
}
