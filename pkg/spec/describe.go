package spec

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// This file renders an endpoint's contract for the inspect tool straight
// from the compact operation JSON: references resolved, cycles cut, and the
// whole bounded in size, shrinking what a model needs least first.

// Describe renders the endpoint's contract within opts' size bounds, from
// the compact operation JSON (no kin-openapi rebuild). Each call builds a
// new Contract; it is safe for concurrent use.
func (e *Endpoint) Describe(opts DescribeOptions) (c *Contract) {
	target, max := opts.TargetBytes, opts.MaxBytes
	if max <= 0 {
		max = DefaultDescribeMaxBytes
	}
	if target <= 0 {
		target = DefaultDescribeTargetBytes
	}
	target = min(target, max)
	c = &Contract{
		ID:          e.ID,
		Method:      e.Method,
		Path:        e.Path,
		Summary:     shortText(e.Summary, 200, 1),
		Description: shortText(e.Description, 300, 2),
		BaseURL:     e.BaseURL,
		Deprecated:  e.Deprecated,
	}
	if c.Description == c.Summary || strings.HasPrefix(c.Summary, strings.TrimSuffix(c.Description, "…")) {
		c.Description = ""
	}
	if e.spec == nil {
		return c
	}
	defer func() {
		// A spec is untrusted input: a schema that trips the renderer costs
		// the detail, not the server.
		if r := recover(); r != nil {
			c.Parameters, c.RequestBody, c.Responses = nil, nil, nil
			c.Elided = "parameters, body and responses could not be rendered"
		}
	}()
	d := &describer{s: e.spec, parsed: map[string]*rawSchema{}}
	d.render(e, c)
	d.shrink(c, target, max)
	return c
}

type describer struct {
	s      *Spec
	parsed map[string]*rawSchema // resolved components by reference
	nodes  int                   // nodes built in the current tree
	cap    int                   // node budget of the current tree
	notes  []elision             // what was elided, by group in order
	group  string                // group of the shrink step running
	// dropped are the descriptions shrink steps cleared, in order.
	dropped []droppedText
}

// elision is one clause of the elided note; a later step of the same group
// replaces its text, since the steps of a group cut ever more.
type elision struct{ group, text string }

func (d *describer) note(group, text string) {
	for i := range d.notes {
		if d.notes[i].group == group {
			d.notes[i].text = text
			return
		}
	}
	d.notes = append(d.notes, elision{group, text})
}

// render fills the parameters, body, responses and security of c.
func (d *describer) render(e *Endpoint, c *Contract) {
	var op map[string]json.RawMessage
	if json.Unmarshal(e.raw, &op) != nil {
		return
	}
	params, _ := field[[]json.RawMessage](op, "parameters")
	for _, raw := range params {
		p, ok := d.resolveObject(raw)
		if !ok {
			continue
		}
		cp := ContractParam{}
		cp.Name, _ = field[string](p, "name")
		cp.In, _ = field[string](p, "in")
		if cp.Name == "" || cp.In == "" {
			continue
		}
		cp.Required, _ = field[bool](p, "required")
		cp.Required = cp.Required || cp.In == "path"
		cp.Deprecated, _ = field[bool](p, "deprecated")
		desc, _ := field[string](p, "description")
		cp.Description = shortText(desc, 150, 1)
		sch, ok := p["schema"]
		if !ok {
			// A parameter may give its schema under a media type instead.
			if content, err := objectEntries(p["content"]); err == nil && len(content) > 0 {
				var mt map[string]json.RawMessage
				if json.Unmarshal(content[0].Value, &mt) == nil {
					sch, ok = mt["schema"]
				}
			}
		}
		if ok {
			d.nodes, d.cap = 0, describeBodyNodes
			cp.Schema = d.schema(sch, build{req: cp.Required, maxDepth: describeBodyDepth})
			if cp.Schema.Example == nil {
				cp.Schema.Example = shortValue(p["example"])
			}
			// The parameter's description says it once.
			if cp.Description == "" {
				cp.Description = cp.Schema.Description
			}
			cp.Schema.Description = ""
		}
		c.Parameters = append(c.Parameters, cp)
	}

	if rb, ok := op["requestBody"]; ok {
		if body, ok := d.resolveObject(rb); ok {
			cb := &ContractBody{}
			cb.Required, _ = field[bool](body, "required")
			desc, _ := field[string](body, "description")
			cb.Description = shortText(desc, 150, 1)
			content, _ := objectEntries(body["content"])
			var first json.RawMessage
			var differ []string
			for i, en := range content {
				cb.ContentTypes = append(cb.ContentTypes, en.Key)
				var mt map[string]json.RawMessage
				_ = json.Unmarshal(en.Value, &mt)
				if i == 0 {
					first = mt["schema"]
				} else if !bytes.Equal(mt["schema"], first) {
					differ = append(differ, en.Key)
				}
			}
			if len(first) > 0 {
				d.nodes, d.cap = 0, describeBodyNodes
				cb.Schema = d.schema(first, build{req: true, maxDepth: describeBodyDepth})
			}
			if len(differ) > 0 {
				cb.Note = "schema shown is for " + cb.ContentTypes[0] + "; " + strings.Join(differ, ", ") + " take a different one"
			}
			// Some specs (Stripe's) give every GET an optional, empty form
			// body: offering it would only invite a body the call ignores.
			empty := cb.Schema == nil || (cb.Schema.Type == "object" && cb.Schema.bare())
			if (len(cb.ContentTypes) > 0 || cb.Schema != nil) && !(!cb.Required && empty && (e.Method == "GET" || e.Method == "HEAD")) {
				c.RequestBody = cb
			}
		}
	}

	if rs, ok := op["responses"]; ok {
		c.Responses = d.responses(rs)
	}

	for _, alt := range e.Security {
		cs := ContractSecurity{Schemes: []ContractScheme{}}
		for _, name := range alt {
			sc, ok := d.s.Schemes[name]
			if !ok {
				cs.Schemes = append(cs.Schemes, ContractScheme{Name: name, Type: "unknown"})
				continue
			}
			x := ContractScheme{Name: name, Type: sc.Type, Scheme: sc.Scheme}
			if sc.Kind() == SchemeAPIKey {
				x.In, x.ParamName = sc.In, sc.Name
			}
			cs.Schemes = append(cs.Schemes, x)
		}
		c.Security = append(c.Security, cs)
	}
}

