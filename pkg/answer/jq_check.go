package answer

import (
	"strings"

	"github.com/itchyny/gojq"
)

// The read-only subset of jq a filter must stay in, checked on its parsed
// query before it runs: the builtins allowed and refused (with why), and a
// walk of every term, pattern, string and function.

// jqAllowed lists the builtins a filter may call. Everything else is refused:
// user definitions, assignment, generators whose length comes from a number
// in the query (range, repeat, limit-free recursion, combinations), functions
// that build values from numbers in the query (setpath, pick, implode,
// fromstream), and anything that reads outside the document (env, input).
var jqAllowed = map[string]bool{
	// control
	"empty": true, "error": true, "not": true, "select": true, "isempty": true,
	"first": true, "last": true, "nth": true, "limit": true, "skip": true,
	"any": true, "all": true, "IN": true, "in": true, "inside": true,
	// shape
	"map": true, "map_values": true, "add": true, "length": true, "utf8bytelength": true,
	"keys": true, "has": true, "contains": true, "type": true,
	"to_entries": true, "from_entries": true, "with_entries": true,
	"path": true, "paths": true, "getpath": true, "del": true, "tostream": true,
	"flatten": true, "reverse": true, "INDEX": true, "JOIN": true,
	"sort": true, "sort_by": true, "group_by": true, "unique": true, "unique_by": true,
	"min": true, "max": true, "min_by": true, "max_by": true, "bsearch": true,
	// type filters
	"arrays": true, "objects": true, "iterables": true, "booleans": true, "numbers": true,
	"strings": true, "nulls": true, "values": true, "scalars": true, "finites": true, "normals": true,
	// conversion
	"tostring": true, "tonumber": true, "toboolean": true, "tojson": true, "fromjson": true,
	"ascii_downcase": true, "ascii_upcase": true, "explode": true,
	"ltrimstr": true, "rtrimstr": true, "trimstr": true, "ltrim": true, "rtrim": true, "trim": true,
	"startswith": true, "endswith": true, "split": true, "splits": true, "join": true,
	"index": true, "rindex": true, "indices": true,
	"test": true, "match": true, "capture": true, "scan": true, "sub": true, "gsub": true,
	// numbers and time
	"abs": true, "floor": true, "ceil": true, "round": true, "trunc": true, "fabs": true,
	"sqrt": true, "pow": true, "log": true, "log2": true, "log10": true, "exp": true,
	"exp2": true, "exp10": true, "fmin": true, "fmax": true, "fmod": true,
	"infinite": true, "nan": true, "isinfinite": true, "isnan": true, "isnormal": true, "isfinite": true,
	"now": true, "mktime": true, "gmtime": true, "strftime": true, "strptime": true,
	"todate": true, "fromdate": true, "todateiso8601": true, "fromdateiso8601": true,
}

// jqRefused says why a known builtin is refused; it names the reason in the
// error the model reads.
var jqRefused = map[string]string{
	"range":           "generates as many values as a number in the filter",
	"repeat":          "never ends",
	"while":           "loops without a bound",
	"until":           "loops without a bound",
	"recurse":         "recurses without a bound",
	"walk":            "recurses without a bound",
	"combinations":    "grows without a bound",
	"env":             "reads the server's environment",
	"input":           "reads outside the document",
	"inputs":          "reads outside the document",
	"input_filename":  "reads outside the document",
	"debug":           "writes outside the result",
	"stderr":          "writes outside the result",
	"halt":            "stops the server's jq",
	"halt_error":      "stops the server's jq",
	"setpath":         "builds values from numbers in the filter; use del or object construction",
	"delpaths":        "is not read-only; use del",
	"pick":            "builds values from numbers in the filter",
	"fromstream":      "builds values from numbers in the filter",
	"truncate_stream": "builds values from numbers in the filter",
	"implode":         "builds strings from numbers",
	"transpose":       "grows quadratically",
	"format":          "takes its format at run time; use @csv, @json and the like",
	"builtins":        "is not needed to read a document",
	"modulemeta":      "is not needed to read a document",
}

// jqFormats lists the @formats a filter may use: each turns a value into a
// string at most a small constant factor longer than the value.
var jqFormats = map[string]bool{
	"@text": true, "@json": true, "@csv": true, "@tsv": true, "@html": true,
	"@uri": true, "@base64": true, "@base64d": true,
}

