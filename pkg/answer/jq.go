package answer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/itchyny/gojq"
)

// JQSubsetNote explains the jq subset to the model, in the hint of a filter
// refused as invalid (the model reads it when it needs it, not on every
// tools/list).
const JQSubsetNote = `jq is a read-only subset: paths, pipes, select, map, construction, reduce/foreach, if, try, regex, sort_by, group_by, to_entries, @csv/@json; no def, assignment, range, repeat, while, until, recurse, env, input. Several outputs come back as one array. Example: .[] | {number, title, user: .user.login}`

// Limits of the query text itself.
const (
	// MaxJQQueryBytes bounds the length of a jq filter.
	MaxJQQueryBytes = 4096
	// maxJQDepth bounds how deeply the filter's queries nest, so that a
	// filter of nested parentheses cannot exhaust the checker's stack.
	maxJQDepth = 64
	// maxJQErrorBytes bounds the text of a runtime error: error(.) on a large
	// document would otherwise carry the document.
	maxJQErrorBytes = 300
	// maxJQValueBytes bounds the JSON size of any value a deep operation
	// (tojson, sort, ==, +, interpolation and the like) takes in. Constructors
	// share subtrees, so [., .] | [., .] | ... doubles a value's size in two
	// steps at no cost, and one deep operation on it would then walk or
	// allocate gigabytes between two looks at the deadline. 64 MiB holds
	// several stored pages of an answer.
	maxJQValueBytes = 64 << 20
)

// Defaults of JQLimits.
const (
	DefaultJQTimeout    = time.Second
	DefaultJQMaxOutputs = 10000
	DefaultJQMaxBytes   = 8 << 20
)

// JQErrorKind says why a jq filter failed.
type JQErrorKind int

const (
	// JQInvalid: the filter does not parse, does not compile, or steps outside
	// the read-only subset. Nothing ran.
	JQInvalid JQErrorKind = iota + 1
	// JQRuntime: the filter's own error, such as "cannot iterate over string".
	JQRuntime
	// JQTimeout: the run went past JQLimits.Timeout or its context ended.
	JQTimeout
	// JQTooLarge: the run produced more than JQLimits.MaxOutputs values or
	// more than JQLimits.MaxBytes of encoded JSON.
	JQTooLarge
)

func (k JQErrorKind) String() string {
	switch k {
	case JQInvalid:
		return "invalid"
	case JQRuntime:
		return "runtime"
	case JQTimeout:
		return "timeout"
	case JQTooLarge:
		return "too large"
	default:
		return "JQErrorKind(" + strconv.Itoa(int(k)) + ")"
	}
}

// JQError is the error of CompileJQ and JQ.Run. Msg is short and safe to show
// to the model.
type JQError struct {
	Kind JQErrorKind
	Msg  string
	// cause is the context error behind a JQTimeout, for errors.Is.
	cause error
}

func (e *JQError) Error() string { return "jq: " + e.Msg }

// Unwrap returns the context error behind a JQTimeout, else nil.
func (e *JQError) Unwrap() error { return e.cause }

// Hint says what to change in the filter for the error's Kind.
func (e *JQError) Hint() string {
	switch e.Kind {
	case JQTimeout:
		return "The jq filter ran past its time limit: select fewer or simpler fields."
	case JQTooLarge:
		return "The jq result is too large: pick fewer fields or items."
	}
	return "Fix the jq filter: " + JQSubsetNote
}

func invalidf(format string, args ...any) *JQError {
	return &JQError{Kind: JQInvalid, Msg: fmt.Sprintf(format, args...)}
}

// JQ is a checked, compiled filter; safe for concurrent use.
type JQ struct {
	src  string
	code *gojq.Code
}

// JQLimits bound a run. Zero fields take the defaults: Timeout 1s, MaxOutputs
// 10,000, MaxBytes 8 MiB.
type JQLimits struct {
	// Timeout bounds the run's wall time.
	Timeout time.Duration
	// MaxOutputs bounds how many values the filter may yield.
	MaxOutputs int
	// MaxBytes bounds the encoded JSON of the result, counted while the
	// outputs are produced.
	MaxBytes int
	// Slots bound the filters running at once, fairly among owners.
	// If nil, the process's slots: as many as GOMAXPROCS, at least 2.
	Slots *JQSlots
	// Owner is who the filter runs for (the caller's principal key): one
	// owner holds at most half of the Slots.
	Owner string
}

func (l JQLimits) withDefaults() JQLimits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultJQTimeout
	}
	if l.MaxOutputs <= 0 {
		l.MaxOutputs = DefaultJQMaxOutputs
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultJQMaxBytes
	}
	if l.Slots == nil {
		l.Slots = defaultJQSlots
	}
	return l
}

