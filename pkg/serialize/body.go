package serialize

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specgate/specgate/pkg/answer"
)

// maxUploadBytes bounds one file read from the uploads directory.
const maxUploadBytes = 64 << 20

// isYAMLType reports the YAML media types: application/yaml, the x- and
// text/ spellings, and the +yaml types (Kubernetes' apply-patch+yaml).
func isYAMLType(ct string) bool {
	switch b := answer.MediaBase(ct); b {
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return true
	default:
		return strings.HasSuffix(b, "+yaml")
	}
}

// BodyInput is what encoding a body needs.
type BodyInput struct {
	// ContentType is the chosen media type, as the spec writes it.
	ContentType string
	// Media is the operation's media type object; nil when it has none.
	Media *openapi3.MediaType
	// Value is the model's body value.
	Value any
	// UploadsDir is where a file part may be read from; "" for nowhere.
	UploadsDir string
}

// Body is a body ready for the wire.
type Body struct {
	Data []byte
	// ContentType is the Content-Type header, with a boundary for multipart.
	ContentType string
	// Check is the value to validate against the schema, with file parts
	// replaced by placeholder strings; nil when the body is validated by
	// openapi3filter (JSON) or not at all.
	Check    any
	HasCheck bool
	// Value is a JSON body's value as encoded, for the exact check of its
	// numbers.
	Value any
}

// decodeJSONNumbers decodes one JSON document with numbers as json.Number.
func decodeJSONNumbers(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data: not one document
	}
	return v, true
}

// fileArg is a file part the model described.
type fileArg struct {
	data        []byte
	filename    string
	contentType string
}

// EncodeBody turns the model's value into bytes for the chosen content
// type. Problems are returned as short sentences.
func EncodeBody(in BodyInput) (*Body, []string) {
	base := answer.MediaBase(in.ContentType)
	var schema *openapi3.Schema
	if in.Media != nil && in.Media.Schema != nil {
		schema = in.Media.Schema.Value
	}
	if base == "*/*" || base == "application/*" {
		// A wildcard body with a structured value (Kubernetes declares
		// every write */* with an object schema) goes as JSON, and so does
		// a string holding the JSON document a schema that takes no string
		// asks for; any other string goes as it is, below, typed
		// application/octet-stream: */* is no type to send.
		s, isString := in.Value.(string)
		if !isString {
			base = "application/json"
		} else if schema != nil && !schemaAllows(schema, "string") {
			// A schema that takes no string is checked as JSON, never
			// sent unchecked as bytes.
			if _, ok := decodeJSONNumbers([]byte(s)); !ok {
				return nil, []string{"requestBody: the schema takes no string: give the body as a JSON value (or a string holding one JSON document)"}
			}
			base = "application/json"
		}
	}
	switch {
	case answer.IsJSONType(base):
		v := in.Value
		if s, ok := v.(string); ok && schema != nil && !schemaAllows(schema, "string") {
			// Models sometimes send a JSON document as a string. Its
			// numbers stay json.Number: float64 would round large integers.
			if parsed, ok := decodeJSONNumbers([]byte(s)); ok {
				v = parsed
			}
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, []string{"requestBody: cannot be encoded as JSON"}
		}
		return &Body{Data: data, ContentType: jsonContentType(in.ContentType), Value: v}, nil
	case isYAMLType(base):
		// A string is the YAML document as written; any other value goes
		// as JSON text, which is YAML (1.2 is a superset of JSON), so an
		// object body of Kubernetes' apply-patch+yaml is not refused.
		if s, ok := in.Value.(string); ok {
			return &Body{Data: []byte(s), ContentType: in.ContentType}, nil
		}
		data, err := json.Marshal(in.Value)
		if err != nil {
			return nil, []string{"requestBody: cannot be encoded as YAML"}
		}
		return &Body{Data: data, ContentType: in.ContentType, Check: in.Value, HasCheck: schema != nil}, nil
	case base == "application/x-www-form-urlencoded":
		return encodeForm(in, schema)
	case base == "multipart/form-data" || base == "multipart/mixed":
		return encodeMultipart(in, schema, base)
	case base == "application/octet-stream" || strings.HasPrefix(base, "image/") ||
		strings.HasPrefix(base, "audio/") || strings.HasPrefix(base, "video/") ||
		base == "application/pdf" || base == "application/zip":
		f, problem := fileFromValue("requestBody", in.Value, in.UploadsDir, true)
		if problem != "" {
			return nil, []string{problem}
		}
		ct := base
		if f.contentType != "" && strings.Contains(base, "*") {
			ct = f.contentType
		}
		return &Body{Data: f.data, ContentType: ct}, nil
	case strings.HasPrefix(base, "text/") || strings.HasSuffix(base, "+xml") || base == "application/xml":
		return &Body{Data: []byte(ScalarString(Normalize(in.Value))), ContentType: concreteType(in.ContentType),
			Check: ScalarString(Normalize(in.Value)), HasCheck: schema != nil}, nil
	}
	// Any other type: a string goes as it is.
	s, ok := in.Value.(string)
	if !ok {
		return nil, []string{fmt.Sprintf("requestBody: give the %s body as a string", base)}
	}
	return &Body{Data: []byte(s), ContentType: concreteType(in.ContentType)}, nil
}