// checkQuery walks the parsed filter and refuses what is outside the subset.
// It rewrites every `*` into a call of mulFunc.
func checkQuery(q *gojq.Query, depth int) *JQError {
	if q == nil {
		return nil
	}
	if depth > maxJQDepth {
		return invalidf("the filter nests deeper than %d levels", maxJQDepth)
	}
	if q.Meta != nil || len(q.Imports) > 0 {
		return invalidf("modules (import, include) are not allowed")
	}
	if len(q.FuncDefs) > 0 {
		return invalidf("def is not allowed: function definitions are outside the read-only subset")
	}
	switch q.Op {
	case gojq.OpAssign, gojq.OpModify, gojq.OpUpdateAdd, gojq.OpUpdateSub,
		gojq.OpUpdateMul, gojq.OpUpdateDiv, gojq.OpUpdateMod, gojq.OpUpdateAlt:
		return invalidf("the %s operator is not allowed: assignment and update are outside the read-only subset; build a new object instead", q.Op)
	case gojq.OpMul:
		if stringy(q.Left) || stringy(q.Right) {
			return invalidf("string repetition (string * number) is not allowed")
		}
	}
	for _, p := range q.Patterns {
		if err := checkPattern(p, depth+1); err != nil {
			return err
		}
	}
	if err := checkTerm(q.Term, depth+1); err != nil {
		return err
	}
	if err := checkQuery(q.Left, depth+1); err != nil {
		return err
	}
	if err := checkQuery(q.Right, depth+1); err != nil {
		return err
	}
	switch {
	case q.Op == gojq.OpMul:
		l, r := q.Left, q.Right
		*q = gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: mulFunc, Args: []*gojq.Query{l, r}}}}
	case jqDeepOps[q.Op]:
		q.Left, q.Right = guarded(q.Left), guarded(q.Right)
	}
	return nil
}

// stringy reports whether q is plainly a string: a literal, an
// interpolation or a @format. Other strings are caught by jqMultiply.
func stringy(q *gojq.Query) bool {
	for q != nil && q.Term != nil && q.Term.Type == gojq.TermTypeQuery && len(q.Term.SuffixList) == 0 {
		q = q.Term.Query
	}
	if q == nil || q.Term == nil || len(q.Term.SuffixList) > 0 {
		return false
	}
	return q.Term.Type == gojq.TermTypeString || q.Term.Type == gojq.TermTypeFormat
}

