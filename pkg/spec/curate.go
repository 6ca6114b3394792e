package spec

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Pattern selects endpoints of a spec. It is one of:
//
//   - an operationId glob: "deletePet", "repos/*", "*Pet*" ('*' matches any
//     run of characters, '?' one); an operation without an operationId is
//     matched by its id tail ("get_api_v3_ticker_price");
//   - "tag:NAME": endpoints tagged NAME (case-insensitive);
//   - "METHOD /path/glob": that method on matching paths;
//   - "/path/glob": any method on matching paths.
//
// In a path glob '*' is one whole segment, '**' zero or more segments, and
// within a segment '*' and '?' match as in an operationId glob ("/pet/find*").
// A template segment such as "{petId}" matches itself literally, and '*'
// matches it too. A Pattern is immutable and safe for concurrent use.
type Pattern struct {
	raw    string
	tag    string   // tag:NAME, lower-cased
	method string   // "" for any method
	path   []string // segments; nil when not a path pattern
	op     string   // operationId glob
}

// httpMethods are the methods a path pattern may name.
var httpMethods = map[string]bool{
	"GET": true, "HEAD": true, "OPTIONS": true, "POST": true, "PUT": true,
	"PATCH": true, "DELETE": true, "TRACE": true,
}

// ParsePattern compiles one include or exclude pattern.
func ParsePattern(s string) (Pattern, error) {
	p := Pattern{raw: s}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return p, errors.New("empty pattern")
	case strings.HasPrefix(strings.ToLower(s), "tag:"):
		p.tag = strings.ToLower(strings.TrimSpace(s[len("tag:"):]))
		if p.tag == "" {
			return p, errors.New(`"tag:" needs a tag name, like "tag:pet"`)
		}
		return p, nil
	case strings.HasPrefix(s, "/"):
		return p, p.parsePath(s)
	}
	method, rest, spaced := strings.Cut(s, " ")
	if spaced {
		method = strings.ToUpper(method)
		if !httpMethods[method] {
			return p, fmt.Errorf("%q is not an HTTP method: write \"METHOD /path\", like \"GET /pets/*\"", method)
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, "/") {
			return p, fmt.Errorf("the path after %s must start with '/'", method)
		}
		p.method = method
		return p, p.parsePath(rest)
	}
	if strings.ContainsAny(s, "\t\r\n") {
		return p, errors.New("an operationId glob has no whitespace")
	}
	p.op = s
	return p, nil
}

func (p *Pattern) parsePath(s string) error {
	if strings.ContainsAny(s, " \t\r\n") {
		return errors.New("a path glob has no spaces; put the method first: \"GET /path\"")
	}
	p.path = strings.Split(strings.Trim(s, "/"), "/")
	if len(p.path) == 1 && p.path[0] == "" {
		p.path = []string{} // "/" matches the root path only
	}
	for _, seg := range p.path {
		if seg == "" {
			return fmt.Errorf("empty segment in %q", s)
		}
		if strings.Contains(seg, "**") && seg != "**" {
			return fmt.Errorf("'**' must be a whole segment (in %q)", seg)
		}
	}
	return nil
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.raw }

// Tag returns the tag a "tag:NAME" pattern names (lower case), else "".
func (p Pattern) Tag() string { return p.tag }

// Match reports whether the pattern selects e.
func (p Pattern) Match(e *Endpoint) bool {
	switch {
	case p.tag != "":
		for _, t := range e.Tags {
			if strings.ToLower(t) == p.tag {
				return true
			}
		}
		return false
	case p.path != nil:
		if p.method != "" && p.method != e.Method {
			return false
		}
		segs := strings.Split(strings.Trim(e.Path, "/"), "/")
		if len(segs) == 1 && segs[0] == "" {
			segs = nil
		}
		return matchSegments(p.path, segs)
	}
	name := e.OperationID
	if name == "" {
		name = strings.TrimPrefix(e.ID, e.Spec+".")
	}
	return glob(p.op, name)
}

