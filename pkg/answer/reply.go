package answer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Budget bounds for one answer the model reads.
const (
	// MinResultBytes and MaxResultBytes bound maxBytes on invoke and
	// read_response.
	MinResultBytes = 1024
	MaxResultBytes = 48000
	// DefaultResultBytes is the answer budget when none is configured.
	DefaultResultBytes = 16 << 10
)

// Reply is the part of an answer that carries the body, as the model reads
// it: whole when it fits the budget, else a valid-JSON preview with Shaped
// saying what was left out and Hint naming the next call.
type Reply struct {
	// Body is json.RawMessage for JSON, a string for text, a description
	// of a binary body, or nil when there is none.
	Body any `json:"body,omitempty"`
	// Shaped is set when Body is a preview.
	Shaped *Shaped `json:"shaped,omitempty"`
	// NextOffset is where the next read_response page starts, while more
	// remain.
	NextOffset *int `json:"nextOffset,omitempty"`
	// Hint names the next call when the body is a preview.
	Hint string `json:"hint,omitempty"`
	// JQError is a jq filter's run-time error after the call went out; the
	// body is then the unfiltered answer (or its preview).
	JQError string `json:"jqError,omitempty"`
	// Note flags something odd, such as JSON that does not parse.
	Note string `json:"note,omitempty"`
	// Image is an image body that fits the budget, for MCP image content.
	Image *Image `json:"-"`
}

// Image is an image body sent to the model as MCP image content.
type Image struct {
	MIMEType string
	Data     string // base64
}

// RenderOptions say how a stored answer is rendered.
type RenderOptions struct {
	// Budget bounds the encoded body in bytes. Zero: DefaultResultBytes.
	Budget int
	// ResponseID names the stored answer in hints; empty when the answer
	// was not stored.
	ResponseID string
	// JQ filters a JSON body; nil: none.
	JQ *JQ
	// JQLimits bound the filter's run.
	JQLimits JQLimits
	// Strict makes a jq run-time failure an error (read_response: nothing
	// was sent, so nothing is lost). Otherwise it lands in Reply.JQError
	// and the unfiltered body is rendered (invoke: the call already had its
	// effect).
	Strict bool
	// Window selects items Offset..Offset+Limit of the main array (or
	// bytes of a text or binary body). Without it the whole body is
	// rendered.
	Window bool
	Offset int
	Limit  int
}

// Render turns a stored answer into what the model reads, within the
// budget. Its errors are *JQError (Strict only) and *ArgError.
func Render(ctx context.Context, a *Answer, opt RenderOptions) (*Reply, error) {
	w, err := NewView(ctx, a, opt)
	if err != nil {
		return nil, err
	}
	return w.Render(opt.Budget, false), nil
}

// Kinds of body a View holds.
const (
	viewEmpty = iota
	viewJSON
	viewText
	viewBinary
)

// View is a stored answer made ready to render at any budget: decoded,
// filtered by jq or windowed once, so that fitting a result to its budget
// renders previews again without decoding or filtering again. A View is
// not safe for concurrent use.
type View struct {
	a    *Answer
	opt  RenderOptions
	kind int
	v    any    // viewJSON: the value shown
	deep bool   // viewJSON: v nests deeper than MaxAnswerDepth, so it is never shown whole
	size int    // viewJSON: its encoded size, for Shaped.Bytes
	data []byte // viewText, viewBinary: the bytes shown
	base string // media type, for binary
	// What every rendering carries.
	note, jqErr string
	nextOffset  *int
	offset      int // where the window starts, for next offsets
}

