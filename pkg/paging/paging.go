package paging

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/specgate/specgate/pkg/spec"
)

const (
	// maxLinks bounds the link-values of the Link fields Next reads.
	// Real APIs send at most four (first, prev, next, last); a header of
	// thousands costs no more than its first maxLinks.
	maxLinks = 64
	// maxPathSteps bounds a pagination output path ("$.a.b[0]").
	maxPathSteps = 32
	// maxRefHops bounds a chain of parameter or schema references.
	maxRefHops = 8
)

// Request is what Next needs to know about the call that was made.
type Request struct {
	// Endpoint is the operation called: its declared parameters are the only
	// ones a next page may use.
	Endpoint *spec.Endpoint
	// URL is the request URL actually sent. A Link must have its origin
	// (scheme, host and port) to be followed; relative links resolve
	// against it. If nil, Link headers are ignored.
	URL *url.URL
	// Params are the parameters the caller passed, by name. They are carried
	// over to the next page; Next never modifies the map.
	Params map[string]any
}

// Next returns the exact `parameters` to pass to invoke for the next
// page, or nil when there is none or it cannot be expressed with the
// operation's declared parameters. body is the decoded JSON body
// (encoding/json with UseNumber: numbers are json.Number), or nil for
// non-JSON. It is safe for concurrent use and bounded in work by the sizes
// of h and body.
//
// The sources, first match wins:
//
//  1. the operation's x-speakeasy-pagination (offsetLimit with a page or
//     offset input, cursor, url);
//  2. a Link header's rel="next" (RFC 8288) whose target has the request's
//     origin. Its path is not compared: GitHub links a repository's pulls as
//     /repositories/1300192/pulls while the template is
//     /repos/{owner}/{repo}/pulls, the same resource. Its query keys must
//     all be declared query parameters, else there is no next page: the
//     model must never be offered parameters invoke would refuse, nor have
//     a key dropped that the next page depends on;
//  3. Stripe: has_more true, a non-empty top-level data array, and a
//     declared starting_after (ending_before when the caller pages back);
//  4. Slack: response_metadata.next_cursor and a declared cursor;
//  5. Kubernetes: metadata.continue and a declared continue;
//  6. a top-level nextPageToken / next_page_token / next_cursor and a
//     declared pageToken / page_token / cursor.
//
// The result is a copy of Params (path parameters too) with the paging
// parameters set. Values take the declared type: a number for an integer
// or number parameter when the text is one (json.Number), else a string.
// A result that would repeat the current page is never returned.
func Next(r Request, h http.Header, body any) map[string]any {
	if r.Endpoint == nil {
		return nil
	}
	op := readPagingOp(r.Endpoint)
	sources := []func() pageSet{
		func() pageSet { return op.speakeasy(r, body) },
		func() pageSet { return op.fromLink(r, h) },
		func() pageSet { return op.stripe(r, body) },
		func() pageSet { return op.token(bodyAt(body, "response_metadata", "next_cursor"), "cursor") },
		func() pageSet { return op.token(bodyAt(body, "metadata", "continue"), "continue") },
		func() pageSet { return op.token(bodyAt(body, "nextPageToken"), "pageToken") },
		func() pageSet { return op.token(bodyAt(body, "next_page_token"), "page_token") },
		func() pageSet { return op.token(bodyAt(body, "next_cursor"), "cursor") },
	}
	for _, src := range sources {
		set := src()
		if len(set) == 0 || samePage(r.Params, set) {
			continue
		}
		op.addTypes(set)
		out := make(map[string]any, len(r.Params)+len(set))
		for k, v := range r.Params {
			out[k] = v
		}
		for k, texts := range set {
			out[k] = op.typed(k, texts)
		}
		return out
	}
	return nil
}

// pageSet is the paging parameters a source sets: each name's values as
// text, one value but for a query key a Link repeats.
type pageSet map[string][]string

func setOne(name, text string) pageSet { return pageSet{name: {text}} }

// pagingParam is a declared parameter as paging sees it.
type pagingParam struct {
	in      string
	numeric bool // integer or number: values go out as json.Number
	array   bool
}

