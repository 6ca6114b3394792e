// Package bench measures the targets in the README's benchmarks section
// against the real binary: time to tools/list and to the first search, peak
// and settled memory, and the context bytes a model reads. The figures are
// ratios against a bare openapi3 load of the same spec measured in the same
// run, so they compare across machines.
//
// The benchmarks need the large specs in ../../shared/specs and skip when
// they are absent. Run them with scripts/bench.sh (or `make bench`).
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

const (
	specsDir    = "../../shared/specs"
	githubSpec  = specsDir + "/github-full.json"
	petstore    = "../testdata/petstore-v3.yaml"
	typicalGoal = "list pull requests of a repository"

	// bareLoadEnv makes the test binary, re-executed as a child, do only the
	// bare load of the file it names and exit: its peak RSS is then the bare
	// load's own.
	bareLoadEnv = "SPECGATE_BENCH_BARE_LOAD"

	// binEnv names a specgate binary to measure instead of building this
	// tree's, so two commits compare in turn on the same machine.
	binEnv = "SPECGATE_BENCH_BIN"
)

// Targets: the README's (issue 2, "Benchmarks"), tightened for start-up
// and memory by issue 35.
const (
	targetFirstSearchCold = 0.25 // × bare load time
	targetFirstSearchWarm = 0.06 // × bare load time
	targetPeakWarmMB      = 80
	targetSettledMB       = 40
	targetListBytes       = 6 * 1024
	targetFindCallBytes   = 11 * 1024
)

func TestMain(m *testing.M) {
	if file := os.Getenv(bareLoadEnv); file != "" {
		os.Exit(bareLoad(file))
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// bareLoad is the child side of measureBare: it loads file with a plain
// openapi3 loader and prints the load time in nanoseconds.
func bareLoad(file string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	doc, err := openapi3.NewLoader().LoadFromData(data)
	took := time.Since(start)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	runtime.KeepAlive(doc)
	fmt.Println(took.Nanoseconds())
	return 0
}

// bareResult is one bare load in a child process.
type bareResult struct {
	load   time.Duration // LoadFromData alone
	cpu    time.Duration // the child's CPU time (user and system)
	peakMB float64       // the child's peak RSS
}

func measureBare(b *testing.B, file string) bareResult {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), bareLoadEnv+"="+file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("bare load of %s: %v: %s", file, err, stderr.String())
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatalf("bare load of %s printed %q", file, out)
	}
	return bareResult{load: time.Duration(ns), cpu: cpuTime(cmd.ProcessState), peakMB: maxRSSMB(cmd.ProcessState)}
}

func maxRSSMB(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // KB on Linux
}

// cpuTime is the CPU time a finished process used. On a shared machine it
// is the steadier figure: wall time also counts waiting for a core.
func cpuTime(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// binDir holds the specgate binary built once for all benchmarks.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// needSpecs skips the benchmark when the shared specs are absent and
// otherwise returns the built binary.
func needSpecs(b *testing.B) string {
	b.Helper()
	if _, err := os.Stat(githubSpec); err != nil {
		b.Skipf("%s not found: the startup benchmarks need the shared specs", githubSpec)
	}
	buildOnce.Do(func() {
		if bin := os.Getenv(binEnv); bin != "" {
			// a binary built elsewhere: an earlier commit's, to compare
			binPath = bin
			return
		}
		binDir, buildErr = os.MkdirTemp("", "specgate-bench")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "specgate")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/specgate").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return binPath
}

// lockedBuffer collects the server's stderr, written by the transport's
// drain goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// server is one specgate process driven over stdio.
type server struct {
	b      *testing.B
	c      *client.Client
	cmd    *exec.Cmd
	start  time.Time
	stderr *lockedBuffer
	closed bool
}

// startServer spawns specgate serve with specs and XDG_CACHE_HOME=cacheHome
// and initializes the session. The clock starts just before the process.
func startServer(b *testing.B, bin, cacheHome string, specs ...string) (*server, *mcp.InitializeResult) {
	b.Helper()
	args := []string{"serve", "--log-level", "info"}
	for _, s := range specs {
		args = append(args, "--spec", s)
	}
	s := &server{b: b, stderr: &lockedBuffer{}}
	cmdFunc := func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, command, args...)
		cmd.Env = append(os.Environ(), env...)
		s.cmd = cmd
		return cmd, nil
	}
	tr := transport.NewStdioWithOptions(bin, []string{"XDG_CACHE_HOME=" + cacheHome}, args,
		transport.WithCommandFunc(cmdFunc), transport.WithCommandStderrWriter(s.stderr))
	s.c = client.NewClient(tr)
	s.start = time.Now()
	if err := s.c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "specgate-bench", Version: "1"}
	ir, err := s.c.Initialize(context.Background(), init)
	if err != nil {
		s.close()
		b.Fatal(err)
	}
	return s, ir
}

