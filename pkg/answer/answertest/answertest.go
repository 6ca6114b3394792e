// Package answertest checks an answer.AnswerStore against the contract every store
// keeps (RunConformance), with the answers, clock and benchmark the stores' tests share.
package answertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/specgate/specgate/pkg/answer"
)

// Harness opens one kind of AnswerStore for the conformance tests.
type Harness struct {
	Name string
	// overshoot is how far concurrent Puts may take the counted bytes past the bound for
	// a moment (the Redis store keeps the bound over all principals in a second step).
	Overshoot int64
	// open returns an empty store bounded to maxBytes in all, idle TTL ttl, telling the
	// time with now, and a func reporting the bytes it counts as held.
	Open func(t *testing.T, maxBytes int64, ttl time.Duration, now func() time.Time) (answer.AnswerStore, func() int64)
}

// Clock is a clock the test moves by hand.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at 2026-11-30 10:00 UTC.
func NewClock() *Clock {
	return &Clock{t: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// GithubPage returns a page of n pull requests shaped like GitHub's GET
// /repos/{owner}/{repo}/pulls (about 22 KB each, compact JSON), varied from seed.
func GithubPage(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("the a fix add remove update refactor test docs build ci release bump " +
		"dependency parser server client cache limit request response error handle retry token " +
		"config option flag spec endpoint schema invoke search index store redis memory answer")
	text := func(k int) string {
		var b strings.Builder
		for i := range k {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	hex := func(k int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, k)
		for i := range b {
			b[i] = digits[r.IntN(16)]
		}
		return string(b)
	}
	api := "https://api.github.com"
	user := func(login string, id int) map[string]any {
		u := api + "/users/" + login
		return map[string]any{
			"login": login, "id": id, "node_id": "MDQ6VXNlcj" + hex(8), "avatar_url": fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", id),
			"gravatar_id": "", "url": u, "html_url": "https://github.com/" + login,
			"followers_url": u + "/followers", "following_url": u + "/following{/other_user}",
			"gists_url": u + "/gists{/gist_id}", "starred_url": u + "/starred{/owner}{/repo}",
			"subscriptions_url": u + "/subscriptions", "organizations_url": u + "/orgs",
			"repos_url": u + "/repos", "events_url": u + "/events{/privacy}",
			"received_events_url": u + "/received_events", "type": "User", "user_view_type": "public",
			"site_admin": false,
		}
	}
	repo := func(owner map[string]any, name string, id int) map[string]any {
		full := owner["login"].(string) + "/" + name
		u := api + "/repos/" + full
		m := map[string]any{
			"id": id, "node_id": "MDEwOlJlcG9zaXRvcnk" + hex(6), "name": name, "full_name": full,
			"private": false, "owner": owner, "html_url": "https://github.com/" + full,
			"description": text(12), "fork": false, "url": u,
			"created_at": "2014-02-11T10:04:31Z", "updated_at": "2026-11-29T08:12:55Z", "pushed_at": "2026-11-30T09:41:02Z",
			"git_url": "git://github.com/" + full + ".git", "ssh_url": "git@github.com:" + full + ".git",
			"clone_url": "https://github.com/" + full + ".git", "svn_url": "https://github.com/" + full,
			"homepage": "https://" + name + ".dev", "size": 183442, "stargazers_count": 23011,
			"watchers_count": 23011, "language": "Go", "has_issues": true, "has_projects": true,
			"has_downloads": true, "has_wiki": false, "has_pages": true, "has_discussions": true,
			"forks_count": 4120, "mirror_url": nil, "archived": false, "disabled": false,
			"open_issues_count": 612, "license": map[string]any{"key": "apache-2.0", "name": "Apache License 2.0", "spdx_id": "Apache-2.0", "url": api + "/licenses/apache-2.0", "node_id": "MDc6TGljZW5zZTI="},
			"allow_forking": true, "is_template": false, "web_commit_signoff_required": false,
			"topics": []string{"api", "openapi", "mcp", "llm", "rate-limit"}, "visibility": "public",
			"forks": 4120, "open_issues": 612, "watchers": 23011, "default_branch": "main",
		}
		for _, k := range []string{"forks", "keys", "collaborators", "teams", "hooks", "issue_events",
			"events", "assignees", "branches", "tags", "blobs", "git_tags", "git_refs", "trees",
			"statuses", "languages", "stargazers", "contributors", "subscribers", "subscription",
			"commits", "git_commits", "comments", "issue_comment", "contents", "compare", "merges",
			"archive", "downloads", "issues", "pulls", "milestones", "notifications", "labels",
			"releases", "deployments"} {
			m[k+"_url"] = u + "/" + k + "{/id}"
		}
		return m
	}
	owner := user("specgate", 9919)
	base := repo(owner, "specgate", 41882731)
	prs := make([]any, n)
	for i := range prs {
		num := 4000 + n - i
		author := user("dev"+hex(5), 100000+r.IntN(900000))
		fork := repo(author, "specgate", 500000000+r.IntN(1000000))
		u := fmt.Sprintf("%s/repos/specgate/specgate/pulls/%d", api, num)
		labels := make([]any, 1+r.IntN(3))
		for j := range labels {
			name := words[r.IntN(len(words))]
			labels[j] = map[string]any{"id": r.IntN(1 << 30), "node_id": "LA_kwDO" + hex(12), "url": api + "/repos/specgate/specgate/labels/" + name, "name": name, "color": hex(6), "default": false, "description": text(6)}
		}
		sha := hex(40)
		prs[i] = map[string]any{
			"url": u, "id": 1500000000 + r.IntN(100000000), "node_id": "PR_kwDO" + hex(16),
			"html_url":  fmt.Sprintf("https://github.com/specgate/specgate/pull/%d", num),
			"diff_url":  fmt.Sprintf("https://github.com/specgate/specgate/pull/%d.diff", num),
			"patch_url": fmt.Sprintf("https://github.com/specgate/specgate/pull/%d.patch", num),
			"issue_url": fmt.Sprintf("%s/repos/specgate/specgate/issues/%d", api, num),
			"number":    num, "state": "open", "locked": false, "title": text(8), "user": author,
			"body": text(120 + r.IntN(300)), "created_at": "2026-11-2" + fmt.Sprint(r.IntN(9)) + "T10:00:00Z",
			"updated_at": "2026-11-30T09:00:00Z", "closed_at": nil, "merged_at": nil,
			"merge_commit_sha": hex(40), "assignee": nil, "assignees": []any{}, "requested_reviewers": []any{owner},
			"requested_teams": []any{}, "labels": labels, "milestone": nil, "draft": r.IntN(4) == 0,
			"commits_url": u + "/commits", "review_comments_url": u + "/comments",
			"review_comment_url": api + "/repos/specgate/specgate/pulls/comments{/number}",
			"comments_url":       fmt.Sprintf("%s/repos/specgate/specgate/issues/%d/comments", api, num),
			"statuses_url":       api + "/repos/specgate/specgate/statuses/" + sha,
			"head":               map[string]any{"label": author["login"].(string) + ":" + words[r.IntN(len(words))], "ref": words[r.IntN(len(words))], "sha": sha, "user": author, "repo": fork},
			"base":               map[string]any{"label": "specgate:main", "ref": "main", "sha": hex(40), "user": owner, "repo": base},
			"_links": map[string]any{
				"self": map[string]any{"href": u}, "html": map[string]any{"href": fmt.Sprintf("https://github.com/specgate/specgate/pull/%d", num)},
				"issue":           map[string]any{"href": fmt.Sprintf("%s/repos/specgate/specgate/issues/%d", api, num)},
				"comments":        map[string]any{"href": fmt.Sprintf("%s/repos/specgate/specgate/issues/%d/comments", api, num)},
				"review_comments": map[string]any{"href": u + "/comments"}, "review_comment": map[string]any{"href": api + "/repos/specgate/specgate/pulls/comments{/number}"},
				"commits": map[string]any{"href": u + "/commits"}, "statuses": map[string]any{"href": api + "/repos/specgate/specgate/statuses/" + sha},
			},
			"author_association": "CONTRIBUTOR", "auto_merge": nil, "active_lock_reason": nil,
		}
	}
	b, err := json.Marshal(prs)
	if err != nil {
		panic(err)
	}
	return b
}

// RandomBody returns n bytes that do not compress, so a test knows what an answer costs.
func RandomBody(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Sample is a GitHub answer holding body, with every field of Answer set.
func Sample(body []byte) *answer.Answer {
	return &answer.Answer{
		Endpoint:    "github.pulls/list",
		StatusCode:  200,
		ContentType: "application/json; charset=utf-8",
		Headers:     map[string]string{"Link": `<https://api.github.com/repositories/1/pulls?page=2>; rel="next"`, "X-Ratelimit-Remaining": "4999"},
		Body:        body,
		Pages:       1,
		NextPage:    map[string]any{"parameters": map[string]any{"page": float64(2), "state": "open"}},
		Created:     time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC),
	}
}

// WantNotFound fails t unless err is an *AnswerNotFoundError with reason and returns it.
func WantNotFound(t *testing.T, err error, reason string) *answer.AnswerNotFoundError {
	t.Helper()
	var nf *answer.AnswerNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want an AnswerNotFoundError %q", err, reason)
	}
	if nf.Reason != reason {
		t.Fatalf("reason = %q (%v), want %q", nf.Reason, err, reason)
	}
	return nf
}

// MustPut stores a for principal in s and returns its id, failing t on an error.
func MustPut(t *testing.T, s answer.AnswerStore, principal string, a *answer.Answer) string {
	t.Helper()
	id, err := s.Put(t.Context(), principal, a)
	if err != nil {
		t.Fatalf("put for %s: %v", principal, err)
	}
	return id
}

// RunConformance runs the contract of AnswerStore against the stores h opens.
func RunConformance(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Harness)
	}{
		{"RoundTrip", conformRoundTrip},
		{"IDsAreDistinctAndURLSafe", conformIDsAreDistinctAndURLSafe},
		{"OtherPrincipalsIDIsUnknown", conformOtherPrincipalsIDIsUnknown},
		{"MalformedIDsAreUnknown", conformMalformedIDsAreUnknown},
		{"IdleExpiry", conformIdleExpiry},
		{"EvictsTheHeaviestPrincipalsOldest", conformEvictsTheHeaviestPrincipalsOldest},
		{"ReadingAnAnswerKeepsIt", conformReadingAnAnswerKeepsIt},
		{"TooLarge", conformTooLarge},
		{"Concurrent", conformConcurrent},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, h) })
	}
}