// pagingOp is what Next reads from the operation.
type pagingOp struct {
	e          *spec.Endpoint
	params     map[string]pagingParam // by name; a query parameter wins a clash
	pagination json.RawMessage
}

// readPagingOp reads the declared parameters and the pagination extension.
// Parameter types are read later, and only for an answer that has a next
// page (addTypes): most answers have none, and decoding every parameter of
// a large operation on every call would cost more than the call's paging.
func readPagingOp(e *spec.Endpoint) pagingOp {
	op := pagingOp{e: e, params: make(map[string]pagingParam, len(e.Params))}
	for _, p := range e.Params {
		if prev, ok := op.params[p.Name]; ok && prev.in == "query" {
			continue
		}
		op.params[p.Name] = pagingParam{in: p.In}
	}
	if raw := e.RawOperation(); bytes.Contains(raw, []byte(`"x-speakeasy-pagination"`)) {
		var ext struct {
			Pagination json.RawMessage `json:"x-speakeasy-pagination"`
		}
		if json.Unmarshal(raw, &ext) == nil {
			op.pagination = ext.Pagination
		}
	}
	return op
}

// addTypes reads the schema types of the parameters named in set.
func (op pagingOp) addTypes(set pageSet) {
	var raw struct {
		Parameters []json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal(op.e.RawOperation(), &raw) != nil {
		return
	}
	owner := op.e.Owner()
	for _, pr := range raw.Parameters {
		var p struct {
			Name   string          `json:"name"`
			In     string          `json:"in"`
			Schema json.RawMessage `json:"schema"`
			Type   any             `json:"type"` // a Swagger 2.0 leftover
		}
		if json.Unmarshal(componentRef(pr, owner, "parameters"), &p) != nil {
			continue
		}
		cur, ok := op.params[p.Name]
		if _, wanted := set[p.Name]; !wanted || !ok || cur.in != p.In {
			continue
		}
		type schema struct {
			Type  any             `json:"type"`
			Items json.RawMessage `json:"items"`
		}
		s := schema{Type: p.Type}
		if len(p.Schema) > 0 && json.Unmarshal(componentRef(p.Schema, owner, "schemas"), &s) != nil {
			continue
		}
		if cur.array = schemaHasType(s.Type, "array"); cur.array {
			// The items' type is what each value takes.
			var items schema
			if json.Unmarshal(componentRef(s.Items, owner, "schemas"), &items) != nil {
				items = schema{}
			}
			s.Type = items.Type
		}
		cur.numeric = schemaHasType(s.Type, "integer") || schemaHasType(s.Type, "number")
		op.params[p.Name] = cur
	}
}

// componentRef follows local "#/components/<section>/<name>" references
// into the components of owner, which may be nil.
func componentRef(raw json.RawMessage, owner *spec.Spec, section string) json.RawMessage {
	for range maxRefHops {
		var probe struct {
			Ref string `json:"$ref"`
		}
		if json.Unmarshal(raw, &probe) != nil || probe.Ref == "" {
			return raw
		}
		name, ok := strings.CutPrefix(probe.Ref, "#/components/"+section+"/")
		if !ok {
			return nil
		}
		name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
		if owner == nil {
			return nil
		}
		if raw, ok = owner.Component(section, name); !ok {
			return nil
		}
	}
	return nil
}

// schemaHasType reports whether a schema type (a string, or a 3.1 list) names t.
func schemaHasType(typ any, t string) bool {
	switch x := typ.(type) {
	case string:
		return x == t
	case []any:
		for _, v := range x {
			if v == t {
				return true
			}
		}
	}
	return false
}

// declared reports whether name is a declared parameter in one of ins.
func (op pagingOp) declared(name string, ins ...string) bool {
	p, ok := op.params[name]
	if !ok {
		return false
	}
	for _, in := range ins {
		if p.in == in {
			return true
		}
	}
	return false
}

// typed turns a paging value's text into the declared parameter's type: a
// list for an array parameter or a repeated key, json.Number for a number.
func (op pagingOp) typed(name string, texts []string) any {
	p := op.params[name]
	out := make([]any, len(texts))
	for i, t := range texts {
		out[i] = t
		if p.numeric && isNumberText(t) {
			out[i] = json.Number(t)
		}
	}
	if len(out) == 1 && !p.array {
		return out[0]
	}
	return out
}

func isNumberText(s string) bool {
	if s == "" || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

// samePage reports whether setting set on current changes nothing: the
// answer would name the page just read, and a model following it would loop.
func samePage(current map[string]any, set pageSet) bool {
	for k, texts := range set {
		cur, ok := current[k]
		if !ok {
			return false
		}
		list, isList := cur.([]any)
		if !isList {
			list = []any{cur}
		}
		if len(list) != len(texts) {
			return false
		}
		for i, v := range list {
			if s, ok := valueText(v); !ok || s != texts[i] {
				return false
			}
		}
	}
	return true
}

// valueText is the text of a string or number value, as it goes on the wire.
func valueText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return string(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case uint:
		return strconv.FormatUint(uint64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case uint32:
		return strconv.FormatUint(uint64(x), 10), true
	}
	return "", false
}

// wholeNumber reads a whole number the caller passed or the body holds.
func wholeNumber(v any) (int64, bool) {
	s, ok := valueText(v)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int64(f)) {
			return 0, false
		}
		n = int64(f)
	}
	return n, true
}