func (s *server) listTools() *mcp.ListToolsResult {
	s.b.Helper()
	res, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		s.b.Fatal(err)
	}
	return res
}

// call calls a tool and returns its text content.
func (s *server) call(name string, args map[string]any) string {
	s.b.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		s.b.Fatalf("%s: %v\nserver log:\n%s", name, err, s.stderr.String())
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		s.b.Fatalf("%s returned an error: %s\nserver log:\n%s", name, text.String(), s.stderr.String())
	}
	return text.String()
}

// close ends the session (closing stdin ends the server) and returns the
// process's peak RSS in MB.
func (s *server) close() float64 {
	if !s.closed {
		s.closed = true
		s.c.Close()
	}
	if s.cmd == nil {
		return 0
	}
	return maxRSSMB(s.cmd.ProcessState)
}

// cpu is the CPU time the server used over its life; valid after close.
func (s *server) cpu() time.Duration {
	if s.cmd == nil {
		return 0
	}
	return cpuTime(s.cmd.ProcessState)
}

// vmRSSMB reads the server's current resident memory.
func (s *server) vmRSSMB() float64 {
	s.b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		s.b.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				s.b.Fatal(err)
			}
			return kb / 1024
		}
	}
	s.b.Fatal("no VmRSS in /proc status")
	return 0
}

// settledRSSMB polls VmRSS every 500 ms until two reads differ by less than
// 2 MB (at most 40 polls), and returns the last read.
func (s *server) settledRSSMB() float64 {
	prev := s.vmRSSMB()
	for range 40 {
		time.Sleep(500 * time.Millisecond)
		cur := s.vmRSSMB()
		if d := cur - prev; d < 2 && d > -2 {
			return cur
		}
		prev = cur
	}
	s.b.Logf("VmRSS still moving after 20 s; reporting the last read")
	return prev
}

// timeline sums up the server's log in one line: when the last spec was
// loaded, the slowest specs and when the catalog was ready, in time since
// the process started. It shows which phase takes the time. The "ready" line
// can be missing: it is logged as the server may already be exiting.
func (s *server) timeline() string {
	type loadedSpec struct {
		name string
		took time.Duration
	}
	var specs []loadedSpec
	var lastLoaded, ready time.Duration
	failed := 0
	for l := range strings.Lines(s.stderr.String()) {
		f := logFields(l)
		t, err := time.Parse(time.RFC3339Nano, f["time"])
		if err != nil {
			continue
		}
		at := t.Sub(s.start)
		switch f["msg"] {
		case "spec loaded":
			took, _ := time.ParseDuration(f["took"])
			specs = append(specs, loadedSpec{f["spec"], took})
			lastLoaded = max(lastLoaded, at)
		case "spec not loaded":
			failed++
		case "ready":
			ready = at
		}
	}
	slices.SortFunc(specs, func(a, b loadedSpec) int { return int(b.took - a.took) })
	var slow []string
	for _, sp := range specs[:min(3, len(specs))] {
		slow = append(slow, fmt.Sprintf("%s %.0f ms", sp.name, ms(sp.took)))
	}
	readyText := "not logged"
	if ready > 0 {
		readyText = fmt.Sprintf("+%.0f ms (index built, endpoints registered)", ms(ready))
	}
	return fmt.Sprintf("%d specs loaded by +%.0f ms (%d failed; slowest: %s); ready %s",
		len(specs), ms(lastLoaded), failed, strings.Join(slow, ", "), readyText)
}

