package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's code blocks, followed as a newcomer would on a machine
// with no network: each specgate command line parses (its flags and
// command exist), the config block passes `specgate check` against a
// stand-in for the spec it fetches, and the set-up (`make run`, `make
// test`) does what the README says.

type codeBlock struct{ lang, text string }

func readmeBlocks(t *testing.T) []codeBlock {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []codeBlock
	for _, m := range regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		out = append(out, codeBlock{m[1], m[2]})
	}
	if len(out) < 4 {
		t.Fatalf("found %d code blocks in the README", len(out))
	}
	return out
}

// shellWords splits a command line as sh would for the lines the README
// holds: quotes, a trailing # comment, no expansion ($(...) stays a word).
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quote, depth := false, byte(0), 0
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == '(' && i > 0 && line[i-1] == '$':
			depth++
			cur.WriteByte(ch)
		case ch == ')' && depth > 0:
			depth--
			cur.WriteByte(ch)
		case ch == '#' && !in && depth == 0:
			return words
		case (ch == ' ' || ch == '\t') && depth == 0:
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// specgateArgs are the arguments of each specgate command in a block: a
// shell line's (after `specgate`, or a client's `-- specgate`), or the
// args of a client config's entry whose command is specgate.
func specgateArgs(t *testing.T, b codeBlock) [][]string {
	t.Helper()
	var out [][]string
	if b.lang == "json" {
		var cfg struct {
			MCPServers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(b.text), &cfg); err != nil {
			t.Errorf("a JSON block of the README does not parse: %v", err)
		}
		for _, e := range cfg.MCPServers {
			if e.Command == "specgate" {
				out = append(out, e.Args)
			}
		}
		return out
	}
	for _, line := range strings.Split(b.text, "\n") {
		words := shellWords(line)
		first := 0 // the command, after VAR=value assignments
		for first < len(words) && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[first]) {
			first++
		}
		for i, w := range words {
			// the binary, not a server named specgate (claude mcp add ... specgate URL)
			if w == "specgate" && (i == first || words[i-1] == "--") {
				out = append(out, words[i+1:])
				break
			}
			if strings.HasPrefix(w, "{") && json.Valid([]byte(w)) {
				out = append(out, specgateArgs(t, codeBlock{"json", `{"mcpServers":{"x":` + w + `}}`})...)
			}
		}
	}
	return out
}

func TestReadmeCommandsParse(t *testing.T) {
	n := 0
	for _, b := range readmeBlocks(t) {
		for _, args := range specgateArgs(t, b) {
			n++
			// --help after the flags: it answers 0 only when every flag
			// before it is the command's
			code, _, errs := runCmd(t, append(args, "--help")...)
			if code != 0 {
				t.Errorf("README: specgate %s: exit %d: %s", strings.Join(args, " "), code, errs)
			}
		}
	}
	if n < 4 {
		t.Errorf("found %d specgate commands in the README", n)
	}
}

// The README's first config passes `specgate check`, as its next block
// runs it, with the spec it fetches from GitHub stood in for on loopback
// (same server, api.github.com, so its budget matches).
func TestReadmeConfigPassesCheck(t *testing.T) {
	var cfg string
	for _, b := range readmeBlocks(t) {
		if b.lang == "yaml" && strings.Contains(b.text, "specs:") {
			cfg = b.text
			break
		}
	}
	if cfg == "" {
		t.Fatal("the README has no config block")
	}
	spec := `{"openapi":"3.0.3","info":{"title":"GitHub v3 REST API","version":"1"},"servers":[{"url":"https://api.github.com"}],
	  "paths":{"/orgs/{org}/repos":{"get":{"operationId":"repos/list-for-org","parameters":[{"name":"org","in":"path","required":true,"schema":{"type":"string"}}],
	  "responses":{"200":{"description":"ok"}}}},"/search/code":{"get":{"operationId":"search/code","responses":{"200":{"description":"ok"}}}}}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(spec))
	}))
	defer up.Close()
	loc := regexp.MustCompile(`(?m)^(\s*location:\s*)(\S+)`)
	if !loc.MatchString(cfg) {
		t.Fatal("the README's config has no location")
	}
	path := filepath.Join(t.TempDir(), "github.yaml")
	if err := os.WriteFile(path, []byte(loc.ReplaceAllString(cfg, "${1}"+up.URL+"/api.github.com.json")), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_TOKEN", "ghp_example")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	code, out, errs := runCmd(t, "check", "--config", path, "--no-cache")
	if code != 0 || !strings.Contains(out, "ok   github: ") || strings.Contains(out, "warning") {
		t.Errorf("check of the README's config: exit %d\n%s%s", code, out, errs)
	}
}

// make run serves the demo as the README says (no network, the URL and a
// client snippet printed, then search "find pet by id" and invoke
// petstore.getPetById with {"petId": 1}); make test runs what the README
// says it runs.
func TestReadmeSetUp(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	readme, _ := os.ReadFile("../../README.md")
	for _, want := range []string{"make run", "make test", `search "find pet by id"`, "`petstore.getPetById` with `{\"petId\": 1}`"} {
		if !strings.Contains(string(readme), want) {
			t.Fatalf("the README no longer says %s: update this test with it", want)
		}
	}
	dry := func(target string, vars ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-n", target}, vars...)...)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		return string(out)
	}
	test := dry("test")
	for _, want := range []string{"gofmt", "go vet", "go test -race"} {
		if !strings.Contains(test, want) {
			t.Errorf("make test does not run %q as the README says:\n%s", want, test)
		}
	}
	// then the large-spec tests without -race
	if !regexp.MustCompile(`(?m)^go test (?:[^\n]*)\./pkg/spec/`).MatchString(test) ||
		regexp.MustCompile(`(?m)^go test [^\n]*-race[^\n]*\./pkg/spec/`).MatchString(test) {
		t.Errorf("make test runs no go test of ./pkg/spec/ without -race, as the README says:\n%s", test)
	}

	addr := freePort(t)
	var serve []string
	for _, line := range strings.Split(dry("run", "LISTEN="+addr), "\n") {
		if w := shellWords(line); len(w) > 1 && strings.HasSuffix(w[0], "specgate") && w[1] == "serve" {
			serve = w[1:]
		}
	}
	if serve == nil {
		t.Fatal("make run runs no specgate serve")
	}
	cmd := exec.Command(specgateBinary(t), serve...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer func() { cmd.Process.Signal(syscall.SIGTERM); <-done }()
	banner := make(chan string, 1)
	go func() {
		defer close(done)
		var seen strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "msg=ready") {
				banner <- seen.String()
			}
		}
		cmd.Wait()
	}()
	var text string
	select {
	case text = <-banner:
	case <-time.After(60 * time.Second):
		t.Fatal("make run's server did not get ready")
	}
	url := "http://" + addr + "/mcp"
	if !strings.Contains(text, url) || !strings.Contains(text, "Client config:") {
		t.Errorf("make run does not print the URL and a client snippet:\n%s", text)
	}
	c := httpMCPClient(t, url, nil)
	res, isErr := callJSON(t, c, "search", map[string]any{"query": "find pet by id"})
	hits, _ := res["endpoints"].([]any)
	if isErr || len(hits) == 0 || hits[0].(map[string]any)["id"] != "petstore.getPetById" {
		t.Errorf("search \"find pet by id\": %v", res)
	}
	res, isErr = callJSON(t, c, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	if isErr || res["statusCode"] != float64(200) {
		t.Errorf("invoke petstore.getPetById {petId: 1}: %v", res)
	}
}
