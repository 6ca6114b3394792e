package invoke

import "github.com/specgate/specgate/pkg/answer"

// maxClip bounds a name an error message quotes from a stored answer.
const maxClip = 300

// runeCut returns the largest index ≤ n that does not split a UTF-8
// sequence of s.
func runeCut(s string, n int) int { return answer.RuneCut(s, n) }

// clip bounds s to maxClip bytes, on a rune boundary, marking a cut "…".
func clip(s string) string {
	if len(s) <= maxClip {
		return s
	}
	return s[:runeCut(s, maxClip)] + "…"
}
