// Package script runs run_script programs: the body of an async
// JavaScript function, on goja, with an api object whose every call is
// handed to a Caller (which governs it as a direct invoke) and nothing else:
// no modules, files, network, timers, environment or process.
//
// A run is bounded by a deadline (the VM is interrupted), a call count, a
// number of calls in flight, a call-stack depth, the log size, and a memory
// bound: string and array builders that could allocate past it at once
// refuse to, and a sampler interrupts the run when its live heap grows past
// the bound. The memory bound is sampled in-process: a run can overshoot it by
// what it allocates between two samples, and the heap it reads is shared
// with every other run and caller of the process.
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/specgate/specgate/pkg/codes"
)

// Defaults of Options' zero fields.
const (
	DefaultTimeout       = 60 * time.Second
	DefaultMaxCalls      = 200
	DefaultMaxConcurrent = 4
	DefaultMaxMemory     = 64 << 20
	DefaultMaxLogBytes   = 4 << 10
	// MaxCodeBytes bounds the code of one run.
	MaxCodeBytes = 1 << 20
	// maxStackDepth bounds the JavaScript call stack.
	maxStackDepth = 2000
)

// Caller makes the calls a script asks for. Every call it makes must be
// governed as a direct invoke is; it must be safe for concurrent use.
type Caller interface {
	// Invoke calls an endpoint. A failure of the closed set of codes is a
	// *CallError; any other error is thrown as an internal failure.
	Invoke(ctx context.Context, endpointID string, args Args) (*Response, error)
	// Search answers what the search tool would, as JSON values.
	Search(ctx context.Context, query string, limit int) (any, error)
}

// Args are the arguments of one api.invoke.
type Args struct {
	Parameters  map[string]any    `json:"parameters,omitempty"`
	RequestBody any               `json:"requestBody,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	ContentType string            `json:"contentType,omitempty"`
	Pages       int               `json:"pages,omitempty"`
	// raw is the JSON text the arguments were read from, when they were:
	// a worker sends it to its parent as it is.
	raw json.RawMessage
}

// Response is what api.invoke resolves to.
type Response struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers,omitempty"`
	// Body is the whole decoded body: JSON as values, text as a string,
	// binary as {contentType, bytes}. A json.RawMessage is JSON text (it
	// must be valid), handed to the script as values: a caller holding the
	// body's bytes passes them on, and the script's side decodes them once.
	Body     any            `json:"body,omitempty"`
	NextPage map[string]any `json:"nextPage,omitempty"`
	// QueueWait is how long the call waited for the rate limit.
	QueueWait time.Duration `json:"-"`
}

// CallError is a failed call, thrown into the script as an Error carrying
// code, message, retryAfterSeconds, status and scope.
type CallError struct {
	// Code is one of package codes'.
	Code              string
	Message           string
	RetryAfterSeconds float64
	Status            int
	Scope             string
}

func (e *CallError) Error() string { return e.Code + ": " + e.Message }

// Options bound a run. The zero value of each field is its default.
type Options struct {
	// Timeout bounds the whole run, waits for the rate limit included. If
	// zero, DefaultTimeout.
	Timeout time.Duration
	// MaxCalls bounds api.invoke and api.search calls. If zero, DefaultMaxCalls.
	MaxCalls int
	// MaxConcurrent bounds calls in flight. If zero, DefaultMaxConcurrent.
	MaxConcurrent int
	// MaxMemory bounds what the run may allocate. If zero, DefaultMaxMemory.
	MaxMemory int64
	// MaxLogBytes bounds console.log output kept. If zero, DefaultMaxLogBytes.
	MaxLogBytes int
	// Progress, if set, hears where the run stands after each call and
	// each api.progress. It is called from more than one goroutine, never
	// at once.
	Progress func(Progress)
	// onMark, if set, hears each api.progress (a worker streams them to
	// its parent).
	onMark func(Mark)
	// onLog, if set, hears each line kept, as it is kept (a worker streams
	// its logs to the parent, so a killed run still returns them).
	onLog func(line string, cut bool)
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = DefaultMaxMemory
	}
	if o.MaxLogBytes <= 0 {
		o.MaxLogBytes = DefaultMaxLogBytes
	}
}

