package spec

import (
	"context"
	"encoding/json"
	"strings"
)

// genericNames are file names that say nothing of the API: what frameworks
// serve their spec as (FastAPI's openapi.json, springdoc's v3/api-docs).
var genericNames = map[string]bool{
	"openapi": true, "swagger": true, "api-docs": true, "v2-api-docs": true, "v3-api-docs": true,
	"openapi3": true,
}

// maxTitleName bounds a name made from a title: it starts every endpoint id.
const maxTitleName = 32

// IsGenericName reports whether name, as NameFromLocation gives it, says
// nothing of the API, so that the spec's title names it instead.
func IsGenericName(name string) bool { return genericNames[strings.ToLower(name)] }

// NameFromTitle slugs an info.title into a spec name: lower-case letters
// and digits, runs of anything else one dash, at most 32 bytes cut at a
// dash. It returns "" when nothing is left.
func NameFromTitle(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > maxTitleName {
		out = out[:maxTitleName]
		if i := strings.LastIndexByte(out, '-'); i > 0 {
			out = out[:i]
		}
	}
	return strings.Trim(out, "-")
}

// defaultName is the name of a spec read from location whose OpenAPI 3
// JSON is doc, when the config gives none: the file name, or the title
// when the file name is generic (a FastAPI app's spec is "openapi.json").
func defaultName(location string, doc []byte) string {
	name := NameFromLocation(location)
	if !IsGenericName(name) {
		return name
	}
	var head struct {
		Info struct {
			Title string `json:"title"`
		} `json:"info"`
	}
	if json.Unmarshal(doc, &head) == nil {
		if t := NameFromTitle(head.Info.Title); t != "" {
			return t
		}
	}
	return name
}

// PeekName reads the spec at location and returns the name Load would give
// it without opts.Name, so that a caller can key its settings by that name
// before loading. Only a generic file name needs the read.
func PeekName(ctx context.Context, location string, opts Options) (string, error) {
	name := NameFromLocation(location)
	if !IsGenericName(name) {
		return name, nil
	}
	data, err := Read(ctx, location, opts)
	if err != nil {
		return name, err
	}
	doc, err := refDocumentJSON(data)
	if err != nil {
		return name, err
	}
	return defaultName(location, doc), nil
}