// mulFunc is the name the checker gives every `*`, so that the product is
// computed by jqMultiply, which refuses string repetition: gojq builds
// "x" * 5e8 eagerly, gigabytes before any deadline is looked at, and whether
// an operand is a string is only known at run time.
const mulFunc = "_specgate_mul"

// guardFunc is the name of the check the checker puts before each deep
// operation: it passes its input on unchanged when the input's JSON is at
// most maxJQValueBytes, else fails the run with JQTooLarge.
const guardFunc = "_specgate_guard"

// jqDeep lists the builtins that walk or copy whole values in one step; the
// checker guards their input and their arguments.
var jqDeep = map[string]bool{
	"tojson": true, "tostring": true, "flatten": true, "add": true, "join": true,
	"contains": true, "inside": true, "sort": true, "sort_by": true, "group_by": true,
	"unique": true, "unique_by": true, "min": true, "max": true, "min_by": true, "max_by": true,
	"bsearch": true, "index": true, "rindex": true, "indices": true, "IN": true, "INDEX": true,
	"fromjson": true, "explode": true, "ascii_downcase": true, "ascii_upcase": true,
	"test": true, "match": true, "capture": true, "scan": true, "sub": true, "gsub": true,
	"split": true, "splits": true, "ltrimstr": true, "rtrimstr": true, "trimstr": true,
	"startswith": true, "endswith": true, "reverse": true, "tonumber": true,
	// a value whose subtrees are shared has as many paths as its JSON has
	// leaves, however small it is in memory
	"paths": true, "tostream": true,
}

// jqDeepOps lists the operators whose operands the checker guards.
var jqDeepOps = map[gojq.Operator]bool{
	gojq.OpAdd: true, gojq.OpSub: true, gojq.OpDiv: true, gojq.OpMod: true,
	gojq.OpEq: true, gojq.OpNe: true, gojq.OpGt: true, gojq.OpLt: true, gojq.OpGe: true, gojq.OpLe: true,
}

// guarded returns (q | guard), as a term so that it may stand anywhere a
// query may, string interpolation included.
func guarded(q *gojq.Query) *gojq.Query {
	if q == nil {
		return nil
	}
	return &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeQuery, Query: &gojq.Query{
		Left: q, Op: gojq.OpPipe, Right: guardCall(),
	}}}
}

func guardCall() *gojq.Query {
	return &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: guardFunc}}}
}

// guardTerm turns the term t into (guard | t), keeping t's suffixes outside.
func guardTerm(t *gojq.Term) { prefixTerm(t, guardFunc) }

// prefixTerm turns the term t into (name | t), keeping t's suffixes outside.
func prefixTerm(t *gojq.Term, name string) {
	inner := *t
	inner.SuffixList = nil
	*t = gojq.Term{Type: gojq.TermTypeQuery, SuffixList: t.SuffixList, Query: &gojq.Query{
		Left:  &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: name}}},
		Op:    gojq.OpPipe,
		Right: &gojq.Query{Term: &inner},
	}}
}

// copyFunc is the name of the deep copy the checker puts before del and
// map_values: gojq's delpaths ends by rewriting, in place, every container
// of its result, and that result shares the containers it did not change with
// the document, which other runs may be reading.
const copyFunc = "_specgate_copy"

// jqMutating lists the builtins that run on a private copy of their input.
var jqMutating = map[string]bool{"del": true, "map_values": true}

// jqCopy is the copy named copyFunc; like the guard, it refuses values past
// maxJQValueBytes.
func jqCopy(v any, _ []any) any {
	if tooBig(v) {
		return errValueTooLarge
	}
	return deepCopy(v)
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case []any:
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = deepCopy(x)
		}
		return c
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, x := range v {
			c[k] = deepCopy(x)
		}
		return c
	}
	return v
}

// jqGuard is the check named guardFunc.
func jqGuard(v any, _ []any) any {
	if tooBig(v) {
		return errValueTooLarge
	}
	return v
}

func tooBig(v any) bool {
	n, _ := jsonSize(v, maxJQValueBytes)
	return n > maxJQValueBytes
}

var errValueTooLarge = fmt.Errorf("a value inside the filter grew past %d MiB of JSON", maxJQValueBytes>>20)

// CompileJQ parses src, checks it against the read-only subset and compiles it.
// Its error is a *JQError with Kind JQInvalid, naming what is not allowed and why, short.
func CompileJQ(src string) (*JQ, error) {
	src = strings.TrimSpace(src)
	if src == "" {
		return nil, invalidf("the filter is empty")
	}
	if len(src) > MaxJQQueryBytes {
		return nil, invalidf("the filter is %d bytes; at most %d are allowed", len(src), MaxJQQueryBytes)
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, parseError(src, err)
	}
	if err := checkQuery(q, 0); err != nil {
		return nil, err
	}
	// The regular expression functions, on a match that stays linear.
	if mayMatch(src) {
		q.FuncDefs = regexDefs()
	}
	var regexps regexCache
	code, err := gojq.Compile(q,
		gojq.WithFunction(matchFunc, 3, 3, regexps.match),
		gojq.WithFunction(strGuardFunc, 0, 0, jqStrGuard),
		gojq.WithFunction(mulFunc, 2, 2, jqMultiply),
		gojq.WithFunction(guardFunc, 0, 0, jqGuard),
		gojq.WithFunction(copyFunc, 0, 0, jqCopy))
	if err != nil {
		return nil, invalidf("%s", clip(err.Error()))
	}
	return &JQ{src: src, code: code}, nil
}

