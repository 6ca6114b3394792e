package spec

import (
	"encoding/json"
	"strconv"
	"strings"
)

// ResponseAbout returns a few words on what the operation's success answer
// is: the name of the component schema its JSON body refers to, and that
// schema's title and the opening of its description ("subscription
// Subscriptions allow you to charge a customer on a recurring basis" for
// one of Stripe's). A list answer names the schema of its items when the
// body is an array or wraps one in "data" or "items". It returns "" when
// the spec says nothing about the answer. Search indexes it at a low
// weight: an operation's answer often names what the operation is about.
// It is worked out once at load (About) and kept in the catalog cache.
func (e *Endpoint) ResponseAbout() string { return e.About }

// responseAbout works out About; memo holds what each component schema
// says, by reference, for the spec's other operations.
func (e *Endpoint) responseAbout(memo map[string]string) string {
	if e.spec == nil || len(e.raw) == 0 {
		return ""
	}
	var op struct {
		Responses json.RawMessage `json:"responses"`
	}
	if json.Unmarshal(e.raw, &op) != nil || len(op.Responses) == 0 {
		return ""
	}
	entries, err := objectEntries(op.Responses)
	if err != nil {
		return ""
	}
	pick := -1
	for i, en := range entries {
		if len(en.Key) == 3 && en.Key[0] == '2' && (pick < 0 || en.Key < entries[pick].Key) {
			pick = i
		}
	}
	if pick < 0 {
		return ""
	}
	resp, _, ok := e.spec.object(entries[pick].Value, "responses")
	if !ok {
		return ""
	}
	content, err := objectEntries(resp["content"])
	if err != nil {
		return ""
	}
	for _, mt := range content {
		if !isJSONType(mt.Key) {
			continue
		}
		var media struct {
			Schema json.RawMessage `json:"schema"`
		}
		if json.Unmarshal(mt.Value, &media) != nil || len(media.Schema) == 0 {
			return ""
		}
		return e.spec.schemaAbout(media.Schema, 2, memo)
	}
	return ""
}

// object decodes raw as a JSON object, following local references into
// section; name is the component's name when raw was a reference.
func (s *Spec) object(raw json.RawMessage, section string) (map[string]json.RawMessage, string, bool) {
	name := ""
	if ref, ok := topLevelRef(raw); ok {
		target, ok := s.resolve(ref, section)
		if !ok {
			return nil, "", false
		}
		_, name, _ = splitComponentRef(ref)
		raw = target
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, "", false
	}
	return m, name, true
}

// schemaAbout names a schema: its component name, title and the first
// sentence of its description; for a list (an array, or an object whose
// "data" or "items" is one) the schema of its items, depth levels down.
func (s *Spec) schemaAbout(raw json.RawMessage, depth int, memo map[string]string) string {
	if ref, ok := topLevelRef(raw); ok {
		key := ref + "\x00" + strconv.Itoa(depth)
		if v, ok := memo[key]; ok {
			return v
		}
		v := s.schemaAboutOf(raw, depth, memo)
		memo[key] = v
		return v
	}
	return s.schemaAboutOf(raw, depth, memo)
}

func (s *Spec) schemaAboutOf(raw json.RawMessage, depth int, memo map[string]string) string {
	m, name, ok := s.object(raw, "schemas")
	if !ok {
		return ""
	}
	var parts []string
	if name != "" {
		parts = append(parts, name)
	}
	if t := rawString(m["title"]); t != "" && t != name {
		parts = append(parts, t)
	}
	if d := rawString(m["description"]); d != "" {
		parts = append(parts, shortText(d, 160, 1))
	}
	if depth > 0 {
		items := m["items"]
		if len(items) == 0 {
			if props, ok := field[map[string]json.RawMessage](m, "properties"); ok {
				for _, k := range []string{"data", "items"} {
					if p, ok := props[k]; ok {
						if pm, _, ok := s.object(p, "schemas"); ok && len(pm["items"]) > 0 {
							items = pm["items"]
							break
						}
					}
				}
			}
		}
		if len(items) > 0 {
			if sub := s.schemaAbout(items, depth-1, memo); sub != "" {
				parts = append(parts, sub)
			}
		}
	}
	return strings.Join(parts, " ")
}
