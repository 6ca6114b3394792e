package invoke

import (
	"bytes"
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
	if opt.Budget <= 0 {
		opt.Budget = DefaultResultBytes
	}
	r := &Reply{}
	if len(a.Body) == 0 {
		return r, nil
	}
	base := mediaBase(a.ContentType)
	data := a.Body
	trimmed := bytes.TrimSpace(data)
	looksJSON := base == "" && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
	switch {
	case isJSONType(base) || looksJSON:
		v, err := DecodeJSON(data)
		if err == nil {
			return r, renderJSON(ctx, r, v, len(data), a, opt)
		}
		if !a.Truncated && !looksJSON {
			r.Note = "the body is not valid JSON although its content type says so"
		}
		if a.Truncated {
			r.Note = "the body was cut at the size limit, so it is not complete JSON"
		}
		return r, renderText(r, data, opt)
	case isTextType(base) || base == "" && utf8.Valid(data):
		if opt.JQ != nil {
			if err := jqOnNonJSON(r, opt); err != nil {
				return nil, err
			}
		}
		return r, renderText(r, data, opt)
	default:
		if opt.JQ != nil {
			if err := jqOnNonJSON(r, opt); err != nil {
				return nil, err
			}
		}
		renderBinary(r, base, data, a, opt)
		return r, nil
	}
}

func jqOnNonJSON(r *Reply, opt RenderOptions) error {
	msg := "jq applies to JSON bodies only; this body is not JSON"
	if opt.Strict {
		return &ArgError{Problems: []string{msg}}
	}
	r.JQError = msg
	return nil
}

func renderJSON(ctx context.Context, r *Reply, v any, size int, a *Answer, opt RenderOptions) error {
	if opt.JQ != nil {
		out, err := opt.JQ.Run(ctx, v, opt.JQLimits)
		switch {
		case err == nil:
			v = out
			b, encErr := EncodeJSON(v)
			if encErr == nil {
				size = len(b)
			}
		case opt.Strict:
			return err
		default:
			r.JQError = err.Error()
		}
	} else if opt.Window {
		path, items, ok := MainArray(v)
		if !ok {
			return &ArgError{Problems: []string{"offset and limit page over the body's main array, and this body has none: use jq instead"}}
		}
		lo, hi := window(len(items), opt.Offset, opt.Limit)
		v = items[lo:hi]
		if hi < len(items) {
			next := hi
			r.NextOffset = &next
		}
		b, _ := EncodeJSON(v)
		size = len(b)
		_ = path
	}
	b, err := EncodeJSON(v)
	if err != nil {
		return &ArgError{Problems: []string{"the body could not be encoded as JSON"}}
	}
	if len(b) <= opt.Budget {
		r.Body = json.RawMessage(b)
		return nil
	}
	preview, shaped := PreviewJSON(v, size, opt.Budget)
	shaped.Pages = a.Pages
	r.Body = preview
	r.Shaped = &shaped
	r.Hint = jsonHint(shaped, opt)
	// A window that did not fit either: the next offset follows what the
	// preview showed.
	if opt.Window && opt.JQ == nil && shaped.Shown > 0 && shaped.Items > shaped.Shown {
		next := opt.Offset + shaped.Shown
		r.NextOffset = &next
	}
	return nil
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

// jsonHint names the next call for a JSON preview.
func jsonHint(s Shaped, opt RenderOptions) string {
	if opt.ResponseID == "" {
		return "The answer is too large to show whole and was not stored: call again with jq to pick the fields you need."
	}
	var b strings.Builder
	if s.Items > 0 {
		fields := pickFields(s.ItemFields)
		iter := ".[]"
		if s.Path != "" && s.Path != "." {
			iter = s.Path + "[]"
		}
		jq := "[" + iter + "]"
		if len(fields) > 0 {
			jq = "[" + iter + " | {" + strings.Join(fields, ", ") + "}]"
		}
		b.WriteString("Preview of " + strconv.Itoa(s.Items) + " items (" + strconv.Itoa(s.Shown) + " shown). ")
		b.WriteString(`Read the rest with read_response {"responseId":"` + opt.ResponseID + `","jq":` + strconv.Quote(jq) + `}`)
		b.WriteString(", or page with offset and limit; no upstream call is made.")
		return b.String()
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

func renderText(r *Reply, data []byte, opt RenderOptions) error {
	size := len(data)
	if opt.Window {
		lo, hi := window(len(data), opt.Offset, opt.Limit)
		data = data[lo:hi]
		if hi < size {
			next := hi
			r.NextOffset = &next
		}
	}
	// JSON never writes text shorter than it is, so a body longer than the
	// budget is previewed without encoding it whole: 8 MiB of NULs would
	// be 48 MiB of "\u0000" to learn that.
	if len(data)+2 <= opt.Budget {
		text := toText(data)
		if b, _ := json.Marshal(text); len(b) <= opt.Budget {
			r.Body = text
			return nil
		}
	}
	head, shaped := PreviewText(data, opt.Budget)
	shaped.Bytes = size
	r.Body = head
	r.Shaped = &shaped
	shown := min(len(head), len(data))
	if opt.Window {
		next := opt.Offset + shown
		r.NextOffset = &next
	}
	if opt.ResponseID != "" {
		r.Hint = `Read on with read_response {"responseId":"` + opt.ResponseID + `","offset":` + strconv.Itoa(opt.Offset+shown) + `,"limit":8000} (bytes); no upstream call is made.`
	} else {
		r.Hint = "The text is too large to show whole and was not stored."
	}
	return nil
}

func renderBinary(r *Reply, base string, data []byte, a *Answer, opt RenderOptions) {
	desc := "binary body: " + base + ", " + strconv.Itoa(len(data)) + " bytes"
	if a.Truncated {
		desc += " (cut at the size limit)"
	}
	if opt.Window {
		// Base64 of the chosen bytes, as many as fit.
		lo, hi := window(len(data), opt.Offset, opt.Limit)
		maxRaw := (opt.Budget - 64) / 4 * 3
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
	if strings.HasPrefix(base, "image/") && !a.Truncated && base64.StdEncoding.EncodedLen(len(data))+256 <= opt.Budget {
		r.Image = &Image{MIMEType: base, Data: base64.StdEncoding.EncodeToString(data)}
		r.Body = desc + " (sent as image content)"
		return
	}
	r.Body = desc
	if opt.ResponseID != "" {
		r.Hint = `Read it in base64 with read_response {"responseId":"` + opt.ResponseID + `","offset":0,"limit":8000} (bytes).`
	}
}

// IsJQError reports whether err is a jq error, and which kind.
func IsJQError(err error) (JQErrorKind, bool) {
	var je *JQError
	if errors.As(err, &je) {
		return je.Kind, true
	}
	return 0, false
}
