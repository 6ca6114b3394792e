package upstreamtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Style is a paging convention of a real API.
type Style string

// The styles Pages serves, each under its own path prefix.
const (
	// GitHubStyle answers an array of pull requests and a Link header with
	// prev, next, last and first, paged by page and per_page (default 30,
	// at most 100), like GET /repos/{owner}/{repo}/pulls. Its links name
	// the repository by id (/github/repositories/1300192/pulls), as
	// GitHub's do; that path is served too.
	GitHubStyle Style = "github"
	// StripeStyle answers {"object":"list","data":[...],"has_more":bool,
	// "url":...}, paged by limit (default 10, 1 to 100) and starting_after
	// or ending_before, like GET /v1/customers.
	StripeStyle Style = "stripe"
	// SlackStyle answers {"ok":true,"members":[...],"response_metadata":
	// {"next_cursor":...}}, paged by limit (default 100, at most 1000) and
	// cursor, like users.list. A bad cursor is {"ok":false,"error":
	// "invalid_cursor"} with status 200, as Slack answers it.
	SlackStyle Style = "slack"
	// KubernetesStyle answers a PodList with metadata.continue, paged by
	// limit (none or 0: everything) and continue, like
	// GET /api/v1/namespaces/{namespace}/pods.
	KubernetesStyle Style = "kubernetes"
)

// The paths Pages serves, as testdata/paging.yaml declares them.
const (
	GitHubPath     = "/github/repos/{owner}/{repo}/pulls"
	StripePath     = "/stripe/v1/customers"
	SlackPath      = "/slack/api/users.list"
	KubernetesPath = "/k8s/api/v1/namespaces/{namespace}/pods"
)

// githubRepoID is the repository id GitHub-style links name.
const githubRepoID = "1300192"

// PagesOptions configure a Pages upstream. The zero value is useful.
type PagesOptions struct {
	// Items is how many items each list holds. Zero: 95, so GitHub's
	// default pages are 30, 30, 30 and 5.
	Items int
	// PullRequest is the JSON object GitHub-style items are copies of, with
	// id and number set to the item's position from 1. If nil,
	// testdata/github-pull-request.json at the repository root (about
	// 21 KB compact: GitHub's own example).
	PullRequest []byte
}

// Request is one request a Pages upstream received.
type Request struct {
	Style    Style // empty for a path Pages does not serve
	Method   string
	Path     string
	RawQuery string
}

// Query returns the request's query, parsed.
func (r Request) Query() url.Values {
	q, _ := url.ParseQuery(r.RawQuery)
	return q
}

// Pages is a test upstream that serves one list per Style, N items each, in
// pages, and records every request it receives. It is an http.Handler:
// serve it with httptest.NewServer. Links it writes name the host the
// request was sent to, so they have the server's own origin. It is safe for
// concurrent use.
type Pages struct {
	items  int
	pullRQ []entry // the pull request's top-level members, compact

	mu   sync.Mutex
	reqs []Request
}

var _ http.Handler = (*Pages)(nil)

// entry is one member of a JSON object.
type entry struct {
	key string
	raw json.RawMessage
}

// NewPages returns a Pages upstream for opts. It fails when the pull
// request is not a JSON object or cannot be read.
func NewPages(opts PagesOptions) (*Pages, error) {
	p := &Pages{items: opts.Items}
	if p.items <= 0 {
		p.items = 95
	}
	pr := opts.PullRequest
	if pr == nil {
		var err error
		if pr, err = os.ReadFile(TestdataFile("github-pull-request.json")); err != nil {
			return nil, err
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, pr); err != nil {
		return nil, fmt.Errorf("pull request: %w", err)
	}
	dec := json.NewDecoder(&compact)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("pull request: not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("pull request: %w", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("pull request: %w", err)
		}
		p.pullRQ = append(p.pullRQ, entry{key: tok.(string), raw: raw})
	}
	return p, nil
}

// TestdataFile returns the path of name in the repository's testdata
// folder, wherever the test runs from.
func TestdataFile(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", name)
}

// Items returns how many items each list holds.
func (p *Pages) Items() int { return p.items }

// Requests returns the requests received, in arrival order.
func (p *Pages) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.reqs...)
}

// Count returns how many requests of style were received.
func (p *Pages) Count(style Style) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.reqs {
		if r.Style == style {
			n++
		}
	}
	return n
}

