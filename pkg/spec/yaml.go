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

	"github.com/specgate/specgate/internal/yamlbudget"
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
	w := newYAMLWriter(&doc, &buf, len(data))
	if err := w.node(&doc, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// The budget of the work aliases ask for is the one configs get too
// (internal/yamlbudget): a node count, so a "billion laughs" document is
// refused instead of exhausting memory, and the text aliases repeat, since
// an alias to a long string is one node and 400 aliases to a 2 MiB string
// would write 800 MiB.
const aliasBytesFloor = yamlbudget.AliasBytesFloor

type yamlWriter struct {
	buf   *bytes.Buffer
	nodes int
	limit int
	// aliased is above zero while writing what an alias (or a merge key
	// naming one) repeats.
	aliased int
	// aliasBytes counts the scalar bytes written through aliases, up to
	// aliasLimit.
	aliasBytes int
	aliasLimit int
}

// newYAMLWriter writes doc, parsed from size bytes, to buf. Aliases may
// repeat a subtree, but real specs barely use them: it expands at most ten
// times the written nodes, and repeats at most twice the document's size in
// scalar text (4 MiB at least), so an alias bomb is refused at once instead
// of after seconds of expansion or an out-of-memory crash.
func newYAMLWriter(doc *yaml.Node, buf *bytes.Buffer, size int) *yamlWriter {
	return &yamlWriter{
		buf:        buf,
		limit:      yamlbudget.NodeLimit(yamlbudget.TreeSize(doc)),
		aliasLimit: yamlbudget.AliasLimit(size),
	}
}

// repeat charges n bytes of text; through an alias, they count against the
// alias budget. A scalar's raw length is charged before it is written and
// what JSON escaping added after ("\x01" or "<" become six bytes), so the
// JSON written through aliases passes the budget by one scalar at most.
func (w *yamlWriter) repeat(n int) error {
	if w.aliased == 0 {
		return nil
	}
	w.aliasBytes += n
	if w.aliasBytes > w.aliasLimit {
		return errYAMLAliasBytes
	}
	return nil
}

// treeSize counts the nodes as written, aliases not followed.
var (
	errYAMLTooBig     = fmt.Errorf("invalid YAML: %w", yamlbudget.ErrTooManyNodes)
	errYAMLAliasBytes = fmt.Errorf("invalid YAML: %w", yamlbudget.ErrAliasBytes)
)

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
		w.aliased++
		defer func() { w.aliased-- }()
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
		if err := w.repeat(len(n.Value)); err != nil {
			return err
		}
		start := w.buf.Len()
		w.scalar(n)
		return w.repeat(w.buf.Len() - start - len(n.Value))
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
		key, keyAlias := k.Value, 0
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			key, keyAlias = k.Alias.Value, 1
		}
		if seen[key] {
			continue
		}
		w.aliased += keyAlias
		err := w.repeat(len(key))
		w.aliased -= keyAlias
		if err != nil {
			return err
		}
		seen[key] = true
		if !*first {
			w.buf.WriteByte(',')
		}
		*first = false
		start := w.buf.Len()
		writeJSONString(w.buf, key)
		w.aliased += keyAlias
		err = w.repeat(w.buf.Len() - start - len(key))
		w.aliased -= keyAlias
		if err != nil {
			return err
		}
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
		viaAlias := false
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v, viaAlias = v.Alias, true
		}
		var sources []*yaml.Node
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		} else {
			sources = []*yaml.Node{v}
		}
		for _, src := range sources {
			aliased := viaAlias
			for src.Kind == yaml.AliasNode && src.Alias != nil {
				src, aliased = src.Alias, true
			}
			if src.Kind != yaml.MappingNode {
				continue
			}
			if aliased {
				w.aliased++
			}
			err := w.mapping(src, depth+1, seen, first)
			if aliased {
				w.aliased--
			}
			if err != nil {
				return err
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
