package invoke

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/paging"
)

// GitHub pages with a Link header whose next target names the repository by
// id, not by owner/repo: the walk keeps the operation's own path, per_page
// stays on every page and page counts up, until a page has no rel="next".
func TestGitHubLinkPagingOnTheWire(t *testing.T) {
	skipLargeSpecs(t)
	var up *recorder
	up = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		page := r.URL.Query().Get("page")
		if page == "" {
			page = "1"
		}
		if page != "3" {
			var n int
			fmt.Sscan(page, &n)
			w.Header().Set("Link", fmt.Sprintf(`<%s/repositories/8514/pulls?per_page=2&page=%d>; rel="next", <%s/repositories/8514/pulls?per_page=2&page=3>; rel="last"`, up.URL, n+1, up.URL))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"number":%s1},{"number":%s2}]`, page, page)
	})
	s := sharedSpec(t, "github-full.json", up.URL)
	e := endpoint(t, s, "pulls/list")
	client := New(Options{})
	t.Cleanup(client.Close)

	params := map[string]any{"owner": "rails", "repo": "rails", "state": "open", "per_page": 2}
	var queries []string
	for calls := 0; params != nil; calls++ {
		if calls == 4 {
			t.Fatal("paging does not end")
		}
		call, err := client.Prepare(t.Context(), e, Args{Parameters: params})
		if err != nil {
			t.Fatalf("page %d with %v: %v", calls+1, params, err)
		}
		res, err := call.Do(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		r := up.last(t)
		if r.RawPath != "/repos/rails/rails/pulls" {
			t.Errorf("page %d went to %s", calls+1, r.RawPath)
		}
		queries = append(queries, r.RawQuery)
		params = paging.Next(paging.Request{Endpoint: e, URL: call.URL(), Params: params}, res.RawHeaders, decodeBody(t, string(res.RawBody)))
		if params != nil {
			// What the model sends back is the JSON of nextPage.parameters.
			b, _ := json.Marshal(params)
			params = nil
			if err := json.Unmarshal(b, &params); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []string{"per_page=2&state=open", "page=2&per_page=2&state=open", "page=3&per_page=2&state=open"}
	if len(queries) != len(want) {
		t.Fatalf("queries %q, want %q", queries, want)
	}
	for i := range want {
		if !sameQuery(queries[i], want[i]) {
			t.Errorf("page %d query %s, want %s", i+1, queries[i], want[i])
		}
	}
}

// GitHub's per_page is an integer with no bound in its schema (only the
// description says max 100): 100 goes out as given, a word is refused
// naming the type, before anything is sent.
func TestGitHubPerPage(t *testing.T) {
	skipLargeSpecs(t)
	up := newRecorder(t, nil)
	s := sharedSpec(t, "github-full.json", up.URL)
	client := New(Options{})
	t.Cleanup(client.Close)
	e := endpoint(t, s, "issues/list-for-repo")
	_, err := client.Prepare(t.Context(), e, Args{Parameters: map[string]any{"owner": "rails", "repo": "rails", "per_page": "many"}})
	ae := asArgError(t, err)
	if msg := ae.Error(); !strings.Contains(msg, "per_page") || !strings.Contains(msg, "integer") {
		t.Errorf("message %q does not name per_page and its type", msg)
	}
	if up.count() != 0 {
		t.Errorf("upstream saw %d requests", up.count())
	}
	call, err := client.Prepare(t.Context(), e, Args{Parameters: map[string]any{"owner": "rails", "repo": "rails", "per_page": 100, "labels": "bug,ui"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := up.last(t); r.RawPath != "/repos/rails/rails/issues" || !sameQuery(r.RawQuery, "labels=bug%2Cui&per_page=100") {
		t.Errorf("%s?%s", r.RawPath, r.RawQuery)
	}
	if up.count() != 1 {
		t.Errorf("upstream saw %d requests", up.count())
	}
}

// Twilio's paths end in .json after a patterned SID: a SID of the pattern
// goes out in the path before the suffix with the list's PageSize; one that
// misses it is refused naming the pattern, and nothing is sent.
func TestTwilioJSONPathsAndPatternedSIDs(t *testing.T) {
	skipLargeSpecs(t)
	up := newRecorder(t, nil)
	s := sharedSpec(t, "twilio-api-v2010.yaml", up.URL)
	client := New(Options{Specs: map[string]SpecOptions{s.Name: {Auth: map[string]Credential{"accountSid_authToken": {Username: "AC123", Password: "tok"}}}}})
	t.Cleanup(client.Close)
	const account = "AC0123456789abcdef0123456789ABCDEF"
	const message = "SM0123456789abcdef0123456789abcdef"

	tests := []struct {
		op     string
		params map[string]any
		path   string
		query  string
	}{
		{"ListMessage", map[string]any{"AccountSid": account, "PageSize": 20, "To": "+15550001111"},
			"/2010-04-01/Accounts/" + account + "/Messages.json", "PageSize=20&To=%2B15550001111"},
		{"FetchMessage", map[string]any{"AccountSid": account, "Sid": message},
			"/2010-04-01/Accounts/" + account + "/Messages/" + message + ".json", ""},
		{"FetchAccount", map[string]any{"Sid": account},
			"/2010-04-01/Accounts/" + account + ".json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			call, err := client.Prepare(t.Context(), endpoint(t, s, tt.op), Args{Parameters: tt.params})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := call.Do(t.Context()); err != nil {
				t.Fatal(err)
			}
			r := up.last(t)
			if r.Method != "GET" || r.RawPath != tt.path || !sameQuery(r.RawQuery, tt.query) {
				t.Errorf("%s %s?%s, want GET %s?%s", r.Method, r.RawPath, r.RawQuery, tt.path, tt.query)
			}
		})
	}

	before := up.count()
	for _, bad := range []map[string]any{
		{"AccountSid": "AC123", "Sid": message},                              // too short
		{"AccountSid": account, "Sid": "XX" + message[2:]},                   // wrong prefix
		{"AccountSid": account + ".json", "Sid": message},                    // the suffix given twice
		{"AccountSid": "AC0123456789abcdef0123456789abcdeg", "Sid": message}, // not hex
	} {
		_, err := client.Prepare(t.Context(), endpoint(t, s, "FetchMessage"), Args{Parameters: bad})
		ae := asArgError(t, err)
		if msg := ae.Error(); !strings.Contains(msg, "[0-9a-fA-F]{32}") && !strings.Contains(msg, "34") {
			t.Errorf("%v: %q names neither the pattern nor the length", bad, msg)
		}
	}
	if up.count() != before {
		t.Errorf("a refused SID reached the upstream")
	}
}

// Kubernetes' fieldSelector and labelSelector stay on every page of a list
// paged by metadata.continue, escaped as query values.
func TestKubernetesFieldSelectorPaging(t *testing.T) {
	skipLargeSpecs(t)
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		cont := ""
		if r.URL.Query().Get("continue") == "" {
			cont = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjQ5NzF9"
		}
		fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"24971","continue":%q},"items":[{"metadata":{"name":"pod-0"}}]}`, cont)
	})
	s := sharedSpec(t, "k8s.json", up.URL)
	e := endpoint(t, s, "listCoreV1NamespacedPod")
	client := New(Options{})
	t.Cleanup(client.Close)

	params := map[string]any{"namespace": "kube-system", "fieldSelector": "status.phase!=Running,spec.nodeName=node-1", "labelSelector": "app in (web,api)", "limit": 1}
	var queries []string
	for calls := 0; params != nil; calls++ {
		if calls == 3 {
			t.Fatal("paging does not end")
		}
		call, err := client.Prepare(t.Context(), e, Args{Parameters: params})
		if err != nil {
			t.Fatal(err)
		}
		res, err := call.Do(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		r := up.last(t)
		if r.RawPath != "/api/v1/namespaces/kube-system/pods" {
			t.Errorf("path %s", r.RawPath)
		}
		queries = append(queries, r.RawQuery)
		params = paging.Next(paging.Request{Endpoint: e, URL: call.URL(), Params: params}, res.RawHeaders, decodeBody(t, string(res.RawBody)))
	}
	sel := "fieldSelector=" + url.QueryEscape("status.phase!=Running,spec.nodeName=node-1") + "&labelSelector=" + url.QueryEscape("app in (web,api)") + "&limit=1"
	want := []string{sel, sel + "&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjQ5NzF9"}
	if len(queries) != len(want) {
		t.Fatalf("queries %q, want %q", queries, want)
	}
	for i := range want {
		if !sameQuery(queries[i], want[i]) {
			t.Errorf("page %d query %s, want %s", i+1, queries[i], want[i])
		}
	}
}