// String returns the filter's text.
func (q *JQ) String() string { return q.src }

func parseError(src string, err error) *JQError {
	var pe *gojq.ParseError
	if errors.As(err, &pe) {
		if pe.Token == "" {
			return invalidf("the filter does not parse: unexpected end")
		}
		return invalidf("the filter does not parse: unexpected %q at byte %d", clip(pe.Token), min(pe.Offset, len(src)))
	}
	return invalidf("the filter does not parse: %s", clip(err.Error()))
}

// mulCode computes a product the way jq does, once jqMultiply has ruled out
// string repetition.
var mulCode = func() *gojq.Code {
	q, err := gojq.Parse("$l * $r")
	if err != nil {
		panic(err)
	}
	c, err := gojq.Compile(q, gojq.WithVariables([]string{"$l", "$r"}))
	if err != nil {
		panic(err)
	}
	return c
}()

// jqMultiply is `*` without string repetition.
func jqMultiply(_ any, args []any) any {
	l, r := args[0], args[1]
	if _, ok := l.(string); ok {
		return errStringRepeat
	}
	if _, ok := r.(string); ok {
		return errStringRepeat
	}
	if tooBig(l) || tooBig(r) {
		return errValueTooLarge
	}
	v, _ := mulCode.Run(nil, l, r).Next()
	return v
}

var errStringRepeat = errors.New("string repetition (string * number) is not allowed")

// Run applies the filter to v (a value from encoding/json, with UseNumber or
// without: gojq reads json.Number exactly, as int or *big.Int when it is an
// integer) under ctx and the limits. One output is returned as itself;
// several, or none, as an array. The result may share memory with v; neither
// may be modified. NaN comes back as null and ±Inf as ±MaxFloat64, as jq
// prints them.
//
// Errors are *JQError: JQRuntime (the filter's own error), JQTimeout (past
// Timeout, or ctx ended; it wraps the context's error), JQTooLarge (past
// MaxOutputs or MaxBytes of encoded output, counted while the outputs are
// produced).
func (q *JQ) Run(ctx context.Context, v any, lim JQLimits) (res any, err error) {
	lim = lim.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	release, err := lim.Slots.Acquire(ctx, lim.Owner)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &JQError{Kind: JQTimeout, Msg: fmt.Sprintf("waited past its %s limit for one of the %d filters running at once to end (one caller may run %d); try again", lim.Timeout, lim.Slots.Size(), lim.Slots.Share()), cause: err}
		}
		return nil, q.runError(ctx, err, lim)
	}
	defer release()
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &JQError{Kind: JQRuntime, Msg: clip(fmt.Sprintf("internal error: %v", p))}
		}
	}()
	var out []any
	// used is the length of the result's JSON so far: the outputs, the commas
	// between them and, once there are two, the array's brackets.
	used := 0
	tooLarge := &JQError{Kind: JQTooLarge, Msg: fmt.Sprintf("the result is over %d bytes of JSON; pick fewer fields or items", lim.MaxBytes)}
	iter := q.code.RunWithContext(ctx, v)
	for {
		x, ok := iter.Next()
		if !ok {
			break
		}
		if e, isErr := x.(error); isErr {
			return nil, q.runError(ctx, e, lim)
		}
		if len(out) == lim.MaxOutputs {
			return nil, &JQError{Kind: JQTooLarge, Msg: fmt.Sprintf("the filter yields more than %d values; narrow it with select or limit(n; ...)", lim.MaxOutputs)}
		}
		switch len(out) {
		case 0:
		case 1:
			used += 3 // [ , ]
		default:
			used++
		}
		n, clean := jsonSize(x, lim.MaxBytes-used)
		used += n
		if used > lim.MaxBytes {
			return nil, tooLarge
		}
		if !clean {
			x, _ = sanitize(x)
		}
		out = append(out, x)
	}
	if len(out) == 0 && lim.MaxBytes < 2 {
		return nil, tooLarge
	}
	if len(out) == 1 {
		return out[0], nil
	}
	if out == nil {
		out = []any{}
	}
	return out, nil
}

