package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var updateKeyDocs = flag.Bool("update", false, "rewrite keydocs.go from config.example.yaml's comments")

// TestKeyDocsAreCurrent keeps keydocs.go, the key descriptions the schema
// carries for editors, equal to what config.example.yaml's comments say
// of each key: the example stays the one place a key is documented.
// go test ./pkg/config -run KeyDocs -update rewrites it.
func TestKeyDocsAreCurrent(t *testing.T) {
	example, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := keyDocsSource(t, example)
	if *updateKeyDocs {
		if err := os.WriteFile("keydocs.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("keydocs.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("keydocs.go is stale: go test ./pkg/config -run KeyDocs -update")
	}
}

// Every key an editor shows has a description.
func TestSchemaDescribesEveryKey(t *testing.T) {
	data, err := SchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(n map[string]any, path string)
	walk = func(n map[string]any, path string) {
		props, _ := n["properties"].(map[string]any)
		for k, v := range props {
			p := strings.TrimPrefix(path+"."+k, ".")
			m, _ := v.(map[string]any)
			if d, _ := m["description"].(string); d == "" {
				missing = append(missing, p)
			}
			walk(m, p)
		}
		if m, ok := n["items"].(map[string]any); ok {
			walk(m, path+"[]")
		}
		if m, ok := n["additionalProperties"].(map[string]any); ok {
			walk(m, path+"{}")
		}
		alts, _ := n["anyOf"].([]any)
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok {
				walk(m, path)
			}
		}
	}
	walk(root, "")
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%d keys have no description (comment them in config.example.yaml, then go test ./pkg/config -run KeyDocs -update): %s",
			len(missing), strings.Join(missing, ", "))
	}
}

// keyDocsSource is keydocs.go as config.example.yaml's comments make it:
// for each key path of the schema, the comment above its first
// occurrence in the example (the last paragraph of it) and the comment on
// its line; a key overriding a global one of its name, left uncommented,
// takes the global one's.
func keyDocsSource(t *testing.T, example []byte) []byte {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(example, &doc); err != nil {
		t.Fatal(err)
	}
	s, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	paths := schemaPaths(s)
	slices.Sort(paths)
	docs := map[string]string{}
	for _, p := range paths {
		if k, v := exampleKey(&doc, p); k != nil {
			if d := commentText(k, v); d != "" {
				docs[p] = d
			}
		}
	}
	commented := maps.Clone(docs)
	// A key left uncommented takes the comment of the nearest key of its
	// name (upstreams[].classes[].window that of upstreams[].window); a
	// secret's *_file the words of its file.
	for _, p := range paths {
		if docs[p] != "" {
			continue
		}
		last := p[strings.LastIndexAny(p, ".")+1:]
		if base, ok := strings.CutSuffix(last, "_file"); ok {
			docs[p] = "A file whose contents (trimmed, read at load) are " + base + "; setting both is an error. Default \"\"."
			continue
		}
		best, shared := "", -1
		for q := range commented {
			if q != "" && (q == last || strings.HasSuffix(q, "."+last)) {
				n := commonPrefix(p, q)
				if n > shared || n == shared && (len(q) < len(best) || len(q) == len(best) && q < best) {
					best, shared = q, n
				}
			}
		}
		if best != "" {
			docs[p] = docs[best]
			continue
		}
		if i := strings.LastIndexByte(p, '.'); i > 0 && docs[p[:i]] != "" {
			parent := strings.TrimRight(p[strings.LastIndexAny(p[:i], ".")+1:i], "[]{}")
			docs[p] = last + " of " + parent + ": " + docs[p[:i]]
		}
	}
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	b.WriteString("// Code generated from config.example.yaml's comments by go test ./pkg/config -run KeyDocs -update. DO NOT EDIT.\n\n")
	b.WriteString("package config\n\n")
	b.WriteString("// keyDocs describes each key path (specs[].auth{}.token) for editors.\n")
	b.WriteString("var keyDocs = map[string]string{\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "\t%s: %s,\n", strconv.Quote(k), strconv.Quote(docs[k]))
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// commonPrefix is the length of the longest prefix of a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// exampleKey is the key node of the first value at path in doc, in
// schemaPaths' notation.
func exampleKey(doc *yaml.Node, path string) (key, value *yaml.Node) {
	nodes := []*yaml.Node{doc}
	if doc.Kind == yaml.DocumentNode {
		nodes = doc.Content
	}
	for _, seg := range strings.Split(path, ".") {
		name := strings.TrimRight(seg, "[]{}")
		var next []*yaml.Node
		key, value = nil, nil
		for _, n := range nodes {
			if n.Kind != yaml.MappingNode {
				continue
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == name {
					if key == nil {
						key, value = n.Content[i], n.Content[i+1]
					}
					next = append(next, n.Content[i+1])
				}
			}
		}
		for rest := seg[len(name):]; rest != ""; rest = rest[2:] {
			var inner []*yaml.Node
			for _, n := range next {
				switch {
				case strings.HasPrefix(rest, "[]") && n.Kind == yaml.SequenceNode:
					inner = append(inner, n.Content...)
				case strings.HasPrefix(rest, "{}") && n.Kind == yaml.MappingNode:
					for i := 1; i < len(n.Content); i += 2 {
						inner = append(inner, n.Content[i])
					}
				}
			}
			next = inner
		}
		nodes = next
	}
	return key, value
}

var (
	ruleLine  = regexp.MustCompile(`^-{5,}$`)
	ruleLines = regexp.MustCompile(`(?m)^#\s*-{5,}\s*$`)
)

// commentText is a key's description: the last paragraph of the comment
// above it, then the comment on its line, as one line of text.
func commentText(k, v *yaml.Node) string {
	head := k.HeadComment
	if i := strings.LastIndex(head, "\n\n"); i >= 0 {
		head = head[i+2:]
	}
	// a section's heading is the section's, not its first key's, unless
	// the key is the section
	if loc := ruleLines.FindAllStringIndex(head, -1); len(loc) > 0 {
		after := head[loc[len(loc)-1][1]:]
		if strings.TrimSpace(after) == "" && len(loc) > 1 {
			after = head[loc[len(loc)-2][1]:loc[len(loc)-1][0]]
		}
		head = after
	}
	var words []string
	for _, c := range []string{head, k.LineComment, v.LineComment} {
		for _, l := range strings.Split(c, "\n") {
			l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#"))
			if l != "" && !ruleLine.MatchString(l) {
				words = append(words, l)
			}
		}
	}
	return strings.Join(words, " ")
}
