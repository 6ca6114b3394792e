package search

import (
	"context"
	"strings"
	"testing"

	"github.com/specgate/specgate/internal/embedtest"
)

// moneyBackEmbedder is the stand-in embedder (internal/embedtest) with one
// more synonym: "money back" lands where "refund" does, as a language
// model would put them.
type moneyBackEmbedder struct{}

func (moneyBackEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = embedtest.Vector(strings.ReplaceAll(strings.ToLower(t), "money back", "refund"))
	}
	return out, nil
}

// Stripe intents that share no content word with a refund endpoint's
// name or summary: only meaning finds them.
var wordlessRefunds = []string{
	"money back for a duplicate purchase",
	"send the money back",
	"pay the money back to the buyer",
}

var refundEndpoints = []string{"stripe.PostRefunds", "stripe.PostChargesChargeRefunds", "stripe.PostChargesChargeRefund"}

// TestFusionTrustsMeaningWhenWordsAreWeak: when the words of an intent
// barely match, the vector side decides; the intents the words do match
// keep their lexical head.
func TestFusionTrustsMeaningWhenWordsAreWeak(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
	cat := sharedCatalog(t, "stripe.json", "stripe")
	lex, err := New(cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lex.Close()
	hyb, err := New(cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hyb.Close()
	if err := hyb.EnableSemantic(t.Context(), cat, SemanticOptions{Embedder: moneyBackEmbedder{}, Model: "stand-in+money-back"}); err != nil {
		t.Fatal(err)
	}
	best := func(hits []Hit) int {
		r := 0
		for _, id := range refundEndpoints {
			if n := rankOf(hits, id); n > 0 && (r == 0 || n < r) {
				r = n
			}
		}
		return r
	}
	for _, q := range wordlessRefunds {
		if style := lex.intentStyle(q, refundEndpoints); style != styleWordless {
			t.Fatalf("%q is %s for the refund endpoints, not word-less: the case tests nothing", q, style)
		}
		l, err := lex.Search(q, 20)
		if err != nil {
			t.Fatal(err)
		}
		h, err := hyb.Search(q, 20)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%q: lexical rank %d, hybrid rank %d", q, best(l), best(h))
		if r := best(h); r == 0 || r > 5 {
			t.Errorf("%q: no refund endpoint in the hybrid top 5 (best rank %d): %v", q, r, ids(h[:min(5, len(h))]))
		}
	}
	// Where the words match, they keep winning.
	for _, c := range []struct{ q, want string }{
		{"refund a charge", "stripe.PostChargesChargeRefund"},
		{"list all customers", "stripe.GetCustomers"},
		{"delete a customer", "stripe.DeleteCustomersCustomer"},
		{"create a payout", "stripe.PostPayouts"},
	} {
		l, _ := lex.Search(c.q, 5)
		h, _ := hyb.Search(c.q, 5)
		if rankOf(l, c.want) == 1 && rankOf(h, c.want) != 1 {
			t.Errorf("%q: lexical puts %s first, hybrid at %d: %v", c.q, c.want, rankOf(h, c.want), ids(h))
		}
	}
}