// Mark is a script's own account of its progress: its last
// api.progress(done, total, note).
type Mark struct {
	Done int `json:"done"`
	// Total is 0 when the script gave none.
	Total int    `json:"total,omitempty"`
	Note  string `json:"note,omitempty"`
}

// MaxNoteBytes bounds the note of api.progress.
const MaxNoteBytes = 200

// Progress is where a run stands.
type Progress struct {
	// Calls are the calls finished so far.
	Calls Calls
	// QueueWait sums their waits for the rate limit.
	QueueWait time.Duration
	Mark
}

func (c Calls) clone() Calls {
	out := Calls{Total: c.Total}
	if c.ByStatus != nil {
		out.ByStatus = make(map[string]int, len(c.ByStatus))
		for k, v := range c.ByStatus {
			out.ByStatus[k] = v
		}
	}
	return out
}

// Calls counts a run's calls.
type Calls struct {
	Total    int            `json:"total"`
	ByStatus map[string]int `json:"byStatus,omitempty"`
}

// Result is a finished run.
type Result struct {
	// Value is the return value as JSON text; "null" for undefined.
	Value     json.RawMessage
	Calls     Calls
	QueueWait time.Duration
	Logs      []string
	// LogsCut is true when console.log output passed MaxLogBytes.
	LogsCut bool
	// PeakRSS is the worker process's peak resident memory in bytes, when
	// the run had a worker that reported it (Linux); 0 otherwise.
	PeakRSS int64
}

// Error is a run that did not finish; Result holds the calls and logs so far.
type Error struct {
	// Code is codes.ScriptError, codes.Timeout or codes.Cancelled.
	Code    string
	Message string
	// Line is the script's line the failure points at; 0 when unknown.
	Line   int
	Result *Result
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

var (
	errTimeout = errors.New("timeout")
	errMemory  = errors.New("memory")
)

// run is one script's state; the VM and everything but the channels is
// touched only by Run's goroutine.
type run struct {
	ctx    context.Context
	vm     *goja.Runtime
	caller Caller
	opts   Options
	res    *Result
	logLen int

	// stringify and parse are JSON's own, kept before the script runs: what
	// crosses into a call or the answer does not go through a replacement
	// the script made.
	stringify, parse goja.Callable

	calls    int
	inflight int
	sem      chan struct{}
	jobs     chan func() error
	done     chan struct{}

	mu sync.Mutex // guards waited
	// waited sums the queue waits of finished calls.
	waited time.Duration
	// mark is the script's last api.progress.
	mark Mark
}

// Run runs code, the body of an async function, and returns its return
// value, or an *Error.
func Run(ctx context.Context, code string, c Caller, opts Options) (*Result, error) {
	opts.defaults()
	res := &Result{Value: json.RawMessage("null")}
	if len(code) > MaxCodeBytes {
		return nil, &Error{Code: codes.ScriptError, Message: fmt.Sprintf("the code is %d bytes, over the %d-byte bound", len(code), MaxCodeBytes), Result: res}
	}
	prog, err := goja.Compile("script.js", "(async function(){\n"+code+"\n})()", true)
	if err != nil {
		return nil, &Error{Code: codes.ScriptError, Message: "syntax error: " + clip(syntaxMessage(err), 300), Line: lineOf(syntaxLineRE, err.Error()), Result: res}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	r := &run{ctx: ctx, vm: goja.New(), caller: c, opts: opts, res: res,
		sem: make(chan struct{}, opts.MaxConcurrent), jobs: make(chan func() error, 16), done: make(chan struct{})}
	defer close(r.done)
	r.vm.SetMaxCallStackSize(maxStackDepth)
	if err := r.install(); err != nil {
		return nil, &Error{Code: codes.ScriptError, Message: "the sandbox could not be set up", Result: res}
	}
	stop := r.watch(ctx)
	defer stop()

	v, err := r.vm.RunProgram(prog)
	if err != nil {
		return nil, r.failure(err)
	}
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		return nil, &Error{Code: codes.ScriptError, Message: "the script did not run as an async function", Result: res}
	}
	for p.State() == goja.PromiseStatePending {
		if r.inflight == 0 && len(r.jobs) == 0 {
			return nil, &Error{Code: codes.ScriptError, Message: "the script awaits a promise that never settles (only api calls settle promises here)", Result: r.finish()}
		}
		select {
		case job := <-r.jobs:
			if err := job(); err != nil {
				return nil, r.failure(err)
			}
		case <-ctx.Done():
			return nil, r.failure(r.ctxErr())
		}
	}
	if p.State() == goja.PromiseStateRejected {
		if r.ctx.Err() != nil {
			// The calls failed because the run was ended: its cancellation
			// or deadline is the answer, not the error a call threw for it.
			return nil, r.failure(r.ctxErr())
		}
		return nil, r.thrown(p.Result())
	}
	out, err := r.serialise(p.Result())
	if err != nil {
		return nil, r.failure(err)
	}
	r.finish()
	res.Value = out
	return res, nil
}

func (r *run) ctxErr() error {
	if errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		return errTimeout
	}
	return context.Canceled
}

