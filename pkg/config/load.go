package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/specgate/specgate/internal/closest"
	"github.com/specgate/specgate/internal/yamlbudget"
)

// Error lists every problem found in a config file, one per line of its
// message, each prefixed with the file name when there is one.
type Error struct {
	// File is the path given to Load, or "" for Parse and programmatic
	// configs.
	File string
	// Problems are short messages starting with "line N:" or with the key
	// they concern ("specs[petstore].location: ...").
	Problems []string
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.File != "" {
			b.WriteString(e.File)
			b.WriteString(": ")
		}
		b.WriteString(p)
	}
	return b.String()
}

// maxSecretFileBytes bounds a *_file read, so pointing one at /dev/zero or
// a log fails fast instead of filling memory.
const maxSecretFileBytes = 64 << 10

// Load reads the config file at path. It starts from Default, decodes the
// file strictly (unknown keys are errors naming their line), expands ${NAME}
// environment references in string values (unset ones expand to empty and
// are listed in MissingEnv), makes relative paths in path-valued keys
// relative to the file's directory, and reads secrets from *_file keys.
//
// Load does not call Validate: the caller applies flags first, then
// validates. Errors are *Error, listing every decode problem at once.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(data, path, filepath.Dir(path), os.LookupEnv)
}

// Parse is Load for bytes already in memory. Relative paths stay relative
// to the working directory.
func Parse(data []byte) (*Config, error) {
	return parse(data, "", "", os.LookupEnv)
}

func parse(data []byte, name, dir string, lookup func(string) (string, bool)) (*Config, error) {
	c := Default()
	c.Source = name
	fail := func(problems ...string) (*Config, error) {
		return nil, &Error{File: name, Problems: problems}
	}

	// Decode the node tree first: it gives the key at each line for
	// messages, and a second document can be refused.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return c, nil // an empty file is the defaults
		}
		return fail(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return fail(strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return fail(fmt.Sprintf("line %d: a second YAML document; put everything in one", line))
	}
	// The strict decode below expands aliases into values: a 1 MB file of
	// one 1 MiB string aliased 2,000 times would take 2 GiB. The same
	// budget as a spec's is checked on the tree first.
	if err := yamlbudget.Check(&root, len(data)); err != nil {
		return fail("invalid YAML: " + err.Error())
	}

	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(c); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return fail(strings.TrimPrefix(err.Error(), "yaml: "))
		}
		keys := keysByLine(&root)
		problems := make([]string, 0, len(te.Errors))
		for _, e := range te.Errors {
			problems = append(problems, friendly(e, keys))
		}
		return fail(problems...)
	}
	// yaml.v3 truncates 1.5 into an int field without a word; a limit must
	// not silently change.
	if problems := fractionalInts(reflect.TypeFor[Config](), &root, ""); len(problems) > 0 {
		return fail(problems...)
	}

	if e := c.Search.Embeddings; e != nil {
		// A section that is present takes its defaults here: Default
		// cannot, since the section is off when absent.
		if e.BatchSize == 0 {
			e.BatchSize = DefaultEmbeddingsBatch
		}
		if e.Timeout == 0 {
			e.Timeout = Duration(DefaultEmbeddingsTimeout)
		}
	}
	l := &loader{lookup: lookup, dir: dir}
	l.walk(reflect.ValueOf(c).Elem(), "")
	for i := range c.Upstreams {
		c.Upstreams[i].Match = matchFromURL(c.Upstreams[i].Match)
	}
	if dir != "" {
		rebase(c, dir)
	}
	c.MissingEnv = l.missing
	if len(l.problems) > 0 {
		return fail(l.problems...)
	}
	return c, nil
}

// loader expands environment references and reads secret files over a
// decoded Config, remembering what it could not do.
type loader struct {
	lookup   func(string) (string, bool)
	dir      string
	missing  []EnvRef
	problems []string
}

var secretType = reflect.TypeFor[Secret]()

// walk visits every string, Secret and *_file key under v, whose key is path.
func (l *loader) walk(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			l.walk(v.Elem(), path)
		}
	case reflect.String:
		v.SetString(l.expand(path, v.String(), nil))
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero() // "[]" and an omitted key mean the same
			return
		}
		for i := 0; i < v.Len(); i++ {
			l.walk(v.Index(i), path+"["+elemLabel(v.Index(i), i)+"]")
		}
	case reflect.Map:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			l.walk(e, joinKey(path, k.String()))
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		if v.Type() == secretType {
			s := v.Addr().Interface().(*Secret)
			s.value = l.expand(path, s.raw, s)
			return
		}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if name := yamlName(t.Field(i)); name != "" {
				l.walk(v.Field(i), joinKey(path, name))
			}
		}
		l.readSecretFiles(v, path)
	}
}

