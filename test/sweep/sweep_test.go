package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/spec"
)

// perSpec caps the operations sampled from one spec; smaller specs are called whole.
const perSpec = 40

const specsDir = "../../../shared/specs"

// requireSweep makes every reason to skip a failure (.ci/run sets it).
var requireSweep = os.Getenv("SPECGATE_REQUIRE_SWEEP") == "1"

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if requireSweep {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// TestSweep calls a deterministic sample of every corpus spec's operations
// through the specgate binary over MCP (inspect, then invoke with arguments
// made from the contract: required parameters, every optional query
// parameter, a body of the required fields) against Prism validating each
// request (prism mock --errors), or for the specs listed in recorded against
// a recording upstream whose wire form is checked against the API's own
// documented encoding. Each call that does not succeed must be listed in
// exceptions.tsv with its reason; a listed exception that no longer happens
// fails too.
func TestSweep(t *testing.T) {
	if os.Getenv("SPECGATE_SWEEP") != "1" {
		skipOrFail(t, "the corpus sweep runs under make sweep (SPECGATE_SWEEP=1, inside unshare -n)")
	}
	if err := onlyLoopback(); err != nil {
		skipOrFail(t, "the sweep runs Prism (node) and must run in a network namespace with only loopback: %v", err)
	}
	prism, err := filepath.Abs("node_modules/.bin/prism")
	if err == nil {
		_, err = os.Stat(prism)
	}
	if err != nil {
		skipOrFail(t, "prism is not installed: run (cd test/sweep && npm ci --ignore-scripts): %v", err)
	}
	entries, err := os.ReadDir(specsDir)
	if err != nil {
		skipOrFail(t, "no corpus at %s: %v", specsDir, err)
	}
	bin := specgateBinary(t)
	exc := readExceptions(t, "exceptions.tsv")

	// SPECGATE_SWEEP_SPECS=a,b sweeps only those specs (while fixing one).
	var only []string
	if v := os.Getenv("SPECGATE_SWEEP_SPECS"); v != "" {
		only = strings.Split(v, ",")
	}
	var files []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if ext != ".json" && ext != ".yaml" && ext != ".yml" {
			continue
		}
		if only != nil && !slices.Contains(only, strings.TrimSuffix(e.Name(), ext)) {
			continue
		}
		files = append(files, e.Name())
	}
	slices.Sort(files)
	var mu sync.Mutex
	var reports []*report
	t.Run("specs", func(t *testing.T) {
		for _, f := range files {
			name := strings.TrimSuffix(f, filepath.Ext(f))
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := sweepSpec(t, bin, prism, name, filepath.Join(specsDir, f))
				mu.Lock()
				reports = append(reports, r)
				mu.Unlock()
			})
		}
	})
	slices.SortFunc(reports, func(a, b *report) int { return strings.Compare(a.spec, b.spec) })
	checkExceptions(t, reports, exc)
	table := reportTable(reports, exc)
	t.Logf("sweep:\n%s", table)
	if out := os.Getenv("SPECGATE_SWEEP_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// onlyLoopback is nil when every network interface of this process is a
// loopback one, as in `unshare -n` with lo up.
func onlyLoopback() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
			return fmt.Errorf("interface %s is up", i.Name)
		}
	}
	return nil
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// specgateBinary is $SPECGATE_BIN (make sweep builds it), else a build of ./cmd/specgate.
func specgateBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SPECGATE_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		binPath = filepath.Join(os.TempDir(), "specgate-sweep-"+strconv.Itoa(os.Getpid()))
		out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/specgate").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building specgate: %v", buildErr)
	}
	return binPath
}

// outcome is what became of one sampled call.
type outcome struct {
	id   string
	kind string // ok, specgate, mock (refused the request), response (accepted it, failed its answer), wire
	code string // specgate's error code, or the mock's status
	why  string
}

func (o outcome) key() string { return o.id + "\t" + o.kind }

type report struct {
	spec     string
	ops      int
	outcomes []outcome
	mode     string // prism or recorded
}

func (r *report) count(kind string) int {
	n := 0
	for _, o := range r.outcomes {
		if o.kind == kind {
			n++
		}
	}
	return n
}

// sample picks up to perSpec endpoints spread evenly over the ids in order.
func sample(eps []*spec.Endpoint) []*spec.Endpoint {
	eps = slices.Clone(eps)
	slices.SortFunc(eps, func(a, b *spec.Endpoint) int { return strings.Compare(a.ID, b.ID) })
	if len(eps) <= perSpec {
		return eps
	}
	out := make([]*spec.Endpoint, 0, perSpec)
	for i := range perSpec {
		out = append(out, eps[i*len(eps)/perSpec])
	}
	return out
}