func conformRoundTrip(t *testing.T, h Harness) {
	s, _ := h.Open(t, 0, 0, nil)
	for _, tt := range []struct {
		name string
		a    *answer.Answer
	}{
		{"github page", Sample(GithubPage(30, 1))},
		{"small json", Sample([]byte(`{"id":1}`))},
		{"binary", &answer.Answer{Endpoint: "img.get", StatusCode: 200, ContentType: "image/png", Body: RandomBody(5000, 1), Truncated: true, Created: time.Unix(0, 0).UTC()}},
		{"no body", &answer.Answer{Endpoint: "x.delete", StatusCode: 204, Created: time.Unix(1, 0).UTC()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := MustPut(t, s, "alice", tt.a)
			if !answer.ValidID(id) {
				t.Fatalf("id %q is not well formed", id)
			}
			got, err := s.Get(t.Context(), "alice", id)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Body, tt.a.Body) {
				t.Fatalf("body: got %d bytes, want %d, equal prefix %v", len(got.Body), len(tt.a.Body), bytes.HasPrefix(tt.a.Body, got.Body))
			}
			if diff := cmp.Diff(tt.a, got, cmp.Comparer(bytes.Equal)); diff != "" {
				t.Errorf("answer (-put +got):\n%s", diff)
			}
			// the store keeps its own copy
			if len(got.Body) > 0 {
				got.Body[0]++
			}
			if got.Headers != nil {
				got.Headers["X"] = "changed"
			}
			again, err := s.Get(t.Context(), "alice", id)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := again.Headers["X"]; ok || !bytes.Equal(again.Body, tt.a.Body) {
				t.Error("a change to a returned answer reached the store")
			}
		})
	}
}