// readSecretFiles fills each Secret field X of struct v from its sibling
// X_file, when that is set and X is not (both set is for Validate to say).
func (l *loader) readSecretFiles(v reflect.Value, path string) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Type != secretType {
			continue
		}
		fv := fieldByYAMLName(v, yamlName(t.Field(i))+"_file")
		if !fv.IsValid() || fv.String() == "" {
			continue
		}
		s := v.Field(i).Addr().Interface().(*Secret)
		if s.raw != "" {
			continue
		}
		p := fv.String()
		if l.dir != "" && !filepath.IsAbs(p) {
			p = filepath.Join(l.dir, p)
			fv.SetString(p)
		}
		key := joinKey(path, yamlName(t.Field(i))+"_file")
		val, err := readSecretFile(p)
		if err != nil {
			l.problems = append(l.problems, key+": "+err.Error())
			continue
		}
		s.value, s.file = val, p
	}
}

func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxSecretFileBytes {
		return "", fmt.Errorf("%s is larger than %d bytes; is it the right file?", path, maxSecretFileBytes)
	}
	return strings.TrimSpace(string(data)), nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expand replaces ${NAME} in s with the variable's value ("" when unset, and
// recorded). "$${" writes a literal "${". Other "$" text is left alone. When
// sec is not nil the names are also recorded on the secret.
func (l *loader) expand(key, s string, sec *Secret) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
			continue
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 || !envName.MatchString(s[i+2:i+2+end]) {
				l.problems = append(l.problems, fmt.Sprintf("%s: only ${NAME} references are supported (write $${ for a literal ${)", key))
				return s
			}
			name := s[i+2 : i+2+end]
			i += end + 3
			if sec != nil {
				sec.vars = append(sec.vars, name)
			}
			v, ok := l.lookup(name)
			if !ok {
				l.missing = append(l.missing, EnvRef{Key: key, Var: name})
				if sec != nil {
					sec.missing = append(sec.missing, name)
				}
			}
			b.WriteString(v)
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// rebase makes relative paths in path-valued keys relative to dir (the
// config file's directory), so a config works from any working directory.
func rebase(c *Config, dir string) {
	fix := func(p *string) {
		if *p != "" && !isURL(*p) && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	fix(&c.AuditLog)
	fix(&c.UploadsDir)
	for i := range c.Specs {
		fix(&c.Specs[i].Location)
	}
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// yamlName is a struct field's key in the file, or "" for fields that are
// not keys.
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || name == "" {
		return ""
	}
	return name
}

func fieldByYAMLName(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if yamlName(t.Field(i)) == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// elemLabel names a list element in messages: by its name or match when it
// has one ("specs[petstore]"), else by index.
func elemLabel(v reflect.Value, i int) string {
	if v.Kind() == reflect.Struct {
		for _, k := range []string{"name", "match"} {
			if f := fieldByYAMLName(v, k); f.IsValid() && f.Kind() == reflect.String && f.String() != "" {
				return f.String()
			}
		}
	}
	return strconv.Itoa(i)
}

func joinKey(path, key string) string {
	if strings.ContainsAny(key, ".[] ") {
		key = strconv.Quote(key)
		return path + "[" + key + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// lineKeys finds the dotted path of the key whose value is on a line, so
// decode messages can name the key.
type lineKeys struct {
	scalars, containers map[int]string
}

// key returns the key whose value on line is a scalar, or a list or mapping
// when container is set; failing that the other kind; else "".
func (lk lineKeys) key(line int, container bool) string {
	first, second := lk.scalars, lk.containers
	if container {
		first, second = second, first
	}
	if k := first[line]; k != "" {
		return k
	}
	return second[line]
}

// keysByLine indexes the keys of a document by the line of their value. A
// line with two sibling candidates of the same kind (a flow mapping) names
// none.
func keysByLine(root *yaml.Node) lineKeys {
	scalars, containers := map[int]string{}, map[int]string{}
	note := func(m map[int]string, line int, path string) {
		prev, seen := m[line]
		switch {
		case !seen:
			m[line] = path
		case prev != "" && strings.HasPrefix(path, prev):
			m[line] = path // a block mapping starts on its first key's line: the inner key is meant
		default:
			m[line] = "" // siblings in a flow collection: ambiguous
		}
	}
	var visit func(n *yaml.Node, path string)
	visit = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				visit(c, path)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				visit(c, path+"["+strconv.Itoa(i)+"]")
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := joinKey(path, k.Value)
				if v.Kind == yaml.ScalarNode {
					note(scalars, v.Line, p)
				} else {
					note(containers, v.Line, p)
				}
				visit(v, p)
			}
		}
	}
	visit(root, "")
	return lineKeys{scalars: scalars, containers: containers}
}

var (
	reUnknown = regexp.MustCompile(`^line (\d+): field (.+) not found in type config\.(\w+)$`)
	reType    = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+) (?:`(.*)` )?into (.+)$")
	reLine    = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// friendly rewrites one yaml.v3 decode message into the words of the file:
// keys rather than Go types, with a suggestion for a misspelt key.
func friendly(msg string, keys lineKeys) string {
	if m := reUnknown.FindStringSubmatch(msg); m != nil {
		out := fmt.Sprintf("line %s: unknown key %q", m[1], m[2])
		typeName := m[3]
		switch typeName {
		case "upstreamFields":
			typeName = "Upstream" // the defaults-first decode in Upstream.UnmarshalYAML
		case "mockFields":
			typeName = "Mock" // the mapping form in Mock.UnmarshalYAML
		}
		if s := closest.Name(m[2], knownKeys(typeName)); s != "" {
			out += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return out
	}
	if m := reType.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		what := "this value"
		switch {
		case m[3] != "":
			what = strconv.Quote(m[3])
		case m[2] == "seq":
			what = "a list"
		case m[2] == "map":
			what = "a mapping"
		}
		want := wantFor(m[4])
		if strings.Contains(m[3], "${") {
			want += " (${NAME} expands only in string values)"
		}
		if k := keys.key(line, m[2] == "seq" || m[2] == "map"); k != "" {
			return fmt.Sprintf("line %d: %s: %s is not %s", line, k, what, want)
		}
		return fmt.Sprintf("line %d: %s is not %s", line, what, want)
	}
	if m := reLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if k := keys.key(line, strings.Contains(m[2], "a list") || strings.Contains(m[2], "a mapping")); k != "" {
			return fmt.Sprintf("line %d: %s: %s", line, k, m[2])
		}
	}
	return msg
}