func checkPattern(p *gojq.Pattern, depth int) *JQError {
	if p == nil {
		return nil
	}
	if depth > maxJQDepth {
		return invalidf("the filter nests deeper than %d levels", maxJQDepth)
	}
	for _, a := range p.Array {
		if err := checkPattern(a, depth+1); err != nil {
			return err
		}
	}
	for _, o := range p.Object {
		if err := checkString(o.KeyString, depth+1); err != nil {
			return err
		}
		if err := checkQuery(o.KeyQuery, depth+1); err != nil {
			return err
		}
		if err := checkPattern(o.Val, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func checkString(s *gojq.String, depth int) *JQError {
	if s == nil {
		return nil
	}
	for i, q := range s.Queries {
		if err := checkQuery(q, depth+1); err != nil {
			return err
		}
		if q.Term == nil || q.Term.Type != gojq.TermTypeString {
			s.Queries[i] = guarded(q)
		}
	}
	return nil
}

func checkVariable(name string) *JQError {
	if name == "$ENV" {
		return invalidf("$ENV is not allowed: it reads the server's environment")
	}
	return nil
}

func checkTerm(t *gojq.Term, depth int) *JQError {
	if t == nil {
		return nil
	}
	if depth > maxJQDepth {
		return invalidf("the filter nests deeper than %d levels", maxJQDepth)
	}
	var err *JQError
	switch t.Type {
	case gojq.TermTypeRecurse:
		return invalidf(".. is not allowed: it recurses without a bound; use paths or .a.b[] instead")
	case gojq.TermTypeIndex:
		err = checkIndex(t.Index, depth+1)
	case gojq.TermTypeFunc:
		if err = checkFunc(t.Func, depth+1); err != nil {
			return err
		}
		if jqDeep[t.Func.Name] {
			for i, a := range t.Func.Args {
				t.Func.Args[i] = guarded(a)
			}
			defer guardTerm(t)
		}
		if jqMutating[t.Func.Name] {
			defer prefixTerm(t, copyFunc)
		}
		if jqStringy[t.Func.Name] {
			defer prefixTerm(t, strGuardFunc)
		}
	case gojq.TermTypeObject:
		for _, kv := range t.Object.KeyVals {
			if strings.HasPrefix(kv.Key, "$") {
				if err = checkVariable(kv.Key); err != nil {
					return err
				}
			}
			if err = checkString(kv.KeyString, depth+1); err != nil {
				return err
			}
			if err = checkQuery(kv.KeyQuery, depth+1); err != nil {
				return err
			}
			if err = checkQuery(kv.Val, depth+1); err != nil {
				return err
			}
		}
	case gojq.TermTypeArray:
		err = checkQuery(t.Array.Query, depth+1)
	case gojq.TermTypeUnary:
		err = checkTerm(t.Unary.Term, depth+1)
	case gojq.TermTypeFormat:
		if !jqFormats[t.Format] {
			return invalidf("%s is not allowed; the formats are @text, @json, @csv, @tsv, @html, @uri, @base64, @base64d", t.Format)
		}
		if err = checkString(t.Str, depth+1); err != nil {
			return err
		}
		if t.Str == nil {
			defer guardTerm(t)
		}
	case gojq.TermTypeString:
		err = checkString(t.Str, depth+1)
	case gojq.TermTypeIf:
		if err = checkQuery(t.If.Cond, depth+1); err != nil {
			return err
		}
		if err = checkQuery(t.If.Then, depth+1); err != nil {
			return err
		}
		for _, e := range t.If.Elif {
			if err = checkQuery(e.Cond, depth+1); err != nil {
				return err
			}
			if err = checkQuery(e.Then, depth+1); err != nil {
				return err
			}
		}
		err = checkQuery(t.If.Else, depth+1)
	case gojq.TermTypeTry:
		if err = checkQuery(t.Try.Body, depth+1); err != nil {
			return err
		}
		err = checkQuery(t.Try.Catch, depth+1)
	case gojq.TermTypeReduce:
		err = checkFold(t.Reduce.Query, t.Reduce.Patterns, t.Reduce.Start, t.Reduce.Update, nil, depth+1)
	case gojq.TermTypeForeach:
		err = checkFold(t.Foreach.Query, t.Foreach.Patterns, t.Foreach.Start, t.Foreach.Update, t.Foreach.Extract, depth+1)
	case gojq.TermTypeLabel:
		err = checkQuery(t.Label.Body, depth+1)
	case gojq.TermTypeQuery:
		err = checkQuery(t.Query, depth+1)
	case gojq.TermTypeIdentity, gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse,
		gojq.TermTypeNumber, gojq.TermTypeBreak:
	default:
		return invalidf("this kind of expression is not allowed")
	}
	if err != nil {
		return err
	}
	for _, s := range t.SuffixList {
		if err := checkIndex(s.Index, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func checkFold(q *gojq.Query, ps []*gojq.Pattern, start, update, extract *gojq.Query, depth int) *JQError {
	for _, x := range []*gojq.Query{q, start, update, extract} {
		if err := checkQuery(x, depth); err != nil {
			return err
		}
	}
	for _, p := range ps {
		if err := checkPattern(p, depth); err != nil {
			return err
		}
	}
	return nil
}

func checkIndex(x *gojq.Index, depth int) *JQError {
	if x == nil {
		return nil
	}
	if err := checkString(x.Str, depth); err != nil {
		return err
	}
	if err := checkQuery(x.Start, depth); err != nil {
		return err
	}
	return checkQuery(x.End, depth)
}

func checkFunc(f *gojq.Func, depth int) *JQError {
	if strings.HasPrefix(f.Name, "$") {
		return checkVariable(f.Name)
	}
	if why, ok := jqRefused[f.Name]; ok {
		return invalidf("%s is not allowed: it %s", f.Name, why)
	}
	if !jqAllowed[f.Name] {
		return invalidf("%s is not allowed: only read-only builtins such as select, map, keys, sort_by, test may be called", clip(f.Name))
	}
	for _, a := range f.Args {
		if err := checkQuery(a, depth); err != nil {
			return err
		}
	}
	return nil
}