// concreteType is the Content-Type sent for a declared media type: a
// wildcard range is no type a server can read, so text/* goes as
// text/plain and any other range as application/octet-stream.
func concreteType(ct string) string {
	base := answer.MediaBase(ct)
	switch {
	case !strings.Contains(base, "*"):
		return ct
	case strings.HasPrefix(base, "text/"):
		return "text/plain"
	}
	return "application/octet-stream"
}

// jsonContentType keeps the declared type but never a wildcard.
func jsonContentType(ct string) string {
	if strings.Contains(ct, "*") {
		return "application/json"
	}
	return ct
}

// schemaAllows reports whether a schema (or any of its alternatives) has
// type t; a schema without a type allows everything.
func schemaAllows(s *openapi3.Schema, t string) bool {
	if s == nil {
		return true
	}
	if s.Type != nil && len(*s.Type) > 0 {
		return s.Type.Includes(t)
	}
	alts := append(append(append([]*openapi3.SchemaRef{}, s.OneOf...), s.AnyOf...), s.AllOf...)
	if len(alts) == 0 {
		return true
	}
	for _, a := range alts {
		if a != nil && a.Value != nil && schemaAllows(a.Value, t) {
			return true
		}
	}
	return false
}

// isBinarySchema reports a schema describing raw file content.
func isBinarySchema(s *openapi3.Schema) bool {
	if s == nil {
		return false
	}
	return s.Format == "binary" || s.ContentMediaType != "" || s.ContentEncoding == "base64"
}

// Property returns a Property's schema, looking through allOf/anyOf/oneOf.
func Property(s *openapi3.Schema, name string) *openapi3.Schema {
	if s == nil {
		return nil
	}
	if p, ok := s.Properties[name]; ok && p != nil {
		return p.Value
	}
	for _, group := range [][]*openapi3.SchemaRef{s.AllOf, s.AnyOf, s.OneOf} {
		for _, a := range group {
			if a != nil {
				if p := Property(a.Value, name); p != nil {
					return p
				}
			}
		}
	}
	if s.AdditionalProperties.Schema != nil {
		return s.AdditionalProperties.Schema.Value
	}
	return nil
}

func encodingFor(media *openapi3.MediaType, name string) *openapi3.Encoding {
	if media == nil {
		return nil
	}
	return media.Encoding[name]
}

func asObject(field string, v any) (map[string]any, string) {
	m, ok := Normalize(v).(map[string]any)
	if !ok {
		return nil, field + ": must be an object of fields"
	}
	return m, ""
}

