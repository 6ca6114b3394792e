package mock

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// fromPattern returns a string that matches pattern, has between minLen
// and maxLen characters (maxLen < 0: no bound) and at most maxBytes bytes,
// or false when it finds none: repetitions are tried at their minimum
// first, then longer.
func fromPattern(pattern string, minLen, maxLen, maxBytes int) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	check, err := regexp.Compile(pattern)
	if err != nil {
		return "", false
	}
	re = re.Simplify()
	for extra := 0; extra <= 64; extra++ {
		var b strings.Builder
		if !emit(&b, re, extra, 0, maxBytes) {
			return "", false
		}
		v := b.String()
		n := utf8.RuneCountInString(v)
		if maxLen >= 0 && n > maxLen {
			return "", false // longer tries only grow
		}
		if n >= minLen && check.MatchString(v) {
			return v, true
		}
	}
	return "", false
}

// emit writes a string re matches, repeating each open-ended repetition
// extra times beyond its minimum.
func emit(b *strings.Builder, re *syntax.Regexp, extra, depth, maxBytes int) bool {
	if depth > 100 || b.Len() > maxBytes {
		return false
	}
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
		return true
	case syntax.OpCharClass:
		if len(re.Rune) < 2 {
			return false
		}
		b.WriteRune(pickRune(re.Rune))
		return true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
		return true
	case syntax.OpCapture:
		return emit(b, re.Sub[0], extra, depth+1, maxBytes)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !emit(b, sub, extra, depth+1, maxBytes) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return emit(b, re.Sub[0], extra, depth+1, maxBytes)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		n := lo + extra
		if hi >= 0 {
			n = min(n, hi)
		}
		n = max(n, lo)
		for range n {
			if !emit(b, re.Sub[0], extra, depth+1, maxBytes) {
				return false
			}
		}
		return true
	}
	return false
}

// pickRune picks a readable rune from a class's ranges: a letter or digit
// when the class has one, else its first rune.
func pickRune(ranges []rune) rune {
	for _, want := range []rune{'a', 'A', '0', '-', '_'} {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= want && want <= ranges[i+1] {
				return want
			}
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i] > ' ' {
			return ranges[i]
		}
	}
	return ranges[0]
}