// finish records the queue wait of the calls made so far.
func (r *run) finish() *Result {
	r.mu.Lock()
	r.res.QueueWait = r.waited
	r.mu.Unlock()
	return r.res
}

// The three ends of a run that the script did not choose, worded once for
// both engines.
func timeoutError(o Options, res *Result) *Error {
	return &Error{Code: codes.Timeout, Message: fmt.Sprintf("the script ran past its %s deadline and was stopped", o.Timeout), Result: res}
}

func memoryError(o Options, res *Result) *Error {
	return &Error{Code: codes.ScriptError, Message: fmt.Sprintf("the script's memory (its live heap) passed its %d MiB bound and it was stopped", o.MaxMemory>>20), Result: res}
}

func cancelledError(res *Result) *Error {
	return &Error{Code: codes.Cancelled, Message: "the client cancelled the script", Result: res}
}

// failure turns an error out of the VM into an *Error.
func (r *run) failure(err error) error {
	res := r.finish()
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if why, ok := ie.Value().(error); ok {
			err = why // what watch interrupted the VM with
		}
	}
	switch {
	case errors.Is(err, errTimeout):
		return timeoutError(r.opts, res)
	case errors.Is(err, errMemory):
		return memoryError(r.opts, res)
	case errors.Is(err, context.Canceled):
		return cancelledError(res)
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return &Error{Code: codes.ScriptError, Message: fmt.Sprintf("the call stack passed %d frames (endless recursion?)", maxStackDepth), Result: res}
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return r.thrown(ex.Value())
	}
	return &Error{Code: codes.ScriptError, Message: clip(err.Error(), 300), Line: lineOf(lineRE, err.Error()), Result: res}
}

// thrown describes an uncaught throw: its message and the script's line.
func (r *run) thrown(v goja.Value) error {
	res := r.finish()
	msg, line := "", 0
	if o, ok := v.(*goja.Object); ok && o != nil {
		if m := o.Get("message"); m != nil && !goja.IsUndefined(m) {
			msg = m.String()
		}
		if c := o.Get("code"); c != nil && !goja.IsUndefined(c) && c.String() != "" {
			msg = c.String() + ": " + msg
		}
		if st := o.Get("stack"); st != nil && !goja.IsUndefined(st) {
			line = lineOf(lineRE, st.String())
		}
		if msg == "" {
			msg = safeString(v)
		}
	} else {
		msg = "a non-Error value was thrown: " + safeString(v)
	}
	return &Error{Code: codes.ScriptError, Message: "uncaught: " + clip(msg, 300), Line: line, Result: res}
}

// safeString renders a thrown value without running its code twice.
func safeString(v goja.Value) (s string) {
	defer func() {
		if recover() != nil {
			s = "(a value that cannot be shown)"
		}
	}()
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	return clip(v.String(), 300)
}