func (q *JQ) runError(ctx context.Context, e error, lim JQLimits) *JQError {
	if cerr := ctx.Err(); cerr != nil && (errors.Is(e, context.DeadlineExceeded) || errors.Is(e, context.Canceled)) {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return &JQError{Kind: JQTimeout, Msg: fmt.Sprintf("the filter ran past its %s limit", lim.Timeout), cause: cerr}
		}
		return &JQError{Kind: JQTimeout, Msg: "the run was canceled", cause: cerr}
	}
	if errors.Is(e, errStringRepeat) {
		return &JQError{Kind: JQRuntime, Msg: e.Error()}
	}
	if errors.Is(e, errValueTooLarge) {
		return &JQError{Kind: JQTooLarge, Msg: e.Error() + "; pick fewer fields or items first"}
	}
	// error(v) carries v, which gojq would print whole; preview it instead.
	var ve gojq.ValueError
	if errors.As(e, &ve) {
		if s, ok := ve.Value().(string); ok {
			return &JQError{Kind: JQRuntime, Msg: clip("error: " + s)}
		}
		return &JQError{Kind: JQRuntime, Msg: "error: " + gojq.Preview(ve.Value())}
	}
	return &JQError{Kind: JQRuntime, Msg: clip(e.Error())}
}

// clip bounds a message, on a rune boundary.
func clip(s string) string {
	if len(s) <= maxJQErrorBytes {
		return s
	}
	i := maxJQErrorBytes
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// jsonSize returns the length of v encoded as encoding/json does, counting at
// most a little past limit: a value that shares one subtree many times (as
// [., .] | [., .] | ... builds) is not walked further than the cap. clean is
// false when v holds a NaN or an infinity, which JSON cannot carry.
func jsonSize(v any, limit int) (n int, clean bool) {
	s := sizer{limit: limit, clean: true}
	s.value(v)
	return s.n, s.clean
}

type sizer struct {
	n, limit int
	clean    bool
	buf      [64]byte
}

func (s *sizer) value(v any) {
	if s.n > s.limit {
		return
	}
	switch v := v.(type) {
	case nil:
		s.n += 4
	case bool:
		if v {
			s.n += 4
		} else {
			s.n += 5
		}
	case int:
		s.n += len(strconv.AppendInt(s.buf[:0], int64(v), 10))
	case float64:
		if math.IsNaN(v) {
			s.clean = false
			s.n += 4 // null
			return
		}
		if math.IsInf(v, 0) {
			s.clean = false
			v = finite(v)
		}
		s.n += len(appendFloat(s.buf[:0], v))
	case *big.Int:
		s.n += len(v.Append(s.buf[:0], 10))
	case json.Number:
		s.n += len(v)
	case string:
		s.n += stringSize(v)
	case []any:
		s.n += 2 + max(len(v)-1, 0)
		for _, x := range v {
			if s.n > s.limit {
				return
			}
			s.value(x)
		}
	case map[string]any:
		s.n += 2 + max(len(v)-1, 0) + len(v)
		for k, x := range v {
			if s.n > s.limit {
				return
			}
			s.n += stringSize(k)
			s.value(x)
		}
	default:
		// gojq yields only the types above.
		s.n += len(fmt.Sprint(v))
	}
}

// finite maps ±Inf to ±MaxFloat64, as jq prints them.
func finite(v float64) float64 {
	switch {
	case math.IsInf(v, 1):
		return math.MaxFloat64
	case math.IsInf(v, -1):
		return -math.MaxFloat64
	}
	return v
}

// appendFloat formats v as encoding/json does.
func appendFloat(b []byte, v float64) []byte {
	a := math.Abs(v)
	f := byte('f')
	if a != 0 && (a < 1e-6 || a >= 1e21) {
		f = 'e'
	}
	b = strconv.AppendFloat(b, v, f, -1, 64)
	if n := len(b); f == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 is written e-7
		b = b[:n-1]
	}
	return b
}

// stringSize is the length of s as a JSON string from encoding/json, with
// its HTML escaping.
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += w
		}
		i += w
	}
	return n
}

// sanitize returns v with NaN as null and ±Inf as ±MaxFloat64, copying only
// the containers on the way to such a number. changed says whether it did.
func sanitize(v any) (_ any, changed bool) {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) {
			return nil, true
		}
		if math.IsInf(v, 0) {
			return finite(v), true
		}
	case []any:
		var c []any
		for i, x := range v {
			if y, ch := sanitize(x); ch {
				if c == nil {
					c = slices.Clone(v)
				}
				c[i] = y
			}
		}
		if c != nil {
			return c, true
		}
	case map[string]any:
		var c map[string]any
		for k, x := range v {
			if y, ch := sanitize(x); ch {
				if c == nil {
					c = maps.Clone(v)
				}
				c[k] = y
			}
		}
		if c != nil {
			return c, true
		}
	}
	return v, false
}