// NewView reads a stored answer by Answer.Value (decoding it unless
// a.Decoded holds it already) and applies opt's jq or window. Its errors
// are *JQError (Strict only) and *ArgError.
func NewView(ctx context.Context, a *Answer, opt RenderOptions) (*View, error) {
	w := &View{a: a, opt: opt}
	v := a.Value()
	w.base = v.Base
	switch v.Kind {
	case BodyNone:
		return w, nil
	case BodyJSON:
		return w, w.json(ctx, v.JSON, len(v.Data))
	case BodyText:
		// a body said to be JSON that is not is shown as text, jq left out
		if !v.BadJSON {
			if err := w.jqOnNonJSON(); err != nil {
				return nil, err
			}
		}
		w.note = v.Note
		w.text(v.Data)
		return w, nil
	default:
		if err := w.jqOnNonJSON(); err != nil {
			return nil, err
		}
		w.kind, w.data = viewBinary, v.Data
		return w, nil
	}
}

func (w *View) jqOnNonJSON() error {
	if w.opt.JQ == nil {
		return nil
	}
	msg := "jq applies to JSON bodies only; this body is not JSON"
	if w.opt.Strict {
		return &ArgError{Problems: []string{msg}}
	}
	w.jqErr = msg
	return nil
}

func (w *View) json(ctx context.Context, v any, size int) error {
	w.kind = viewJSON
	opt := w.opt
	if opt.JQ != nil {
		out, err := opt.JQ.Run(ctx, v, opt.JQLimits)
		switch {
		case err == nil:
			v = out
			size, _ = jsonSize(v, unlimited)
		case opt.Strict:
			return err
		default:
			w.jqErr = err.Error()
		}
	} else if opt.Window {
		_, items, ok := MainArray(v)
		if !ok {
			return &ArgError{Problems: []string{"offset and limit page over the body's main array, and this body has none: use jq instead"}}
		}
		lo, hi := window(len(items), opt.Offset, opt.Limit)
		v = items[lo:hi]
		w.offset = lo
		if hi < len(items) {
			next := hi
			w.nextOffset = &next
		}
		size, _ = jsonSize(v, unlimited)
	}
	w.v, w.size, w.deep = v, size, deeperThan(v, MaxAnswerDepth)
	return nil
}

func (w *View) text(data []byte) {
	w.kind = viewText
	if w.opt.Window {
		lo, hi := window(len(data), w.opt.Offset, w.opt.Limit)
		w.offset = lo
		if hi < len(data) {
			next := hi
			w.nextOffset = &next
		}
		w.size, data = len(data), data[lo:hi]
	} else {
		w.size = len(data)
	}
	w.data = data
}

// Render renders the view with the body within budget bytes (zero:
// DefaultResultBytes). tight keeps what goes beside a preview short: a few
// item fields and a hint of one line, for the smallest budgets.
func (w *View) Render(budget int, tight bool) *Reply {
	if budget <= 0 {
		budget = DefaultResultBytes
	}
	r := &Reply{Note: w.note, JQError: w.jqErr, NextOffset: w.nextOffset}
	switch w.kind {
	case viewJSON:
		w.renderJSON(r, budget, tight)
	case viewText:
		w.renderText(r, budget)
	case viewBinary:
		w.renderBinary(r, budget)
	}
	return r
}

// fitReserve is what Fit first leaves beside the body for shaped and the
// hint of a preview.
const fitReserve = 800

// fitSlack is how far under its total a fitted result may stay without
// another try to fill it.
const fitSlack = 384

// Fit renders the view into the result encode builds around a Reply, with
// the largest body for which that result is at most total bytes, and
// returns encode's bytes and the Reply they hold. A body that fits whole
// comes back whole. When not even the smallest preview fits, the result
// with the smallest preview and the shortest hint is returned.
func (w *View) Fit(total int, encode func(*Reply) []byte) ([]byte, *Reply) {
	empty := len(encode(&Reply{Note: w.note, JQError: w.jqErr, NextOffset: w.nextOffset}))
	if w.kind == viewEmpty {
		r := w.Render(total, false)
		return encode(r), r
	}
	if w.kind == viewJSON && !w.deep {
		if n, _ := jsonSize(w.v, total); n+empty <= total {
			if r := w.Render(total-empty, false); r.Shaped == nil {
				if out := encode(r); len(out) <= total {
					return out, r
				}
			}
		}
	}
	var best []byte
	var bestR *Reply
	for _, tight := range []bool{false, true} {
		budget := total - empty - fitReserve
		if tight {
			budget = total - empty - fitReserve/4
		}
		for range 4 {
			budget = max(budget, MinPreviewBudget)
			r := w.Render(budget, tight)
			out := encode(r)
			if len(out) <= total {
				if len(out) > len(best) {
					best, bestR = out, r
				}
				slack := total - len(out)
				if slack < fitSlack || r.Shaped == nil {
					break
				}
				budget += slack - fitSlack/2
				continue
			}
			if budget == MinPreviewBudget {
				break
			}
			budget -= len(out) - total + 32
		}
		if best != nil {
			return best, bestR
		}
	}
	r := w.Render(MinPreviewBudget, true)
	return encode(r), r
}