// encodeForm encodes an application/x-www-form-urlencoded body. Objects
// and arrays of objects use bracket notation (metadata[key]=v,
// items[0][price]=p) as Stripe and most form APIs read it. A Property's
// encoding applies as for a query parameter: arrays of scalars are
// repeated by default, joined when explode is false (with "," or the
// spaceDelimited/pipeDelimited separator), indexed with style deepObject;
// an object whose encoding names style form (or sets explode without a
// style) is sent as key=value pairs when exploded and as name=k,v,... when
// not; allowReserved keeps RFC 3986 reserved characters literal in values,
// except those that would split the body ("&", "=", "#", "+", "%").
func encodeForm(in BodyInput, schema *openapi3.Schema) (*Body, []string) {
	if in.Value == nil {
		return &Body{ContentType: in.ContentType}, nil
	}
	obj, problem := asObject("requestBody", in.Value)
	if problem != "" {
		return nil, []string{problem}
	}
	var pairs []Pair
	for _, k := range SortedKeys(obj) {
		v := Normalize(obj[k])
		st := styleOf(encodingFor(in.Media, k))
		valEsc := Escaper(formEscape)
		if st.allowReserved {
			valEsc = FormEscapeReserved
		}
		switch x := v.(type) {
		case nil:
			continue
		case map[string]any:
			if st.explicit && st.style != "deepObject" {
				pairs = append(pairs, FormKV(k, st.style, st.explode, x, formEscape, valEsc)...)
				continue
			}
			deepPairsKV(&pairs, formEscape(k), x, formEscape, valEsc)
		case []any:
			if st.style == "deepObject" || hasComposite(x) {
				deepPairsKV(&pairs, formEscape(k), x, formEscape, valEsc)
				continue
			}
			pairs = append(pairs, FormKV(k, st.style, st.explode, x, formEscape, valEsc)...)
		default:
			pairs = append(pairs, Pair{formEscape(k), valEsc(ScalarString(x))})
		}
	}
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.K)
		b.WriteByte('=')
		b.WriteString(p.V)
	}
	return &Body{Data: []byte(b.String()), ContentType: "application/x-www-form-urlencoded", Check: obj, HasCheck: true}, nil
}

// fieldStyle is how a form or multipart Property's encoding says to
// serialise it.
type fieldStyle struct {
	style         string // form (the default), spaceDelimited, pipeDelimited or deepObject
	explode       bool
	explicit      bool // the encoding sets style or explode
	allowReserved bool
}

// styleOf reads an encoding's style, explode and allowReserved, with the
// defaults of a query parameter (form, exploded).
func styleOf(enc *openapi3.Encoding) fieldStyle {
	st := fieldStyle{style: "form", explode: true}
	if enc == nil {
		return st
	}
	st.allowReserved = enc.AllowReserved
	if enc.Style != "" {
		st.style, st.explicit = enc.Style, true
	}
	if enc.Explode != nil {
		st.explode, st.explicit = *enc.Explode, true
	} else {
		st.explode = st.style == "form"
	}
	return st
}

// FormEscapeReserved escapes a form value of a Property with
// allowReserved: like formEscape, but the reserved characters that cannot
// split a form body stay literal.
func FormEscapeReserved(s string) string {
	return strings.ReplaceAll(EscapeKeep(s, ":/?@!$'()*,;[]"), "%20", "+")
}

func formEscape(s string) string { return url.QueryEscape(s) }

func hasComposite(a []any) bool {
	for _, it := range a {
		switch Normalize(it).(type) {
		case map[string]any, []any:
			return true
		}
	}
	return false
}