// logFields parses one slog text line into its keys and values.
func logFields(line string) map[string]string {
	f := map[string]string{}
	rest := strings.TrimSpace(line)
	for rest != "" {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		if strings.HasPrefix(v, `"`) {
			if u, err := strconv.QuotedPrefix(v); err == nil {
				f[k], _ = strconv.Unquote(u)
				rest = strings.TrimSpace(v[len(u):])
				continue
			}
		}
		v, rest, _ = strings.Cut(v, " ")
		f[k] = v
	}
	return f
}

// firstSearch is one start of the server up to its first search answer.
type firstSearch struct {
	took      time.Duration // process start to first search answered
	cpu       time.Duration // the server's CPU time over its life
	timeline  string        // see server.timeline
	peakMB    float64
	settledMB float64 // 0 unless asked for
	answer    string
}

// runFirstSearch starts specgate on specs, lists the tools and searches once,
// as a client would. With settle it then waits for VmRSS to settle.
func runFirstSearch(b *testing.B, bin, cacheHome string, settle bool, specs ...string) firstSearch {
	b.Helper()
	s, _ := startServer(b, bin, cacheHome, specs...)
	s.listTools()
	answer := s.call("search", map[string]any{"query": typicalGoal, "limit": 5})
	r := firstSearch{took: time.Since(s.start), answer: answer}
	if settle {
		r.settledMB = s.settledRSSMB()
	}
	r.peakMB = s.close()
	r.cpu = s.cpu()
	r.timeline = fmt.Sprintf("first search +%.0f ms; %s", ms(r.took), s.timeline())
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// BenchmarkToolsList measures process start to tools/list answered, on
// github-full (1,223 operations) against the tiny petstore: loading runs in
// the background, so the two should match.
func BenchmarkToolsList(b *testing.B) {
	bin := needSpecs(b)
	var big, small time.Duration
	for b.Loop() {
		for _, tc := range []struct {
			spec string
			sum  *time.Duration
		}{{githubSpec, &big}, {petstore, &small}} {
			s, _ := startServer(b, bin, b.TempDir(), tc.spec)
			s.listTools()
			*tc.sum += time.Since(s.start)
			s.close()
		}
	}
	n := float64(b.N)
	bigMS, smallMS := ms(big)/n, ms(small)/n
	b.ReportMetric(bigMS, "ms/tools-list-github")
	b.ReportMetric(smallMS, "ms/tools-list-petstore")
	b.ReportMetric(bigMS/smallMS, "x-petstore")
	b.Logf("tools/list: github-full %.1f ms, petstore %.1f ms (%.2fx)", bigMS, smallMS, bigMS/smallMS)
}

// BenchmarkFirstSearch measures process start to the first search answered
// on github-full, cold (empty cache) and warm (the cache the cold start
// wrote), against a bare openapi3 load of the same bytes.
func BenchmarkFirstSearch(b *testing.B) {
	bin := needSpecs(b)
	var bare, cold, warm, bareCPU, coldCPU, warmCPU time.Duration
	var c, w firstSearch
	for b.Loop() {
		br := measureBare(b, githubSpec)
		cache := b.TempDir()
		c = runFirstSearch(b, bin, cache, false, githubSpec)
		w = runFirstSearch(b, bin, cache, false, githubSpec)
		bare, cold, warm = bare+br.load, cold+c.took, warm+w.took
		bareCPU, coldCPU, warmCPU = bareCPU+br.cpu, coldCPU+c.cpu, warmCPU+w.cpu
	}
	n := float64(b.N)
	bareMS, coldMS, warmMS := ms(bare)/n, ms(cold)/n, ms(warm)/n
	b.ReportMetric(bareMS, "ms/bare-load")
	b.ReportMetric(coldMS, "ms/first-search-cold")
	b.ReportMetric(warmMS, "ms/first-search-warm")
	b.ReportMetric(coldMS/bareMS, "x-bare-cold")
	b.ReportMetric(warmMS/bareMS, "x-bare-warm")
	// CPU time of the whole process (both sides), for a loaded machine.
	b.ReportMetric(ms(bareCPU)/n, "cpu-ms/bare")
	b.ReportMetric(ms(coldCPU)/n, "cpu-ms/cold")
	b.ReportMetric(ms(warmCPU)/n, "cpu-ms/warm")
	b.ReportMetric(float64(coldCPU)/float64(bareCPU), "x-bare-cpu-cold")
	b.ReportMetric(float64(warmCPU)/float64(bareCPU), "x-bare-cpu-warm")
	b.Logf("first search: bare load %.0f ms; cold %.0f ms = %.2fx (target <= %.2fx, %s); warm %.0f ms = %.2fx (target <= %.2fx, %s); CPU ratios cold %.2fx warm %.2fx",
		bareMS, coldMS, coldMS/bareMS, targetFirstSearchCold, verdict(coldMS/bareMS <= targetFirstSearchCold),
		warmMS, warmMS/bareMS, targetFirstSearchWarm, verdict(warmMS/bareMS <= targetFirstSearchWarm),
		float64(coldCPU)/float64(bareCPU), float64(warmCPU)/float64(bareCPU))
	b.Logf("cold: %s", c.timeline)
	b.Logf("warm: %s", w.timeline)
}

// BenchmarkPeakRSS measures the specgate process's peak RSS over a start up
// to the first search, cold and warm, against the bare load's own peak.
func BenchmarkPeakRSS(b *testing.B) {
	bin := needSpecs(b)
	var bare, cold, warm float64
	for b.Loop() {
		bare += measureBare(b, githubSpec).peakMB
		cache := b.TempDir()
		cold += runFirstSearch(b, bin, cache, false, githubSpec).peakMB
		warm += runFirstSearch(b, bin, cache, false, githubSpec).peakMB
	}
	n := float64(b.N)
	bare, cold, warm = bare/n, cold/n, warm/n
	b.ReportMetric(bare, "MB-peak-bare")
	b.ReportMetric(cold, "MB-peak-cold")
	b.ReportMetric(warm, "MB-peak-warm")
	b.ReportMetric(cold/bare, "x-bare-peak-cold")
	b.Logf("peak RSS: bare load %.0f MB; cold %.0f MB = %.2fx (target <= 1x, %s); warm %.0f MB (target <= %d MB, %s)",
		bare, cold, cold/bare, verdict(cold <= bare), warm, targetPeakWarmMB, verdict(warm <= targetPeakWarmMB))
}

// BenchmarkSettledRSS measures resident memory once loading has settled
// after the first search, cold and warm.
func BenchmarkSettledRSS(b *testing.B) {
	bin := needSpecs(b)
	var cold, warm float64
	for b.Loop() {
		cache := b.TempDir()
		cold += runFirstSearch(b, bin, cache, true, githubSpec).settledMB
		warm += runFirstSearch(b, bin, cache, true, githubSpec).settledMB
	}
	n := float64(b.N)
	cold, warm = cold/n, warm/n
	b.ReportMetric(cold, "MB-rss-cold")
	b.ReportMetric(warm, "MB-rss-warm")
	b.Logf("settled RSS: cold %.0f MB (%s), warm %.0f MB (%s); target <= %d MB",
		cold, verdict(cold <= targetSettledMB), warm, verdict(warm <= targetSettledMB), targetSettledMB)
}

// BenchmarkContextBytes counts what a model reads on github-full: the
// tools/list result and the instructions, then one search of 5 hits and one
// inspect of the top hit for a typical intent.
func BenchmarkContextBytes(b *testing.B) {
	bin := needSpecs(b)
	var list, instr, search, inspect, modelList int
	var top string
	for b.Loop() {
		s, ir := startServer(b, bin, b.TempDir(), githubSpec)
		tools := s.listTools()
		// The server marshals the same mcp types, so this is its answer.
		raw, err := json.Marshal(tools)
		if err != nil {
			b.Fatal(err)
		}
		list, instr = len(raw), len(ir.Instructions)
		// What model APIs are given of a tool: its name, description and
		// input schema (the output schema and annotations stay with the
		// client, which validates and routes with them).
		type modelTool struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		var mt []modelTool
		for _, t := range tools.Tools {
			in := t.RawInputSchema
			if in == nil {
				in, _ = json.Marshal(t.InputSchema)
			}
			mt = append(mt, modelTool{t.Name, t.Description, in})
		}
		mraw, _ := json.Marshal(mt)
		modelList = len(mraw)
		hits := s.call("search", map[string]any{"query": typicalGoal, "limit": 5})
		var sr struct {
			Endpoints []struct {
				ID string `json:"id"`
			} `json:"endpoints"`
		}
		if err := json.Unmarshal([]byte(hits), &sr); err != nil || len(sr.Endpoints) == 0 {
			b.Fatalf("search answer %q: %v", hits, err)
		}
		top = sr.Endpoints[0].ID
		search = len(hits)
		inspect = len(s.call("inspect", map[string]any{"endpointId": top}))
		s.close()
	}
	base := list + instr
	total := base + search + inspect
	b.ReportMetric(float64(list), "bytes-tools-list")
	b.ReportMetric(float64(instr), "bytes-instructions")
	b.ReportMetric(float64(base), "bytes-list+instructions")
	b.ReportMetric(float64(modelList+instr), "bytes-model-tools+instructions")
	b.ReportMetric(float64(modelList+instr+search+inspect), "bytes-model-find-and-call")
	b.ReportMetric(float64(search), "bytes-search5")
	b.ReportMetric(float64(inspect), "bytes-inspect")
	b.ReportMetric(float64(total), "bytes-find-and-call")
	// The targets apply to what a model is given; the whole tools/list
	// answer (output schemas and annotations included) is reported beside.
	model := modelList + instr
	b.Logf("context a model is given: tools %d + instructions %d = %d B (target <= %d, %s); + search(5) %d + inspect(%s) %d = %d B (target <= %d, %s)",
		modelList, instr, model, targetListBytes, verdict(model <= targetListBytes),
		search, top, inspect, model+search+inspect, targetFindCallBytes, verdict(model+search+inspect <= targetFindCallBytes))
	b.Logf("the whole tools/list answer, output schemas and annotations included: %d B; + instructions, search and inspect %d B", list, total)
}

// BenchmarkAllSpecs loads every spec in the shared folder together (the
// known-bad ones are reported by the server and skipped), cold and warm.
func BenchmarkAllSpecs(b *testing.B) {
	bin := needSpecs(b)
	entries, err := os.ReadDir(specsDir)
	if err != nil {
		b.Fatal(err)
	}
	var specs []string
	for _, e := range entries {
		if e.IsDir() || e.Name() == "PROVENANCE.md" {
			continue
		}
		specs = append(specs, filepath.Join(specsDir, e.Name()))
	}
	slices.Sort(specs)
	var cold, warm, c, w firstSearch
	var failed []string
	for b.Loop() {
		cache := b.TempDir()
		c = runFirstSearch(b, bin, cache, true, specs...)
		w = runFirstSearch(b, bin, cache, true, specs...)
		cold.took += c.took
		cold.peakMB += c.peakMB
		cold.settledMB += c.settledMB
		warm.took += w.took
		warm.peakMB += w.peakMB
		warm.settledMB += w.settledMB
		var sr struct {
			Failed []string `json:"failedSpecs"`
		}
		if err := json.Unmarshal([]byte(c.answer), &sr); err != nil {
			b.Fatal(err)
		}
		failed = sr.Failed
	}
	n := float64(b.N)
	b.ReportMetric(float64(len(specs)), "specs")
	b.ReportMetric(float64(len(failed)), "specs-failed")
	b.ReportMetric(ms(cold.took)/n, "ms/first-search-cold")
	b.ReportMetric(ms(warm.took)/n, "ms/first-search-warm")
	b.ReportMetric(cold.peakMB/n, "MB-peak-cold")
	b.ReportMetric(warm.peakMB/n, "MB-peak-warm")
	b.ReportMetric(cold.settledMB/n, "MB-rss-cold")
	b.ReportMetric(warm.settledMB/n, "MB-rss-warm")
	b.Logf("all %d specs (%d failed: %s): first search cold %.0f ms / warm %.0f ms; peak cold %.0f MB / warm %.0f MB; settled cold %.0f MB / warm %.0f MB",
		len(specs), len(failed), strings.Join(failed, ", "), ms(cold.took)/n, ms(warm.took)/n,
		cold.peakMB/n, warm.peakMB/n, cold.settledMB/n, warm.settledMB/n)
	b.Logf("cold: %s", c.timeline)
	b.Logf("warm: %s", w.timeline)
}