func (w *View) renderJSON(r *Reply, budget int, tight bool) {
	if n, _ := jsonSize(w.v, budget); n <= budget && !w.deep {
		if b, err := EncodeJSON(w.v); err == nil && len(b) <= budget {
			r.Body = json.RawMessage(b)
			return
		} else if err != nil {
			r.Note = joinNote(r.Note, "the body could not be encoded as JSON")
			return
		}
	}
	preview, shaped := PreviewJSON(w.v, w.size, budget)
	shaped.Pages = w.a.Pages
	r.Hint = jsonHint(shaped, w.opt, tight)
	if tight && len(shaped.ItemFields) > tightItemFields {
		shaped.ItemFields = shaped.ItemFields[:tightItemFields]
	}
	r.Body = preview
	r.Shaped = &shaped
	// A window that did not fit either: the next offset follows what the
	// preview showed.
	if w.opt.Window && w.opt.JQ == nil && shaped.Shown > 0 && shaped.Items > shaped.Shown {
		next := w.offset + shaped.Shown
		r.NextOffset = &next
	}
}

// tightItemFields is how many item fields a tight rendering lists.
const tightItemFields = 8

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// window clamps offset and limit to n items.
func window(n, offset, limit int) (int, int) {
	lo := min(max(offset, 0), n)
	hi := n
	if limit > 0 && lo+limit < n {
		hi = lo + limit
	}
	return lo, hi
}

// hintFields are the fields worth picking first in a jq projection hint.
var hintFields = []string{"id", "number", "name", "title", "login", "state", "status", "type", "created_at", "created", "url", "html_url"}

// jsonHint names the next call for a JSON preview; tight makes it one
// short sentence.
func jsonHint(s Shaped, opt RenderOptions, tight bool) string {
	if opt.ResponseID == "" {
		if s.Reason == ReasonTooDeep {
			return "The answer nests too deep to show whole and was not stored: call again with jq to pick the part you need."
		}
		if tight {
			return "Too large and not stored: call again with jq."
		}
		return "The answer is too large to show whole and was not stored: call again with jq to pick the fields you need."
	}
	var b strings.Builder
	if s.Items > 0 {
		fields := pickFields(s.ItemFields)
		if tight && len(fields) > 2 {
			fields = fields[:2]
		}
		iter := ".[]"
		if s.Path != "" && s.Path != "." {
			iter = s.Path + "[]"
		}
		jq := "[" + iter + "]"
		if len(fields) > 0 {
			jq = "[" + iter + " | {" + strings.Join(fields, ", ") + "}]"
		}
		if tight {
			return `More: read_response {"responseId":"` + opt.ResponseID + `","jq":` + strconv.Quote(jq) + `}`
		}
		b.WriteString("Preview of " + strconv.Itoa(s.Items) + " items (" + strconv.Itoa(s.Shown) + " shown). ")
		b.WriteString(`Read the rest with read_response {"responseId":"` + opt.ResponseID + `","jq":` + strconv.Quote(jq) + `}`)
		b.WriteString(", or page with offset and limit; no upstream call is made.")
		return b.String()
	}
	if tight {
		return `More: read_response {"responseId":"` + opt.ResponseID + `","jq":".field"}`
	}
	b.WriteString(`The body is previewed. Read parts of it with read_response {"responseId":"` + opt.ResponseID + `","jq":".field"}; no upstream call is made.`)
	return b.String()
}

