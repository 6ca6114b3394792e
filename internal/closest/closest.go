// Package closest finds the name a misspelt one most likely meant: the one
// rule behind every "did you mean" specgate says, for config keys, CLI
// commands and flags, and the parameter names a model sends.
package closest

// Name returns the name in names closest to s when it is close enough to be
// a typo of it: at most two edits (an adjacent swap is one) and fewer than a
// third of the candidate's length; "" when none is. On a tie the first in
// names wins.
func Name(s string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if d := Distance(s, n); d < bestDist && d*3 < len(n) {
			best, bestDist = n, d
		}
	}
	return best
}

// Distance is the optimal string alignment distance of a and b, in bytes:
// insertions, deletions, substitutions and swaps of two adjacent bytes, one
// edit each. It is meant for short names: it takes len(a)×len(b) ints.
func Distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
