package spec

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
)

// This file shrinks a rendered contract towards its size bounds: an
// ordered table of steps, what a model needs least cut first, with cleared
// descriptions given back when room is left.

// walk calls fn on s and every schema below it, parents first.
func walk(s *Schema, fn func(*Schema)) {
	if s == nil {
		return
	}
	fn(s)
	for _, n := range sortedKeys(s.Properties) {
		walk(s.Properties[n], fn)
	}
	walk(s.AdditionalProperties, fn)
	walk(s.Items, fn)
	for _, list := range [][]*Schema{s.AllOf, s.OneOf, s.AnyOf} {
		for _, v := range list {
			walk(v, fn)
		}
	}
}

func sortedKeys(m map[string]*Schema) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// requestTrees visits the schemas of c's parameters and body.
func (c *Contract) requestTrees(fn func(*Schema)) {
	for i := range c.Parameters {
		walk(c.Parameters[i].Schema, fn)
	}
	if c.RequestBody != nil {
		walk(c.RequestBody.Schema, fn)
	}
}

// responseTree visits the schema of c's success response.
func (c *Contract) responseTree(fn func(*Schema)) {
	if c.Responses != nil && c.Responses.Success != nil {
		walk(c.Responses.Success.Schema, fn)
	}
}

// shrinkStep is one way to make a contract smaller. apply reports whether
// it changed anything.
type shrinkStep struct {
	group string
	note  string
	hard  bool // only to get under MaxBytes, not the target
	apply func(d *describer, c *Contract, excess int) bool
}

