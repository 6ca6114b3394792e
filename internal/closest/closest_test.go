package closest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"serve", "sevre", 1}, {"flaw", "lawn", 2}, {"ab", "ba", 1}, {"same", "same", 0},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestName(t *testing.T) {
	names := []string{"rate_limit_interval", "cache_ttl", "serve", "init", "http"}
	for _, tc := range []struct{ s, want string }{
		{"rate_limit_intervall", "rate_limit_interval"},
		{"cache_tll", "cache_ttl"}, // a swap is one edit
		{"serv", "serve"},
		{"ini", "init"},
		{"htp", "http"},
		{"cache", ""},   // five edits away
		{"xyz", ""},     // nothing near
		{"int", "init"}, // one insertion
		{"tini", ""},    // two edits: not under a third of four letters
	} {
		if got := Name(tc.s, names); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
