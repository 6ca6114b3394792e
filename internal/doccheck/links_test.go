package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkText   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	notInSlug  = regexp.MustCompile(`[^\p{L}\p{M}\p{N}\p{Pc}\- ]`)
	hasScheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// slug is GitHub's anchor for a heading's text: the rendered text in lower
// case, punctuation other than - and _ dropped, each space a hyphen.
func slug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "`", "")
	return strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
}

// lines yields each line of a Markdown text outside fenced code blocks.
func lines(text string) []string {
	var out []string
	fence := ""
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		out = append(out, l)
	}
	return out
}

// anchors lists the anchors a Markdown text's headings make, a repeated
// one numbered as GitHub numbers it (-1, -2, ...).
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range lines(text) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		a := s
		if n := seen[s]; n > 0 {
			a = fmt.Sprintf("%s-%d", s, n)
		}
		seen[s]++
		out[a] = true
	}
	return out
}

// links lists the link targets of a Markdown text, outside code.
func links(text string) []string {
	var out []string
	for _, l := range lines(text) {
		if m := refDef.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
			continue
		}
		l = codeSpan.ReplaceAllString(l, "code")
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// broken checks the links of the Markdown file at path (root is the
// repository, for messages) and returns one message per broken link.
func broken(root, path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(root, path)
	var out []string
	for _, target := range links(string(data)) {
		if target == "" || hasScheme.MatchString(target) || strings.HasPrefix(target, "//") {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		dest := path
		if file != "" {
			dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			if _, err := os.Stat(dest); err != nil {
				out = append(out, fmt.Sprintf("%s: %s: no such file", rel, target))
				continue
			}
		}
		if frag == "" {
			continue
		}
		if !strings.HasSuffix(dest, ".md") {
			out = append(out, fmt.Sprintf("%s: %s: an anchor into a file that is not Markdown", rel, target))
			continue
		}
		text, err := os.ReadFile(dest)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %s: %v", rel, target, err))
			continue
		}
		if !anchors(string(text))[frag] {
			out = append(out, fmt.Sprintf("%s: %s: no heading makes #%s", rel, target, frag))
		}
	}
	return out, nil
}

// docs lists the Markdown files the check covers: the repository's top
// level and docs/.
func docs(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.md", "docs/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

func TestLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	files := docs(t, root)
	for _, want := range []string{"README.md", "CONTRIBUTING.md", "SECURITY.md", "CHANGELOG.md", filepath.Join("docs", "configuration.md")} {
		if !slices.Contains(files, filepath.Join(root, want)) {
			t.Errorf("%s is missing", want)
		}
	}
	for _, f := range files {
		msgs, err := broken(root, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			t.Error(m)
		}
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Connect a client", "connect-a-client"},
		{"The corpus sweep (`make sweep`)", "the-corpus-sweep-make-sweep"},
		{"Loading, memory and context (`../shared/specs/github-full.json`, 1,223 operations, 13 MB)", "loading-memory-and-context-sharedspecsgithub-fulljson-1223-operations-13-mb"},
		{"Scripts: many calls in one step (`run_script`)", "scripts-many-calls-in-one-step-run_script"},
		{"Long work: runs that outlive the call", "long-work-runs-that-outlive-the-call"},
		{"The team setup under load (`make soak`)", "the-team-setup-under-load-make-soak"},
		{"Answers that fit the model's context", "answers-that-fit-the-models-context"},
		{"See [the docs](docs/x.md) — now", "see-the-docs--now"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// TestBrokenLinksAreFound runs the check over a small tree with one link of
// each kind, good and bad.
func TestBrokenLinksAreFound(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# A\n\n## Set-up\n\n## Set-up\n\n```\n## Not a heading\n```\n")
	write("examples/x.yaml", "x: 1\n")
	write("README.md", strings.Join([]string{
		"# Top",
		"[ok](docs/a.md) [ok](docs/a.md#set-up) [ok](docs/a.md#set-up-1) [ok](#top) [ok](examples/)",
		"[ok](https://example.com/missing.md#nowhere) `[in code](missing.md)`",
		"[bad](docs/b.md) [bad](docs/a.md#setup) [bad](#nowhere) [bad](docs/a.md#not-a-heading)",
		"[ref]: docs/missing.md",
		"```",
		"[in a fence](missing.md)",
		"```",
	}, "\n"))
	got, err := broken(dir, filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md: docs/b.md: no such file",
		"README.md: docs/a.md#setup: no heading makes #setup",
		"README.md: #nowhere: no heading makes #nowhere",
		"README.md: docs/a.md#not-a-heading: no heading makes #not-a-heading",
		"README.md: docs/missing.md: no such file",
	}
	if !slices.Equal(got, want) {
		t.Errorf("broken =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
