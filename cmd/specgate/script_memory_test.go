package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/specgate/specgate/pkg/script"
)

// githubPage is a list page shaped like GitHub's pulls: n pull requests of
// about 27 KB each (users, head and base repositories with their URLs), as
// JSON text; 30 of them make about 820 KB.
func githubPage(n int) []byte {
	user := func(login string) map[string]any {
		u := map[string]any{"login": login, "id": 1, "type": "User", "site_admin": false}
		for _, k := range []string{"avatar_url", "gravatar_id", "url", "html_url", "followers_url", "following_url", "gists_url",
			"starred_url", "subscriptions_url", "organizations_url", "repos_url", "events_url", "received_events_url"} {
			u[k] = "https://api.github.com/users/" + login + "/" + k
		}
		return u
	}
	repo := func(name string) map[string]any {
		r := map[string]any{"name": name, "full_name": "rails/" + name, "owner": user("rails"), "private": false, "fork": false,
			"description": strings.Repeat("Ruby on Rails ", 8), "stargazers_count": 55000, "topics": []string{"rails", "ruby", "mvc", "activerecord"}}
		for i := range 110 {
			r[fmt.Sprintf("url_%02d", i)] = fmt.Sprintf("https://api.github.com/repos/rails/%s/endpoint_%02d{/sha}", name, i)
		}
		return r
	}
	var prs []any
	for i := range n {
		pr := map[string]any{"number": i + 1, "title": fmt.Sprintf("Fix the thing number %d", i), "state": "open",
			"user": user(fmt.Sprintf("dev%d", i)), "body": strings.Repeat("A description of the change. ", 165),
			"labels": []any{map[string]any{"name": "activerecord", "color": "ededed"}}, "draft": false,
			"head":                map[string]any{"ref": "fix", "sha": strings.Repeat("a", 40), "user": user("dev"), "repo": repo("rails")},
			"base":                map[string]any{"ref": "main", "sha": strings.Repeat("b", 40), "user": user("rails"), "repo": repo("rails")},
			"requested_reviewers": []any{user("rev1"), user("rev2")}}
		for _, k := range []string{"url", "html_url", "diff_url", "patch_url", "issue_url", "commits_url", "review_comments_url", "comments_url", "statuses_url"} {
			pr[k] = fmt.Sprintf("https://api.github.com/repos/rails/rails/pulls/%d/%s", i+1, k)
		}
		prs = append(prs, pr)
	}
	b, _ := json.Marshal(prs)
	return b
}

// pageCaller answers every api.invoke with one page, as the parent hands a
// page to a script.
type pageCaller struct{ page []byte }

func (c pageCaller) Invoke(ctx context.Context, id string, a script.Args) (*script.Response, error) {
	var v any
	if err := json.Unmarshal(c.page, &v); err != nil {
		return nil, err
	}
	return &script.Response{StatusCode: 200, Body: v}, nil
}

func (c pageCaller) Search(ctx context.Context, q string, limit int) (any, error) { return nil, nil }

// holdPage is a script that holds one page and reads it; hold16MB holds
// 16 MB of its own.
const (
	holdPage = `const r = await api.invoke("gh.pulls/list", {parameters: {owner: "rails", repo: "rails"}});
return r.body.map(pr => pr.title).length;`
	hold16MB = `const a = []; for (let i = 0; i < 160000; i++) a.push("x".repeat(90) + i); return a.length;`
)

// benchWorker is the test binary as a worker, as serve starts the specgate
// binary (the pkg/script test binary, linking less, did not reproduce the
// kills), or the specgate binary that SPECGATE_BENCH_WORKER names (to
// measure a build as it is served).
func benchWorker() *script.Worker {
	bin, err := os.Executable()
	if b := os.Getenv("SPECGATE_BENCH_WORKER"); b != "" || err != nil {
		bin = b
	}
	return &script.Worker{Path: bin, Args: []string{scriptWorkerCommand}}
}

// runHolding runs code n times, at most atOnce at a time, each with one
// page to read, and returns how many answered want, with the first failure.
func runHolding(ctx context.Context, code, want string, page []byte, n, atOnce int) (int, error) {
	var mu sync.Mutex
	ok, first := 0, error(nil)
	var wg sync.WaitGroup
	sem := make(chan struct{}, atOnce)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := benchWorker().Run(ctx, code, pageCaller{page}, script.Options{})
			mu.Lock()
			defer mu.Unlock()
			if err == nil && string(res.Value) == want {
				ok++
			} else if first == nil {
				first = fmt.Errorf("value %v, err %v", res, err)
			}
		})
	}
	wg.Wait()
	return ok, first
}

// A script holding one 820 KB page of 30 pull requests failed "the
// script's memory passed its 64 MiB bound" 4 times in 36, and one holding
// 16 MB of its own 1 in 10 (4 in 10 here): the worker's address-space
// limit, near the bound, counted what Go reserves, not what the script
// holds. The bound counts the script's live heap; neither trips it.
func TestScriptWorkerHoldingLittleStaysInItsBound(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the worker's OS limits are Linux's")
	}
	page := githubPage(30)
	t.Logf("page of %d KB", len(page)>>10)
	for _, tt := range []struct {
		name, code, want string
		n, atOnce        int
	}{
		{"a page sequentially", holdPage, "30", 12, 1},
		{"a page 4 at once", holdPage, "30", 8, 4},
		{"16 MB sequentially", hold16MB, "160000", 4, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := runHolding(t.Context(), tt.code, tt.want, page, tt.n, tt.atOnce)
			if ok != tt.n {
				t.Errorf("%d of %d runs answered; first failure: %v", ok, tt.n, err)
			}
		})
	}
}

// BenchmarkScriptWorkerGitHubPage reports the share of runs holding one
// 820 KB page that answered (want 100%); run with -benchtime=100x.
func BenchmarkScriptWorkerGitHubPage(b *testing.B) {
	page := githubPage(30)
	for _, atOnce := range []int{1, 4} {
		b.Run(fmt.Sprintf("at_once=%d", atOnce), func(b *testing.B) {
			ok, err := runHolding(b.Context(), holdPage, "30", page, b.N, atOnce)
			b.ReportMetric(100*float64(ok)/float64(b.N), "%answered")
			if ok != b.N {
				b.Logf("%d of %d answered; first failure: %v", ok, b.N, err)
			}
		})
	}
}
