package answer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// testEnvelope stands for the result the MCP layer builds around a Reply:
// some fields of its own, then the reply's.
type testEnvelope struct {
	Status  int               `json:"statusCode"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    any               `json:"body,omitempty"`
	Shaped  *Shaped           `json:"shaped,omitempty"`
	ID      string            `json:"responseId,omitempty"`
	Next    *int              `json:"nextOffset,omitempty"`
	Hint    string            `json:"hint,omitempty"`
	Note    string            `json:"note,omitempty"`
	JQError string            `json:"jqError,omitempty"`
}

func (e *testEnvelope) encode(r *Reply) []byte {
	e.Body, e.Shaped, e.Next, e.Hint, e.Note, e.JQError = r.Body, r.Shaped, r.NextOffset, r.Hint, r.Note, r.JQError
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return b
}

// Fit bounds the whole result, not only the body: at every budget from the
// smallest maxBytes to the largest, around envelopes small and large, the
// result is valid JSON of at most the budget; a body that fits whole with
// the envelope comes back whole; a preview fills most of the budget.
func TestViewFitBoundsTheWholeResult(t *testing.T) {
	id := "r_AAAAAAAAAAAAAAAAAAAAAA"
	page := pullRequestPage(t, 30)
	small := []byte(`{"id":1,"name":"doggie","tags":["a","b"]}`)
	text := []byte(strings.Repeat("line of a CSV export,with,fields\n", 2000))
	// Just under 16 KiB of JSON: whole at the default budget with a small
	// envelope, previewed with a large one.
	var edge strings.Builder
	edge.WriteString("[")
	for i := 0; edge.Len() < 16000; i++ {
		if i > 0 {
			edge.WriteString(",")
		}
		fmt.Fprintf(&edge, `{"n":%d,"s":"%s"}`, i, strings.Repeat("x", 40))
	}
	edge.WriteString("]")
	bodies := map[string]*Answer{
		"github page": {ContentType: "application/json", Body: page},
		"small json":  {ContentType: "application/json", Body: small},
		"edge json":   {ContentType: "application/json", Body: []byte(edge.String())},
		"csv text":    {ContentType: "text/csv", Body: text},
		"binary":      {ContentType: "application/pdf", Body: []byte("%PDF-1.7\x00\x01\x02")},
		"empty":       {ContentType: "application/json"},
	}
	bigHeaders := map[string]string{}
	for i := range 6 {
		bigHeaders[fmt.Sprintf("x-header-%d", i)] = strings.Repeat("v", 40)
	}
	for name, a := range bodies {
		for _, total := range []int{MinResultBytes, 1500, 4096, DefaultResultBytes, MaxResultBytes} {
			for _, headers := range []map[string]string{nil, bigHeaders} {
				t.Run(fmt.Sprintf("%s/%d/%d headers", name, total, len(headers)), func(t *testing.T) {
					w, err := NewView(t.Context(), a, RenderOptions{ResponseID: id})
					if err != nil {
						t.Fatal(err)
					}
					env := &testEnvelope{Status: 200, Headers: headers, ID: id}
					out, r := w.Fit(total, env.encode)
					if !json.Valid(out) {
						t.Fatalf("result is not valid JSON: %.300s", out)
					}
					if len(out) > total {
						t.Fatalf("result is %d bytes, over %d", len(out), total)
					}
					if string(out) != string(env.encode(r)) {
						t.Errorf("the bytes returned are not the reply's")
					}
					whole := len(a.Body) > 0 && len(env.encode(&Reply{Body: json.RawMessage(compact(t, a))})) <= total
					if whole && r.Shaped != nil {
						t.Errorf("previewed a body that fits whole: %.200s", out)
					}
					if r.Shaped != nil && total >= 4096 && len(out) < total*3/4 {
						t.Errorf("preview result is %d bytes of %d: the budget is not filled", len(out), total)
					}
				})
			}
		}
	}
}

// compact is a's body as the reply would carry it whole.
func compact(t *testing.T, a *Answer) []byte {
	t.Helper()
	if !strings.Contains(a.ContentType, "json") {
		b, _ := json.Marshal(string(a.Body))
		return b
	}
	v, err := DecodeJSON(a.Body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzViewFit feeds arbitrary bodies, media types and budgets to NewView
// and Fit: the result is always valid JSON within the budget.
func FuzzViewFit(f *testing.F) {
	f.Add([]byte(`[{"id":1,"name":"x"},{"id":2}]`), "application/json", 1024)
	f.Add([]byte(`{"data":[1,2,3],"has_more":true}`), "", 2000)
	f.Add([]byte("plain text \xff\xfe"), "text/plain", 1024)
	f.Add([]byte{0x89, 'P', 'N', 'G', 0, 1, 2}, "image/png", 4096)
	f.Add([]byte(`{"a":`), "application/json", 1024)
	f.Fuzz(func(t *testing.T, body []byte, ct string, total int) {
		total = MinResultBytes + abs(total)%(MaxResultBytes-MinResultBytes+1)
		w, err := NewView(t.Context(), &Answer{ContentType: ct, Body: body}, RenderOptions{ResponseID: "r_AAAAAAAAAAAAAAAAAAAAAA"})
		if err != nil {
			t.Fatalf("NewView: %v", err)
		}
		env := &testEnvelope{Status: 200, ID: "r_AAAAAAAAAAAAAAAAAAAAAA"}
		out, _ := w.Fit(total, env.encode)
		if !json.Valid(out) || len(out) > total {
			t.Fatalf("%d bytes (budget %d), valid %v: %.200q", len(out), total, json.Valid(out), out)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// A fresh answer's body was decoded by the call already: the view renders
// that value rather than decoding the bytes again.
func TestNewViewRendersTheDecodedBody(t *testing.T) {
	a := &Answer{Endpoint: "x.get", StatusCode: 200, ContentType: "application/json", Body: []byte(`{"n":1}`),
		Decoded: map[string]any{"n": json.Number("2")}}
	w, err := NewView(t.Context(), a, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, r := w.Fit(DefaultResultBytes, func(r *Reply) []byte { b, _ := json.Marshal(r); return b })
	if body, _ := r.Body.(json.RawMessage); string(body) != `{"n":2}` {
		t.Errorf("body %s, want the decoded value {\"n\":2}", body)
	}
}
