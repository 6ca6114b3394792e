package upstreamtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func newPages(t *testing.T, opts PagesOptions) (*Pages, *httptest.Server) {
	t.Helper()
	p, err := NewPages(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

// get fetches u and decodes its JSON body (numbers as json.Number).
func get(t *testing.T, u string) (int, http.Header, any) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("GET %s: %v in %.200s", u, err, data)
	}
	return res.StatusCode, res.Header, v
}

func field(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

var nextRel = regexp.MustCompile(`<([^>]+)>; rel="next"`)

// Each style walked by its own protocol: every item exactly once, in order,
// in the expected number of requests.
func TestPagingWalkEveryStyle(t *testing.T) {
	const n = 23
	p, srv := newPages(t, PagesOptions{Items: n})
	host := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		style Style
		first string
		pages int
		// items and next read one answer: the ids of its items and the URL
		// of the next page ("" on the last).
		items func(h http.Header, body any) []string
		next  func(t *testing.T, h http.Header, body any) string
	}{
		{GitHubStyle, "/github/repos/rails/rails/pulls?state=all&per_page=10", 3,
			func(_ http.Header, body any) (ids []string) {
				for _, it := range body.([]any) {
					n, _ := strconv.Atoi(string(field(it, "number").(json.Number)))
					ids = append(ids, fmt.Sprintf("%05d", n)) // sorts as numbers do
				}
				return ids
			},
			func(t *testing.T, h http.Header, _ any) string {
				m := nextRel.FindStringSubmatch(h.Get("Link"))
				if m == nil {
					return ""
				}
				u, err := url.Parse(m[1])
				if err != nil || u.Host != host || u.Query().Get("state") != "all" {
					t.Fatalf("next link %q: want host %s and the state kept", m[1], host)
				}
				return m[1]
			}},
		{StripeStyle, StripePath + "?limit=10", 3,
			func(_ http.Header, body any) (ids []string) {
				for _, it := range field(body, "data").([]any) {
					ids = append(ids, field(it, "id").(string))
				}
				return ids
			},
			func(_ *testing.T, _ http.Header, body any) string {
				if field(body, "has_more") != true {
					return ""
				}
				data := field(body, "data").([]any)
				return srv.URL + StripePath + "?limit=10&starting_after=" + field(data[len(data)-1], "id").(string)
			}},
		{SlackStyle, SlackPath + "?limit=10", 3,
			func(_ http.Header, body any) (ids []string) {
				for _, it := range field(body, "members").([]any) {
					ids = append(ids, field(it, "id").(string))
				}
				return ids
			},
			func(_ *testing.T, _ http.Header, body any) string {
				c, _ := field(body, "response_metadata", "next_cursor").(string)
				if c == "" {
					return ""
				}
				return srv.URL + SlackPath + "?limit=10&cursor=" + url.QueryEscape(c)
			}},
		{KubernetesStyle, "/k8s/api/v1/namespaces/default/pods?limit=10", 3,
			func(_ http.Header, body any) (ids []string) {
				for _, it := range field(body, "items").([]any) {
					ids = append(ids, field(it, "metadata", "name").(string))
				}
				return ids
			},
			func(_ *testing.T, _ http.Header, body any) string {
				c, _ := field(body, "metadata", "continue").(string)
				if c == "" {
					return ""
				}
				return srv.URL + "/k8s/api/v1/namespaces/default/pods?limit=10&continue=" + url.QueryEscape(c)
			}},
	}
	for _, tt := range tests {
		t.Run(string(tt.style), func(t *testing.T) {
			before := p.Count(tt.style)
			var ids []string
			next := srv.URL + tt.first
			for next != "" {
				if len(ids) > 10*n {
					t.Fatal("paging does not end")
				}
				code, h, body := get(t, next)
				if code != http.StatusOK {
					t.Fatalf("GET %s: %d %v", next, code, body)
				}
				ids = append(ids, tt.items(h, body)...)
				next = tt.next(t, h, body)
			}
			if got := p.Count(tt.style) - before; got != tt.pages {
				t.Errorf("requests: got %d, want %d", got, tt.pages)
			}
			if len(ids) != n {
				t.Fatalf("items: got %d, want %d: %v", len(ids), n, ids)
			}
			seen := map[string]bool{}
			for i, id := range ids {
				if seen[id] {
					t.Errorf("item %s served twice", id)
				}
				seen[id] = true
				if i > 0 && ids[i-1] >= id {
					t.Errorf("items out of order: %s before %s", ids[i-1], id)
				}
			}
		})
	}
}

