package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// splitWords breaks an identifier-ish or free text string into lower-case
// words: camelCase and PascalCase humps, digits, and every separator
// ("/", "-", "_", ".", "{", "}", spaces, punctuation) end a word.
// "listCoreV1NamespacedPod" gives list core v1 namespaced pod,
// "pulls/list-review-comments" gives pulls list review comments.
func splitWords(s string, out []string) []string {
	start := -1
	var prev rune
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(s[start:end]))
		}
		start = -1
	}
	for i, r := range s {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case !word:
			flush(i)
		case start < 0:
			start = i
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			// fooBar: a hump starts a word.
			flush(i)
			start = i
		case unicode.IsUpper(r) && unicode.IsUpper(prev) && nextIsLower(s, i):
			// HTTPServer: the last capital of a run starts the next word.
			flush(i)
			start = i
		case unicode.IsDigit(r) != unicode.IsDigit(prev) && !(unicode.IsDigit(r) && isVersionPrefix(s[start:i])):
			// Letters and digits part, except a version such as v1 or
			// v2beta1 stays one word.
			flush(i)
			start = i
		}
		prev = r
	}
	flush(len(s))
	return out
}

// nextIsLower reports whether the rune after the one at byte i is a
// lower-case letter.
func nextIsLower(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	if i+size >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i+size:])
	return unicode.IsLower(r)
}

// isVersionPrefix reports whether w is "v" (so "v1" stays one word).
func isVersionPrefix(w string) bool {
	return w == "v" || w == "V"
}

// pathWords returns the words of a path template's literal segments,
// leaving parameters out and a file extension such as ".json" off.
func pathWords(path string, out []string) []string {
	for _, seg := range strings.Split(path, "/") {
		seg = literalSegment(seg)
		if seg == "" {
			continue
		}
		out = splitWords(seg, out)
	}
	return out
}

// literalSegment returns the part of a path segment that is not a
// template parameter, without a trailing ".json"/".xml" extension.
func literalSegment(seg string) string {
	for {
		i := strings.IndexByte(seg, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(seg[i:], '}')
		if j < 0 {
			seg = seg[:i]
			break
		}
		seg = seg[:i] + " " + seg[i+j+1:]
	}
	seg = strings.TrimSpace(seg)
	for _, ext := range []string{".json", ".xml", ".yaml"} {
		seg = strings.TrimSuffix(seg, ext)
	}
	return seg
}

// resourceSegments returns the last literal segment of the path and
// whether the path ends in a parameter (an item rather than a collection).
// "/repos/{owner}/{repo}/pulls" gives "pulls", false;
// "/v1/customers/{customer}" gives "customers", true.
func resourceSegments(path string) (last string, item bool) {
	segs := strings.Split(strings.TrimRight(path, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		lit := literalSegment(segs[i])
		if lit == "" || strings.TrimSpace(lit) == "" {
			if strings.Contains(segs[i], "{") && i == len(segs)-1 {
				item = true
			}
			continue
		}
		// Twilio writes items as "{Sid}.json".
		if i == len(segs)-1 && strings.Contains(segs[i], "{") {
			item = true
			continue
		}
		return lit, item
	}
	return "", item
}

// oneLine makes a short one-line summary: markdown links and emphasis
// reduced to their text, whitespace collapsed, cut at a word boundary to
// at most max bytes with an ellipsis.
func oneLine(s string, max int) string {
	s = stripMarkup(s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	cut := s[:max]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.-(") + "…"
}

// firstSentence returns the first sentence of a description, for
// operations that have no summary.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(stripMarkup(s)), " ")
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && s[i+1] == ' ' && i > 10 {
			return s[:i+1]
		}
	}
	return s
}

// stripMarkup removes the markdown and HTML noise that descriptions carry:
// "[text](url)" becomes "text", tags, "**", "`" and "#" go.
func stripMarkup(s string) string {
	if !strings.ContainsAny(s, "[]<>*`#_\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '[':
			// [text](url) keeps text.
			if j := strings.IndexByte(s[i:], ']'); j > 0 {
				text := s[i+1 : i+j]
				rest := s[i+j+1:]
				if strings.HasPrefix(rest, "(") {
					if k := strings.IndexByte(rest, ')'); k >= 0 {
						b.WriteString(text)
						i += j + 1 + k
						continue
					}
				}
			}
			continue
		case ']':
			continue
		case '<':
			if j := strings.IndexByte(s[i:], '>'); j > 0 && j < 200 {
				b.WriteByte(' ')
				i += j
				continue
			}
		case '*', '`', '#':
			continue
		case '\n', '\r', '\t':
			b.WriteByte(' ')
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// truncateWords cuts s to at most max bytes at a word boundary.
func truncateWords(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := s[:max]
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return cut
}

// fitSummaries shortens the summaries of hits, longest first, so that
// the hits as a JSON array take at most budget bytes. Summaries that fit
// are left whole; when the other fields alone use the budget up, the
// summaries go.
// Summaries marked plain (they repeat the id) go before any is cut.
func fitSummaries(hits []Hit, plain []bool, budget int) {
	fixed := 1 + len(hits) // brackets and commas
	lens := make([]int, len(hits))
	total := 0
	for i := range hits {
		h := hits[i]
		h.Summary = ""
		fixed += jsonSize(h)
		if hits[i].Summary != "" {
			lens[i] = len(hits[i].Summary)
			total += lens[i] + len(`,"summary":""`)
		}
	}
	// Ids and paths alone can fill the budget (Twilio's run long): then
	// tags go too, from the last hit up.
	for i := len(hits) - 1; i >= 0 && fixed > budget; i-- {
		if len(hits[i].Tags) == 0 {
			continue
		}
		h := hits[i]
		h.Summary = ""
		before := jsonSize(h)
		h.Tags = nil
		fixed -= before - jsonSize(h)
		hits[i].Tags = nil
	}
	room := budget - fixed
	if total <= room {
		return
	}
	for i := range hits {
		if plain[i] && lens[i] > 0 {
			hits[i].Summary = ""
			total -= lens[i] + len(`,"summary":""`)
			lens[i] = 0
		}
	}
	if total <= room {
		return
	}
	// Find the largest cap such that every summary cut to it fits.
	cost := func(cap int) int {
		c := 0
		for _, n := range lens {
			if n > 0 {
				c += min(n, cap) + len(`,"summary":""`)
			}
		}
		return c
	}
	lo, hi := 0, 0
	for _, n := range lens {
		hi = max(hi, n)
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if cost(mid) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	const minUseful = 12
	for i := range hits {
		if lens[i] <= lo {
			continue
		}
		if lo < minUseful {
			hits[i].Summary = ""
			continue
		}
		// The ellipsis takes 3 bytes of the cap.
		hits[i].Summary = oneLine(hits[i].Summary, lo-3)
	}
}

// jsonSize is the length of a hit's JSON encoding as encoding/json
// writes it, without the score.
func jsonSize(h Hit) int {
	n := len(`{"id":,"method":,"path":,"spec":}`) + jsonStrLen(h.ID) + jsonStrLen(h.Method) +
		jsonStrLen(h.Path) + jsonStrLen(h.Spec)
	if h.Summary != "" {
		n += len(`,"summary":`) + jsonStrLen(h.Summary)
	}
	if len(h.Tags) > 0 {
		n += len(`,"tags":[]`) + len(h.Tags) - 1
		for _, t := range h.Tags {
			n += jsonStrLen(t)
		}
	}
	return n
}

// jsonStrLen is the length of s as a JSON string with encoding/json's
// escaping (HTML characters included).
func jsonStrLen(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 6
		default:
			n++
		}
	}
	return n
}