// bodyAt walks object keys from v.
func bodyAt(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// token offers a cursor the body names, when the operation declares the
// query parameter it goes back in.
func (op pagingOp) token(v any, param string) pageSet {
	s, ok := valueText(v)
	if !ok || s == "" || !op.declared(param, "query") {
		return nil
	}
	return setOne(param, s)
}

// stripe follows a Stripe list object: the cursor is the last item's id
// (the first item's when the caller pages back with ending_before).
func (op pagingOp) stripe(r Request, body any) pageSet {
	m, ok := body.(map[string]any)
	if !ok {
		return nil
	}
	if more, _ := m["has_more"].(bool); !more {
		return nil
	}
	data, _ := m["data"].([]any)
	if len(data) == 0 {
		return nil
	}
	param, item := "starting_after", data[len(data)-1]
	if _, back := r.Params["ending_before"]; back {
		param, item = "ending_before", data[0]
	}
	if !op.declared(param, "query") {
		return nil
	}
	id, ok := bodyAt(item, "id").(string)
	if !ok || id == "" {
		return nil
	}
	return setOne(param, id)
}

// fromLink follows a Link header's rel="next" of the request's own origin.
func (op pagingOp) fromLink(r Request, h http.Header) pageSet {
	if r.URL == nil {
		return nil
	}
	target, ok := nextLink(h.Values("Link"))
	if !ok {
		return nil
	}
	return op.fromURL(r, target)
}

// fromURL maps a next-page URL's query onto the declared query parameters.
func (op pagingOp) fromURL(r Request, target string) pageSet {
	ref, err := url.Parse(target)
	if err != nil {
		return nil
	}
	u := r.URL.ResolveReference(ref)
	if !linkOrigin(r.URL, u) {
		return nil
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || len(q) == 0 {
		return nil
	}
	set := make(pageSet, len(q))
	for k, vs := range q {
		if !op.declared(k, "query") || len(vs) == 0 {
			return nil
		}
		set[k] = vs
	}
	return set
}

// linkOrigin reports whether u has a's scheme, host and port (RFC 6454),
// with no user info to carry.
func linkOrigin(a, u *url.URL) bool {
	if u.User != nil || u.Opaque != "" {
		return false
	}
	scheme := strings.ToLower(a.Scheme)
	if scheme != "http" && scheme != "https" || strings.ToLower(u.Scheme) != scheme {
		return false
	}
	host := strings.ToLower(a.Hostname())
	if host == "" || strings.ToLower(u.Hostname()) != host {
		return false
	}
	return originPort(a, scheme) == originPort(u, scheme)
}

func originPort(u *url.URL, scheme string) string {
	if p := u.Port(); p != "" {
		return p
	}
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// nextLink returns the target of the first link-value with relation type
// "next" in the Link fields (RFC 8288 section 3), reading at most maxLinks
// link-values. A link with an anchor has another context than the request
// and is skipped. A malformed field ends the search: what follows a syntax
// error cannot be trusted to be split where its sender meant.
func nextLink(fields []string) (string, bool) {
	seen := 0
	for _, f := range fields {
		p := linkParser{s: f}
		for {
			target, params, ok, done := p.next()
			if done {
				break
			}
			if !ok {
				return "", false
			}
			if seen++; seen > maxLinks {
				return "", false
			}
			if _, anchored := params["anchor"]; anchored {
				continue
			}
			for _, rel := range strings.FieldsFunc(params["rel"], isLinkSpace) {
				if strings.EqualFold(rel, "next") {
					return target, true
				}
			}
		}
	}
	return "", false
}

// linkParser reads one Link field value, one link-value at a time.
type linkParser struct {
	s string
	i int
}

func isLinkSpace(r rune) bool { return r == ' ' || r == '\t' }

func (p *linkParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// next reads the next link-value: its target and its parameters (names in
// lower case, the first occurrence of each kept). done reports the end of
// the field; ok false a syntax error.
func (p *linkParser) next() (target string, params map[string]string, ok, done bool) {
	// Empty list elements ("a, , b") are allowed (RFC 9110 section 5.6.1).
	for p.i < len(p.s) && (p.s[p.i] == ',' || p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
	if p.i == len(p.s) {
		return "", nil, false, true
	}
	if p.s[p.i] != '<' {
		return "", nil, false, false
	}
	end := strings.IndexByte(p.s[p.i+1:], '>')
	if end < 0 {
		return "", nil, false, false
	}
	target = strings.TrimSpace(p.s[p.i+1 : p.i+1+end])
	p.i += end + 2
	params = map[string]string{}
	for {
		p.skipSpace()
		if p.i == len(p.s) || p.s[p.i] == ',' {
			return target, params, true, false
		}
		if p.s[p.i] != ';' {
			return "", nil, false, false
		}
		p.i++
		p.skipSpace()
		name := p.token()
		if name == "" {
			return "", nil, false, false
		}
		p.skipSpace()
		value := ""
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			p.skipSpace()
			if p.i < len(p.s) && p.s[p.i] == '"' {
				v, ok := p.quoted()
				if !ok {
					return "", nil, false, false
				}
				value = v
			} else {
				value = p.token()
			}
		}
		name = strings.ToLower(name)
		if _, dup := params[name]; !dup {
			params[name] = value
		}
	}
}

// token reads an RFC 9110 token.
func (p *linkParser) token() string {
	start := p.i
	for p.i < len(p.s) && isLinkTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

func isLinkTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// quoted reads a quoted-string at p.i, undoing quoted-pairs.
func (p *linkParser) quoted() (string, bool) {
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '"':
			p.i++
			return b.String(), true
		case '\\':
			if p.i+1 == len(p.s) {
				return "", false
			}
			b.WriteByte(p.s[p.i+1])
			p.i += 2
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", false
}

// speakeasyPagination is the x-speakeasy-pagination extension.
type speakeasyPagination struct {
	Type   string `json:"type"`
	Inputs []struct {
		Name string `json:"name"`
		In   string `json:"in"`
		Type string `json:"type"`
	} `json:"inputs"`
	Outputs struct {
		Results    string `json:"results"`
		NextCursor string `json:"nextCursor"`
		NumPages   string `json:"numPages"`
		NextURL    string `json:"nextUrl"`
	} `json:"outputs"`
}

// speakeasy follows the operation's x-speakeasy-pagination:
//
//   - offsetLimit with a page input: the next page is the current one (1
//     when the caller passed none) plus one, unless numPages says it was
//     the last;
//   - offsetLimit with an offset input: the next offset is the current one
//     (0 when none) plus the results read;
//   - cursor: the cursor input takes outputs.nextCursor;
//   - url: outputs.nextUrl is followed like a Link.
//
// An empty results array, or fewer results than the limit the caller
// asked for, is the last page.
func (op pagingOp) speakeasy(r Request, body any) pageSet {
	if len(op.pagination) == 0 {
		return nil
	}
	var pg speakeasyPagination
	if json.Unmarshal(op.pagination, &pg) != nil {
		return nil
	}
	inputs := map[string]string{} // input type -> parameter name
	for _, in := range pg.Inputs {
		if in.In != "parameters" || !op.declared(in.Name, "query", "header", "cookie") {
			// An input in the request body is not a parameter: the next
			// page cannot be said as parameters.
			return nil
		}
		if _, dup := inputs[in.Type]; !dup {
			inputs[in.Type] = in.Name
		}
	}

	results, haveResults := []any(nil), false
	if pg.Outputs.Results != "" {
		v, ok := pagingPath(body, pg.Outputs.Results)
		if !ok {
			return nil
		}
		if results, haveResults = v.([]any); !haveResults {
			return nil
		}
	}
	if haveResults {
		if len(results) == 0 {
			return nil
		}
		if name, ok := inputs["limit"]; ok {
			if limit, ok := wholeNumber(r.Params[name]); ok && int64(len(results)) < limit {
				return nil
			}
		}
	}

	switch pg.Type {
	case "offsetLimit":
		if name, ok := inputs["page"]; ok {
			page := int64(1)
			if v, passed := r.Params[name]; passed {
				if page, ok = wholeNumber(v); !ok {
					return nil
				}
			}
			if pg.Outputs.NumPages != "" {
				v, _ := pagingPath(body, pg.Outputs.NumPages)
				pages, ok := wholeNumber(v)
				if !ok || page >= pages {
					return nil
				}
			} else if !haveResults {
				return nil // nothing says whether there is more
			}
			return setOne(name, strconv.FormatInt(page+1, 10))
		}
		if name, ok := inputs["offset"]; ok && haveResults {
			offset := int64(0)
			if v, passed := r.Params[name]; passed {
				if offset, ok = wholeNumber(v); !ok {
					return nil
				}
			}
			return setOne(name, strconv.FormatInt(offset+int64(len(results)), 10))
		}
	case "cursor":
		name, ok := inputs["cursor"]
		if !ok || pg.Outputs.NextCursor == "" {
			return nil
		}
		v, _ := pagingPath(body, pg.Outputs.NextCursor)
		s, ok := valueText(v)
		if !ok || s == "" {
			return nil
		}
		return setOne(name, s)
	case "url":
		v, _ := pagingPath(body, pg.Outputs.NextURL)
		s, ok := v.(string)
		if !ok || s == "" || r.URL == nil {
			return nil
		}
		return op.fromURL(r, s)
	}
	return nil
}

// pagingPath evaluates the JSONPath subset pagination outputs use: "$", then
// ".name", "['name']" or "[n]" steps, n negative from the end or written
// "(@.length-k)".
func pagingPath(v any, path string) (any, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(path), "$")
	if !ok {
		return nil, false
	}
	for steps := 0; rest != ""; steps++ {
		if steps == maxPathSteps {
			return nil, false
		}
		switch rest[0] {
		case '.':
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			name := rest[:end]
			rest = rest[end:]
			m, ok := v.(map[string]any)
			if name == "" || !ok {
				return nil, false
			}
			if v, ok = m[name]; !ok {
				return nil, false
			}
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, false
			}
			sel := rest[1:end]
			rest = rest[end+1:]
			if len(sel) >= 2 && (sel[0] == '\'' || sel[0] == '"') && sel[len(sel)-1] == sel[0] {
				m, ok := v.(map[string]any)
				if !ok {
					return nil, false
				}
				if v, ok = m[sel[1:len(sel)-1]]; !ok {
					return nil, false
				}
				continue
			}
			list, ok := v.([]any)
			if !ok {
				return nil, false
			}
			i, ok := pathIndex(sel, len(list))
			if !ok {
				return nil, false
			}
			v = list[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// pathIndex reads "n", "-k" or "(@.length-k)" against an array of n items.
func pathIndex(sel string, n int) (int, bool) {
	sel = strings.ReplaceAll(sel, " ", "")
	if k, ok := strings.CutPrefix(sel, "(@.length-"); ok {
		k, ok = strings.CutSuffix(k, ")")
		if !ok {
			return 0, false
		}
		sel = "-" + k
	}
	i, err := strconv.Atoi(sel)
	if err != nil {
		return 0, false
	}
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return 0, false
	}
	return i, true
}