// pruneProperties removes the properties deeper than depth in the trees
// visit reaches, keeping those their parent requires when keepRequired.
func pruneProperties(visit func(func(*Schema)), depth int, keepRequired bool) bool {
	changed := false
	visit(func(s *Schema) {
		for n, p := range s.Properties {
			if p.depth > depth && !(keepRequired && p.localReq) {
				delete(s.Properties, n)
				changed = true
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.depth > depth && !keepRequired {
			s.AdditionalProperties = nil
			changed = true
		}
		if !keepRequired && s.Properties != nil && len(s.Properties) == 0 {
			s.Properties = nil
			s.Required = nil
		}
	})
	if changed {
		visit(dedupeAlternatives)
	}
	return changed
}

// dedupeAlternatives drops alternatives that pruning made identical, and
// merges a single one left into s.
func dedupeAlternatives(s *Schema) {
	dedupe := func(list []*Schema) []*Schema {
		if len(list) < 2 {
			return list
		}
		seen := map[string]bool{}
		kept := list[:0]
		for _, v := range list {
			b, _ := json.Marshal(v)
			if !seen[string(b)] {
				seen[string(b)] = true
				kept = append(kept, v)
			}
		}
		return kept
	}
	s.OneOf, s.AnyOf = dedupe(s.OneOf), dedupe(s.AnyOf)
	for _, list := range []*[]*Schema{&s.OneOf, &s.AnyOf} {
		if len(*list) == 1 {
			s.AllOf = append(s.AllOf, (*list)[0])
			*list = nil
		}
	}
	if len(s.AllOf) > 0 {
		s.mergeAllOf()
	}
}

// dropLongest clears the longest of texts until about excess bytes are
// saved.
// Cleared texts are kept so that shrink can give back what later, bigger
// cuts made room for.
func (d *describer) dropLongest(texts []*string, excess int) bool {
	// empty texts sort last and are skipped: no slices.DeleteFunc instance
	sort.SliceStable(texts, func(i, j int) bool { return len(*texts[i]) > len(*texts[j]) })
	saved := 0
	for _, t := range texts {
		if *t == "" {
			break
		}
		if saved >= excess {
			break
		}
		saved += len(*t) + len(`,"description":""`)
		d.dropped = append(d.dropped, droppedText{at: t, text: *t, group: d.group})
		*t = ""
	}
	return saved > 0
}

// droppedText is a description a shrink step cleared.
type droppedText struct {
	at    *string
	text  string
	group string
}

// restore gives back dropped descriptions, shortest first, while c stays
// within target; n is c's current size. It returns the new size.
func (d *describer) restore(c *Contract, n, target int) int {
	left := map[string]int{}
	for _, t := range d.dropped {
		left[t.group]++
	}
	var back []droppedText
	for i := len(d.dropped) - 1; i >= 0; i-- {
		t := d.dropped[i]
		q, _ := json.Marshal(t.text)
		cost := len(q) + len(`,"description":`)
		if n+cost > target {
			continue
		}
		*t.at = t.text
		n += cost
		back = append(back, t)
		left[t.group]--
	}
	if len(back) == 0 {
		return n
	}
	saved := slices.Clone(d.notes)
	// a loop, not slices.DeleteFunc: its instance for elision alone costs
	// the binary a kilobyte
	kept := d.notes[:0]
	for _, e := range d.notes {
		if k, ok := left[e.group]; !ok || k != 0 {
			kept = append(kept, e)
		}
	}
	d.notes = kept
	c.Elided = d.elided()
	b, _ := json.Marshal(c)
	if len(b) > target {
		// The estimate missed (a text of a schema cut since): undo.
		for _, t := range back {
			*t.at = ""
		}
		d.notes = saved
		c.Elided = d.elided()
		b, _ = json.Marshal(c)
	}
	return len(b)
}

// dropDescriptions clears the descriptions of the schemas visit reaches
// that keep does not keep.
func dropDescriptions(visit func(func(*Schema)), keep func(*Schema) bool) bool {
	changed := false
	visit(func(s *Schema) {
		if s.Description != "" && !keep(s) {
			s.Description = ""
			changed = true
		}
	})
	return changed
}

var shrinkSteps = []shrinkStep{
	{group: "resp", note: "response descriptions", apply: func(d *describer, c *Contract, excess int) bool {
		return dropDescriptions(c.responseTree, func(*Schema) bool { return false })
	}},
	{group: "examples", note: "examples", apply: func(d *describer, c *Contract, excess int) bool {
		changed := false
		drop := func(s *Schema) {
			if s.Example != nil {
				s.Example = nil
				changed = true
			}
		}
		c.requestTrees(drop)
		c.responseTree(drop)
		return changed
	}},
	{group: "resp", note: "response descriptions and fields below level 2", apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.responseTree, 2, false)
	}},
	{group: "body", note: "nested body descriptions", apply: func(d *describer, c *Contract, excess int) bool {
		return dropDescriptions(c.requestTrees, func(s *Schema) bool { return s.depth <= 1 })
	}},
	{group: "body", note: "nested body descriptions, optional body fields below level 3", apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.requestTrees, 3, true)
	}},
	{group: "resp", note: "response descriptions and fields below level 1", apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.responseTree, 1, false)
	}},
	{group: "resp", note: "response detail beyond top-level names and types", apply: func(d *describer, c *Contract, excess int) bool {
		changed := false
		c.responseTree(func(s *Schema) {
			if s.Format != "" || s.Enum != nil || s.Required != nil || s.Pattern != "" || s.Default != nil ||
				s.MinLength != nil || s.MaxLength != nil || s.Minimum != nil || s.Maximum != nil || s.Deprecated {
				changed = true
			}
			*s = Schema{Type: s.Type, Nullable: s.Nullable, Properties: s.Properties, Items: s.Items,
				AdditionalProperties: s.AdditionalProperties, AllOf: s.AllOf, OneOf: s.OneOf, AnyOf: s.AnyOf,
				Cycle: s.Cycle, Ref: s.Ref, depth: s.depth}
		})
		return changed
	}},
	{group: "resp", note: "response detail beyond top-level field names ($fields)", apply: func(d *describer, c *Contract, excess int) bool {
		if c.Responses == nil || c.Responses.Success == nil {
			return false
		}
		changed := false
		outline := func(s *Schema) {
			if s != nil && len(s.Properties) > 0 {
				s.Fields = sortedKeys(s.Properties)
				s.Properties, s.Required, s.AdditionalProperties = nil, nil, nil
				changed = true
			}
		}
		root := c.Responses.Success.Schema
		if root == nil {
			return false
		}
		outline(root)
		if root.Items != nil {
			outline(root.Items)
		}
		for _, list := range [][]*Schema{root.AllOf, root.OneOf, root.AnyOf} {
			for _, v := range list {
				outline(v)
				if v.Items != nil {
					outline(v.Items)
				}
			}
		}
		return changed
	}},
	{group: "resp", note: "response schema", apply: func(d *describer, c *Contract, excess int) bool {
		if c.Responses == nil || c.Responses.Success == nil || c.Responses.Success.Schema == nil {
			return false
		}
		sc := c.Responses.Success.Schema
		outline := &Schema{Type: sc.Type, Nullable: sc.Nullable}
		if sc.Items != nil {
			outline.Items = &Schema{Type: sc.Items.Type}
		}
		b1, _ := json.Marshal(sc)
		b2, _ := json.Marshal(outline)
		if len(b2) >= len(b1) {
			return false
		}
		c.Responses.Success.Schema = outline
		return true
	}},
	{group: "desc", note: "longest descriptions of optional inputs", apply: func(d *describer, c *Contract, excess int) bool {
		var texts []*string
		for i := range c.Parameters {
			if !c.Parameters[i].Required {
				texts = append(texts, &c.Parameters[i].Description)
			}
		}
		c.requestTrees(func(s *Schema) {
			if !s.req || s.depth > 1 {
				texts = append(texts, &s.Description)
			}
		})
		return d.dropLongest(texts, excess)
	}},
	{group: "body", note: "nested body descriptions, optional fields of nested objects", apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.requestTrees, 1, true)
	}},
	{group: "optdeep", note: "structure of optional fields below level 4", apply: func(d *describer, c *Contract, excess int) bool {
		return collapseBelow(c.requestTrees, 4, true)
	}},
	{group: "optdeep", note: "structure of optional fields below level 2", apply: func(d *describer, c *Contract, excess int) bool {
		return collapseBelow(c.requestTrees, 2, true)
	}},
	{group: "desc", note: "longest descriptions", apply: func(d *describer, c *Contract, excess int) bool {
		texts := []*string{&c.Description}
		for i := range c.Parameters {
			texts = append(texts, &c.Parameters[i].Description)
		}
		if c.RequestBody != nil {
			texts = append(texts, &c.RequestBody.Description)
		}
		if c.Responses != nil && c.Responses.Success != nil {
			texts = append(texts, &c.Responses.Success.Description)
		}
		c.requestTrees(func(s *Schema) { texts = append(texts, &s.Description) })
		return d.dropLongest(texts, excess)
	}},
	{group: "errors", note: "error descriptions", apply: func(d *describer, c *Contract, excess int) bool {
		changed := false
		if c.Responses != nil {
			for k, v := range c.Responses.Other {
				if v != "" {
					c.Responses.Other[k] = ""
					changed = true
				}
			}
		}
		return changed
	}},
	{group: "enum", note: "optional enums beyond 3 values ($moreValues)", hard: true, apply: func(d *describer, c *Contract, excess int) bool {
		changed := false
		c.requestTrees(func(s *Schema) {
			if !s.req && len(s.Enum) > 3 {
				s.MoreValues += len(s.Enum) - 3
				s.Enum = s.Enum[:3]
				changed = true
			}
		})
		return changed
	}},
	{group: "optbody", note: "all optional body fields", hard: true, apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.requestTrees, 0, true)
	}},
	{group: "optparams", note: "all optional parameters", hard: true, apply: func(d *describer, c *Contract, excess int) bool {
		kept := c.Parameters[:0]
		for _, p := range c.Parameters {
			if p.Required {
				kept = append(kept, p)
			}
		}
		changed := len(kept) != len(c.Parameters)
		c.Parameters = kept
		return changed
	}},
	{group: "errors", note: "error responses", hard: true, apply: func(d *describer, c *Contract, excess int) bool {
		if c.Responses == nil || c.Responses.Other == nil {
			return false
		}
		c.Responses.Other = nil
		return true
	}}}