// encodeMultipart encodes a multipart/form-data body: scalars as text
// parts, files (binary properties, or {"base64"|"path"|"text": ...}
// objects) as file parts, arrays of scalars or files as repeated parts,
// other objects and arrays as JSON parts.
//
// A Property's encoding is honoured: contentType sets a part's type;
// style and explode, when the encoding sets either, serialise a non-file
// array or object the way they do a form body (OpenAPI 3.1 §4.8.15; the
// part's contentType is then ignored, as 3.1 says): an exploded array is
// one part per item under the same name, a non-exploded one a single part
// joined with "," (or " ", "|"), an exploded form object one part per key,
// and deepObject gives name[key] (and name[0]) parts. headers adds the
// static part headers the spec pins down (see partHeaders).
func encodeMultipart(in BodyInput, schema *openapi3.Schema, base string) (*Body, []string) {
	var obj map[string]any
	if in.Value != nil {
		var problem string
		if obj, problem = asObject("requestBody", in.Value); problem != "" {
			return nil, []string{problem}
		}
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	check := make(map[string]any, len(obj))
	var problems []string
	// Fields go before files: some APIs (Box) read metadata parts first.
	keys := SortedKeys(obj)
	slices.SortStableFunc(keys, func(a, b string) int {
		fa, fb := isFilePart(schema, a, obj[a]), isFilePart(schema, b, obj[b])
		switch {
		case fa == fb:
			return 0
		case fb:
			return -1
		}
		return 1
	})
	for _, k := range keys {
		v := Normalize(obj[k])
		if v == nil {
			continue
		}
		prop := Property(schema, k)
		var items *openapi3.Schema
		if prop != nil && prop.Items != nil {
			items = prop.Items.Value
		}
		enc := encodingFor(in.Media, k)
		st := styleOf(enc)
		extra := partHeaders(enc)
		field := "requestBody." + k
		switch x := v.(type) {
		case []any:
			if st.explicit && !isBinarySchema(items) && !anyFileObject(x) {
				writeStyledParts(w, k, st, x, extra)
				check[k] = x
				continue
			}
			if hasComposite(x) && !allFiles(x, items) {
				writeJSONPart(w, k, x, enc, extra)
				check[k] = x
				continue
			}
			var checks []any
			for i, it := range x {
				if isBinarySchema(items) || isFileObject(it) {
					f, problem := fileFromValue(fmt.Sprintf("%s[%d]", field, i), it, in.UploadsDir, isBinarySchema(items))
					if problem != "" {
						problems = append(problems, problem)
						continue
					}
					writeFilePart(w, k, f, enc, extra)
					checks = append(checks, "file")
					continue
				}
				writeTextPart(w, k, ScalarString(it), encodingType(enc), extra)
				checks = append(checks, it)
			}
			check[k] = checks
		case map[string]any:
			if isBinarySchema(prop) || isFileObject(x) {
				f, problem := fileFromValue(field, x, in.UploadsDir, true)
				if problem != "" {
					problems = append(problems, problem)
					continue
				}
				writeFilePart(w, k, f, enc, extra)
				check[k] = "file"
				continue
			}
			if st.explicit {
				writeStyledParts(w, k, st, x, extra)
				check[k] = x
				continue
			}
			writeJSONPart(w, k, x, enc, extra)
			check[k] = x
		default:
			if isBinarySchema(prop) {
				f, problem := fileFromValue(field, x, in.UploadsDir, true)
				if problem != "" {
					problems = append(problems, problem)
					continue
				}
				writeFilePart(w, k, f, enc, extra)
				check[k] = "file"
				continue
			}
			writeTextPart(w, k, ScalarString(x), encodingType(enc), extra)
			check[k] = x
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	if err := w.Close(); err != nil {
		return nil, []string{"requestBody: cannot be encoded as multipart"}
	}
	ct := mime.FormatMediaType(base, map[string]string{"boundary": w.Boundary()})
	return &Body{Data: buf.Bytes(), ContentType: ct, Check: check, HasCheck: true}, nil
}

// isFilePart reports a top-level value sent as a file part.
func isFilePart(schema *openapi3.Schema, name string, v any) bool {
	return isBinarySchema(Property(schema, name)) || isFileObject(v)
}

func allFiles(a []any, items *openapi3.Schema) bool {
	for _, it := range a {
		if !isBinarySchema(items) && !isFileObject(it) {
			return false
		}
	}
	return true
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", "%0D", "\n", "%0A")

func partHeader(name, filename, ct string, extra textproto.MIMEHeader) textproto.MIMEHeader {
	h := textproto.MIMEHeader{}
	for k, vs := range extra {
		h[k] = vs
	}
	cd := `form-data; name="` + quoteEscaper.Replace(name) + `"`
	if filename != "" {
		cd += `; filename="` + quoteEscaper.Replace(filename) + `"`
	}
	h.Set("Content-Disposition", cd)
	if ct != "" {
		h.Set("Content-Type", ct)
	}
	return h
}

// partHeaders returns the extra headers an encoding gives its parts: only
// those whose value the spec fixes (a schema with a default, or an enum of
// exactly one value), since nothing else says what to send. Headers with
// no such value, described by content, with invalid names or values, and
// those the part's own framing owns (Content-Type, which the spec says to
// ignore here, Content-Disposition, Content-Transfer-Encoding and
// Content-Length) are left out.
func partHeaders(enc *openapi3.Encoding) textproto.MIMEHeader {
	if enc == nil || len(enc.Headers) == 0 {
		return nil
	}
	var h textproto.MIMEHeader
	names := make([]string, 0, len(enc.Headers))
	for name := range enc.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ref := enc.Headers[name]
		if ref == nil || ref.Value == nil || ref.Value.Schema == nil || ref.Value.Schema.Value == nil || !ValidHeaderName(name) {
			continue
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		switch canon {
		case "Content-Type", "Content-Disposition", "Content-Transfer-Encoding", "Content-Length":
			continue
		}
		sch := ref.Value.Schema.Value
		var v any
		switch {
		case sch.Default != nil:
			v = sch.Default
		case len(sch.Enum) == 1 && sch.Enum[0] != nil:
			v = sch.Enum[0]
		default:
			continue
		}
		explode := ref.Value.Explode != nil && *ref.Value.Explode
		s := Simple(name, "simple", explode, v, Identity)
		if s == "" || BadHeaderValue(s) != "" {
			continue
		}
		if h == nil {
			h = textproto.MIMEHeader{}
		}
		h.Set(canon, s)
	}
	return h
}

// encodingType returns the first concrete type an encoding names.
func encodingType(enc *openapi3.Encoding) string {
	if enc == nil || enc.ContentType == "" {
		return ""
	}
	for _, t := range strings.Split(enc.ContentType, ",") {
		t = strings.TrimSpace(t)
		if t != "" && !strings.Contains(t, "*") {
			return t
		}
	}
	return ""
}

func writeTextPart(w *multipart.Writer, name, value, ct string, extra textproto.MIMEHeader) {
	pw, _ := w.CreatePart(partHeader(name, "", ct, extra))
	_, _ = io.WriteString(pw, value)
}

// writeStyledParts writes a non-file array or object serialised by its
// encoding's style and explode: one text part per name=value Pair, names
// and values unescaped (the part framing quotes names).
func writeStyledParts(w *multipart.Writer, name string, st fieldStyle, v any, extra textproto.MIMEHeader) {
	var pairs []Pair
	if x, ok := v.([]any); ok && st.style != "deepObject" && hasComposite(x) {
		st.style = "deepObject" // nested values have no other form
	}
	pairs = FormKV(name, st.style, st.explode, v, Identity, Identity)
	for _, p := range pairs {
		writeTextPart(w, p.K, p.V, "", extra)
	}
}

func writeJSONPart(w *multipart.Writer, name string, v any, enc *openapi3.Encoding, extra textproto.MIMEHeader) {
	ct := encodingType(enc)
	if ct == "" {
		ct = "application/json"
	}
	data, _ := json.Marshal(v)
	pw, _ := w.CreatePart(partHeader(name, "", ct, extra))
	_, _ = pw.Write(data)
}

func writeFilePart(w *multipart.Writer, name string, f fileArg, enc *openapi3.Encoding, extra textproto.MIMEHeader) {
	ct := f.contentType
	if ct == "" {
		ct = encodingType(enc)
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	filename := f.filename
	if filename == "" {
		filename = name
	}
	pw, _ := w.CreatePart(partHeader(name, filename, ct, extra))
	_, _ = pw.Write(f.data)
}

// anyFileObject reports an array with a file description among its items.
func anyFileObject(a []any) bool {
	for _, it := range a {
		if isFileObject(it) {
			return true
		}
	}
	return false
}

// isFileObject reports a value shaped as a file description: an object
// with exactly one of "base64", "path" or "text", and optionally
// "filename" and "contentType".
func isFileObject(v any) bool {
	m, ok := Normalize(v).(map[string]any)
	if !ok {
		return false
	}
	sources := 0
	for k := range m {
		switch k {
		case "base64", "path", "text":
			sources++
		case "filename", "contentType":
		default:
			return false
		}
	}
	return sources == 1
}

const fileHint = `give base64 text, or {"base64": ..., "filename": ...}, {"text": ...}, or {"path": ...} under the uploads directory`

// fileFromValue reads the file a value describes: a base64 string (when
// binary is true), or a file object.
func fileFromValue(field string, v any, uploadsDir string, binary bool) (fileArg, string) {
	switch x := Normalize(v).(type) {
	case string:
		if !binary {
			return fileArg{data: []byte(x)}, ""
		}
		data, ok := decodeBase64(x)
		if !ok {
			return fileArg{}, field + ": not valid base64; " + fileHint
		}
		return fileArg{data: data}, ""
	case map[string]any:
		if !isFileObject(x) {
			return fileArg{}, field + ": " + fileHint
		}
		f := fileArg{}
		if s, ok := x["filename"].(string); ok {
			f.filename = s
		}
		if s, ok := x["contentType"].(string); ok {
			if strings.ContainsAny(s, "\r\n") {
				return fileArg{}, field + ": contentType must be one line"
			}
			f.contentType = s
		}
		switch {
		case x["base64"] != nil:
			s, _ := x["base64"].(string)
			data, ok := decodeBase64(s)
			if !ok {
				return fileArg{}, field + ".base64: not valid base64"
			}
			f.data = data
		case x["text"] != nil:
			s, ok := x["text"].(string)
			if !ok {
				return fileArg{}, field + ".text: must be a string"
			}
			f.data = []byte(s)
		default:
			p, _ := x["path"].(string)
			data, problem := readUpload(field, p, uploadsDir)
			if problem != "" {
				return fileArg{}, problem
			}
			f.data = data
			if f.filename == "" {
				f.filename = filepath.Base(p)
			}
		}
		return f, ""
	}
	return fileArg{}, field + ": " + fileHint
}

func decodeBase64(s string) ([]byte, bool) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "data:"); ok {
		// A data URL: keep what follows ";base64,".
		if _, after, found := strings.Cut(rest, ";base64,"); found {
			s = after
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if data, err := enc.DecodeString(s); err == nil {
			return data, true
		}
	}
	return nil, false
}

// readUpload reads p, which must lie under uploadsDir. os.Root refuses
// "..", absolute escapes and symlinks leading out of the directory.
func readUpload(field, p, uploadsDir string) ([]byte, string) {
	if uploadsDir == "" {
		return nil, field + ": reading files is off (no uploads directory configured); send base64 instead"
	}
	if p == "" {
		return nil, field + ".path: empty"
	}
	rel := p
	if filepath.IsAbs(p) {
		absDir, err := filepath.Abs(uploadsDir)
		if err != nil {
			return nil, field + ".path: the uploads directory is not usable"
		}
		r, err := filepath.Rel(absDir, filepath.Clean(p))
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return nil, field + ".path: must be inside the uploads directory"
		}
		rel = r
	}
	root, err := os.OpenRoot(uploadsDir)
	if err != nil {
		return nil, field + ".path: the uploads directory is not usable"
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, field + ".path: no such file in the uploads directory"
		}
		return nil, field + ".path: must be a readable file inside the uploads directory"
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, field + ".path: not a regular file"
	}
	data, err := io.ReadAll(io.LimitReader(f, maxUploadBytes+1))
	if err != nil {
		return nil, field + ".path: cannot be read"
	}
	if len(data) > maxUploadBytes {
		return nil, fmt.Sprintf("%s.path: larger than the %d MiB upload limit", field, maxUploadBytes>>20)
	}
	return data, ""
}
