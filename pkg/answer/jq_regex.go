package answer

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/itchyny/gojq"
)

// Regular expressions are where one builtin call can run for minutes, out
// of the deadline's reach (it is looked at between steps of the filter, not
// inside a builtin):
//
//   - gojq's match reports each offset in code points by converting the
//     whole string before it ([]rune(s[:offset])) once per match, so a
//     global match costs quadratic time and allocation: scan(".") over
//     670 KB ran for three minutes;
//   - Go's regexp is linear in the string, but times the size of the
//     compiled expression: test("[a-z]{0,1000}x") over 1 MiB took 45 s.
//
// So every filter is compiled with the regular expression functions
// defined on matchFunc: gojq's own definitions (builtin.jq, MIT licence)
// with _match replaced by a match that counts code points once along the
// string, stops at maxJQMatches matches, and refuses a string and an
// expression whose product of sizes is past maxRegexWork.

// matchFunc is the name of the linear match the regular expression
// functions are defined on.
const matchFunc = "_specgate_match"

// Bounds of one regular expression call.
const (
	// maxJQMatches bounds the matches of one expression in one string, and
	// so the values one call builds.
	maxJQMatches = 10000
	// maxRegexWork bounds the string's bytes times the compiled
	// expression's instructions: about 0.2 s in the worst case measured
	// (every instruction live at every byte), milliseconds for most.
	maxRegexWork = 10_000_000
	// maxRegexBytes bounds an expression's text; a filter may take it from
	// the document.
	maxRegexBytes = 4096
	// maxJQStringBytes bounds the strings the functions that make one value
	// per character or per match take in (explode, split, indices, the
	// regular expression functions): 1 MiB of them is tens of MiB of values.
	maxJQStringBytes = 1 << 20
)

// jqRegexDefs are gojq's definitions of the functions built on _match, on
// matchFunc instead. capture/2 and sub/3 keep _captures, gojq's builtin;
// sub bounds the string it builds as + does.
const jqRegexDefs = `
def test($re; $flags): ` + matchFunc + `($re; $flags; true);
def test($re):
  if $re | type == "array" then test($re[0]; $re[1]) else test($re; null) end;
def match($re; $flags): ` + matchFunc + `($re; $flags; false)[];
def match($re):
  if $re | type == "array" then match($re[0]; $re[1]) else match($re; null) end;
def capture($re; $flags): match($re; $flags) | .captures | _captures;
def capture($re):
  if $re | type == "array" then capture($re[0]; $re[1]) else capture($re; null) end;
def scan($re; $flags):
  match($re; $flags + "g") |
  if .captures == [] then
    .string
  else
    [.captures[].string]
  end;
def scan($re): scan($re; null);
def splits($re; $flags):
  .[foreach (match($re; $flags + "g"), null) as {$offset, $length}
      (null; {start: .next, end: $offset, next: $offset + $length})];
def splits($re): splits($re; null);
def split($re; $flags): [splits($re; $flags)];
def sub($re; str; $flags):
  reduce match($re; $flags) as {$offset, $length, $captures}
    ({s: ., r: []};
      reduce ($captures | _captures | str | ` + guardFunc + `) as $s
        (.i = 0; .r[.i] += .s[.next:$offset] + $s | .r[.i] |= ` + guardFunc + ` | .i += 1) |
      .next = $offset + $length) | .r[] + .s[.next:] // .s;
def sub($re; str): sub($re; str; null);
def gsub($re; str; $flags): sub($re; str; $flags + "g");
def gsub($re; str): sub($re; str; "g");
.`

// regexDefs are jqRegexDefs parsed. The compiler only reads them (gojq
// shares its own builtin definitions the same way).
var regexDefs = sync.OnceValue(func() []*gojq.FuncDef {
	q, err := gojq.Parse(jqRegexDefs)
	if err != nil {
		panic("jq regex definitions: " + err.Error())
	}
	return q.FuncDefs
})

