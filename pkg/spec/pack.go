package spec

import (
	"encoding/json"
	"strings"
)

// pack moves what s keeps for its lifetime into few allocations: every
// operation's and component's JSON into one byte slice, and the endpoints'
// text into one string, each repeated value (a spec name, a method, a base
// URL, a parameter's location) kept once. Loading leaves these scattered
// among its garbage in thousands of small objects, and the memory pages
// holding one of them each stay in use; packed, the loader's pages are
// freed whole. Values are unchanged, byte for byte.
func (s *Spec) pack() {
	n := 0
	for _, e := range s.Endpoints {
		n += len(e.raw)
	}
	for _, sec := range s.Components {
		for _, v := range sec {
			n += len(v)
		}
	}
	buf := make([]byte, 0, n)
	keep := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(buf)
		buf = append(buf, b...)
		// full slice: an append to one value cannot overwrite the next
		return buf[start:len(buf):len(buf)]
	}
	for _, e := range s.Endpoints {
		e.raw = keep(e.raw)
	}
	for _, sec := range s.Components {
		for name, v := range sec {
			sec[name] = json.RawMessage(keep(v))
		}
	}
	packText(s.Endpoints)
}

// packText copies the endpoints' strings into one, the repeated ones once.
func packText(eps []*Endpoint) {
	var b strings.Builder
	type span struct{ at, n int }
	seen := map[string]span{}
	var refs []*string
	var spans []span
	add := func(p *string) {
		if *p == "" {
			return
		}
		sp, ok := seen[*p]
		if !ok {
			sp = span{b.Len(), len(*p)}
			b.WriteString(*p)
			seen[*p] = sp
		}
		refs = append(refs, p)
		spans = append(spans, sp)
	}
	for _, e := range eps {
		for _, p := range []*string{&e.ID, &e.Spec, &e.Method, &e.Path, &e.OperationID, &e.Summary, &e.Description, &e.BaseURL, &e.About, &e.Glossary} {
			add(p)
		}
		for i := range e.Tags {
			add(&e.Tags[i])
		}
		for i := range e.Params {
			add(&e.Params[i].Name)
			add(&e.Params[i].In)
		}
		for i := range e.BodyTypes {
			add(&e.BodyTypes[i])
		}
		for _, alt := range e.Security {
			for i := range alt {
				add(&alt[i])
			}
		}
	}
	all := b.String()
	for i, p := range refs {
		*p = all[spans[i].at : spans[i].at+spans[i].n]
	}
}