func matchSegments(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if matchSegments(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 || !glob(pat[0], segs[0]) {
		return false
	}
	return matchSegments(pat[1:], segs[1:])
}

// glob matches s against a pattern where '*' is any run of characters and
// '?' one character. Unlike path.Match, '*' crosses '/', which GitHub's
// operationIds ("repos/list-for-org") contain, and '[' is literal.
func glob(pat, s string) bool {
	// The classic two-pointer match with one backtrack point: linear in
	// practice, never exponential.
	px, sx := 0, 0
	star, next := -1, 0
	for sx < len(s) || px < len(pat) {
		if px < len(pat) {
			switch c := pat[px]; c {
			case '*':
				star, next = px, sx+1
				px++
				continue
			case '?':
				if sx < len(s) {
					px++
					sx++
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		if star >= 0 && next <= len(s) {
			px, sx = star+1, next
			next++
			continue
		}
		return false
	}
	return true
}

// Curation says which endpoints of a spec are served. The zero value serves
// them all.
type Curation struct {
	// Key names the spec's config entry in messages ("specs[stripe]"). If
	// empty, messages name the keys alone ("include[2]").
	Key string
	// ReadOnly serves only GET, HEAD and OPTIONS endpoints.
	ReadOnly bool
	// Include, when not empty, serves only the endpoints some pattern
	// selects (after ReadOnly).
	Include []string
	// Exclude then drops every endpoint some pattern selects.
	Exclude []string
}

// Filter is a compiled Curation. It is immutable and safe for concurrent
// use; one Filter may curate any number of loads of its spec.
type Filter struct {
	key      string
	readOnly bool
	include  []Pattern
	exclude  []Pattern
}

// NewFilter compiles c. Every pattern that does not parse is reported at
// once, each naming its key ("specs[stripe].include[2]: ...").
func NewFilter(c Curation) (*Filter, error) {
	f := &Filter{key: c.Key, readOnly: c.ReadOnly}
	var errs []error
	compile := func(list string, raw []string) []Pattern {
		var out []Pattern
		for i, s := range raw {
			p, err := ParsePattern(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q: %w", f.keyOf(fmt.Sprintf("%s[%d]", list, i)), s, err))
				continue
			}
			out = append(out, p)
		}
		return out
	}
	f.include = compile("include", c.Include)
	f.exclude = compile("exclude", c.Exclude)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

func (f *Filter) keyOf(k string) string {
	if f.key == "" {
		return k
	}
	return f.key + "." + k
}

// Active reports whether the filter can leave anything out.
func (f *Filter) Active() bool {
	return f != nil && (f.readOnly || len(f.include) > 0 || len(f.exclude) > 0)
}

// RuleCount is what one curation rule did.
type RuleCount struct {
	// Key is the rule's config key ("specs[stripe].exclude[1]", or
	// "specs[stripe].read_only").
	Key string
	// Kind is "read_only", "include" or "exclude".
	Kind string
	// Pattern is the rule as written; "" for read_only.
	Pattern string
	// Kept counts the endpoints an include rule selected (rules may
	// overlap); Removed counts those an exclude rule (the first that
	// matched) or read_only removed.
	Kept, Removed int
}

// CurationReport says what a Filter did to one spec.
type CurationReport struct {
	// Total is the spec's endpoint count before curation; Kept after.
	Total, Kept int
	// Rules lists read_only (when on), the include rules, then the exclude
	// rules, in config order.
	Rules []RuleCount
	// Warnings are rules that match nothing and tags no endpoint has.
	Warnings []string
}

// Excluded is the count of endpoints left out.
func (r *CurationReport) Excluded() int { return r.Total - r.Kept }

// CurationError is curation that leaves a spec with no endpoint because of
// an include or exclude list.
type CurationError struct {
	// Key is the config key at fault ("specs[stripe].include").
	Key    string
	Reason string
}

func (e *CurationError) Error() string { return e.Key + ": " + e.Reason }

// Apply curates s in place, before it is put in a catalog: s.Endpoints keeps
// what is served and s.Excluded records every endpoint left out with the
// rule that removed it. A nil Filter keeps everything. Include or exclude
// lists that leave no endpoint are a *CurationError; read_only alone leaving
// none is a warning (a spec of writes only, under a global read_only).
func (f *Filter) Apply(s *Spec) (*CurationReport, error) {
	rep := &CurationReport{Total: len(s.Endpoints), Kept: len(s.Endpoints)}
	if !f.Active() {
		return rep, nil
	}
	excluded := map[string]string{}
	kept := make([]*Endpoint, 0, len(s.Endpoints))
	if f.readOnly {
		rep.Rules = append(rep.Rules, RuleCount{Key: f.keyOf("read_only"), Kind: "read_only"})
	}
	incStart := len(rep.Rules)
	for _, p := range f.include {
		rep.Rules = append(rep.Rules, RuleCount{Kind: "include", Pattern: p.raw})
	}
	excStart := len(rep.Rules)
	for _, p := range f.exclude {
		rep.Rules = append(rep.Rules, RuleCount{Kind: "exclude", Pattern: p.raw})
	}
	for i := range f.include {
		rep.Rules[incStart+i].Key = f.keyOf(fmt.Sprintf("include[%d]", i))
	}
	for i := range f.exclude {
		rep.Rules[excStart+i].Key = f.keyOf(fmt.Sprintf("exclude[%d]", i))
	}
	matchedAny := make([]bool, len(f.include)+len(f.exclude))
	afterReadOnly, afterInclude := 0, 0
	for _, e := range s.Endpoints {
		// Every rule is tried on every endpoint, so "matches nothing" means
		// nothing in the spec, not nothing that was still left.
		inc := false
		for i, p := range f.include {
			if p.Match(e) {
				matchedAny[i] = true
				inc = true
			}
		}
		exc := -1
		for i, p := range f.exclude {
			if p.Match(e) {
				matchedAny[len(f.include)+i] = true
				if exc < 0 {
					exc = i
				}
			}
		}
		if f.readOnly && !safeMethod(e.Method) {
			rep.Rules[0].Removed++
			excluded[e.ID] = f.keyOf("read_only") + " (only GET, HEAD and OPTIONS are served)"
			continue
		}
		afterReadOnly++
		if len(f.include) > 0 && !inc {
			excluded[e.ID] = "no pattern of " + f.keyOf("include") + " selects it"
			continue
		}
		afterInclude++
		for i, p := range f.include {
			if p.Match(e) {
				rep.Rules[incStart+i].Kept++
			}
		}
		if exc >= 0 {
			rep.Rules[excStart+exc].Removed++
			excluded[e.ID] = fmt.Sprintf("%s (%q)", rep.Rules[excStart+exc].Key, f.exclude[exc].raw)
			continue
		}
		kept = append(kept, e)
	}
	rep.Warnings = f.warnings(s, matchedAny, rep)
	rep.Kept = len(kept)
	switch {
	case len(f.include) > 0 && afterInclude == 0 && afterReadOnly > 0:
		return rep, &CurationError{Key: f.keyOf("include"), Reason: fmt.Sprintf("selects none of the spec's %d endpoints%s: nothing would be served", afterReadOnly, readOnlyNote(f.readOnly))}
	case len(f.exclude) > 0 && len(kept) == 0 && afterInclude > 0:
		return rep, &CurationError{Key: f.keyOf("exclude"), Reason: fmt.Sprintf("removes all %d endpoints left: nothing would be served", afterInclude)}
	case f.readOnly && afterReadOnly == 0 && len(s.Endpoints) > 0:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: the spec has no GET, HEAD or OPTIONS endpoint: nothing is served", f.keyOf("read_only")))
	}
	s.Endpoints = kept
	s.Excluded = excluded
	return rep, nil
}

func readOnlyNote(ro bool) string {
	if ro {
		return " that read_only leaves"
	}
	return ""
}

func (f *Filter) warnings(s *Spec, matchedAny []bool, rep *CurationReport) []string {
	tags := map[string]bool{}
	for _, e := range s.Endpoints {
		for _, t := range e.Tags {
			tags[strings.ToLower(t)] = true
		}
	}
	var out []string
	all := append(append([]Pattern{}, f.include...), f.exclude...)
	first := len(rep.Rules) - len(all)
	for i, p := range all {
		if matchedAny[i] {
			continue
		}
		key := rep.Rules[first+i].Key
		if p.tag != "" && !tags[p.tag] {
			out = append(out, fmt.Sprintf("%s: no endpoint has tag %q (tags: %s)", key, p.tag, tagList(tags)))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %q matches no endpoint", key, p.raw))
	}
	return out
}

func tagList(tags map[string]bool) string {
	if len(tags) == 0 {
		return "none"
	}
	list := make([]string, 0, len(tags))
	for t := range tags {
		list = append(list, t)
	}
	sort.Strings(list)
	more := ""
	if len(list) > 10 {
		more = fmt.Sprintf(" and %d more", len(list)-10)
		list = list[:10]
	}
	return strings.Join(list, ", ") + more
}

func safeMethod(m string) bool { return m == "GET" || m == "HEAD" || m == "OPTIONS" }
