package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// This file builds a Spec from OpenAPI 3 JSON without kin-openapi: each
// level is decoded only as deep as the catalog needs, and what is not
// understood is skipped with a warning rather than failing the spec.

var methodOrder = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace", "query"}

type rawServer struct {
	URL       string `json:"url"`
	Variables map[string]struct {
		Default any   `json:"default"`
		Enum    []any `json:"enum"`
	} `json:"variables"`
}

type entry struct {
	Key   string
	Value json.RawMessage
}

// objectEntries decodes a JSON object keeping its key order.
func objectEntries(raw []byte) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	var out []entry
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, entry{Key: key, Value: v})
	}
	return out, nil
}

// field decodes one field leniently: a value of the wrong type is ignored.
func field[T any](m map[string]json.RawMessage, key string) (T, bool) {
	var v T
	raw, ok := m[key]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return v, false
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false
	}
	return v, true
}

func buildRaw(name, location, version string, doc []byte, opts Options) (*Spec, error) {
	top, ok := rawObject(doc)
	if !ok {
		var v map[string]json.RawMessage
		err := json.Unmarshal(doc, &v)
		if err == nil {
			err = errors.New("not an object")
		}
		return nil, fmt.Errorf("not a JSON object: %s", jsonErrorText(err))
	}
	s := &Spec{Name: name, Location: location, Version: version}
	s.OpenAPI, _ = field[string](top, "openapi")
	if version == "2.0" || s.OpenAPI == "" {
		s.OpenAPI = "3.0.3"
	}
	if info, ok := field[map[string]json.RawMessage](top, "info"); ok {
		s.Title, _ = field[string](info, "title")
		s.APIVersion, _ = field[string](info, "version")
		d, _ := field[string](info, "description")
		s.Description = firstSentences(d, 200)
		s.StatedLimit = statedLimit(top, info, d)
	} else {
		s.StatedLimit = statedLimit(top, nil, "")
	}
	s.readComponents(top)
	s.Schemes = rawSchemes(s.Components["securitySchemes"])
	s.breakRefLoops()
	depth := newDepthChecker(s)

	var specURL *url.URL
	if isURL(location) {
		specURL, _ = url.Parse(location)
	}
	servers, _ := field[[]rawServer](top, "servers")
	s.BaseURL = opts.BaseURL
	if s.BaseURL == "" {
		s.BaseURL = rawServerURL(servers, specURL)
		if s.BaseURL != "" && !isURL(s.BaseURL) {
			s.Warnings = append(s.Warnings, fmt.Sprintf("the server URL %q is relative and the spec was not loaded from a URL: set base_url so calls have somewhere to go", s.BaseURL))
		}
	}
	docSecurity, _ := field[[]map[string][]string](top, "security")

	pathsRaw, ok := top["paths"]
	if !ok || string(pathsRaw) == "null" {
		return s, nil
	}
	paths, ok := rawEntries(pathsRaw)
	var err error
	if !ok {
		paths, err = objectEntries(pathsRaw)
	}
	if err != nil {
		return nil, fmt.Errorf("paths: %s", jsonErrorText(err))
	}
	s.readPaths(paths, pathContext{docSecurity: docSecurity, specURL: specURL, opts: opts, tags: tagDescriptions(top)}, depth)
	return s, nil
}

// readComponents reads the document's components; sections of the wrong
// shape are dropped one by one, with a warning each.
func (s *Spec) readComponents(top map[string]json.RawMessage) {
	if comps, ok := top["components"]; ok {
		if m, ok := rawComponents(comps); ok {
			s.Components = m
			return
		}
		if err := json.Unmarshal(comps, &s.Components); err != nil {
			// Sections of the wrong shape are dropped one by one.
			var loose map[string]json.RawMessage
			if json.Unmarshal(comps, &loose) == nil {
				s.Components = map[string]map[string]json.RawMessage{}
				for sec, raw := range loose {
					var m map[string]json.RawMessage
					if json.Unmarshal(raw, &m) == nil {
						s.Components[sec] = m
					} else {
						s.Warnings = append(s.Warnings, fmt.Sprintf("components.%s is not an object: ignored", sec))
					}
				}
			}
		}
	}
}

// rawComponents is the components object comps, of valid JSON, read as
// json.Unmarshal reads it into a map of sections, without checking and
// decoding 4 MB of GitHub's spec once more: each value a slice of one copy
// of comps, so the document's bytes are not held for them. ok is false
// when a section is not an object or null (readComponents then drops it
// with a warning).
func rawComponents(comps []byte) (map[string]map[string]json.RawMessage, bool) {
	if string(comps) == "null" {
		return nil, true
	}
	comps = bytes.Clone(comps)
	secs, ok := rawObject(comps)
	if !ok {
		return nil, false
	}
	out := make(map[string]map[string]json.RawMessage, len(secs))
	for sec, raw := range secs {
		if string(raw) == "null" {
			out[sec] = nil
			continue
		}
		if out[sec], ok = rawObject(raw); !ok {
			return nil, false
		}
	}
	return out, true
}