func conformIDsAreDistinctAndURLSafe(t *testing.T, h Harness) {
	s, _ := h.Open(t, 0, 0, nil)
	seen := map[string]bool{}
	for range 200 {
		id := MustPut(t, s, "alice", Sample([]byte(`[]`)))
		if seen[id] {
			t.Fatalf("id %q issued twice", id)
		}
		seen[id] = true
		if strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Fatalf("id %q is not URL-safe", id)
		}
	}
}

func conformOtherPrincipalsIDIsUnknown(t *testing.T, h Harness) {
	s, _ := h.Open(t, 0, 0, nil)
	id := MustPut(t, s, "alice", Sample([]byte(`{"secret":"alice's"}`)))
	_, errOther := s.Get(t.Context(), "bob", id)
	nfOther := WantNotFound(t, errOther, answer.AnswerUnknown)

	unused := answer.NewID()
	_, errRandom := s.Get(t.Context(), "bob", unused)
	nfRandom := WantNotFound(t, errRandom, answer.AnswerUnknown)
	if errOther.Error() != errRandom.Error() || nfOther.Hint() != nfRandom.Hint() {
		t.Errorf("another principal's id reads %q / %q, an unknown one %q / %q",
			errOther, nfOther.Hint(), errRandom, nfRandom.Hint())
	}
	if nfOther.ID != id {
		t.Errorf("ID = %q, want %q", nfOther.ID, id)
	}
	// and it is still alice's
	if _, err := s.Get(t.Context(), "alice", id); err != nil {
		t.Fatal(err)
	}
}

