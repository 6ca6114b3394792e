package script

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/specgate/specgate/pkg/codes"
)

// Runner runs scripts. InProcess and Worker are the two; a Runner is safe
// for concurrent use.
type Runner interface {
	Run(ctx context.Context, code string, c Caller, opts Options) (*Result, error)
}

// InProcess runs scripts on goja inside this process: the memory bound is
// sampled from a heap that every other caller shares, so a bomb can
// overshoot it between two samples. Use it where a worker process cannot
// be started (tests, platforms without rlimits).
type InProcess struct{}

// Run runs the script with Run.
func (InProcess) Run(ctx context.Context, code string, c Caller, opts Options) (*Result, error) {
	return Run(ctx, code, c, opts)
}

var _ Runner = InProcess{}
var _ Runner = (*Worker)(nil)

// Worker runs each script in a child process (the specgate binary itself,
// `specgate script-worker`) that sets OS limits on its own memory and CPU
// before it reads any code, and asks this process, over its stdin and
// stdout (JSON lines; a JSON body follows its reply's line as raw bytes),
// to make each api call. This process keeps every
// credential and every limiter: the child holds nothing but the code and
// the answers it was given. A run past its deadline, a crash or a limit hit
// kills the child, never this process.
type Worker struct {
	// Path is the executable to start. Required.
	Path string
	// Args come before the limits the worker is given (for specgate:
	// "script-worker").
	Args []string
	// Env is the child's environment. If nil, an empty one: the child
	// needs none, and the parent's may hold secrets.
	Env []string
}

// Grace is how long past its deadline a worker has to report before it is
// killed.
const workerGrace = 2 * time.Second