// ServeHTTP records the request and answers it in its style.
func (p *Pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var style Style
	var serve func(http.ResponseWriter, *http.Request, []string)
	switch {
	case len(segs) == 5 && segs[0] == "github" && segs[1] == "repos" && segs[4] == "pulls",
		len(segs) == 4 && segs[0] == "github" && segs[1] == "repositories" && segs[3] == "pulls":
		style, serve = GitHubStyle, p.github
	case r.URL.Path == StripePath:
		style, serve = StripeStyle, p.stripe
	case r.URL.Path == SlackPath:
		style, serve = SlackStyle, p.slack
	case len(segs) == 6 && segs[0] == "k8s" && segs[1] == "api" && segs[2] == "v1" && segs[3] == "namespaces" && segs[5] == "pods":
		style, serve = KubernetesStyle, p.kubernetes
	}
	p.mu.Lock()
	p.reqs = append(p.reqs, Request{Style: style, Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery})
	p.mu.Unlock()

	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	switch {
	case serve == nil:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
	case r.Method != http.MethodGet:
		w.Header().Set("Allow", "GET")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"message": "Method Not Allowed"})
	default:
		serve(w, r, segs)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// intParam reads an integer query parameter: def when absent, ok false when
// it is not a whole number in [lo, hi].
func intParam(q url.Values, name string, def, lo, hi int) (int, bool) {
	s := q.Get(name)
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= lo && n <= hi
}

func (p *Pages) github(w http.ResponseWriter, r *http.Request, _ []string) {
	q := r.URL.Query()
	perPage, ok := intParam(q, "per_page", 30, 1, 100)
	if !ok {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []any{map[string]any{"field": "per_page", "code": "invalid"}}})
		return
	}
	page, ok := intParam(q, "page", 1, 1, 1<<30)
	if !ok {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []any{map[string]any{"field": "page", "code": "invalid"}}})
		return
	}
	last := max((p.items+perPage-1)/perPage, 1)

	// The links keep every other query key the request sent, as GitHub's do.
	keep := url.Values{}
	for k, vs := range q {
		if k != "page" && k != "per_page" {
			keep[k] = vs
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	link := func(n int, rel string) string {
		u := url.URL{Scheme: scheme, Host: r.Host, Path: "/github/repositories/" + githubRepoID + "/pulls"}
		u.RawQuery = "page=" + strconv.Itoa(n) + "&per_page=" + strconv.Itoa(perPage)
		if len(keep) > 0 {
			u.RawQuery = keep.Encode() + "&" + u.RawQuery
		}
		return "<" + u.String() + `>; rel="` + rel + `"`
	}
	var links []string
	if page > 1 {
		links = append(links, link(min(page-1, last), "prev"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}

	from := min((page-1)*perPage, p.items)
	to := min(from+perPage, p.items)
	var b bytes.Buffer
	b.WriteByte('[')
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte(',')
		}
		p.writePullRequest(&b, i+1)
	}
	b.WriteByte(']')
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

// writePullRequest writes the pull request with id and number n, members in
// GitHub's order.
func (p *Pages) writePullRequest(b *bytes.Buffer, n int) {
	b.WriteByte('{')
	for i, e := range p.pullRQ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(e.key))
		b.WriteByte(':')
		if e.key == "id" || e.key == "number" {
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.Write(e.raw)
	}
	b.WriteByte('}')
}

// stripeID is the id of the customer at index i.
func stripeID(i int) string { return fmt.Sprintf("cus_%08d", i+1) }

// stripeIndex is the index of a customer id, ok false when there is none.
func (p *Pages) stripeIndex(id string) (int, bool) {
	n, ok := strings.CutPrefix(id, "cus_")
	if !ok || len(n) != 8 {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 1 || i > p.items {
		return 0, false
	}
	return i - 1, true
}

func (p *Pages) stripe(w http.ResponseWriter, r *http.Request, _ []string) {
	q := r.URL.Query()
	fail := func(param, msg string) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"type": "invalid_request_error", "param": param, "message": msg}})
	}
	limit, ok := intParam(q, "limit", 10, 1, 100)
	if !ok {
		fail("limit", "This value must be between 1 and 100.")
		return
	}
	after, before := q.Get("starting_after"), q.Get("ending_before")
	if after != "" && before != "" {
		fail("ending_before", "You may only specify one of these parameters: ending_before, starting_after.")
		return
	}
	from, to := 0, min(limit, p.items)
	var more bool
	switch {
	case after != "":
		i, ok := p.stripeIndex(after)
		if !ok {
			fail("starting_after", "No such customer: '"+after+"'")
			return
		}
		from, to = i+1, min(i+1+limit, p.items)
		more = to < p.items
	case before != "":
		i, ok := p.stripeIndex(before)
		if !ok {
			fail("ending_before", "No such customer: '"+before+"'")
			return
		}
		from, to = max(i-limit, 0), i
		more = from > 0
	default:
		more = to < p.items
	}
	data := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		data = append(data, map[string]any{
			"id": stripeID(i), "object": "customer", "created": 1700000000 + i,
			"email": fmt.Sprintf("customer%d@example.com", i+1), "livemode": false,
			"metadata": map[string]any{},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": more, "url": "/v1/customers"})
}

// slackID is the id of the member at index i.
func slackID(i int) string { return fmt.Sprintf("U%08d", i+1) }

func (p *Pages) slack(w http.ResponseWriter, r *http.Request, _ []string) {
	q := r.URL.Query()
	limit, ok := intParam(q, "limit", 100, 1, 1000)
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_limit"})
		return
	}
	from := 0
	if c := q.Get("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		id, okPrefix := strings.CutPrefix(string(raw), "user:")
		n, nerr := strconv.Atoi(strings.TrimPrefix(id, "U"))
		if err != nil || !okPrefix || !strings.HasPrefix(id, "U") || nerr != nil || n < 1 || n > p.items {
			writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_cursor"})
			return
		}
		from = n - 1
	}
	to := min(from+limit, p.items)
	members := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		members = append(members, map[string]any{
			"id": slackID(i), "team_id": "T00000001", "name": fmt.Sprintf("user%d", i+1),
			"deleted": false, "real_name": fmt.Sprintf("User %d", i+1), "tz": "Europe/Paris", "is_bot": false,
		})
	}
	next := ""
	if to < p.items {
		// Slack's cursors are base64 of the next member: "user:U0G9QF9C6".
		next = base64.StdEncoding.EncodeToString([]byte("user:" + slackID(to)))
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "members": members, "cache_ts": 1700000000,
		"response_metadata": map[string]any{"next_cursor": next}})
}

