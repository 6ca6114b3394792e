package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/specgate/specgate/pkg/codes"
)

// prelude bounds the builtins that build a large value from a small one
// in one step (a string repeated, padded or joined, an array filled), which
// the memory sampler would only see after the allocation. LIMIT is the
// largest string or array length a run may build that way.
const prelude = `(function(limit){
  "use strict";
  const def = (o, k, f) => Object.defineProperty(o, k, {value: f, writable: false, configurable: false, enumerable: false});
  const big = () => { throw new RangeError("the value would pass the script's memory bound"); };
  const rep = String.prototype.repeat, ps = String.prototype.padStart, pe = String.prototype.padEnd;
  def(String.prototype, "repeat", function(n) { if (String(this).length * Number(n) > limit) big(); return rep.call(this, n); });
  def(String.prototype, "padStart", function(n, f) { if (Number(n) > limit) big(); return ps.call(this, n, f); });
  def(String.prototype, "padEnd", function(n, f) { if (Number(n) > limit) big(); return pe.call(this, n, f); });
  const join = Array.prototype.join, fill = Array.prototype.fill;
  def(Array.prototype, "join", function(sep) {
    const s = sep === undefined ? 1 : String(sep).length;
    let total = 0;
    for (let i = 0; i < this.length; i++) {
      const v = this[i];
      total += (v === undefined || v === null ? 0 : (typeof v === "string" ? v.length : String(v).length)) + s;
      if (total > limit) big();
    }
    return join.call(this, sep);
  });
  def(Array.prototype, "fill", function(v, a, b) { if (this.length > limit / 8) big(); return fill.call(this, v, a, b); });
})`

// install sets up the sandbox: console, the frozen api object and the
// bounded builtins. goja has no modules, timers, files or network of its
// own; nothing else is added.
func (r *run) install() error {
	vm := r.vm
	vm.SetFieldNameMapper(goja.TagFieldNameMapper("json", true))
	bound, err := vm.RunString(prelude)
	if err != nil {
		return err
	}
	f, _ := goja.AssertFunction(bound)
	if _, err := f(goja.Undefined(), vm.ToValue(r.opts.MaxMemory/4)); err != nil {
		return err
	}
	j := vm.Get("JSON").ToObject(vm)
	var ok1, ok2 bool
	r.stringify, ok1 = goja.AssertFunction(j.Get("stringify"))
	r.parse, ok2 = goja.AssertFunction(j.Get("parse"))
	if !ok1 || !ok2 {
		return errors.New("JSON.stringify or JSON.parse is missing")
	}
	console := vm.NewObject()
	console.Set("log", r.log)
	api := vm.NewObject()
	api.Set("invoke", r.invoke)
	api.Set("search", r.search)
	api.Set("progress", r.progress)
	vm.Set("console", console)
	vm.Set("api", api)
	_, err = vm.RunString(`Object.freeze(api); Object.freeze(console);
Object.defineProperty(globalThis, "api", {writable: false, configurable: false});
Object.defineProperty(globalThis, "console", {writable: false, configurable: false});`)
	return err
}

// log keeps console.log lines up to MaxLogBytes in all, each line counted
// at what it costs in the answer (logCost), so empty lines are not free.
func (r *run) log(call goja.FunctionCall) goja.Value {
	if r.res.LogsCut {
		return goja.Undefined()
	}
	parts := make([]string, 0, len(call.Arguments))
	n := r.logLen
	for _, a := range call.Arguments {
		s := r.logString(a, r.opts.MaxLogBytes-n+1)
		parts = append(parts, s)
		n += len(s) + 1
		if n > r.opts.MaxLogBytes {
			break
		}
	}
	line, cost, cut := fitLog(strings.Join(parts, " "), r.opts.MaxLogBytes-r.logLen)
	r.logLen += cost
	r.res.LogsCut = cut
	if line != "" || !cut {
		r.res.Logs = append(r.res.Logs, line)
	}
	if r.opts.onLog != nil {
		r.opts.onLog(line, cut) // an empty cut line still tells the parent the bound was reached
	}
	return goja.Undefined()
}