// message is one line of the worker protocol, either way.
type message struct {
	// Op: "run" (parent: the code and options), "invoke", "search", "log",
	// "progress", "done" (worker); "reply" (parent: a call's answer).
	Op   string `json:"op"`
	ID   int    `json:"id,omitempty"`
	Code string `json:"code,omitempty"`
	// Options of the run (Progress is not sent).
	Options *wireOptions `json:"options,omitempty"`

	EndpointID string `json:"endpointId,omitempty"`
	// Args is an invoke's arguments as the script's JSON text, read once
	// by the parent (decodeArgsJSON).
	Args     json.RawMessage `json:"args,omitempty"`
	Query    string          `json:"query,omitempty"`
	Limit    int             `json:"limit,omitempty"`
	Line     string          `json:"line,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	// BodyBytes is the length of a reply's body of JSON text, sent raw
	// after the reply's line (and a newline): the worker hands it to the
	// script's JSON.parse as it came, so it is decoded once on each side.
	BodyBytes int `json:"bodyBytes,omitempty"`
	// body is the raw body read after the line.
	body      []byte
	Error     *CallError    `json:"error,omitempty"`
	QueueWait time.Duration `json:"queueWait,omitempty"`

	// done: the value, or the failure.
	Value   json.RawMessage `json:"value,omitempty"`
	Failure *wireFailure    `json:"failure,omitempty"`
	LogsCut bool            `json:"logsCut,omitempty"`
	// progress: the script's api.progress.
	Mark *Mark `json:"mark,omitempty"`
}

type wireOptions struct {
	Timeout       time.Duration `json:"timeout"`
	MaxCalls      int           `json:"maxCalls"`
	MaxConcurrent int           `json:"maxConcurrent"`
	MaxMemory     int64         `json:"maxMemory"`
	MaxLogBytes   int           `json:"maxLogBytes"`
}

type wireFailure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
}

// Run starts a worker for the script, serves its calls through c and
// returns what it reports. Calls, queue waits and logs are counted here,
// as the worker reports them, so a worker that is killed still leaves an
// answer saying what went out.
func (w *Worker) Run(ctx context.Context, code string, c Caller, opts Options) (*Result, error) {
	opts.defaults()
	res := &Result{Value: json.RawMessage("null")}
	if len(code) > MaxCodeBytes {
		return nil, &Error{Code: codes.ScriptError, Message: fmt.Sprintf("the code is %d bytes, over the %d-byte bound", len(code), MaxCodeBytes), Result: res}
	}
	hard, cancel := context.WithTimeout(ctx, opts.Timeout+workerGrace)
	defer cancel()
	args := append(append([]string{}, w.Args...), "--max-memory", strconv.FormatInt(opts.MaxMemory, 10),
		"--cpu-seconds", strconv.Itoa(int(opts.Timeout/time.Second)+2))
	cmd := exec.Command(w.Path, args...)
	cmd.Env = w.Env
	cmd.SysProcAttr = workerAttr()
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, w.broken(res, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, w.broken(res, err)
	}
	var stderr headBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, w.broken(res, err)
	}
	p := &parent{ctx: hard, c: c, opts: opts, res: res, enc: json.NewEncoder(stdin), stdin: stdin}
	started := time.Now()
	// Killing the child ends its stdout, which ends the read loop below.
	stopKill := context.AfterFunc(hard, func() { _ = cmd.Process.Kill() })
	defer stopKill()
	p.send(message{Op: "run", Code: code, Options: &wireOptions{
		Timeout: opts.Timeout, MaxCalls: opts.MaxCalls, MaxConcurrent: opts.MaxConcurrent,
		MaxMemory: opts.MaxMemory, MaxLogBytes: opts.MaxLogBytes}})
	done, readErr := p.serve(stdout)
	pastDeadline := hard.Err() != nil && ctx.Err() == nil || time.Since(started) >= opts.Timeout
	// Calls still running are the child's no more: their context ends, so
	// queued calls leave the queue and nothing more is sent.
	cancel()
	p.wg.Wait()
	_ = stdin.Close()
	_ = cmd.Process.Kill()
	waitErr := cmd.Wait()
	p.finish()
	res.PeakRSS = peakRSS(cmd.ProcessState)
	if done != nil {
		if done.Failure != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				// The worker failed on calls the cancellation ended.
				return nil, cancelledError(res)
			}
			f := done.Failure
			return nil, &Error{Code: f.Code, Message: f.Message, Line: f.Line, Result: res}
		}
		res.Value = done.Value
		if len(res.Value) == 0 {
			res.Value = json.RawMessage("null")
		}
		return res, nil
	}
	// The child died before it reported: say why, from what is known.
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled):
		return nil, cancelledError(res)
	case stderr.outOfMemory():
		return nil, backstopError(opts, res)
	case ctx.Err() != nil || pastDeadline:
		return nil, timeoutError(opts, res)
	case killedBy(waitErr, syscall.SIGKILL):
		return nil, &Error{Code: codes.Timeout, Message: "the script used up its CPU time and was stopped", Result: res}
	}
	why := "it stopped before it finished"
	if readErr != nil {
		why = readErr.Error()
	}
	return nil, &Error{Code: codes.ScriptError, Message: "the script's worker failed: " + clip(why, 200), Result: res}
}

// backstopRoom is how much address space a worker may map past what it
// had mapped at its start: far above the memory bound, since Go reserves
// address space it does not use, and only what the sampler could not stop
// in time reaches it.
func backstopRoom(maxMemory int64) int64 { return 2*maxMemory + 1<<30 }

// backstopError is a worker the OS killed for its address space: the
// script allocated past the backstop before its live heap was seen past the
// bound, which is not the same as the bound passed.
func backstopError(o Options, res *Result) *Error {
	return &Error{Code: codes.ScriptError, Message: fmt.Sprintf("the script's worker was killed by the OS: it allocated past its %d MiB memory backstop (address space, far above the %d MiB bound on the script's live heap) too fast to be stopped at the bound",
		backstopRoom(o.MaxMemory)>>20, o.MaxMemory>>20), Result: res}
}

func (w *Worker) broken(res *Result, err error) error {
	return &Error{Code: codes.ScriptError, Message: "the script's worker could not be started: " + clip(err.Error(), 200), Result: res}
}

func killedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// parent is the parent's side of one run.
type parent struct {
	ctx  context.Context
	c    Caller
	opts Options
	res  *Result

	wg     sync.WaitGroup
	encMu  sync.Mutex
	enc    *json.Encoder
	stdin  io.WriteCloser
	mu     sync.Mutex // guards res's calls, waited, logLen, mark
	waited time.Duration
	logLen int
	calls  int
	mark   Mark
	// reportMu keeps reports to Options.Progress one at a time.
	reportMu sync.Mutex
}

func (p *parent) send(m message) {
	p.encMu.Lock()
	defer p.encMu.Unlock()
	_ = p.enc.Encode(m) // a dead child is seen by the read loop
}

// maxWorkerLine bounds one line from the worker: the return value is
// bounded by its memory, and anything longer is a broken worker.
func (p *parent) maxLine() int { return int(min(p.opts.MaxMemory, 256<<20)) + 1<<20 }

// serve answers the worker's requests until it reports or its stdout ends.
func (p *parent) serve(stdout io.Reader) (*message, error) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	limit := p.maxLine()
	for {
		line, err := readLine(r, limit)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			return nil, err
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, errors.New("the worker sent a line that is not JSON")
		}
		switch m.Op {
		case "invoke", "search":
			if !p.take() {
				p.send(message{Op: "reply", ID: m.ID, Error: &CallError{Code: codes.ValidationFailed,
					Message: "this script already made its " + strconv.Itoa(p.opts.MaxCalls) + " calls (scripts.max_calls)"}})
				continue
			}
			p.wg.Add(1)
			go p.call(m)
		case "log":
			p.log(m.Line, m.LogsCut)
		case "progress":
			if m.Mark != nil {
				p.progress(m.Mark)
			}
		case "done":
			return &m, nil
		default:
			return nil, errors.New("the worker sent an unknown message")
		}
	}
}

// take counts a call against max_calls here too: the worker is not trusted
// to count its own.
func (p *parent) take() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls >= p.opts.MaxCalls {
		return false
	}
	p.calls++
	return true
}

func (p *parent) call(m message) {
	defer p.wg.Done()
	reply := message{Op: "reply", ID: m.ID}
	var out any
	var err error
	switch {
	case p.ctx.Err() != nil:
		// A call the worker asked for as the run ended (its slot freed by
		// a call the end failed): nothing is sent, as in process.
		err = p.ctx.Err()
	case m.Op == "search":
		out, err = p.c.Search(p.ctx, m.Query, m.Limit)
	default:
		var a Args
		if len(m.Args) > 0 {
			if problem := decodeArgsJSON(m.Args, &a); problem != "" {
				err = &CallError{Code: codes.ValidationFailed, Message: problem}
				break
			}
		}
		var resp *Response
		resp, err = p.c.Invoke(p.ctx, m.EndpointID, a)
		if resp != nil {
			reply.QueueWait = resp.QueueWait
			out = resp
		}
	}
	p.count(out, err, reply.QueueWait)
	p.report()
	if err != nil {
		ce := &CallError{}
		if !errors.As(err, &ce) {
			ce = &CallError{Code: codes.Internal, Message: "the call failed inside specgate"}
			if p.ctx.Err() != nil {
				ce = &CallError{Code: codes.Timeout, Message: "the script's deadline passed while the call waited"}
			}
		}
		reply.Error = ce
		p.send(reply)
		return
	}
	if resp, ok := out.(*Response); ok && isRaw(resp.Body) {
		p.sendRaw(reply, resp)
		return
	}
	if b, merr := json.Marshal(out); merr == nil {
		reply.Response = b
	} else {
		reply.Error = &CallError{Code: codes.Internal, Message: "the answer could not be encoded"}
	}
	p.send(reply)
}

func isRaw(body any) bool {
	_, ok := body.(json.RawMessage)
	return ok
}

// progress keeps the worker's api.progress, its note bounded again here:
// the worker is not trusted to bound it.
func (p *parent) progress(m *Mark) {
	p.mu.Lock()
	p.mark = Mark{Done: max(m.Done, 0), Total: max(m.Total, 0), Note: clipBytes(m.Note, MaxNoteBytes)}
	p.mu.Unlock()
	p.report()
}

// report tells Options.Progress where the run stands, one report at a time.
func (p *parent) report() {
	if p.opts.Progress == nil {
		return
	}
	p.reportMu.Lock()
	defer p.reportMu.Unlock()
	p.mu.Lock()
	pr := Progress{Calls: p.res.Calls.clone(), QueueWait: p.waited, Mark: p.mark}
	p.mu.Unlock()
	p.opts.Progress(pr)
}

// sendRaw writes a reply whose body is JSON text: the reply's line, with
// the rest of the answer and the body's length, then the body as the
// caller holds it (valid JSON, as Response says), not marshalled into the
// line and not scanned again.
func (p *parent) sendRaw(reply message, resp *Response) {
	body := resp.Body.(json.RawMessage)
	head := *resp
	head.Body = nil
	h, err := json.Marshal(&head)
	if err != nil {
		// It holds only plain values; still, the call must be answered.
		p.send(message{Op: "reply", ID: reply.ID, Error: &CallError{Code: codes.Internal, Message: "the answer could not be encoded"}})
		return
	}
	reply.Response, reply.BodyBytes = h, len(body)
	p.encMu.Lock()
	defer p.encMu.Unlock()
	w := bufio.NewWriterSize(p.stdin, 32<<10)
	_ = json.NewEncoder(w).Encode(reply)
	_, _ = w.Write(body)
	_ = w.WriteByte('\n')
	_ = w.Flush() // a dead child is seen by the read loop
}

func (p *parent) count(out any, err error, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waited += wait
	countCall(&p.res.Calls, out, err)
}

func (p *parent) log(line string, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.res.LogsCut {
		return
	}
	// The worker is not trusted to have counted: each line costs here what
	// it costs in the answer, as in process.
	line, cost, full := fitLog(line, p.opts.MaxLogBytes-p.logLen)
	p.logLen += cost
	p.res.LogsCut = cut || full
	if line != "" || !p.res.LogsCut {
		p.res.Logs = append(p.res.Logs, line)
	}
}

func (p *parent) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res.QueueWait = p.waited
}

// readLine reads one line of at most limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > limit {
			return nil, errors.New("the worker sent a line over its bound")
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return buf, nil
		default:
			return nil, err
		}
	}
}

// headBuffer keeps the first 2 KiB written to it: a worker's stderr, read
// only to tell an out-of-memory death (the runtime's fatal error comes
// first, then the stacks) from another.
type headBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *headBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := 2<<10 - len(t.buf); room > 0 {
		t.buf = append(t.buf, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// outOfMemory reports whether the worker died of its address-space
// limit: the runtime's own words for it (the race detector's runtime, in
// tests, says it its way).
func (t *headBuffer) outOfMemory() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range []string{"out of memory", "cannot allocate memory", "address space collisions", "failed to allocate", "mmap", "ThreadSanitizer"} {
		if bytes.Contains(t.buf, []byte(s)) {
			return true
		}
	}
	return false
}

// WorkerMain is the worker process: it reads its limits from args
// (--max-memory BYTES, --cpu-seconds N), sets them on itself before it
// reads any code, then runs the one script that stdin sends, asking
// stdout for every call. It returns the process's exit code.
func WorkerMain(args []string, stdin io.Reader, stdout io.Writer) int {
	var maxMemory int64 = DefaultMaxMemory
	cpu := 0
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--max-memory":
			maxMemory, _ = strconv.ParseInt(args[i+1], 10, 64)
		case "--cpu-seconds":
			cpu, _ = strconv.Atoi(args[i+1])
		}
	}
	if err := limitSelf(maxMemory, cpu); err != nil {
		fmt.Fprintln(os.Stderr, "script-worker: limits not set:", err)
		return 3
	}
	w := &child{enc: json.NewEncoder(stdout), waiting: map[int]chan message{}}
	r := bufio.NewReaderSize(stdin, 64<<10)
	line, err := readLine(r, MaxCodeBytes+1<<20)
	if err != nil {
		return 2
	}
	var m message
	if json.Unmarshal(line, &m) != nil || m.Op != "run" || m.Options == nil {
		return 2
	}
	go w.readReplies(r)
	o := m.Options
	opts := Options{Timeout: o.Timeout, MaxCalls: o.MaxCalls, MaxConcurrent: o.MaxConcurrent,
		MaxMemory: o.MaxMemory, MaxLogBytes: o.MaxLogBytes, onLog: w.sendLog,
		onMark: func(m Mark) { w.send(message{Op: "progress", Mark: &m}) }}
	res, err := Run(context.Background(), m.Code, w, opts)
	done := message{Op: "done"}
	var se *Error
	switch {
	case err == nil:
		done.Value = res.Value
	case errors.As(err, &se):
		done.Failure = &wireFailure{Code: se.Code, Message: se.Message, Line: se.Line}
	default:
		done.Failure = &wireFailure{Code: codes.ScriptError, Message: clip(err.Error(), 300)}
	}
	w.send(done)
	return 0
}

// child is the worker's side: a Caller that asks the parent.
type child struct {
	encMu   sync.Mutex
	enc     *json.Encoder
	mu      sync.Mutex
	next    int
	waiting map[int]chan message
	closed  bool
}

func (w *child) send(m message) {
	w.encMu.Lock()
	defer w.encMu.Unlock()
	_ = w.enc.Encode(m)
}

func (w *child) sendLog(line string, cut bool) { w.send(message{Op: "log", Line: line, LogsCut: cut}) }

func (w *child) readReplies(r *bufio.Reader) {
	for {
		line, err := readLine(r, 1<<30)
		if err != nil {
			w.mu.Lock()
			w.closed = true
			for id, ch := range w.waiting {
				close(ch)
				delete(w.waiting, id)
			}
			w.mu.Unlock()
			return
		}
		var m message
		if json.Unmarshal(line, &m) != nil || m.Op != "reply" {
			continue
		}
		if m.BodyBytes > 0 {
			if m.body, err = readBody(r, m.BodyBytes); err != nil {
				m = message{Op: "reply", ID: m.ID, Error: &CallError{Code: codes.Internal, Message: "the answer could not be read"}}
			}
		}
		w.mu.Lock()
		ch := w.waiting[m.ID]
		delete(w.waiting, m.ID)
		w.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// maxReplyBody bounds a body the worker reads after a reply's line.
const maxReplyBody = 1 << 30

// readBody reads a reply's raw body of n bytes and the newline after it.
func readBody(r *bufio.Reader, n int) ([]byte, error) {
	if n > maxReplyBody {
		return nil, errors.New("the parent sent a body over its bound")
	}
	body := make([]byte, n+1)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	if body[n] != '\n' {
		return nil, errors.New("the parent's body did not end its line")
	}
	return body[:n], nil
}

func (w *child) ask(ctx context.Context, m message) (message, error) {
	ch := make(chan message, 1)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return message{}, &CallError{Code: codes.Cancelled, Message: "the script is being stopped"}
	}
	w.next++
	m.ID = w.next
	w.waiting[m.ID] = ch
	w.mu.Unlock()
	w.send(m)
	select {
	case r, ok := <-ch:
		if !ok {
			return message{}, &CallError{Code: codes.Cancelled, Message: "the script is being stopped"}
		}
		if r.Error != nil {
			return r, r.Error
		}
		return r, nil
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

func (w *child) Invoke(ctx context.Context, id string, a Args) (*Response, error) {
	raw := a.raw
	if raw == nil {
		var err error
		if raw, err = json.Marshal(a); err != nil {
			return nil, &CallError{Code: codes.ValidationFailed, Message: "the arguments cannot be read as JSON"}
		}
	}
	r, err := w.ask(ctx, message{Op: "invoke", EndpointID: id, Args: raw})
	if err != nil {
		return nil, err
	}
	// The body stays JSON text until the script's JSON.parse reads it: one
	// decoding, not a Go value marshalled again for the VM.
	var resp Response
	if err := decodeAnswer(r.Response, &resp); err != nil {
		return nil, err
	}
	if r.body != nil {
		resp.Body = json.RawMessage(r.body)
	}
	resp.QueueWait = r.QueueWait
	return &resp, nil
}

// decodeAnswer reads the parent's answer to a call, numbers exact.
func decodeAnswer(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(dst) != nil {
		return &CallError{Code: codes.Internal, Message: "the answer could not be read"}
	}
	return nil
}

func (w *child) Search(ctx context.Context, q string, limit int) (any, error) {
	r, err := w.ask(ctx, message{Op: "search", Query: q, Limit: limit})
	if err != nil {
		return nil, err
	}
	var v any
	if err := decodeAnswer(r.Response, &v); err != nil {
		return nil, err
	}
	return v, nil
}
