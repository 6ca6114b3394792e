package mock

import (
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/specgate/specgate/pkg/spec"
)

// route is one operation at one path template (server path + its path).
type route struct {
	ep       *spec.Endpoint
	template string
	segs     []segment
	literals int // segments without a parameter: more is more specific
}

// segment is one path segment of a template: a literal, or a pattern with
// parameters ("{id}", "{name}.json").
type segment struct {
	literal string
	re      *regexp.Regexp
	names   []string
}

var paramRef = regexp.MustCompile(`\{([^{}]+)\}`)

func newRoute(prefix string, ep *spec.Endpoint) *route {
	tmpl := strings.TrimSuffix(prefix, "/") + "/" + strings.TrimPrefix(ep.Path, "/")
	r := &route{ep: ep, template: tmpl}
	for _, part := range splitPath(tmpl) {
		if !strings.Contains(part, "{") {
			r.segs = append(r.segs, segment{literal: part})
			r.literals++
			continue
		}
		var pat strings.Builder
		var names []string
		last := 0
		for _, m := range paramRef.FindAllStringSubmatchIndex(part, -1) {
			pat.WriteString(regexp.QuoteMeta(part[last:m[0]]))
			pat.WriteString(`(.+?)`)
			names = append(names, part[m[2]:m[3]])
			last = m[1]
		}
		pat.WriteString(regexp.QuoteMeta(part[last:]))
		re, err := regexp.Compile("^" + pat.String() + "$")
		if err != nil {
			r.segs = append(r.segs, segment{literal: part})
			continue
		}
		r.segs = append(r.segs, segment{re: re, names: names})
	}
	return r
}

// splitPath splits an (escaped) path into its segments, ignoring a trailing
// slash.
func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// match reports whether the escaped path segments fit the template, and the
// path parameters they carry.
func (r *route) match(parts []string) (map[string]string, bool) {
	if len(parts) != len(r.segs) {
		return nil, false
	}
	var params map[string]string
	for i, s := range r.segs {
		if s.re == nil {
			if parts[i] != s.literal {
				return nil, false
			}
			continue
		}
		m := s.re.FindStringSubmatch(parts[i])
		if m == nil {
			return nil, false
		}
		if params == nil {
			params = map[string]string{}
		}
		for j, name := range s.names {
			v, err := url.PathUnescape(m[j+1])
			if err != nil {
				v = m[j+1]
			}
			params[name] = v
		}
	}
	return params, true
}

// router finds the operation for a request path and method.
type router struct {
	bySegments map[int][]*route // sorted most specific first
}

func newRouter(routes []*route) *router {
	rt := &router{bySegments: map[int][]*route{}}
	for _, r := range routes {
		rt.bySegments[len(r.segs)] = append(rt.bySegments[len(r.segs)], r)
	}
	for _, list := range rt.bySegments {
		sort.SliceStable(list, func(i, j int) bool { return list[i].literals > list[j].literals })
	}
	return rt
}

// find returns the most specific route for method at path and its path
// parameters; when the path is known but not for method, the methods it
// has (allow); when the path is unknown, neither.
func (rt *router) find(method, escapedPath string) (r *route, params map[string]string, allow []string) {
	parts := splitPath(escapedPath)
	seen := map[string]bool{}
	for _, c := range rt.bySegments[len(parts)] {
		p, ok := c.match(parts)
		if !ok {
			continue
		}
		if c.ep.Method == method {
			return c, p, nil
		}
		if !seen[c.ep.Method] {
			seen[c.ep.Method] = true
			allow = append(allow, c.ep.Method)
		}
	}
	sort.Strings(allow)
	return nil, nil, allow
}