// resolve follows a local "#/components/<section>/<name>" reference, and
// chains of them, to the JSON they name.
func (s *Spec) resolve(ref, wantSection string) (json.RawMessage, bool) {
	for range 16 {
		section, name, ok := splitComponentRef(ref)
		if !ok || (wantSection != "" && section != wantSection) {
			return nil, false
		}
		raw, ok := s.Component(section, name)
		if !ok {
			return nil, false
		}
		var probe struct {
			Ref string `json:"$ref"`
		}
		if json.Unmarshal(raw, &probe) != nil || probe.Ref == "" {
			return raw, true
		}
		ref = probe.Ref
	}
	return nil, false
}

func (s *Spec) buildEndpoint(path, method string, opRaw json.RawMessage, itemParams []json.RawMessage,
	itemServers []rawServer, docSecurity []map[string][]string, specURL *url.URL, opts Options) (*Endpoint, string) {
	op, ok := rawObject(opRaw)
	if !ok {
		return nil, fmt.Sprintf("%s %s is not an object: skipped", strings.ToUpper(method), path)
	}
	e := &Endpoint{Spec: s.Name, Method: strings.ToUpper(method), Path: path, spec: s}
	e.OperationID, _ = field[string](op, "operationId")
	e.Summary, _ = field[string](op, "summary")
	e.Summary = strings.TrimSpace(e.Summary)
	e.Description, _ = field[string](op, "description")
	e.Description = strings.TrimSpace(e.Description)
	e.Tags, _ = field[[]string](op, "tags")
	e.Deprecated, _ = field[bool](op, "deprecated")
	if oid := cleanOperationID(e.OperationID); oid != "" {
		e.ID = s.Name + "." + oid
	} else {
		e.ID = s.Name + "." + slugID(e.Method, path)
	}

	rawParams, warn := s.mergeParams(e, op, itemParams)
	if w := s.readBody(e, op); w != "" {
		warn = append(warn, w)
	}

	// "security": null is no security field at all, as kin-openapi reads
	// it: the document's requirements apply. Read as "none", it would send
	// the call without the credentials it needs.
	if sec, ok := field[[]map[string][]string](op, "security"); ok || (op["security"] != nil && string(op["security"]) != "null") {
		e.Security = securityNames(sec)
	} else {
		e.Security = securityNames(docSecurity)
	}

	e.BaseURL = opts.BaseURL
	if e.BaseURL == "" {
		opServers, _ := field[[]rawServer](op, "servers")
		switch {
		case len(opServers) > 0:
			e.BaseURL = rawServerURL(opServers, specURL)
		case len(itemServers) > 0:
			e.BaseURL = rawServerURL(itemServers, specURL)
		default:
			e.BaseURL = s.BaseURL
		}
	}

	// The compact operation keeps what describes the call, references intact.
	if len(rawParams) > 0 {
		op["parameters"], _ = json.Marshal(rawParams)
	} else {
		delete(op, "parameters")
	}
	delete(op, "servers")
	delete(op, "callbacks")
	raw, err := json.Marshal(op)
	if err != nil {
		return nil, fmt.Sprintf("%s %s: %s: skipped", e.Method, path, oneLine(err.Error()))
	}
	e.raw = raw
	w := ""
	if len(warn) > 0 {
		w = fmt.Sprintf("%s %s: %s ignored", e.Method, path, strings.Join(warn, ", "))
	}
	return e, w
}