var collapseSteps = makeCollapseSteps()

// collapseSteps are the last resort, when what a call needs is itself over
// MaxBytes (deeply nested alternatives, as in OpenAI's item unions): the
// structure below a level goes, required fields included; the names an
// object requires stay in its required list.
func makeCollapseSteps() []shrinkStep {
	var out []shrinkStep
	for level := 12; level >= 1; level-- {
		out = append(out, shrinkStep{group: "collapse", note: "structure below level " + strconv.Itoa(level) + ", required fields included (required lists keep their names)", hard: true,
			apply: func(d *describer, c *Contract, excess int) bool { return collapseBelow(c.requestTrees, level, false) }})
	}
	return out
}

// commonType is the type every alternative of s shares, if any.
func commonType(s Schema) any {
	var t any
	for _, list := range [][]*Schema{s.AllOf, s.OneOf, s.AnyOf} {
		for _, v := range list {
			switch {
			case v.Type == nil:
				return nil
			case t == nil:
				t = v.Type
			case !sameType(t, v.Type):
				return nil
			}
		}
	}
	if t == nil && s.Properties != nil {
		return "object"
	}
	return t
}

// collapseBelow cuts the structure of the schemas at level or deeper, only
// of optional ones when optionalOnly.
func collapseBelow(visit func(func(*Schema)), level int, optionalOnly bool) bool {
	changed := false
	visit(func(s *Schema) {
		if s.level < level || (optionalOnly && s.req) || (s.Properties == nil && s.Items == nil && s.AdditionalProperties == nil &&
			s.AllOf == nil && s.OneOf == nil && s.AnyOf == nil) {
			return
		}
		// Children are visited after this returns: with the fields cleared
		// here, they are not.
		old := *s
		*s = Schema{Type: s.Type, Format: s.Format, Nullable: s.Nullable, Description: s.Description,
			Enum: s.Enum, MoreValues: s.MoreValues, Required: s.Required, Cycle: s.Cycle, Ref: s.Ref,
			depth: s.depth, level: s.level, req: s.req, localReq: s.localReq}
		if s.Type == nil {
			s.Type = commonType(old)
		}
		changed = true
	})
	if changed {
		visit(dedupeAlternatives)
	}
	return changed
}