func wantFor(goType string) string {
	switch {
	case goType == "int" || goType == "int64":
		return "an integer"
	case goType == "bool":
		return "true or false"
	case goType == "float64":
		return "a number"
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	default:
		return "a mapping" // map[...] and config structs
	}
}

// knownKeys lists the keys of the config struct type with the given name.
func knownKeys(typeName string) []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || t == secretType {
			return
		}
		seen[t] = true
		for i := 0; i < t.NumField(); i++ {
			name := yamlName(t.Field(i))
			if name == "" {
				continue
			}
			if t.Name() == typeName {
				out = append(out, name)
			}
			visit(t.Field(i).Type)
		}
	}
	visit(reflect.TypeFor[Config]())
	return out
}

// fractionalInts walks node as a value of type t and reports every number
// with a fraction where an integer goes.
func fractionalInts(t reflect.Type, n *yaml.Node, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	switch {
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			out = append(out, fractionalInts(t, c, path)...)
		}
	case n.Kind == yaml.ScalarNode && t.Kind() == reflect.Int && n.ShortTag() == "!!float":
		out = append(out, fmt.Sprintf("line %d: %s: %s is not an integer", n.Line, path, n.Value))
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, c := range n.Content {
			out = append(out, fractionalInts(t.Elem(), c, path+"["+strconv.Itoa(i)+"]")...)
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			out = append(out, fractionalInts(t.Elem(), n.Content[i+1], joinKey(path, n.Content[i].Value))...)
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			for j := 0; j < t.NumField(); j++ {
				if yamlName(t.Field(j)) == key {
					out = append(out, fractionalInts(t.Field(j).Type, n.Content[i+1], joinKey(path, key))...)
				}
			}
		}
	}
	return out
}
