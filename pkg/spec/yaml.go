package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlToJSON converts a YAML document to JSON, keeping the order of mapping
// keys (the first media type a spec lists is the default body type) and
// turning non-string keys such as "200:" into strings.
func yamlToJSON(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("invalid YAML: %s", oneLine(strings.TrimPrefix(err.Error(), "yaml: ")))
	}
	var buf bytes.Buffer
	buf.Grow(len(data))
	w := newYAMLWriter(&doc, &buf)
	if err := w.node(&doc, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxYAMLNodes bounds the work of expanding aliases, so a "billion laughs"
// document is refused instead of exhausting memory.
const maxYAMLNodes = 20_000_000

type yamlWriter struct {
	buf   *bytes.Buffer
	nodes int
	limit int
}

// newYAMLWriter writes doc to buf. Aliases may repeat a subtree, but real
// specs barely use them: it expands at most ten times the written nodes, so
// an alias bomb is refused at once instead of after seconds of expansion.
func newYAMLWriter(doc *yaml.Node, buf *bytes.Buffer) *yamlWriter {
	return &yamlWriter{buf: buf, limit: min(maxYAMLNodes, 10*treeSize(doc, 0)+100_000)}
}

// treeSize counts the nodes as written, aliases not followed.
func treeSize(n *yaml.Node, depth int) int {
	if depth > 1000 {
		return 1
	}
	c := 1
	for _, k := range n.Content {
		c += treeSize(k, depth+1)
	}
	return c
}

var errYAMLTooBig = errors.New("invalid YAML: the document expands to too many nodes (alias bomb?)")

func (w *yamlWriter) node(n *yaml.Node, depth int) error {
	w.nodes++
	if w.nodes > w.limit {
		return errYAMLTooBig
	}
	if depth > 1000 {
		return errors.New("invalid YAML: nested too deeply")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			w.buf.WriteString("null")
			return nil
		}
		return w.node(n.Content[0], depth+1)
	case yaml.AliasNode:
		if n.Alias == nil {
			w.buf.WriteString("null")
			return nil
		}
		return w.node(n.Alias, depth+1)
	case yaml.MappingNode:
		w.buf.WriteByte('{')
		seen := map[string]bool{}
		first := true
		if err := w.mapping(n, depth, seen, &first); err != nil {
			return err
		}
		w.buf.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		w.buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			if err := w.node(c, depth+1); err != nil {
				return err
			}
		}
		w.buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		w.scalar(n)
		return nil
	}
	w.buf.WriteString("null")
	return nil
}

// mapping writes the pairs of n; merge keys ("<<") bring in the pairs of the
// mappings they name, and a key seen earlier wins over a later duplicate.
func (w *yamlWriter) mapping(n *yaml.Node, depth int, seen map[string]bool, first *bool) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge" {
			continue
		}
		key := k.Value
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			key = k.Alias.Value
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if !*first {
			w.buf.WriteByte(',')
		}
		*first = false
		writeJSONString(w.buf, key)
		w.buf.WriteByte(':')
		if err := w.node(v, depth+1); err != nil {
			return err
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !(k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge") {
			continue
		}
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		var sources []*yaml.Node
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		} else {
			sources = []*yaml.Node{v}
		}
		for _, src := range sources {
			for src.Kind == yaml.AliasNode && src.Alias != nil {
				src = src.Alias
			}
			if src.Kind == yaml.MappingNode {
				if err := w.mapping(src, depth+1, seen, first); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (w *yamlWriter) scalar(n *yaml.Node) {
	switch n.ShortTag() {
	case "!!null":
		w.buf.WriteString("null")
	case "!!bool":
		if b, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil && b {
			w.buf.WriteString("true")
		} else if err == nil {
			w.buf.WriteString("false")
		} else {
			writeJSONString(w.buf, n.Value)
		}
	case "!!int":
		v := strings.ReplaceAll(n.Value, "_", "")
		if i, err := strconv.ParseInt(v, 0, 64); err == nil {
			w.buf.WriteString(strconv.FormatInt(i, 10))
		} else if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) {
			w.buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		} else {
			writeJSONString(w.buf, n.Value)
		}
	case "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			writeJSONString(w.buf, n.Value)
			return
		}
		w.buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		// Strings, timestamps, binary and custom tags stay text.
		writeJSONString(w.buf, n.Value)
	}
}

func writeJSONString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	buf.Write(b)
}