// serialise renders the return value as JSON text, bounded by the memory
// bound; undefined is null.
func (r *run) serialise(v goja.Value) (json.RawMessage, error) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return json.RawMessage("null"), nil
	}
	out, err := r.stringify(goja.Undefined(), v)
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			return nil, &Error{Code: codes.ScriptError, Message: "the return value cannot be serialised as JSON: " + clip(safeString(ex.Value()), 200), Result: r.res}
		}
		return nil, err
	}
	if goja.IsUndefined(out) {
		// JSON has no function or symbol: say so rather than answer null,
		// which the model would read as the task's result.
		kind := "symbol"
		if _, isFunc := goja.AssertFunction(v); isFunc {
			kind = "function"
		}
		return nil, &Error{Code: codes.ScriptError, Message: "the return value cannot be serialised as JSON: it is a " + kind + "; return data (an object, array, string, number or boolean)", Result: r.res}
	}
	text := json.RawMessage(out.String())
	if !json.Valid(text) {
		return nil, &Error{Code: codes.ScriptError, Message: "the return value cannot be serialised as JSON", Result: r.res}
	}
	return text, nil
}

// Where goja names a place in the script: "script.js:3:5" in messages and
// stacks, "Line 3:5" in syntax errors.
var (
	lineRE       = regexp.MustCompile(`script\.js:(\d+)`)
	syntaxLineRE = regexp.MustCompile(`Line (\d+):(\d+)`)
)

// lineOf finds the script's line in s with re; the wrapper adds one line
// before the code, so its own line is 0 (unknown).
func lineOf(re *regexp.Regexp, s string) int {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	if n <= 1 {
		return 0
	}
	return n - 1
}

// syntaxMessage is a syntax error's message with the script's own line
// numbers: goja says "SyntaxError: script.js: Line 3:5 Unexpected token".
func syntaxMessage(err error) string {
	msg := err.Error()
	loc := syntaxLineRE.FindStringSubmatchIndex(msg)
	if loc == nil {
		return msg
	}
	line := lineOf(syntaxLineRE, msg)
	if line == 0 {
		return msg
	}
	return fmt.Sprintf("line %d:%s %s", line, msg[loc[4]:loc[5]], strings.TrimSpace(msg[loc[1]:]))
}

// watch interrupts the VM at the deadline, on cancellation, and when the
// script's live heap passes the memory bound; the returned func stops it.
//
// What counts is what the last collection found live, not the heap's
// objects between two collections: garbage a script churns through (a page
// decoded, a string built) is not memory it holds, and counting it stopped
// runs holding a fraction of the bound. A heap of objects past the bound is
// collected (at most every 100ms, unless past twice the bound) to learn
// what of it is live.
func (r *run) watch(ctx context.Context) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The base is read after a collection, so garbage left by what ran
		// before is not taken for room (in the worker the heap is small and
		// this is cheap).
		runtime.GC()
		base := heapBytes().objects
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		lastGC := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				r.vm.Interrupt(r.ctxErr())
				return
			case <-tick.C:
				h := heapBytes()
				if h.objects-base <= r.opts.MaxMemory {
					continue
				}
				if h.live-base <= r.opts.MaxMemory {
					// Past twice the bound, the heap is not left to the
					// runtime's next collection: a bomb grows fast.
					if time.Since(lastGC) < 100*time.Millisecond && h.objects-base <= 2*r.opts.MaxMemory {
						continue // garbage, as far as is known: the runtime collects it
					}
					runtime.GC()
					lastGC = time.Now()
					if heapBytes().objects-base <= r.opts.MaxMemory {
						continue
					}
				}
				r.vm.Interrupt(errMemory)
				return
			}
		}
	}()
	return func() {
		close(stop)
		wg.Wait()
	}
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
var heapMu sync.Mutex

// heap is the Go heap: its objects, live or not yet collected, and what
// the last collection found live.
type heap struct{ objects, live int64 }

func heapBytes() heap {
	heapMu.Lock()
	defer heapMu.Unlock()
	metrics.Read(heapSample)
	return heap{int64(heapSample[0].Value.Uint64()), int64(heapSample[1].Value.Uint64())}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