// mergeParams lists e's parameters, the path-level ones merged in and the
// operation's own winning on name and location, and returns them raw for the
// compact operation, with a warning for each that cannot be read. It also
// sets e's glossary from their descriptions.
func (s *Spec) mergeParams(e *Endpoint, op map[string]json.RawMessage, itemParams []json.RawMessage) (rawParams []json.RawMessage, warn []string) {
	opParams, _ := field[[]json.RawMessage](op, "parameters")
	type resolved struct {
		raw  json.RawMessage
		name string
		in   string
		req  bool
		desc string
	}
	read := func(raw json.RawMessage) (resolved, bool) {
		body := raw
		var probe struct {
			Ref string `json:"$ref"`
		}
		if json.Unmarshal(raw, &probe) == nil && probe.Ref != "" {
			var ok bool
			if body, ok = s.resolve(probe.Ref, "parameters"); !ok {
				return resolved{}, false
			}
		}
		var p struct {
			Name        string `json:"name"`
			In          string `json:"in"`
			Required    any    `json:"required"`
			Description any    `json:"description"`
		}
		if json.Unmarshal(body, &p) != nil || p.Name == "" || p.In == "" {
			return resolved{}, false
		}
		req, _ := p.Required.(bool)
		desc, _ := p.Description.(string)
		return resolved{raw: raw, name: p.Name, in: p.In, req: req || p.In == "path", desc: desc}, true
	}
	var mine []resolved
	have := map[string]bool{}
	for _, raw := range opParams {
		r, ok := read(raw)
		if !ok {
			warn = append(warn, "a parameter that cannot be read")
			continue
		}
		have[r.in+"\x00"+r.name] = true
		mine = append(mine, r)
	}
	var merged []resolved
	for _, raw := range itemParams {
		r, ok := read(raw)
		if !ok {
			warn = append(warn, "a path-level parameter that cannot be read")
			continue
		}
		if !have[r.in+"\x00"+r.name] {
			merged = append(merged, r)
		}
	}
	merged = append(merged, mine...)
	rawParams = make([]json.RawMessage, len(merged))
	var said []string
	for i, r := range merged {
		e.Params = append(e.Params, Param{Name: r.name, In: r.in, Required: r.req})
		rawParams[i] = r.raw
		if d := shortText(r.desc, glossaryPart, 1); d != "" {
			said = append(said, d)
		}
	}
	e.Glossary = strings.Join(said, " ")

	return rawParams, warn
}

// readBody sets e's body types and whether a body is required; it says what
// went wrong when the body cannot be resolved.
func (s *Spec) readBody(e *Endpoint, op map[string]json.RawMessage) string {
	if rb, ok := op["requestBody"]; ok && string(rb) != "null" {
		body := rb
		var probe struct {
			Ref string `json:"$ref"`
		}
		if json.Unmarshal(rb, &probe) == nil && probe.Ref != "" {
			body, ok = s.resolve(probe.Ref, "requestBodies")
		}
		if ok {
			var b map[string]json.RawMessage
			if json.Unmarshal(body, &b) == nil {
				e.BodyRequired, _ = field[bool](b, "required")
				if c, ok := b["content"]; ok {
					if ents, err := objectEntries(c); err == nil {
						for _, en := range ents {
							e.BodyTypes = append(e.BodyTypes, en.Key)
						}
					}
				}
			}
		} else {
			return "a request body that cannot be resolved"
		}
	}

	return ""
}

func securityNames(reqs []map[string][]string) [][]string {
	if reqs == nil {
		return nil
	}
	out := make([][]string, 0, len(reqs))
	for _, r := range reqs {
		names := make([]string, 0, len(r))
		for n := range r {
			names = append(names, n)
		}
		sort.Strings(names)
		out = append(out, names)
	}
	return out
}

// authWord finds the scheme word a description shows before the key:
// "Authorization: SSWS {API Token}".
var authWord = regexp.MustCompile(`(?i)authorization:?\s*` + "`?" + `\s*([a-z][a-z0-9_-]{1,20})\s+[{<\[]`)

// botName is a scheme named for a bot token (Discord's BotToken).
var botName = regexp.MustCompile(`(?i)\bbot\b|^bot`)

// authPrefix is the word an apiKey sent as the whole Authorization header
// needs before the key, as the scheme's description or name says: the
// upstream refuses a bare key (Kubernetes' BearerToken, Discord's BotToken,
// Okta's SSWS). "" when neither says.
func authPrefix(name, description string) string {
	if m := authWord.FindStringSubmatch(description); m != nil {
		return m[1]
	}
	text := name + " " + description
	switch {
	case strings.Contains(text, "SSWS"):
		return "SSWS"
	case botName.MatchString(name) || strings.Contains(description, "Bot "):
		return "Bot"
	case strings.Contains(strings.ToLower(text), "bearer"):
		return "Bearer"
	}
	return ""
}

func rawSchemes(section map[string]json.RawMessage) map[string]SecurityScheme {
	if len(section) == 0 {
		return nil
	}
	out := make(map[string]SecurityScheme, len(section))
	for name, raw := range section {
		var v struct {
			Type        string `json:"type"`
			In          string `json:"in"`
			Name        string `json:"name"`
			Scheme      string `json:"scheme"`
			Description string `json:"description"`
			Flows       map[string]struct {
				TokenURL string `json:"tokenUrl"`
			} `json:"flows"`
		}
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		sc := SecurityScheme{Type: v.Type, In: v.In, Name: v.Name, Scheme: strings.ToLower(v.Scheme)}
		if v.Type == "apiKey" && v.In == "header" && strings.EqualFold(v.Name, "Authorization") {
			sc.AuthPrefix = authPrefix(name, v.Description)
		}
		for _, f := range []string{"clientCredentials", "authorizationCode", "implicit", "password"} {
			if fl, ok := v.Flows[f]; ok {
				sc.Flows = append(sc.Flows, f)
				if f == "clientCredentials" {
					sc.TokenURL = fl.TokenURL
				}
			}
		}
		out[name] = sc
	}
	return out
}