// logCost is what a kept line costs of the log bound: its JSON text in the
// answer's logs array, quotes, escapes and comma included. Counting the
// raw bytes alone let 100,000 empty lines through a 4 KiB bound.
func logCost(line string) int {
	n := 3 // the quotes and the comma
	for i, c := range line {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&' || c == '\u2028' || c == '\u2029':
			n += 6
		case c == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(line[i:]); size == 1 {
				n += 6 // invalid UTF-8 is written as \ufffd
			} else {
				n += 3
			}
		default:
			n += utf8.RuneLen(c)
		}
	}
	return n
}

// fitLog cuts line to what room has left of the log bound: it returns the
// line kept, its cost, and whether the bound was reached (then the line was
// cut, or is empty when not even its quotes fit).
func fitLog(line string, room int) (string, int, bool) {
	cost := logCost(line)
	if cost <= room {
		return line, cost, false
	}
	if room < 3 {
		return "", 0, true
	}
	// An escape costs at most 6 bytes per byte kept, so room/6 always fits;
	// halve the distance to the longest cut that does.
	lo, hi := clipBytes(line, (room-3)/6), clipBytes(line, room-3)
	for len(hi)-len(lo) > 1 {
		mid := clipBytes(line, (len(lo)+len(hi))/2)
		if mid == lo {
			break
		}
		if logCost(mid) <= room {
			lo = mid
		} else {
			hi = mid
		}
	}
	if logCost(hi) <= room {
		lo = hi
	}
	return lo, logCost(lo), true
}

// logString renders one console.log argument, JSON for objects, reading
// at most about room bytes of a string.
func (r *run) logString(v goja.Value, room int) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if _, ok := v.(*goja.Object); ok {
		if _, isFn := goja.AssertFunction(v); !isFn {
			if out, err := r.serialise(v); err == nil {
				return clipBytes(string(out), max(room, 0))
			}
		}
	}
	s := v.String()
	return clipBytes(s, max(room, 0))
}

func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// progress is api.progress(done, total, note): the script's own account of
// where it stands, which the answer of a run still going carries (with an
// ETA when total is known). Only the last one is kept, its note bounded.
func (r *run) progress(call goja.FunctionCall) goja.Value {
	count := func(i int, name string) int {
		v := call.Argument(i)
		if goja.IsUndefined(v) || goja.IsNull(v) {
			return 0
		}
		f, ok := v.Export().(float64)
		if n, isInt := v.Export().(int64); isInt {
			f, ok = float64(n), true
		}
		if !ok || f != f || f < 0 {
			panic(r.vm.NewTypeError("api.progress(done, total, note): " + name + " must be a number from 0 up"))
		}
		return int(min(f, 1e9))
	}
	m := Mark{Done: count(0, "done"), Total: count(1, "total")}
	if v := call.Argument(2); !goja.IsUndefined(v) && !goja.IsNull(v) {
		m.Note = clipBytes(v.String(), MaxNoteBytes)
	}
	r.mu.Lock()
	r.mark = m
	r.mu.Unlock()
	if r.opts.onMark != nil {
		r.opts.onMark(m)
	}
	r.report()
	return goja.Undefined()
}

// report tells Options.Progress where the run stands. It runs on the VM's
// goroutine, which alone changes the calls.
func (r *run) report() {
	if r.opts.Progress == nil {
		return
	}
	r.mu.Lock()
	p := Progress{Calls: r.res.Calls.clone(), QueueWait: r.waited, Mark: r.mark}
	r.mu.Unlock()
	r.opts.Progress(p)
}

