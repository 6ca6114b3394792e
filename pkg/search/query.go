package search

import (
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Query is a search split into free text and filters. Values of one
// filter are alternatives (any may match); different filters must all
// match.
type Query struct {
	// Text is the free text, matched against names, summaries,
	// descriptions, paths, tags and parameter names.
	Text string
	// Methods keeps endpoints with one of these HTTP methods (any case).
	Methods []string
	// Tags keeps endpoints carrying one of these tags (any case).
	Tags []string
	// Specs keeps endpoints of one of these specs.
	Specs []string
	// PathPrefixes keeps endpoints whose path, as the spec writes it,
	// starts with one of these.
	PathPrefixes []string
}

// ParseQuery splits a query string into free text and the filters
// method:, tag:, spec: and path:. A filter value may be quoted
// (tag:"pull requests"). Words with another prefix stay free text.
func ParseQuery(s string) Query {
	var q Query
	var text []string
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			break
		}
		end := strings.IndexAny(s, " \t\r\n")
		if end < 0 {
			end = len(s)
		}
		word := s[:end]
		key, val, ok := strings.Cut(word, ":")
		key = strings.ToLower(key)
		if ok && isFilterKey(key) {
			if strings.HasPrefix(val, `"`) {
				// A quoted value runs to the closing quote.
				rest := s[len(key)+2:]
				if i := strings.IndexByte(rest, '"'); i >= 0 {
					val = rest[:i]
					end = len(key) + 2 + i + 1
				} else {
					val = rest
					end = len(s)
				}
			}
			if val != "" {
				switch key {
				case "method":
					q.Methods = append(q.Methods, strings.ToUpper(val))
				case "tag":
					q.Tags = append(q.Tags, strings.ToLower(val))
				case "spec":
					q.Specs = append(q.Specs, val)
				case "path":
					q.PathPrefixes = append(q.PathPrefixes, val)
				}
			}
			s = s[end:]
			continue
		}
		text = append(text, word)
		s = s[end:]
	}
	q.Text = strings.Join(text, " ")
	return q
}

// inherit takes each filter q does not set from base.
func (q *Query) inherit(base Query) {
	if len(q.Methods) == 0 {
		q.Methods = base.Methods
	}
	if len(q.Tags) == 0 {
		q.Tags = base.Tags
	}
	if len(q.Specs) == 0 {
		q.Specs = base.Specs
	}
	if len(q.PathPrefixes) == 0 {
		q.PathPrefixes = base.PathPrefixes
	}
}

func isFilterKey(k string) bool {
	switch k {
	case "method", "tag", "spec", "path":
		return true
	}
	return false
}

// String writes the query back in the form ParseQuery reads.
func (q Query) String() string {
	var parts []string
	add := func(key string, vals []string) {
		for _, v := range vals {
			if strings.ContainsAny(v, " \t") {
				v = `"` + v + `"`
			}
			parts = append(parts, key+":"+v)
		}
	}
	add("method", q.Methods)
	add("tag", q.Tags)
	add("spec", q.Specs)
	add("path", q.PathPrefixes)
	if q.Text != "" {
		parts = append(parts, q.Text)
	}
	return strings.Join(parts, " ")
}

// bleveFilter returns the filters as one bleve query, or nil when there
// are none.
func (q Query) bleveFilter() query.Query {
	var all []query.Query
	anyOf := func(field string, vals []string, norm func(string) string, prefix bool) {
		if len(vals) == 0 {
			return
		}
		var alts []query.Query
		for _, v := range vals {
			v = norm(v)
			if prefix {
				pq := bleve.NewPrefixQuery(v)
				pq.SetField(field)
				alts = append(alts, pq)
				continue
			}
			tq := bleve.NewTermQuery(v)
			tq.SetField(field)
			alts = append(alts, tq)
		}
		if len(alts) == 1 {
			all = append(all, alts[0])
			return
		}
		all = append(all, bleve.NewDisjunctionQuery(alts...))
	}
	same := func(s string) string { return s }
	anyOf("method", q.Methods, strings.ToUpper, false)
	anyOf("tag", q.Tags, strings.ToLower, false)
	anyOf("spec", q.Specs, same, false)
	anyOf("path", q.PathPrefixes, same, true)
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return bleve.NewConjunctionQuery(all...)
}

// matcher returns the filters as a test of one hit, or nil when there are
// none: what bleveFilter asks of bleve, asked of the vector ranking.
func (q Query) matcher() func(*Hit) bool {
	if len(q.Methods)+len(q.Tags)+len(q.Specs)+len(q.PathPrefixes) == 0 {
		return nil
	}
	return func(h *Hit) bool {
		if len(q.Methods) > 0 && !slices.ContainsFunc(q.Methods, func(m string) bool { return strings.EqualFold(m, h.Method) }) {
			return false
		}
		if len(q.Tags) > 0 && !slices.ContainsFunc(q.Tags, func(t string) bool {
			return slices.ContainsFunc(h.Tags, func(ht string) bool { return strings.EqualFold(ht, t) })
		}) {
			return false
		}
		if len(q.Specs) > 0 && !slices.Contains(q.Specs, h.Spec) {
			return false
		}
		if len(q.PathPrefixes) > 0 && !slices.ContainsFunc(q.PathPrefixes, func(p string) bool { return strings.HasPrefix(h.Path, p) }) {
			return false
		}
		return true
	}
}