// mayMatch reports whether the filter src may call a regular expression
// function; a field of one of their names is a harmless yes.
func mayMatch(src string) bool {
	for _, name := range []string{"test", "match", "capture", "scan", "split", "sub"} {
		if strings.Contains(src, name) {
			return true
		}
	}
	return false
}

// maxRegexCache bounds the compiled expressions one filter keeps: a filter
// may take its expressions from the document.
const maxRegexCache = 64

// regexCache keeps one filter's compiled expressions, by expression and
// flags.
type regexCache struct {
	mu sync.Mutex
	m  map[[2]string]*jqRegexp
}

// jqRegexp is an expression as jq matches it: Go's regexp ignores an empty
// match right after a non-empty one, jq reports it; probe finds it (one
// character, then the expression, anchored), keeping the context that ^
// and \b need.
type jqRegexp struct {
	re    *regexp.Regexp
	probe *regexp.Regexp
	insts int // of the compiled expression, as regexp runs it
}

func (c *regexCache) compile(re, flags string) (*jqRegexp, error) {
	key := [2]string{re, flags}
	c.mu.Lock()
	r, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	if strings.ContainsFunc(flags, func(r rune) bool { return r != 'g' && r != 'i' && r != 'm' }) {
		return nil, fmt.Errorf("unsupported regular expression flag: %q", clip(flags))
	}
	if len(re) > maxRegexBytes {
		return nil, fmt.Errorf("the regular expression is %d bytes; at most %d are allowed", len(re), maxRegexBytes)
	}
	src := re
	if strings.ContainsRune(flags, 'i') {
		src = "(?i)" + src
	}
	if strings.ContainsRune(flags, 'm') {
		src = "(?s)" + src
	}
	compiled, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %s", clip(src), clip(err.Error()))
	}
	r = &jqRegexp{re: compiled, insts: progSize(src)}
	if p, err := regexp.Compile(`\A(?s:.)(?:` + src + `)`); err == nil {
		r.probe = p
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxRegexCache {
		c.m = make(map[[2]string]*jqRegexp)
	}
	c.m[key] = r
	c.mu.Unlock()
	return r, nil
}

var errTooManyMatches = fmt.Errorf("the regular expression matches more than %d times in one string; narrow it, or split on a plain string with split(\", \")", maxJQMatches)

// match is matchFunc: gojq's _match($re; $flags; $testing) with offsets
// counted in one pass and at most maxJQMatches matches.
func (c *regexCache) match(v any, args []any) any {
	re, fs, testing := args[0], args[1], args[2]
	name := "match"
	if testing == true {
		name = "test"
	}
	var flags string
	if fs != nil {
		f, ok := fs.(string)
		if !ok {
			return fmt.Errorf("%s cannot be applied to: flags must be a string, got %s", name, typeOf(fs))
		}
		flags = f
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%s cannot be applied to: %s (%s)", name, typeOf(v), gojq.Preview(v))
	}
	restr, ok := re.(string)
	if !ok {
		return fmt.Errorf("%s cannot be applied to: the regular expression must be a string, got %s", name, typeOf(re))
	}
	r, err := c.compile(restr, flags)
	if err != nil {
		return err
	}
	if len(s) > maxJQStringBytes {
		return fmt.Errorf("%s applies to strings up to %d bytes, and this one is %d: take part of it first, such as .[0:100000]", name, maxJQStringBytes, len(s))
	}
	if len(s)*r.insts > maxRegexWork {
		return fmt.Errorf("the regular expression is too costly for a string of %d bytes: use a simpler expression (fewer repetitions) or a shorter string", len(s))
	}
	if testing == true {
		return r.re.MatchString(s)
	}
	n := 1
	if strings.ContainsRune(flags, 'g') {
		n = maxJQMatches + 1
	}
	xs, err := r.findAll(s, n)
	if err != nil {
		return err
	}
	names := r.re.SubexpNames()
	res := make([]any, len(xs))
	cp := codePoints{s: s}
	for i, x := range xs {
		start := cp.at(x[0])
		captures := make([]any, (len(x)-2)/2)
		for j := 1; j < len(x)/2; j++ {
			var name any
			if n := names[j]; n != "" {
				name = n
			}
			if x[j*2] < 0 {
				captures[j-1] = map[string]any{"name": name, "offset": -1, "length": 0, "string": nil}
				continue
			}
			off := start + runeCount(s, x[0], x[j*2])
			captures[j-1] = map[string]any{
				"name":   name,
				"offset": off,
				"length": runeCount(s, x[j*2], x[j*2+1]),
				"string": s[x[j*2]:x[j*2+1]],
			}
		}
		res[i] = map[string]any{
			"offset":   start,
			"length":   runeCount(s, x[0], x[1]),
			"string":   s[x[0]:x[1]],
			"captures": captures,
		}
	}
	return res
}