// rawServerURL picks the first server, fills its variables from their
// defaults, and resolves a relative URL against the spec's own URL.
func rawServerURL(servers []rawServer, specURL *url.URL) string {
	if len(servers) == 0 {
		if specURL != nil {
			return specURL.Scheme + "://" + specURL.Host
		}
		return ""
	}
	srv := servers[0]
	u := srv.URL
	for name, v := range srv.Variables {
		val := ""
		if v.Default != nil {
			val = fmt.Sprint(v.Default)
		} else if len(v.Enum) > 0 {
			val = fmt.Sprint(v.Enum[0])
		}
		u = strings.ReplaceAll(u, "{"+name+"}", val)
	}
	if specURL != nil && !strings.Contains(u, "://") {
		if ref, err := url.Parse(u); err == nil {
			u = specURL.ResolveReference(ref).String()
		}
	}
	return strings.TrimSuffix(u, "/")
}

// breakRefLoops replaces schemas that are a $ref loop with no schema in
// between ("C": {"$ref": "#/components/schemas/C"}, or A -> B -> A) by the
// empty schema, which accepts any value, and says so in a warning. Such a
// schema describes nothing; left alone, kin-openapi resolves it to no
// schema at all and panics validating a call. Replacing it keeps the
// operations that use it callable. Loops with structure in between (a
// "children" array of the same type) are legitimate and untouched.
func (s *Spec) breakRefLoops() {
	schemas := s.Components["schemas"]
	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	done := map[string]bool{}
	for _, name := range names {
		var chain []string
		at := map[string]int{}
		for cur := name; !done[cur]; {
			if i, seen := at[cur]; seen {
				loop := chain[i:]
				for _, n := range loop {
					schemas[n] = json.RawMessage(`{}`)
				}
				s.Warnings = append(s.Warnings, fmt.Sprintf("components.schemas: a $ref loop with no schema in between (%s -> %s): treated as any value",
					strings.Join(loop, " -> "), loop[0]))
				break
			}
			at[cur] = len(chain)
			chain = append(chain, cur)
			next, ok := pureSchemaRef(schemas[cur])
			if !ok {
				break
			}
			if _, exists := schemas[next]; !exists {
				break
			}
			cur = next
		}
		for _, n := range chain {
			done[n] = true
		}
	}
}

// pureSchemaRef returns the schema a schema object refers to as a whole, by
// "$ref": "#/components/schemas/<name>". kin-openapi reads nothing else of
// an object with a $ref, so its siblings do not matter.
func pureSchemaRef(raw json.RawMessage) (string, bool) {
	ref, ok := topLevelRef(raw)
	if !ok {
		return "", false
	}
	rest, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	section, name, ok := splitComponentRef(ref)
	return name, ok && section == "schemas"
}

// rawObject splits a JSON object into its members without decoding or
// copying them: each value is a slice of raw. raw must be valid JSON (a
// document json.Compact accepted, or a part of one): the load reads a
// large spec's paths and operations this way, where json.Unmarshal would
// check and copy each of them once more. A value that is not an object
// reports false; a repeated key keeps its last value, as json.Unmarshal.
func rawObject(raw []byte) (map[string]json.RawMessage, bool) {
	es, ok := rawEntries(raw)
	if !ok {
		return nil, false
	}
	m := make(map[string]json.RawMessage, len(es))
	for _, e := range es {
		m[e.Key] = e.Value // a repeated key: the last one, as json.Unmarshal keeps
	}
	return m, true
}

// rawEntries is objectEntries of valid JSON, as rawObject reads it: the
// members in document order, repeated keys kept, each value a slice of
// raw. ok is false when raw is not an object (objectEntries then says
// why).
func rawEntries(raw []byte) (out []entry, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] != '}' {
		if raw[i] != '"' {
			return nil, false
		}
		end := jsonStringEnd(raw, i)
		if end-i < 2 {
			return nil, false
		}
		key := keyText(raw[i:end])
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		v := skipSpace(raw, i+1)
		end = skipValue(raw, v)
		out = append(out, entry{Key: key, Value: raw[v:end:end]})
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return out, i < len(raw)
}

// keyText is the text of a quoted object key, as json.Unmarshal reads it.
func keyText(quoted []byte) string {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return string(inner)
	}
	return s
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the valid JSON value starting at raw[i].
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return i
	}
	switch raw[i] {
	case '"':
		return jsonStringEnd(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				j = jsonStringEnd(raw, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(raw)
	}
	j := i
	for j < len(raw) && raw[j] != ',' && raw[j] != '}' && raw[j] != ']' && raw[j] != ' ' && raw[j] != '\t' && raw[j] != '\n' && raw[j] != '\r' {
		j++
	}
	return j
}
