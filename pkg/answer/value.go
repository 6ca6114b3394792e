package answer

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// BodyKind is what an answer's body holds, as Answer.Value reads it.
type BodyKind int

// Kinds of body.
const (
	// BodyNone: the answer has no body.
	BodyNone BodyKind = iota
	// BodyJSON: a JSON value, decoded.
	BodyJSON
	// BodyText: text (UTF-8 as far as it is valid).
	BodyText
	// BodyBinary: anything else (an image, a PDF, a zip).
	BodyBinary
)

// Value is an answer's body as every reader takes it: the view the model
// reads (NewView) and a script's api.invoke both start here, so a body is
// JSON, text or binary by one rule.
type Value struct {
	Kind BodyKind
	// JSON is the decoded body, numbers as json.Number: BodyJSON only.
	JSON any
	// Data is the body's bytes as stored; for BodyJSON, its JSON text.
	Data []byte
	// Base is the body's media type without parameters, lower case.
	Base string
	// BadJSON is true for a body its type (or, without a type, its first
	// byte) says is JSON that did not decode; it is then BodyText.
	BadJSON bool
	// Note says, for the model, why a body its type says is JSON is text.
	Note string
}

// Value reads the body by the one rule: JSON when its type says so (or,
// with no type, when it starts as an object or array) and it decodes (the
// answer's Decoded when set, else decoded here, once); text when its type
// is a text type, when such JSON did not decode, or when it has no type and
// is valid UTF-8; JSON too under a vendor type that names json (AWS's
// application/x-amz-json-1.1) when it decodes, else text when it is valid
// UTF-8; binary otherwise. The answer is not changed.
func (a *Answer) Value() Value {
	v := Value{Data: a.Body}
	if len(a.Body) == 0 {
		return v
	}
	v.Base = MediaBase(a.ContentType)
	trimmed := bytes.TrimSpace(a.Body)
	looksJSON := v.Base == "" && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
	switch {
	case IsJSONType(v.Base) || looksJSON:
		if a.Decoded != nil {
			v.Kind, v.JSON = BodyJSON, a.Decoded
			return v
		}
		if j, err := DecodeJSON(a.Body); err == nil {
			v.Kind, v.JSON = BodyJSON, j
			return v
		}
		v.Kind, v.BadJSON = BodyText, true
		switch {
		case a.Truncated:
			v.Note = "the body was cut at the size limit, so it is not complete JSON"
		case !looksJSON:
			v.Note = "the body is not valid JSON although its content type says so"
		}
	case IsTextType(v.Base) || v.Base == "" && utf8.Valid(a.Body):
		v.Kind = BodyText
	case strings.Contains(v.Base, "json"):
		if j, err := DecodeJSON(a.Body); err == nil {
			v.Kind, v.JSON = BodyJSON, j
		} else if utf8.Valid(a.Body) {
			v.Kind = BodyText
		} else {
			v.Kind = BodyBinary
		}
	default:
		v.Kind = BodyBinary
	}
	return v
}
