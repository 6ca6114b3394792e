package spec

import (
	"encoding/json"
	"slices"
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

// OwnWords returns what the spec's own text says of the operation's
// parts: the first sentence of each parameter's description, of each
// field's description in its success answer (its items' fields, for a
// list), and of its tags' descriptions, bounded to GlossaryMax bytes.
// Search indexes these words at a low weight, for intents worded the way
// the spec explains an operation rather than names it. It is worked out
// once at load (Glossary) and kept in the catalog cache.
func (e *Endpoint) OwnWords() string { return e.Glossary }

// GlossaryMax bounds an endpoint's Glossary; glossaryPart bounds each
// description in it.
const (
	GlossaryMax  = 600
	glossaryPart = 120
)

// glossary completes Glossary (the parameters' words, from buildEndpoint)
// with the words of the fields of success, the answer's schema, and the
// tags' words. fields memoises fieldWords by schema reference; tags holds
// each tag's description.
func (e *Endpoint) glossary(success json.RawMessage, fields map[string]string, tags map[string]string) string {
	parts := []string{e.Glossary}
	if len(success) > 0 {
		parts = append(parts, e.spec.fieldWords(success, 1, fields))
	}
	for _, t := range e.Tags {
		parts = append(parts, tags[t])
	}
	out := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
	if len(out) > GlossaryMax {
		out = out[:GlossaryMax]
		if i := strings.LastIndexByte(out, ' '); i > 0 {
			out = out[:i]
		}
	}
	return out
}

// fieldWords is the first sentence of each property's description of an
// object schema; for a list (an array, or an object whose "data" or
// "items" is one), its items', depth levels down. memo keeps what a
// referenced schema gives, at each depth, and a referenced property's
// description: GitHub's lists of one large schema (a repository) would
// otherwise decode it, and each of its properties, once an operation.
func (s *Spec) fieldWords(raw json.RawMessage, depth int, memo map[string]string) string {
	return byRef(memo, raw, "f"+strconv.Itoa(depth), func() string { return s.fieldWordsOf(raw, depth, memo) })
}

// byRef is compute(), kept in memo under kind and raw's reference when raw
// is a reference, so a component schema named by many operations is read
// once for each kind of reading.
func byRef(memo map[string]string, raw json.RawMessage, kind string, compute func() string) string {
	ref, isRef := topLevelRef(raw)
	if !isRef {
		return compute()
	}
	key := kind + "\x00" + ref
	if v, ok := memo[key]; ok {
		return v
	}
	v := compute()
	memo[key] = v
	return v
}

func (s *Spec) fieldWordsOf(raw json.RawMessage, depth int, memo map[string]string) string {
	m, _, ok := s.object(raw, "schemas")
	if !ok {
		return ""
	}
	if items := m["items"]; len(items) > 0 {
		if depth > 0 {
			return s.fieldWords(items, depth-1, memo)
		}
		return ""
	}
	props, _ := field[map[string]json.RawMessage](m, "properties")
	if depth > 0 {
		for _, k := range []string{"data", "items"} {
			if p, ok := props[k]; ok {
				if pm, _, ok := s.object(p, "schemas"); ok && len(pm["items"]) > 0 {
					return s.fieldWords(pm["items"], depth-1, memo)
				}
			}
		}
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names) // a map's order would change the words between loads
	var said []string
	n := 0
	for _, k := range names {
		if d := s.fieldDescription(props[k], memo); d != "" {
			said = append(said, d)
			if n += len(d) + 1; n > GlossaryMax {
				break
			}
		}
	}
	return strings.Join(said, " ")
}

// tagDescriptions maps each tag of the document's "tags" to the first
// sentence of its description.
func tagDescriptions(top map[string]json.RawMessage) map[string]string {
	list, _ := field[[]struct {
		Name        string `json:"name"`
		Description any    `json:"description"`
	}](top, "tags")
	out := make(map[string]string, len(list))
	for _, t := range list {
		d, _ := t.Description.(string)
		if d = shortText(d, glossaryPart*2, 1); d != "" && t.Name != "" {
			out[t.Name] = d
		}
	}
	return out
}

// successSchema is the schema of the operation's first 2xx JSON answer,
// or nil.
func (e *Endpoint) successSchema() json.RawMessage {
	if e.spec == nil || len(e.raw) == 0 {
		return nil
	}
	var op struct {
		Responses json.RawMessage `json:"responses"`
	}
	if json.Unmarshal(e.raw, &op) != nil || len(op.Responses) == 0 {
		return nil
	}
	// e.raw is JSON that json.Marshal wrote.
	entries, ok := rawEntries(op.Responses)
	if !ok {
		return nil
	}
	pick := -1
	for i, en := range entries {
		if len(en.Key) == 3 && en.Key[0] == '2' && (pick < 0 || en.Key < entries[pick].Key) {
			pick = i
		}
	}
	if pick < 0 {
		return nil
	}
	resp, _, ok := e.spec.object(entries[pick].Value, "responses")
	if !ok {
		return nil
	}
	content, err := objectEntries(resp["content"])
	if err != nil {
		return nil
	}
	for _, mt := range content {
		if !isJSONType(mt.Key) {
			continue
		}
		var media struct {
			Schema json.RawMessage `json:"schema"`
		}
		if json.Unmarshal(mt.Value, &media) != nil {
			return nil
		}
		return media.Schema
	}
	return nil
}

// responseAbout works out About from success, the answer's schema; memo
// holds what each component schema says, by reference, for the spec's
// other operations.
func (e *Endpoint) responseAbout(success json.RawMessage, memo map[string]string) string {
	if len(success) > 0 {
		return e.spec.schemaAbout(success, 2, memo)
	}
	return ""
}

// fieldDescription is the first sentence of a property schema's
// description ("" when it has none, or is not an object); a referenced
// one is kept in memo.
func (s *Spec) fieldDescription(raw json.RawMessage, memo map[string]string) string {
	return byRef(memo, raw, "d", func() string {
		if pm, _, ok := s.object(raw, "schemas"); ok {
			return shortText(rawString(pm["description"]), glossaryPart, 1)
		}
		return ""
	})
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
	// raw is a part of the spec, valid JSON, read once per schema and
	// operation at load: split, not decoded.
	m, ok := rawObject(raw)
	if !ok {
		return nil, "", false
	}
	return m, name, true
}

// schemaAbout names a schema: its component name, title and the first
// sentence of its description; for a list (an array, or an object whose
// "data" or "items" is one) the schema of its items, depth levels down.
func (s *Spec) schemaAbout(raw json.RawMessage, depth int, memo map[string]string) string {
	return byRef(memo, raw, strconv.Itoa(depth), func() string { return s.schemaAboutOf(raw, depth, memo) })
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