func conformMalformedIDsAreUnknown(t *testing.T, h Harness) {
	s, _ := h.Open(t, 0, 0, nil)
	id := MustPut(t, s, "alice", Sample([]byte(`{}`)))
	for _, tt := range []struct{ name, id string }{
		{"empty", ""},
		{"random", "r_" + strings.Repeat("A", 22)},
		{"10 KB", "r_" + strings.Repeat("A", 10<<10)},
		{"id and more", id + "x"},
		{"id cut", id[:len(id)-1]},
		{"no prefix", "x_" + id[2:]},
		{"padding", id + "=="},
		{"not base64", "r_" + strings.Repeat("!", 22)},
		{"key injection", "r_*"},
		{"hash tag", "r_{" + strings.Repeat("A", 20) + "}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Get(t.Context(), "alice", tt.id)
			nf := WantNotFound(t, err, answer.AnswerUnknown)
			if len(nf.ID) > 64 {
				t.Errorf("the error carries %d bytes of the id", len(nf.ID))
			}
		})
	}
}

func conformIdleExpiry(t *testing.T, h Harness) {
	clock := NewClock()
	const ttl = 10 * time.Minute
	s, held := h.Open(t, 0, ttl, clock.Now)
	id := MustPut(t, s, "alice", Sample(GithubPage(2, 2)))
	other := MustPut(t, s, "alice", Sample([]byte(`{"n":2}`)))
	for range 3 { // each read starts the idle time again
		clock.Advance(ttl - time.Millisecond)
		if _, err := s.Get(t.Context(), "alice", id); err != nil {
			t.Fatalf("read within the TTL: %v", err)
		}
	}
	_, err := s.Get(t.Context(), "alice", other)
	WantNotFound(t, err, answer.AnswerExpired)

	clock.Advance(ttl)
	_, err = s.Get(t.Context(), "alice", id)
	WantNotFound(t, err, answer.AnswerExpired)
	_, err = s.Get(t.Context(), "alice", id)
	WantNotFound(t, err, answer.AnswerExpired) // and again: the record keeps it
	_, err = s.Get(t.Context(), "bob", id)
	WantNotFound(t, err, answer.AnswerUnknown)

	// what is left is bob's one answer, counted as a store holding only it counts it
	MustPut(t, s, "bob", Sample([]byte(`{}`))) // sweeps
	fresh, freshHeld := h.Open(t, 0, ttl, clock.Now)
	MustPut(t, fresh, "bob", Sample([]byte(`{}`)))
	if got, want := held(), freshHeld(); got != want {
		t.Errorf("after expiry the store counts %d bytes, want %d", got, want)
	}
}

func conformEvictsTheHeaviestPrincipalsOldest(t *testing.T, h Harness) {
	const max = 64 << 10
	s, held := h.Open(t, max, 0, nil)
	bID := MustPut(t, s, "bob", Sample(RandomBody(6000, 100)))
	var aIDs []string
	for i := range 30 {
		aIDs = append(aIDs, MustPut(t, s, "alice", Sample(RandomBody(6000, uint64(i)))))
		if got := held(); got > max {
			t.Fatalf("after put %d the store counts %d bytes, over its %d", i, got, max)
		}
	}
	if _, err := s.Get(t.Context(), "bob", bID); err != nil {
		t.Fatalf("bob's only answer: %v", err)
	}
	// alice's oldest went, her newest stayed
	_, err := s.Get(t.Context(), "alice", aIDs[0])
	WantNotFound(t, err, answer.AnswerEvicted)
	_, err = s.Get(t.Context(), "bob", aIDs[0])
	WantNotFound(t, err, answer.AnswerUnknown)
	got, err := s.Get(t.Context(), "alice", aIDs[len(aIDs)-1])
	if err != nil {
		t.Fatalf("alice's newest: %v", err)
	}
	if !bytes.Equal(got.Body, RandomBody(6000, uint64(len(aIDs)-1))) {
		t.Error("alice's newest body differs")
	}
	kept := 0
	for _, id := range aIDs {
		if _, err := s.Get(t.Context(), "alice", id); err == nil {
			kept++
		} else {
			WantNotFound(t, err, answer.AnswerEvicted)
		}
	}
	if kept < 5 || kept > 10 {
		t.Errorf("alice kept %d of 30 answers of 6 KB in a 64 KiB store", kept)
	}
}