func TestPagingGitHubItemsAreTheExample(t *testing.T) {
	example, err := os.ReadFile(TestdataFile("github-pull-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(example, &want); err != nil {
		t.Fatal(err)
	}
	_, srv := newPages(t, PagesOptions{})
	res, err := http.Get(srv.URL + "/github/repos/octocat/Hello-World/pulls?page=2&per_page=3")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("items: got %d, want 3", len(got))
	}
	for i, it := range got {
		n := float64(4 + i)
		if it["id"] != n || it["number"] != n {
			t.Errorf("item %d: id %v number %v, want %v", i, it["id"], it["number"], n)
		}
		it["id"], it["number"] = want["id"], want["number"]
		if diff := cmp.Diff(want, it); diff != "" {
			t.Errorf("item %d differs from the example beyond id and number:\n%s", i, diff)
		}
	}
	// GitHub's member order is kept, so answers read like GitHub's.
	if !bytes.HasPrefix(data, []byte(`[{"url":"https://api.github.com/repos/octocat/Hello-World/pulls/1347","id":4,`)) {
		t.Errorf("answer starts %.100s", data)
	}
	if per := len(data) / 3; per < 15000 || per > 30000 {
		t.Errorf("%d bytes per pull request, want GitHub's real size (about 21 KB)", per)
	}
}

func TestPagingGitHubLinks(t *testing.T) {
	_, srv := newPages(t, PagesOptions{Items: 95})
	link := func(q string) string {
		res, err := http.Get(srv.URL + "/github/repos/o/r/pulls" + q)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.Header.Get("Link")
	}
	repo := srv.URL + "/github/repositories/1300192/pulls"
	tests := []struct{ query, want string }{
		{"", `<` + repo + `?page=2&per_page=30>; rel="next", <` + repo + `?page=4&per_page=30>; rel="last"`},
		{"?page=2", `<` + repo + `?page=1&per_page=30>; rel="prev", <` + repo + `?page=3&per_page=30>; rel="next", <` + repo + `?page=4&per_page=30>; rel="last", <` + repo + `?page=1&per_page=30>; rel="first"`},
		{"?page=4&state=open", `<` + repo + `?state=open&page=3&per_page=30>; rel="prev", <` + repo + `?state=open&page=1&per_page=30>; rel="first"`},
		{"?per_page=100", ""},
	}
	for _, tt := range tests {
		if got := link(tt.query); got != tt.want {
			t.Errorf("Link for %q\n got %s\nwant %s", tt.query, got, tt.want)
		}
	}
	// The link's own path is served, with the same answer.
	code, _, body := get(t, repo+"?page=4&per_page=30")
	if code != http.StatusOK || len(body.([]any)) != 5 {
		t.Errorf("last page by the linked path: %d, %d items", code, len(body.([]any)))
	}
	code, _, body = get(t, repo+"?page=9")
	if code != http.StatusOK || len(body.([]any)) != 0 {
		t.Errorf("past the last page: %d %v", code, body)
	}
}