func sweepSpec(t *testing.T, bin, prism, name, path string) *report {
	ctx := t.Context()
	s, err := spec.Load(ctx, path, spec.Options{Name: name})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	r := &report{spec: name, ops: len(s.Endpoints), mode: "prism"}
	if len(s.Endpoints) == 0 {
		return r // Prism refuses a file with no operations (webhooks only)
	}
	check := recorded[name]
	var target string
	if check != nil {
		r.mode = "recorded"
	} else {
		target = startPrism(t, prism, path)
	}
	rec := newRecorder(t, target)
	// Prism matches the request path against the spec's paths alone, without
	// a server's base path; the recording upstream does not care.
	c := startSpecgate(t, bin, name, path, rec.srv.URL, s.Schemes)
	for _, e := range sample(s.Endpoints) {
		o := callOne(ctx, t, c, rec, e, check)
		r.outcomes = append(r.outcomes, o)
	}
	return r
}

// startPrism starts prism mock --errors for path on a free loopback port and
// returns its URL once it says it is listening.
func startPrism(t *testing.T, prism, path string) string {
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, prism, "mock", "--errors", "-h", "127.0.0.1", "-p", strconv.Itoa(port), path)
	cmd.Env = append(os.Environ(), "NODE_OPTIONS=--max-old-space-size=4096")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("prism: %v", err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var last []string
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "Prism is listening") {
				ready <- nil
				if f := os.Getenv("SPECGATE_SWEEP_PRISM_LOG"); f != "" {
					if w, err := os.Create(f + "." + filepath.Base(path) + ".log"); err == nil {
						io.Copy(w, out)
						w.Close()
						return
					}
				}
				io.Copy(io.Discard, out)
				return
			}
			last = append(last, line)
			if len(last) > 5 {
				last = last[1:]
			}
		}
		ready <- fmt.Errorf("prism exited before listening: %s", strings.Join(last, " | "))
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("prism did not start within 3 minutes")
	}
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// exchange is one request as it went on the wire and what came back.
type exchange struct {
	method, uri, contentType string
	body                     []byte
	status                   int
	violations               string
	respBody                 []byte
	unreachable              bool // Prism did not answer (it died)
}

// recorder sits between specgate and Prism (or answers itself, with 200 {}
// when target is empty) and keeps the last exchange.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	last *exchange
}

func newRecorder(t *testing.T, target string) *recorder {
	rec := &recorder{}
	var proxy *httputil.ReverseProxy
	if target != "" {
		u, _ := url.Parse(target)
		proxy = httputil.NewSingleHostReverseProxy(u)
		proxy.ModifyResponse = func(resp *http.Response) error {
			b, _ := io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(b))
			rec.mu.Lock()
			if rec.last != nil {
				rec.last.status = resp.StatusCode
				rec.last.violations = resp.Header.Get("sl-violations")
				rec.last.respBody = b
			}
			rec.mu.Unlock()
			return nil
		}
		proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			rec.mu.Lock()
			if rec.last != nil {
				rec.last.status, rec.last.respBody = http.StatusBadGateway, []byte("prism unreachable: "+err.Error())
				rec.last.unreachable = true
			}
			rec.mu.Unlock()
			w.WriteHeader(http.StatusBadGateway)
		}
	}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		rec.mu.Lock()
		rec.last = &exchange{method: r.Method, uri: r.URL.RequestURI(), contentType: r.Header.Get("Content-Type"), body: b}
		rec.mu.Unlock()
		if proxy == nil {
			rec.mu.Lock()
			rec.last.status = http.StatusOK
			rec.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{}")
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) take() *exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	e := rec.last
	rec.last = nil
	return e
}