func conformReadingAnAnswerKeepsIt(t *testing.T, h Harness) {
	const max = 64 << 10
	s, _ := h.Open(t, max, 0, nil)
	first := MustPut(t, s, "alice", Sample(RandomBody(6000, 1000)))
	for i := range 30 {
		if _, err := s.Get(t.Context(), "alice", first); err != nil {
			t.Fatalf("after %d puts: %v", i, err)
		}
		MustPut(t, s, "alice", Sample(RandomBody(6000, uint64(i))))
	}
}

func conformTooLarge(t *testing.T, h Harness) {
	const max = 32 << 10
	s, held := h.Open(t, max, 0, nil)
	id := MustPut(t, s, "alice", Sample(RandomBody(1000, 1)))
	_, err := s.Put(t.Context(), "alice", Sample(RandomBody(max, 2)))
	if !errors.Is(err, answer.ErrAnswerTooLarge) {
		t.Fatalf("err = %v, want ErrAnswerTooLarge", err)
	}
	if _, err := s.Get(t.Context(), "alice", id); err != nil {
		t.Fatalf("a refused answer evicted another: %v", err)
	}
	// a large body that compresses well fits
	if _, err := s.Put(t.Context(), "alice", Sample(bytes.Repeat([]byte(`{"a":1},`), 16<<10))); err != nil {
		t.Fatalf("128 KB of repeated JSON in a 32 KiB store: %v", err)
	}
	if got := held(); got > max {
		t.Errorf("the store counts %d bytes, over its %d", got, max)
	}
}

func conformConcurrent(t *testing.T, h Harness) {
	const max = 128 << 10
	s, held := h.Open(t, max, 0, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			principal := fmt.Sprintf("p%d", g%3)
			var ids []string
			var bodies [][]byte
			for i := range 25 {
				body := RandomBody(2000+100*g, uint64(g*1000+i))
				id, err := s.Put(context.Background(), principal, Sample(body))
				if err != nil {
					t.Error(err)
					return
				}
				ids, bodies = append(ids, id), append(bodies, body)
				k := i / 2
				got, err := s.Get(context.Background(), principal, ids[k])
				var nf *answer.AnswerNotFoundError
				switch {
				case errors.As(err, &nf) && nf.Reason == answer.AnswerEvicted:
				case err != nil:
					t.Error(err)
					return
				case !bytes.Equal(got.Body, bodies[k]):
					t.Errorf("%s read another body for %s", principal, ids[k])
					return
				}
				if b := held(); b > max+h.Overshoot {
					t.Errorf("the store counts %d bytes, over its %d", b, max)
					return
				}
			}
		})
	}
	wg.Wait()
	if b := held(); b > max {
		t.Errorf("once all Puts returned, the store counts %d bytes, over its %d", b, max)
	}
}

// BenchPage is a GitHub-shaped list of pull requests of at least 670 KB, the size of a
// page of 30 real ones.
func BenchPage() []byte {
	for n := 30; ; n++ {
		if b := GithubPage(n, 42); len(b) >= 670_000 {
			return b
		}
	}
}

// Bench measures Put and Get of one 670 KB answer in s and reports the bytes
// it counts per answer stored (held/op) against the body's size (stored-ratio).
func Bench(b *testing.B, s answer.AnswerStore, held func() int64) {
	ctx := context.Background()
	body := BenchPage()
	a := Sample(body)
	b.Run("Put", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		before := held()
		for b.Loop() {
			if _, err := s.Put(ctx, "bench", a); err != nil {
				b.Fatal(err)
			}
		}
		if n := b.N; n > 0 {
			per := float64(held()-before) / float64(n)
			if per > 0 { // else the store evicted as it went; see the Get run's figure
				b.ReportMetric(per, "held/op")
				b.ReportMetric(per/float64(len(body)), "stored-ratio")
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		id, err := s.Put(ctx, "bench-get", a)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			got, err := s.Get(ctx, "bench-get", id)
			if err != nil {
				b.Fatal(err)
			}
			if len(got.Body) != len(body) {
				b.Fatalf("got %d bytes, want %d", len(got.Body), len(body))
			}
		}
	})
}