func TestPagingRefusals(t *testing.T) {
	p, srv := newPages(t, PagesOptions{Items: 5})
	bad := base64.StdEncoding.EncodeToString([]byte("user:U99999999"))
	tests := []struct {
		path string
		code int
		want string // a field that must be in the body, as key=value
	}{
		{"/github/repos/o/r/pulls?per_page=0", 422, "message=Validation Failed"},
		{"/github/repos/o/r/pulls?page=x", 422, "message=Validation Failed"},
		{StripePath + "?limit=101", 400, "error.param=limit"},
		{StripePath + "?starting_after=cus_nope", 400, "error.param=starting_after"},
		{StripePath + "?starting_after=cus_00000001&ending_before=cus_00000003", 400, "error.param=ending_before"},
		{SlackPath + "?cursor=" + url.QueryEscape(bad), 200, "error=invalid_cursor"},
		{SlackPath + "?cursor=%25%25", 200, "error=invalid_cursor"},
		{"/k8s/api/v1/namespaces/default/pods?continue=nope", 400, "reason=BadRequest"},
		{"/k8s/api/v1/namespaces/default/pods?limit=-1", 400, "reason=BadRequest"},
		{"/nowhere", 404, "message=Not Found"},
	}
	for _, tt := range tests {
		code, _, body := get(t, srv.URL+tt.path)
		key, val, _ := strings.Cut(tt.want, "=")
		if got := field(body, strings.Split(key, ".")...); code != tt.code || got != val {
			t.Errorf("GET %s: %d %v, want %d with %s", tt.path, code, body, tt.code, tt.want)
		}
	}
	res, err := http.Post(srv.URL+StripePath, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET" {
		t.Errorf("POST: %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
	reqs := p.Requests()
	if len(reqs) != len(tests)+1 {
		t.Fatalf("recorded %d requests, want %d", len(reqs), len(tests)+1)
	}
	if r := reqs[len(reqs)-2]; r.Style != "" || r.Path != "/nowhere" {
		t.Errorf("unknown path recorded as %+v", r)
	}
	if r := reqs[2]; r.Style != StripeStyle || r.Method != "GET" || r.Query().Get("limit") != "101" {
		t.Errorf("recorded %+v", r)
	}
}

func TestPagingStripeEndingBefore(t *testing.T) {
	_, srv := newPages(t, PagesOptions{Items: 25})
	_, _, body := get(t, srv.URL+StripePath+"?limit=10&ending_before=cus_00000015")
	var ids []string
	for _, it := range field(body, "data").([]any) {
		ids = append(ids, field(it, "id").(string))
	}
	if ids[0] != "cus_00000005" || ids[len(ids)-1] != "cus_00000014" || len(ids) != 10 || field(body, "has_more") != true {
		t.Errorf("ending_before: %v has_more %v", ids, field(body, "has_more"))
	}
	_, _, body = get(t, srv.URL+StripePath+"?limit=10&ending_before=cus_00000005")
	if n := len(field(body, "data").([]any)); n != 4 || field(body, "has_more") != false {
		t.Errorf("first items: %d, has_more %v", n, field(body, "has_more"))
	}
}

func TestPagingKubernetesWithoutLimitIsOneList(t *testing.T) {
	_, srv := newPages(t, PagesOptions{Items: 40})
	_, _, body := get(t, srv.URL+"/k8s/api/v1/namespaces/kube-system/pods")
	if n := len(field(body, "items").([]any)); n != 40 {
		t.Errorf("items: %d, want 40", n)
	}
	if c := field(body, "metadata", "continue"); c != nil {
		t.Errorf("continue on a whole list: %v", c)
	}
	if ns := field(field(body, "items").([]any)[0], "metadata", "namespace"); ns != "kube-system" {
		t.Errorf("namespace %v", ns)
	}
}

func TestPagingConcurrentRequestsAllRecorded(t *testing.T) {
	p, srv := newPages(t, PagesOptions{Items: 10})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			res, err := http.Get(srv.URL + SlackPath + "?limit=" + strconv.Itoa(i+1))
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
		})
	}
	wg.Wait()
	if got := p.Count(SlackStyle); got != 16 {
		t.Errorf("recorded %d, want 16", got)
	}
}

func TestPagingRefusesAPullRequestNotAnObject(t *testing.T) {
	for _, pr := range []string{`[1]`, `{"id":`, ``} {
		if _, err := NewPages(PagesOptions{PullRequest: []byte(pr)}); err == nil {
			t.Errorf("NewPages accepted pull request %q", pr)
		}
	}
}