// invoke is api.invoke(endpointId, args): a promise of the call's answer.
func (r *run) invoke(call goja.FunctionCall) goja.Value {
	p, resolve, reject := r.vm.NewPromise()
	id, ok := call.Argument(0).Export().(string)
	if !ok || id == "" {
		reject(r.jsError(&CallError{Code: codes.ValidationFailed, Message: "api.invoke needs an endpoint id string first"}))
		return r.vm.ToValue(p)
	}
	var args Args
	if a := call.Argument(1); !goja.IsUndefined(a) && !goja.IsNull(a) {
		if problem := r.decodeArgs(a, &args); problem != "" {
			reject(r.jsError(&CallError{Code: codes.ValidationFailed, Message: problem}))
			return r.vm.ToValue(p)
		}
	}
	if !r.take() {
		reject(r.jsError(r.tooMany()))
		return r.vm.ToValue(p)
	}
	r.start(r.callSite(), func() (any, error) {
		resp, err := r.caller.Invoke(r.ctx, id, args)
		if resp != nil {
			r.mu.Lock()
			r.waited += resp.QueueWait
			r.mu.Unlock()
		}
		return resp, err
	}, resolve, reject)
	return r.vm.ToValue(p)
}

// search is api.search(query, {limit}): a promise of the endpoints.
func (r *run) search(call goja.FunctionCall) goja.Value {
	p, resolve, reject := r.vm.NewPromise()
	q, ok := call.Argument(0).Export().(string)
	if !ok || strings.TrimSpace(q) == "" {
		reject(r.jsError(&CallError{Code: codes.ValidationFailed, Message: "api.search needs a query string"}))
		return r.vm.ToValue(p)
	}
	limit := 10
	if o, ok := call.Argument(1).(*goja.Object); ok && o != nil {
		if l := o.Get("limit"); l != nil && !goja.IsUndefined(l) {
			n := l.ToInteger()
			if n < 1 || n > 50 {
				reject(r.jsError(&CallError{Code: codes.ValidationFailed, Message: "limit must be a whole number from 1 to 50"}))
				return r.vm.ToValue(p)
			}
			limit = int(n)
		}
	}
	if !r.take() {
		reject(r.jsError(r.tooMany()))
		return r.vm.ToValue(p)
	}
	r.start(r.callSite(), func() (any, error) { return r.caller.Search(r.ctx, q, limit) }, resolve, reject)
	return r.vm.ToValue(p)
}

func (r *run) take() bool {
	if r.calls >= r.opts.MaxCalls {
		return false
	}
	r.calls++
	return true
}

func (r *run) tooMany() *CallError {
	return &CallError{Code: codes.ValidationFailed, Message: "this script already made its " + strconv.Itoa(r.opts.MaxCalls) + " calls (scripts.max_calls)"}
}

// start runs one call on its own goroutine, at most MaxConcurrent at once,
// and settles its promise on the VM's goroutine. site is where the script
// made the call (callSite), for the Error a failure throws.
func (r *run) start(site string, do func() (any, error), resolve, reject func(any) error) {
	r.inflight++
	go func() {
		var out any
		var err error
		select {
		case r.sem <- struct{}{}:
			// A slot and the end of the run can be ready at once: a run
			// that ended starts nothing more.
			if err = r.ctx.Err(); err == nil {
				out, err = do()
			}
			<-r.sem
		case <-r.ctx.Done():
			err = r.ctx.Err()
		}
		job := func() error {
			r.inflight--
			r.count(out, err)
			r.report()
			if err != nil {
				e := r.jsError(err)
				if o, ok := e.(*goja.Object); ok && site != "" {
					// Made here, off the script's stack, the Error's stack
					// would name no line of the script: it names the call's.
					_ = o.Set("stack", "Error: "+o.Get("message").String()+"\n    at "+site)
				}
				return reject(e)
			}
			return resolve(r.toJS(out))
		}
		select {
		case r.jobs <- job:
		case <-r.done:
		}
	}()
}

func (r *run) count(out any, err error) { countCall(&r.res.Calls, out, err) }