// shrink applies the shrink steps in order until c marshals within target
// (soft steps) or max (hard steps), then writes the elided note.
func (d *describer) shrink(c *Contract, target, max int) {
	size := func() int {
		c.Elided = d.elided()
		b, _ := json.Marshal(c)
		return len(b)
	}
	n := size()
	hard := false
	run := func(steps []shrinkStep) {
		for _, st := range steps {
			limit := target
			if st.hard {
				limit = max
			}
			if n <= limit {
				continue
			}
			d.group = st.group
			if st.apply(d, c, n-limit+len(st.note)+2) {
				d.note(st.group, st.note)
				n = size()
				hard = hard || st.hard
			}
		}
	}
	run(shrinkSteps)
	if !hard && n < target && len(d.dropped) > 0 {
		// Steps after a description cut may have cut much more: give back
		// what fits. (Not after hard steps, which move parameters.)
		n = d.restore(c, n, target)
	}
	if n > max {
		// Cutting what the call needs is worth it only if that gets the
		// contract under the bound: try the deepest cut on a copy first.
		trial := c.clone()
		saved := slices.Clone(d.notes)
		last := collapseSteps[len(collapseSteps)-1]
		last.apply(d, trial, n-max)
		d.note(last.group, last.note)
		trial.Elided = d.elided()
		d.notes = saved
		if b, _ := json.Marshal(trial); len(b) <= max {
			run(collapseSteps)
		}
	}
	c.Elided = d.elided()
}

// clone copies c deeply enough that shrinking the copy's request schemas
// leaves c alone.
func (c *Contract) clone() *Contract {
	out := *c
	out.Parameters = slices.Clone(c.Parameters)
	for i := range out.Parameters {
		out.Parameters[i].Schema = out.Parameters[i].Schema.clone()
	}
	if c.RequestBody != nil {
		body := *c.RequestBody
		body.Schema = body.Schema.clone()
		out.RequestBody = &body
	}
	return &out
}

func (s *Schema) clone() *Schema {
	if s == nil {
		return nil
	}
	out := *s
	if s.Properties != nil {
		out.Properties = make(map[string]*Schema, len(s.Properties))
		for n, p := range s.Properties {
			out.Properties[n] = p.clone()
		}
	}
	out.AdditionalProperties = s.AdditionalProperties.clone()
	out.Items = s.Items.clone()
	cloneList := func(list []*Schema) []*Schema {
		if list == nil {
			return nil
		}
		l := make([]*Schema, len(list))
		for i, v := range list {
			l[i] = v.clone()
		}
		return l
	}
	out.AllOf, out.OneOf, out.AnyOf = cloneList(s.AllOf), cloneList(s.OneOf), cloneList(s.AnyOf)
	return &out
}