func pickFields(fields []string) []string {
	have := map[string]bool{}
	for _, f := range fields {
		have[f] = true
	}
	var out []string
	for _, f := range hintFields {
		if have[f] && isIdent(f) {
			out = append(out, f)
			if len(out) == 4 {
				return out
			}
		}
	}
	for _, f := range fields {
		if len(out) >= 3 {
			break
		}
		if isIdent(f) && !contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isIdent reports whether a field can be written bare in jq.
func isIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

func (w *View) renderText(r *Reply, budget int) {
	data, opt := w.data, w.opt
	// JSON never writes text shorter than it is, so a body longer than the
	// budget is previewed without encoding it whole: 8 MiB of NULs would
	// be 48 MiB of "\u0000" to learn that.
	if len(data)+2 <= budget {
		text := Text(data)
		if b, _ := json.Marshal(text); len(b) <= budget {
			r.Body = text
			return
		}
	}
	head, shaped := PreviewText(data, budget)
	shaped.Bytes = w.size
	r.Body = head
	r.Shaped = &shaped
	shown := min(len(head), len(data))
	if opt.Window {
		next := w.offset + shown
		r.NextOffset = &next
	}
	if opt.ResponseID != "" {
		r.Hint = `Read on with read_response {"responseId":"` + opt.ResponseID + `","offset":` + strconv.Itoa(w.offset+shown) + `,"limit":8000} (bytes); no upstream call is made.`
	} else {
		r.Hint = "The text is too large to show whole and was not stored."
	}
}

func (w *View) renderBinary(r *Reply, budget int) {
	data, opt, base := w.data, w.opt, w.base
	desc := "binary body: " + shownType(base) + ", " + strconv.Itoa(len(data)) + " bytes"
	if w.a.Truncated {
		desc += " (cut at the size limit)"
	}
	if opt.Window {
		// Base64 of the chosen bytes, as many as fit.
		lo, hi := window(len(data), opt.Offset, opt.Limit)
		maxRaw := (budget - 64) / 4 * 3
		if maxRaw < 3 {
			maxRaw = 3
		}
		if hi-lo > maxRaw {
			hi = lo + maxRaw
		}
		r.Body = base64.StdEncoding.EncodeToString(data[lo:hi])
		r.Note = desc + "; body holds bytes " + strconv.Itoa(lo) + ".." + strconv.Itoa(hi) + " in base64"
		if hi < len(data) {
			next := hi
			r.NextOffset = &next
		}
		return
	}
	if isImageType(base) && !w.a.Truncated && base64.StdEncoding.EncodedLen(len(data))+256 <= budget {
		r.Image = &Image{MIMEType: base, Data: base64.StdEncoding.EncodeToString(data)}
		r.Body = desc + " (sent as image content)"
		return
	}
	r.Body = desc
	if opt.ResponseID != "" {
		r.Hint = `Read it in base64 with read_response {"responseId":"` + opt.ResponseID + `","offset":0,"limit":8000} (bytes).`
	}
}

// shownType is a media type from the upstream as an answer names it: valid
// text of at most 100 bytes.
func shownType(base string) string {
	s := strings.ToValidUTF8(base, "\uFFFD")
	if len(s) <= 100 {
		return s
	}
	cut := 100
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// isImageType reports whether base names an image in plain media type
// syntax, as MCP image content may carry it.
func isImageType(base string) bool {
	sub, ok := strings.CutPrefix(base, "image/")
	if !ok || sub == "" || len(sub) > 64 {
		return false
	}
	for _, c := range []byte(sub) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// IsJQError reports whether err is a jq error, and which kind.
func IsJQError(err error) (JQErrorKind, bool) {
	var je *JQError
	if errors.As(err, &je) {
		return je.Kind, true
	}
	return 0, false
}