// startSpecgate serves the spec through the binary over stdio, pointed at
// base, with a made-up credential for every security scheme.
func startSpecgate(t *testing.T, bin, name, path, base string, schemes map[string]spec.SecurityScheme) *client.Client {
	abs, _ := filepath.Abs(path)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "disable_ratelimiter: true\nmax_retries: 0\ncall_timeout: 60s\nspecs:\n  - name: %q\n    location: %q\n    base_url: %q\n",
		name, abs, base)
	names := make([]string, 0, len(schemes))
	for n := range schemes {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 0 {
		cfg.WriteString("    auth:\n")
	}
	for _, n := range names {
		sch := schemes[n]
		var cred string
		switch {
		case sch.Type == "apiKey":
			cred = `{value: "sweep-key"}`
		case sch.Type == "http" && strings.EqualFold(sch.Scheme, "basic"):
			cred = `{username: "sweep", password: "sweep-pass"}`
		default:
			cred = `{token: "sweep-token"}`
		}
		fmt.Fprintf(&cfg, "      %q: %s\n", n, cred)
	}
	file := filepath.Join(t.TempDir(), "sweep.yaml")
	if err := os.WriteFile(file, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := transport.NewStdio(bin, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "serve", "--config", file)
	if err := tr.Start(t.Context()); err != nil {
		t.Fatalf("specgate: %v", err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "sweep", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func callJSON(ctx context.Context, c *client.Client, name string, args map[string]any) (map[string]any, bool, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, false, err
	}
	var text string
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text = tc.Text
			break
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, res.IsError, fmt.Errorf("%s answered no JSON: %.200s", name, text)
	}
	return m, res.IsError, nil
}

// arguments are invoke's parameters and requestBody for a contract: every
// required parameter, every optional query parameter, and the body's
// required fields in its first content type.
func arguments(ct *spec.Contract) (map[string]any, any, string) {
	params := map[string]any{}
	for _, p := range ct.Parameters {
		if !p.Required && (p.In != "query" || p.Deprecated) {
			continue
		}
		g := gen{full: p.In == "query"}
		v := g.value(p.Schema, 0)
		if v == nil {
			v = "sweep"
		}
		params[p.Name] = v
	}
	var body any
	var ctype string
	if b := ct.RequestBody; b != nil && len(b.ContentTypes) > 0 {
		ctype = b.ContentTypes[0]
		body = gen{}.value(b.Schema, 0)
		if body == nil && b.Required {
			body = map[string]any{}
		}
		switch {
		case strings.HasPrefix(ctype, "text/"):
			if _, ok := body.(string); !ok {
				body = "sweep"
			}
		case ctype == "application/octet-stream" || strings.HasPrefix(ctype, "image/"):
			body = "c3dlZXA=" // invoke takes a binary body as base64
		}
	}
	return params, body, ctype
}

func callOne(ctx context.Context, t *testing.T, c *client.Client, rec *recorder, e *spec.Endpoint, check wireCheck) outcome {
	o := outcome{id: e.ID}
	res, isErr, err := callJSON(ctx, c, "inspect", map[string]any{"endpointId": e.ID})
	if err != nil || isErr {
		o.kind, o.code, o.why = "specgate", "inspect", fmt.Sprint(err, res)
		return o
	}
	raw, _ := json.Marshal(res)
	var ct spec.Contract
	if err := json.Unmarshal(raw, &ct); err != nil {
		o.kind, o.code, o.why = "specgate", "inspect", err.Error()
		return o
	}
	params, body, ctype := arguments(&ct)
	args := map[string]any{"endpointId": e.ID, "parameters": params}
	if body != nil {
		args["requestBody"] = body
		args["contentType"] = ctype
	}
	rec.take()
	res, isErr, err = callJSON(ctx, c, "invoke", args)
	x := rec.take()
	if err != nil {
		o.kind, o.code, o.why = "specgate", "protocol", err.Error()
		return o
	}
	if isErr {
		em, _ := res["error"].(map[string]any)
		code, _ := em["code"].(string)
		msg, _ := em["message"].(string)
		// An upstream refusal (http_error, upstream_rate_limit,
		// auth_error after a 401) is the mock's, told below.
		if x == nil || (x.status >= 200 && x.status <= 299) {
			o.kind, o.code, o.why = "specgate", code, oneLine(msg)
			return o
		}
	}
	if x == nil {
		o.kind, o.code, o.why = "specgate", "nothing sent", oneLine(fmt.Sprint(res))
		return o
	}
	if check != nil {
		if why := check(e, params, x); why != "" {
			o.kind, o.code, o.why = "wire", "", why
			return o
		}
	}
	if x.status < 200 || x.status > 299 {
		o.kind, o.code, o.why = "mock", strconv.Itoa(x.status), mockReason(x)
		if x.unreachable {
			o.why = string(x.respBody)
			return o
		}
		if x.status >= 500 && !requestViolated(x) {
			// Prism validated the request, then failed to make or check
			// its own answer (an example off its schema, a schema too
			// complex to generate from).
			o.kind = "response"
			return o
		}
		o.why += fmt.Sprintf(" [sent %s %s, %s, %d bytes]", x.method, x.uri, x.contentType, len(x.body))
		if x.violations == "" && (ct.Responses == nil || ct.Responses.Success == nil || !strings.HasPrefix(ct.Responses.Success.Status, "2")) {
			o.why = "the operation documents no 2xx answer; " + o.why
		}
		return o
	}
	o.kind = "ok"
	return o
}

// requestViolated reports whether Prism found the request itself invalid.
func requestViolated(x *exchange) bool {
	type violation struct {
		Location []string `json:"location"`
	}
	var vs []violation
	json.Unmarshal([]byte(x.violations), &vs)
	var problem struct {
		Validation []violation `json:"validation"`
	}
	json.Unmarshal(x.respBody, &problem)
	for _, v := range append(vs, problem.Validation...) {
		if len(v.Location) > 0 && v.Location[0] == "request" {
			return true
		}
	}
	return false
}

// mockReason is Prism's reason for refusing a request: its sl-violations
// header, else the detail of its problem body.
func mockReason(x *exchange) string {
	var vs []struct {
		Location []string `json:"location"`
		Message  string   `json:"message"`
	}
	if json.Unmarshal([]byte(x.violations), &vs) == nil && len(vs) > 0 {
		var parts []string
		for _, v := range vs {
			parts = append(parts, strings.Join(v.Location, ".")+": "+v.Message)
		}
		return oneLine(strings.Join(parts, "; "))
	}
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(x.respBody, &p) == nil && (p.Title != "" || p.Detail != "") {
		return oneLine(p.Title + ": " + p.Detail)
	}
	return oneLine(string(x.respBody))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// exception is one line of exceptions.tsv: a spec's endpoint, the kind of
// failure (specgate, mock or wire) and why it is the spec's fault.
type exception struct {
	line int
	id   string
	kind string
	why  string
}

func readExceptions(t *testing.T, file string) map[string]exception {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]exception{}
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || strings.TrimSpace(f[2]) == "" {
			t.Fatalf("%s:%d: want endpoint-id<TAB>kind<TAB>reason", file, i+1)
		}
		e := exception{line: i + 1, id: f[0], kind: f[1], why: f[2]}
		out[e.id+"\t"+e.kind] = e
	}
	return out
}

// listed finds the line of exceptions.tsv that covers o: its own, or a
// "spec.*" line for its kind (Prism's faulty answers of a whole spec).
func listed(exc map[string]exception, o outcome) (string, bool) {
	if _, ok := exc[o.key()]; ok {
		return o.key(), true
	}
	specName, _, _ := strings.Cut(o.id, ".")
	k := specName + ".*\t" + o.kind
	_, ok := exc[k]
	return k, ok
}

func checkExceptions(t *testing.T, reports []*report, exc map[string]exception) {
	seen := map[string]bool{}
	for _, r := range reports {
		for _, o := range r.outcomes {
			if o.kind == "ok" {
				continue
			}
			k, ok := listed(exc, o)
			seen[k] = true
			if !ok {
				t.Errorf("%s: refused by %s %s: %s", o.id, o.kind, o.code, o.why)
			}
		}
	}
	swept := map[string]bool{}
	for _, r := range reports {
		swept[r.spec] = true
	}
	for k, e := range exc {
		if seen[k] {
			continue
		}
		specName, _, _ := strings.Cut(e.id, ".")
		if swept[specName] {
			t.Errorf("exceptions.tsv:%d: %s %s no longer fails: remove the line", e.line, e.id, e.kind)
		}
	}
}

func reportTable(reports []*report, exc map[string]exception) string {
	var b strings.Builder
	b.WriteString("| spec | operations | sampled | succeeded | refused by specgate | refused by the mock | mock's answer failed | wire form wrong | listed exceptions | upstream |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var tot [8]int
	for _, r := range reports {
		nlisted := 0
		codes := map[string]int{}
		for _, o := range r.outcomes {
			if o.kind != "ok" {
				if _, ok := listed(exc, o); ok {
					nlisted++
				}
				if o.kind == "specgate" {
					codes[o.code]++
				}
			}
		}
		sg := strconv.Itoa(r.count("specgate"))
		if len(codes) > 0 {
			var cs []string
			for c, n := range codes {
				cs = append(cs, fmt.Sprintf("%s %d", c, n))
			}
			slices.Sort(cs)
			sg += " (" + strings.Join(cs, ", ") + ")"
		}
		row := [8]int{r.ops, len(r.outcomes), r.count("ok"), r.count("specgate"), r.count("mock"), r.count("response"), r.count("wire"), nlisted}
		for i := range tot {
			tot[i] += row[i]
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %d | %d | %d | %d | %s |\n", r.spec, row[0], row[1], row[2], sg, row[4], row[5], row[6], row[7], r.mode)
	}
	fmt.Fprintf(&b, "| **all** | %d | %d | %d | %d | %d | %d | %d | %d | |\n", tot[0], tot[1], tot[2], tot[3], tot[4], tot[5], tot[6], tot[7])
	for _, r := range reports {
		for _, o := range r.outcomes {
			if o.kind != "ok" {
				if _, ok := listed(exc, o); !ok {
					fmt.Fprintf(&b, "\nunlisted: %s\t%s\t%s %s", o.id, o.kind, o.code, o.why)
				}
			}
		}
	}
	return b.String()
}
