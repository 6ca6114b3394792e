package answer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// jqBenchUser and jqBenchRepo give the benchmark's pull requests the shape
// and weight of GitHub's: nested users and repositories full of URLs.
func jqBenchUser(login string, id int) string {
	u := "https://api.github.com/users/" + login
	return fmt.Sprintf(`{"login":%q,"id":%d,"node_id":"MDQ6VXNlcjE=","avatar_url":"https://github.com/images/error/%s_happy.gif",`+
		`"gravatar_id":"","url":%q,"html_url":"https://github.com/%s","followers_url":"%s/followers",`+
		`"following_url":"%s/following{/other_user}","gists_url":"%s/gists{/gist_id}","starred_url":"%s/starred{/owner}{/repo}",`+
		`"subscriptions_url":"%s/subscriptions","organizations_url":"%s/orgs","repos_url":"%s/repos",`+
		`"events_url":"%s/events{/privacy}","received_events_url":"%s/received_events","type":"User","site_admin":false}`,
		login, id, login, u, login, u, u, u, u, u, u, u, u, u)
}

func jqBenchRepo(owner string) string {
	r := "https://api.github.com/repos/" + owner + "/Hello-World"
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":1296269,"node_id":"MDEwOlJlcG9zaXRvcnkxMjk2MjY5","name":"Hello-World","full_name":"%s/Hello-World","owner":%s,`+
		`"private":false,"html_url":"https://github.com/%s/Hello-World","description":"This your first repo!","fork":false,"url":%q`,
		owner, jqBenchUser(owner, 1), owner, r)
	for _, k := range []string{"archive", "assignees", "blobs", "branches", "collaborators", "comments", "commits", "compare",
		"contents", "contributors", "deployments", "downloads", "events", "forks", "git_commits", "git_refs", "git_tags",
		"issue_comment", "issue_events", "issues", "keys", "labels", "languages", "merges", "milestones", "notifications",
		"pulls", "releases", "stargazers", "statuses", "subscribers", "subscription", "tags", "teams", "trees", "hooks"} {
		fmt.Fprintf(&b, `,"%s_url":"%s/%s{/id}"`, k, r, k)
	}
	b.WriteString(`,"homepage":"https://github.com","language":null,"forks_count":9,"stargazers_count":80,"watchers_count":80,` +
		`"size":108,"default_branch":"master","open_issues_count":0,"topics":["octocat","atom","electron","api"],` +
		`"has_issues":true,"has_projects":true,"has_wiki":true,"has_pages":false,"has_downloads":true,"archived":false,` +
		`"disabled":false,"pushed_at":"2011-01-26T19:06:43Z","created_at":"2011-01-26T19:01:12Z","updated_at":"2011-01-26T19:14:43Z",` +
		`"permissions":{"admin":false,"push":false,"pull":true},"allow_rebase_merge":true,"allow_squash_merge":true,` +
		`"allow_merge_commit":true,"subscribers_count":42,"network_count":0,"license":{"key":"mit","name":"MIT License",` +
		`"url":"https://api.github.com/licenses/mit","spdx_id":"MIT","node_id":"MDc6TGljZW5zZW1pdA=="},"forks":1,"open_issues":1,"watchers":1}`)
	return b.String()
}

// jqBenchPulls is about size bytes of a JSON array of GitHub-like pull requests.
func jqBenchPulls(size int) []byte {
	head, base := jqBenchRepo("octocat"), jqBenchRepo("hubot")
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		state := "open"
		if i%3 == 0 {
			state = "closed"
		}
		p := "https://api.github.com/repos/octocat/Hello-World/pulls/" + fmt.Sprint(i)
		fmt.Fprintf(&b, `{"url":%q,"id":%d,"node_id":"MDExOlB1bGxSZXF1ZXN0MQ==","html_url":"https://github.com/octocat/Hello-World/pull/%d",`+
			`"diff_url":"%s.diff","patch_url":"%s.patch","issue_url":"%s/issue","commits_url":"%s/commits",`+
			`"review_comments_url":"%s/comments","comments_url":"%s/issue_comments","statuses_url":"%s/statuses",`+
			`"number":%d,"state":%q,"locked":false,"title":"Amazing new feature %d","user":%s,`+
			`"body":"Please pull these awesome changes in!\nThey fix #%d and add tests.","labels":[{"id":208045946,"name":"bug","color":"f29513","default":true}],`+
			`"milestone":null,"active_lock_reason":"too heated","created_at":"2011-01-26T19:01:12Z","updated_at":"2011-01-26T19:01:12Z",`+
			`"closed_at":null,"merged_at":null,"merge_commit_sha":"e5bd3914e2e596debea16f433f57875b5b90bcd6","assignee":null,`+
			`"assignees":[],"requested_reviewers":[],"head":{"label":"octocat:new-topic","ref":"new-topic","sha":"6dcb09b5b57875f334f61aebed695e2e4193db5e","repo":%s},`+
			`"base":{"label":"hubot:master","ref":"master","sha":"6dcb09b5b57875f334f61aebed695e2e4193db5e","repo":%s},`+
			`"author_association":"OWNER","auto_merge":null,"draft":false}`,
			p, 1000000+i, i, p, p, p, p, p, p, p, i, state, i, jqBenchUser(fmt.Sprintf("user%d", i%50), i%50), i, head, base)
	}
	b.WriteByte(']')
	return b.Bytes()
}

const jqBenchProjection = `[.[] | {number, title, state, user: .user.login}]`

func decodeJQBench(b *testing.B, data []byte) any {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkJQProjection8MiB projects an 8 MiB list of pull requests onto four
// fields, as a model asks for when the whole list does not fit its context:
// the decode invoke does (encoding/json with UseNumber) and the filter's run,
// together and apart.
func BenchmarkJQProjection8MiB(b *testing.B) {
	data := jqBenchPulls(8 << 20)
	q, err := CompileJQ(jqBenchProjection)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, v any) {
		out, err := q.Run(context.Background(), v, JQLimits{})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(out.([]any)); n < 500 {
			b.Fatalf("%d items", n)
		}
	}
	b.Run("decode+run", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			run(b, decodeJQBench(b, data))
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			decodeJQBench(b, data)
		}
	})
	b.Run("run", func(b *testing.B) {
		v := decodeJQBench(b, data)
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			run(b, v)
		}
	})
}