func (d *describer) responses(raw json.RawMessage) *ContractResponses {
	entries, err := objectEntries(raw)
	if err != nil || len(entries) == 0 {
		return nil
	}
	out := &ContractResponses{}
	success := -1
	for i, en := range entries {
		if len(en.Key) == 3 && en.Key[0] == '2' && (success < 0 || en.Key < entries[success].Key) {
			success = i
		}
	}
	if success < 0 {
		for i, en := range entries {
			if en.Key == "default" {
				success = i
			}
		}
	}
	for i, en := range entries {
		resp, ok := d.resolveObject(en.Value)
		if !ok {
			continue
		}
		desc, _ := field[string](resp, "description")
		if i != success {
			if out.Other == nil {
				out.Other = map[string]string{}
			}
			out.Other[en.Key] = shortText(desc, 80, 1)
			continue
		}
		cr := &ContractResponse{Status: en.Key, Description: shortText(desc, 120, 1)}
		content, _ := objectEntries(resp["content"])
		pick := -1
		for j, mt := range content {
			if isJSONType(mt.Key) {
				pick = j
				break
			}
		}
		if pick < 0 && len(content) > 0 {
			pick = 0
		}
		if pick >= 0 {
			cr.ContentType = content[pick].Key
			var mt map[string]json.RawMessage
			if json.Unmarshal(content[pick].Value, &mt) == nil && len(mt["schema"]) > 0 {
				d.nodes, d.cap = 0, describeRespNodes
				cr.Schema = d.schema(mt["schema"], build{resp: true, maxDepth: describeRespDepth})
			}
		}
		out.Success = cr
	}
	return out
}

func isJSONType(mt string) bool {
	mt, _, _ = strings.Cut(strings.ToLower(mt), ";")
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "*/*"
}

func (d *describer) elided() string {
	if len(d.notes) == 0 {
		return ""
	}
	texts := make([]string, len(d.notes))
	for i, n := range d.notes {
		texts[i] = n.text
	}
	return strings.Join(texts, "; ")
}

var (
	mdLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	htmlTag = regexp.MustCompile(`</?[a-zA-Z][^>]*>`)
)

// shortText cleans markdown and HTML out of s and keeps at most sentences
// sentences within max bytes.
func shortText(s string, max, sentences int) string {
	if s == "" {
		return ""
	}
	if strings.Contains(s, "](") {
		s = mdLink.ReplaceAllString(s, "$1")
	}
	if strings.Contains(s, "<") {
		s = htmlTag.ReplaceAllString(s, "")
	}
	s = strings.ReplaceAll(s, "**", "")
	s = strings.Join(strings.Fields(s), " ")
	// Keep whole sentences while they fit: ". " ends one.
	end := 0
	for n := 0; n < sentences && end < len(s); n++ {
		next := len(s)
		if i := strings.Index(s[end:], ". "); i >= 0 {
			next = end + i + 1
		}
		if next > max {
			break
		}
		end = next
	}
	if end > 0 {
		return s[:end]
	}
	return firstSentences(s, max)
}
