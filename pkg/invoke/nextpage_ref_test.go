package invoke

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/specgate/specgate/pkg/answer"
)

const cursorDoc = `{"openapi":"3.0.3","info":{"title":"cursor","version":"1"},"paths":{
 "/items":{"get":{"operationId":"listItems","parameters":[
   {"name":"cursor","in":"query","schema":{"type":"string"}},
   {"name":"limit","in":"query","schema":{"type":"integer"}}],
  "responses":{"200":{"description":"ok"}}}},
 "/other":{"get":{"operationId":"listOther","parameters":[
   {"name":"cursor","in":"query","schema":{"type":"string"}}],
  "responses":{"200":{"description":"ok"}}}}}}`

// A 2 MB cursor was copied whole into nextPage.parameters, so the answer
// broke its budget fourfold: past a quarter of the budget the answer names
// the stored answer instead.
func TestNextPageForHugeCursorNamesTheStoredAnswer(t *testing.T) {
	huge := map[string]any{"limit": 5, "cursor": strings.Repeat("c", 2<<20)}
	small := map[string]any{"limit": 5, "cursor": "abc"}
	deep := map[string]any{"filter": nested(answer.MaxAnswerDepth + 5)}
	for _, tt := range []struct {
		name   string
		next   map[string]any
		id     string
		budget int
		want   *answer.NextPageRef
	}{
		{"small", small, "r_x", 1024, &answer.NextPageRef{Parameters: small}},
		{"huge", huge, "r_x", 1024, &answer.NextPageRef{Of: "r_x"}},
		{"huge at the largest budget", huge, "r_x", answer.MaxResultBytes, &answer.NextPageRef{Of: "r_x"}},
		{"just over a quarter", map[string]any{"cursor": strings.Repeat("c", 1024/4)}, "r_x", 1024, &answer.NextPageRef{Of: "r_x"}},
		{"deep", deep, "r_x", answer.MaxResultBytes, &answer.NextPageRef{Of: "r_x"}},
		{"huge and not stored", huge, "", 1024, nil},
		{"none", nil, "r_x", 1024, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := answer.NextPageFor(tt.next, tt.id, tt.budget)
			if got != nil && got.Parameters != nil && tt.want != nil && tt.want.Parameters != nil {
				if len(got.Parameters) != len(tt.want.Parameters) || got.Parameters["cursor"] != tt.want.Parameters["cursor"] {
					t.Errorf("parameters %v, want %v", got.Parameters, tt.want.Parameters)
				}
				return
			}
			if (got == nil) != (tt.want == nil) || got != nil && (got.Of != tt.want.Of || got.Parameters != nil) {
				t.Errorf("NextPageFor = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// nested returns n levels of {"a": ...} around 1.
func nested(n int) any {
	var v any = 1
	for range n {
		v = map[string]any{"a": v}
	}
	return v
}

// An answer whose cursor is too large to show is stored, and nextPageOf
// asks for its next page with the stored cursor as is, whatever other
// parameters come beside it.
func TestNextPageArgsUsesTheStoredCursorAsIs(t *testing.T) {
	cursor := strings.Repeat("k", 300<<10)
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("cursor") == "" {
			_, _ = w.Write([]byte(`{"items":[1,2],"next_cursor":"` + cursor + `"}`))
			return
		}
		_, _ = w.Write([]byte(`{"items":[3]}`))
	})
	s := parseSpec(t, "cursor", cursorDoc, up.URL)
	list, other := endpoint(t, s, "listItems"), endpoint(t, s, "listOther")
	c := &Caller{Governed: Governed{Client: New(Options{})}, Answers: answer.NewMemoryAnswers(answer.MemoryAnswersOptions{})}
	ctx := t.Context()
	first, err := c.Call(as(ctx, "ada"), list, Args{Parameters: map[string]any{"limit": 2}}, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if first.ResponseID == "" || first.Answer.NextPage["cursor"] != cursor {
		t.Fatalf("first page: stored %q, next page %.80v", first.ResponseID, first.Answer.NextPage)
	}
	ref := answer.NextPageFor(first.Answer.NextPage, first.ResponseID, 1024)
	if ref == nil || ref.Of != first.ResponseID || ref.Parameters != nil {
		t.Fatalf("NextPageFor = %.200v, want nextPageOf %s", ref, first.ResponseID)
	}

	// The model repeats its last parameters, with an old cursor and a new
	// field: the stored cursor wins, the new field is added.
	in := Args{Parameters: map[string]any{"limit": 2, "cursor": "stale"}}
	next, err := c.NextPageArgs(as(ctx, "ada"), list, ref.Of, in)
	if err != nil {
		t.Fatal(err)
	}
	if limit := fmt.Sprint(next.Parameters["limit"]); next.Parameters["cursor"] != cursor || limit != "2" || in.Parameters["cursor"] != "stale" {
		t.Fatalf("cursor %.20q…, limit %q; the caller's map must stay as it was, not %.80q", next.Parameters["cursor"], limit, in.Parameters["cursor"])
	}
	second, err := c.Call(as(ctx, "ada"), list, next, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := up.last(t).RawQuery; !strings.Contains(got, "cursor="+cursor) {
		t.Errorf("upstream saw query %.80q…, want the stored cursor", got)
	}
	if string(second.Answer.Body) != `{"items":[3]}` || second.Answer.NextPage != nil {
		t.Errorf("second page %s, next %v", second.Answer.Body, second.Answer.NextPage)
	}

	var nf *answer.AnswerNotFoundError
	if _, err := c.NextPageArgs(as(ctx, "bob"), list, ref.Of, Args{}); !errors.As(err, &nf) || nf.Reason != answer.AnswerUnknown {
		t.Errorf("another principal's id: %v, want not found as unknown", err)
	}
	if _, err := c.NextPageArgs(as(ctx, "ada"), list, "r_"+strings.Repeat("A", 22), Args{}); !errors.As(err, &nf) {
		t.Errorf("unknown id: %v, want not found", err)
	}
	_, err = c.NextPageArgs(as(ctx, "ada"), other, ref.Of, Args{})
	if ae := asArgError(t, err); !strings.Contains(ae.Problems[0], "cursor.listItems") {
		t.Errorf("another endpoint: %v", ae.Problems)
	}
	_, err = c.NextPageArgs(as(ctx, "ada"), list, second.ResponseID, Args{})
	if ae := asArgError(t, err); !strings.Contains(ae.Problems[0], "no next page") {
		t.Errorf("an answer without a next page: %v", ae.Problems)
	}
	if _, err := (&Caller{}).NextPageArgs(as(ctx, "ada"), list, ref.Of, Args{}); !errors.As(err, &nf) {
		t.Errorf("no store: %v, want not found", err)
	}
}

// A next page named by a Link header on an empty body is stored too, so
// that an id can stand for its parameters.
func TestCallerStoresAnEmptyAnswerWithANextPage(t *testing.T) {
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `</items?cursor=`+strings.Repeat("z", 2048)+`>; rel="next"`)
		w.WriteHeader(http.StatusOK)
	})
	s := parseSpec(t, "cursor", cursorDoc, up.URL)
	c := &Caller{Governed: Governed{Client: New(Options{})}, Answers: answer.NewMemoryAnswers(answer.MemoryAnswersOptions{})}
	r, err := c.Call(as(t.Context(), "ada"), endpoint(t, s, "listItems"), Args{}, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Answer.Body) != 0 || r.Answer.NextPage == nil || r.ResponseID == "" {
		t.Fatalf("body %q, next page %.60v, id %q: want an empty answer stored with its next page", r.Answer.Body, r.Answer.NextPage, r.ResponseID)
	}
	got, err := c.Answers.Get(t.Context(), Principal{Subject: "ada"}.Key(), r.ResponseID)
	if err != nil || !cmp.Equal(got.NextPage, r.Answer.NextPage) {
		t.Errorf("stored %v, %v", got, err)
	}
}