// countCall counts one finished call in c: by its HTTP status, or by the
// code it failed with.
func countCall(c *Calls, out any, err error) {
	c.Total++
	if c.ByStatus == nil {
		c.ByStatus = map[string]int{}
	}
	key := "ok"
	if resp, ok := out.(*Response); ok && resp != nil {
		key = strconv.Itoa(resp.StatusCode)
	}
	var ce *CallError
	switch {
	case errors.As(err, &ce):
		key = ce.Code
	case err != nil:
		key = "error"
	}
	c.ByStatus[key]++
}

// decodeArgs reads api.invoke's argument object strictly: through JSON,
// so no getter, proxy or function crosses into the call. The JSON text is
// kept with the arguments, so a worker passes it on as it is.
func (r *run) decodeArgs(v goja.Value, dst *Args) string {
	raw, err := r.serialise(v)
	if err != nil {
		return "the arguments cannot be read as JSON"
	}
	return decodeArgsJSON(raw, dst)
}

// decodeArgsJSON reads api.invoke's arguments from their JSON text:
// unknown fields refused, numbers exact (json.Number), as the invoke tool
// reads its own. The worker's parent reads them again this way: it does
// not trust the worker to have.
func decodeArgsJSON(raw []byte, dst *Args) string {
	if len(raw) > maxArgsBytes {
		return "the arguments are over 8 MiB"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			return "unknown argument " + clip(name, 64) + ": api.invoke takes parameters, requestBody, headers, contentType, pages"
		}
		return "the arguments are not {parameters, requestBody, headers, contentType, pages}: " + clip(msg, 160)
	}
	dst.raw = raw
	return ""
}

// maxArgsBytes bounds the JSON text of one api.invoke's arguments.
const maxArgsBytes = 8 << 20

// toJS hands a call's answer to the script as plain values; a body of
// JSON text is parsed once, not marshalled into the answer's text first.
func (r *run) toJS(out any) goja.Value {
	if resp, ok := out.(*Response); ok && resp != nil {
		if body, ok := resp.Body.(json.RawMessage); ok {
			head := *resp
			head.Body = nil
			v, ok := r.toJS(&head).(*goja.Object)
			if !ok {
				return goja.Null()
			}
			b, err := r.parse(goja.Undefined(), r.vm.ToValue(string(body)))
			if err != nil {
				return goja.Null()
			}
			_ = v.Set("body", b)
			return v
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return goja.Null()
	}
	v, err := r.parse(goja.Undefined(), r.vm.ToValue(string(raw)))
	if err != nil {
		return goja.Null()
	}
	return v
}

// callSite is where in the script the api call being made now stands
// ("script.js:4:13"): the innermost frame of the script's own code. The
// call settles later, on no frame of the script, so start keeps it.
func (r *run) callSite() string {
	for _, f := range r.vm.CaptureCallStack(0, nil) {
		if f.SrcName() == "script.js" {
			p := f.Position()
			return "script.js:" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column)
		}
	}
	return ""
}

// jsError makes the Error a failed call throws.
func (r *run) jsError(err error) goja.Value {
	ce := &CallError{Code: codes.Internal, Message: "the call failed inside specgate"}
	if !errors.As(err, &ce) {
		switch {
		case errors.Is(err, errTimeout), errors.Is(err, errMemory):
		default:
			if r.ctx.Err() != nil {
				ce = &CallError{Code: codes.Timeout, Message: "the script's deadline passed while the call waited"}
			}
		}
	}
	ctor, _ := goja.AssertConstructor(r.vm.Get("Error"))
	obj, cerr := ctor(nil, r.vm.ToValue(ce.Message))
	if cerr != nil {
		return r.vm.ToValue(ce.Message)
	}
	obj.Set("code", ce.Code)
	if ce.RetryAfterSeconds > 0 {
		obj.Set("retryAfterSeconds", ce.RetryAfterSeconds)
	}
	if ce.Status > 0 {
		obj.Set("status", ce.Status)
	}
	if ce.Scope != "" {
		obj.Set("scope", ce.Scope)
	}
	return obj
}
