package invoke

import (
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/spec"
)

// param is a parameter with what serialising it needs.
type param struct {
	Name          string
	In            string
	Required      bool
	Style         string
	Explode       bool
	AllowReserved bool
	// JSONContent is set when the parameter is described by content with a
	// JSON media type: the value is sent as JSON text.
	JSONContent bool
	Schema      *openapi3.Schema
}

// defaultStyle returns the OpenAPI default style for a location.
func defaultStyle(in string) string {
	switch in {
	case "query", "cookie":
		return "form"
	}
	return "simple"
}

// paramsFromOperation lists the operation's parameters, path-level ones
// merged in (operation-level ones win), with style and explode resolved.
func paramsFromOperation(op *spec.Operation) []param {
	var out []param
	seen := map[string]bool{}
	add := func(p *openapi3.Parameter) {
		if p == nil {
			return
		}
		key := p.In + "\x00" + p.Name
		if seen[key] {
			return
		}
		seen[key] = true
		q := param{Name: p.Name, In: p.In, Required: p.Required || p.In == "path", AllowReserved: p.AllowReserved}
		q.Style = p.Style
		if q.Style == "" {
			q.Style = defaultStyle(p.In)
		}
		if p.Explode != nil {
			q.Explode = *p.Explode
		} else {
			q.Explode = q.Style == "form"
		}
		if p.Schema != nil {
			q.Schema = p.Schema.Value
		}
		for ct, mt := range p.Content {
			if answer.IsJSONType(ct) {
				q.JSONContent = true
				if mt != nil && mt.Schema != nil {
					q.Schema = mt.Schema.Value
				}
			}
			break
		}
		out = append(out, q)
	}
	for _, r := range op.Op.Parameters {
		if r != nil {
			add(r.Value)
		}
	}
	if op.PathItem != nil {
		for _, r := range op.PathItem.Parameters {
			if r != nil {
				add(r.Value)
			}
		}
	}
	return out
}

// paramsFromEndpoint lists the catalog's parameters with default styles,
// for when the operation cannot be rebuilt.
func paramsFromEndpoint(e *spec.Endpoint) []param {
	out := make([]param, 0, len(e.Params))
	for _, p := range e.Params {
		style := defaultStyle(p.In)
		out = append(out, param{Name: p.Name, In: p.In, Required: p.Required || p.In == "path", Style: style, Explode: style == "form"})
	}
	return out
}