// k8sResourceVersion is the list's resource version, in every token.
const k8sResourceVersion = 24971

// k8sToken is a continue token in Kubernetes' own shape: base64 of
// {"v":"meta.k8s.io/v1","rv":...,"start":"<next key>\u0000"}.
type k8sToken struct {
	V     string `json:"v"`
	RV    int    `json:"rv"`
	Start string `json:"start"`
}

func podName(i int) string { return fmt.Sprintf("pod-%05d", i) }

func (p *Pages) kubernetes(w http.ResponseWriter, r *http.Request, segs []string) {
	q := r.URL.Query()
	ns := segs[4]
	status := func(code int, reason, msg string) {
		writeJSON(w, code, map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
			"status": "Failure", "message": msg, "reason": reason, "code": code})
	}
	limit, ok := intParam(q, "limit", 0, 0, 1<<30)
	if !ok {
		status(http.StatusBadRequest, "BadRequest", "limit: invalid value")
		return
	}
	from := 0
	if c := q.Get("continue"); c != "" {
		raw, err := base64.RawURLEncoding.DecodeString(c)
		var tok k8sToken
		if err != nil || json.Unmarshal(raw, &tok) != nil || tok.V != "meta.k8s.io/v1" {
			status(http.StatusBadRequest, "BadRequest", "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
			return
		}
		i, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(tok.Start, "\x00"), "pod-"))
		if err != nil || i < 0 || i > p.items || tok.RV != k8sResourceVersion {
			status(http.StatusGone, "Expired", "The provided continue parameter is too old to display a consistent list result.")
			return
		}
		from = i
	}
	to := p.items
	if limit > 0 {
		to = min(from+limit, p.items)
	}
	items := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		items = append(items, map[string]any{
			"metadata": map[string]any{"name": podName(i), "namespace": ns,
				"uid": fmt.Sprintf("00000000-0000-4000-8000-%012d", i), "resourceVersion": strconv.Itoa(k8sResourceVersion - p.items + i)},
			"spec":   map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}},
			"status": map[string]any{"phase": "Running"},
		})
	}
	meta := map[string]any{"resourceVersion": strconv.Itoa(k8sResourceVersion)}
	if to < p.items {
		tok, _ := json.Marshal(k8sToken{V: "meta.k8s.io/v1", RV: k8sResourceVersion, Start: podName(to) + "\x00"})
		meta["continue"] = base64.RawURLEncoding.EncodeToString(tok)
		meta["remainingItemCount"] = p.items - to
	}
	writeJSON(w, http.StatusOK, map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})
}
