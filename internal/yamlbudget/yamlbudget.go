// Package yamlbudget bounds the work a YAML document's aliases ask for, so
// an alias bomb is refused before it is decoded into values.
//
// yaml.v3 bounds alias nodes, not the text they repeat: an alias to a
// scalar is one node, and 2,000 aliases to one 1 MiB string decode to 2 GiB.
package yamlbudget

import (
	"errors"

	"gopkg.in/yaml.v3"
)

// Bounds of the text that aliases repeat, and of the nodes a document
// expands to. pkg/spec's YAML conversion applies the same figures while it
// writes.
const (
	// MaxNodes bounds the nodes a document expands to, aliases followed.
	MaxNodes = 20_000_000
	// AliasBytesFloor is the scalar text any document may repeat through
	// aliases; larger documents may repeat AliasBytesPerByte times their
	// size, and never more than MaxAliasBytes.
	AliasBytesFloor   = 4 << 20
	AliasBytesPerByte = 2
	MaxAliasBytes     = 64 << 20
	// maxDepth bounds the nesting followed.
	maxDepth = 1000
)

var (
	// ErrTooManyNodes is returned for a document that expands past its node
	// budget.
	ErrTooManyNodes = errors.New("the document expands to too many nodes (alias bomb?)")
	// ErrAliasBytes is returned for a document whose aliases repeat more
	// text than its budget.
	ErrAliasBytes = errors.New("aliases repeat too much text (alias bomb?)")
	// ErrTooDeep is returned for a document nested past 1,000 levels.
	ErrTooDeep = errors.New("nested too deeply")
)

// AliasLimit is the scalar text a document of size bytes may repeat
// through aliases.
func AliasLimit(size int) int {
	return min(MaxAliasBytes, max(AliasBytesFloor, AliasBytesPerByte*size))
}

// NodeLimit is the nodes a document whose tree (aliases not followed) has
// tree nodes may expand to: ten times that, plus 100,000.
func NodeLimit(tree int) int {
	return min(MaxNodes, 10*tree+100_000)
}

// Check walks root, parsed from size bytes, as a decoder would, aliases
// followed, and reports the first budget it passes. It stops at the first
// byte or node past the budget, so a bomb costs no more than the budget.
func Check(root *yaml.Node, size int) error {
	c := &checker{aliasLimit: AliasLimit(size), nodeLimit: NodeLimit(TreeSize(root))}
	return c.node(root, 0, false)
}

type checker struct {
	nodes, nodeLimit int
	aliasBytes       int
	aliasLimit       int
}

func (c *checker) node(n *yaml.Node, depth int, aliased bool) error {
	if n == nil {
		return nil
	}
	c.nodes++
	if c.nodes > c.nodeLimit {
		return ErrTooManyNodes
	}
	if depth > maxDepth {
		return ErrTooDeep
	}
	switch n.Kind {
	case yaml.AliasNode:
		return c.node(n.Alias, depth+1, true)
	case yaml.ScalarNode:
		if aliased {
			c.aliasBytes += len(n.Value)
			if c.aliasBytes > c.aliasLimit {
				return ErrAliasBytes
			}
		}
		return nil
	}
	for _, k := range n.Content {
		if err := c.node(k, depth+1, aliased); err != nil {
			return err
		}
	}
	return nil
}

// TreeSize counts the nodes of root as written, aliases not followed, down
// to 1,000 levels.
func TreeSize(root *yaml.Node) int { return treeSize(root, 0) }

func treeSize(n *yaml.Node, depth int) int {
	if n == nil || depth > maxDepth {
		return 1
	}
	s := 1
	for _, k := range n.Content {
		s += treeSize(k, depth+1)
	}
	return s
}