// findAll is regexp's FindAllStringSubmatchIndex plus the empty matches jq
// reports right after a non-empty one; more than maxJQMatches is an error.
func (r *jqRegexp) findAll(s string, n int) ([][]int, error) {
	xs := r.re.FindAllStringSubmatchIndex(s, n)
	if len(xs) > maxJQMatches {
		return nil, errTooManyMatches
	}
	if len(xs) == 0 || n == 1 || r.probe == nil {
		return xs, nil
	}
	ys := make([][]int, 0, len(xs))
	for i, x := range xs {
		ys = append(ys, x)
		if x[0] == x[1] || i+1 < len(xs) && xs[i+1][0] == x[1] {
			continue
		}
		if y := r.emptyMatchAt(s, x[1]); y != nil {
			ys = append(ys, y)
		}
		if len(ys) > maxJQMatches {
			return nil, errTooManyMatches
		}
	}
	return ys, nil
}

// probeWindow bounds the string the probe for an empty match reads: it
// looks for a match of exactly the one character before offset, and an
// expression that prefers a match reaching further than this past a
// non-empty match is not worth a scan of the rest of the string per match.
const probeWindow = 256

func (r *jqRegexp) emptyMatchAt(s string, offset int) []int {
	_, w := utf8.DecodeLastRuneInString(s[:offset])
	x := r.probe.FindStringSubmatchIndex(s[offset-w : min(len(s), offset+probeWindow)])
	if x == nil || x[1] != w {
		return nil
	}
	y := make([]int, len(x))
	y[0], y[1] = offset, offset
	for i := 2; i < len(x); i++ {
		if x[i] < 0 {
			y[i] = -1
		} else {
			y[i] = x[i] + offset - w
		}
	}
	return y
}

// progSize is the number of instructions regexp runs src with.
func progSize(src string) int {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return maxRegexWork // regexp compiled it, so this does not happen
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return maxRegexWork
	}
	return max(1, len(prog.Inst))
}

// strGuardFunc is the name of the check the checker puts before explode,
// split and indices: it fails the run when the input is a string longer
// than maxJQStringBytes.
const strGuardFunc = "_specgate_strguard"

// jqStrGuard is the check named strGuardFunc.
func jqStrGuard(v any, _ []any) any {
	if s, ok := v.(string); ok && len(s) > maxJQStringBytes {
		return fmt.Errorf("explode, split and indices apply to strings up to %d bytes, and this one is %d: take part of it first, such as .[0:100000]", maxJQStringBytes, len(s))
	}
	return v
}

// jqStringy lists the builtins that make one value per character, piece
// or occurrence of their input string; the checker puts strGuardFunc
// before them.
var jqStringy = map[string]bool{"explode": true, "split": true, "indices": true, "index": true, "rindex": true}

// codePoints converts byte offsets of s that never decrease into code point
// offsets, counting each byte once.
type codePoints struct {
	s     string
	off   int // bytes counted so far
	runes int // code points in s[:off]
}

func (c *codePoints) at(b int) int {
	c.runes += runeCount(c.s, c.off, b)
	c.off = b
	return c.runes
}

// runeCount is the number of code points in s[from:to], each invalid byte
// counting as one, as []rune counts them.
func runeCount(s string, from, to int) int {
	return utf8.RuneCountInString(s[from:to])
}

// typeOf is jq's name of v's type.
func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "number"
}
