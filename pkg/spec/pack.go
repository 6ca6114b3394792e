package spec

import (
	"encoding/json"

	"github.com/golang/snappy"
)

// pack moves what s keeps for its lifetime into two allocations: every
// operation's JSON into one byte slice, the components' JSON compressed
// into another. Loading leaves these scattered among its garbage in
// thousands of small objects, and the memory pages holding one of them
// each stay in use; packed, the loader's pages are freed whole.
//
// Components are read far less often than they are held (an inspect or a
// call rebuilds its operation once, then from the hydrator's cache), and
// compressed they take 1.3 MB of github-full's 4.1 MB. Values are
// unchanged, byte for byte: Component returns them.
func (s *Spec) pack() {
	n := 0
	for _, e := range s.Endpoints {
		n += len(e.raw)
	}
	buf := make([]byte, 0, n)
	for _, e := range s.Endpoints {
		if e.raw == nil {
			continue
		}
		start := len(buf)
		buf = append(buf, e.raw...)
		// full slice: an append to one value cannot overwrite the next
		e.raw = buf[start:len(buf):len(buf)]
	}
	s.packComponents()
}

// packComponents compresses the components into s.packed, one allocation
// for them all, and drops s.Components.
func (s *Spec) packComponents() {
	if s.Components == nil {
		return
	}
	type span struct {
		sec, name string
		at, end   int
	}
	var spans []span
	var buf, scratch []byte
	for sec, m := range s.Components {
		for name, v := range m {
			scratch = snappy.Encode(scratch[:cap(scratch)], v)
			spans = append(spans, span{sec, name, len(buf), len(buf) + len(scratch)})
			buf = append(buf, scratch...)
		}
	}
	buf = append(make([]byte, 0, len(buf)), buf...) // exactly sized
	s.packed = make(map[string]map[string][]byte, len(s.Components))
	for sec, m := range s.Components {
		s.packed[sec] = make(map[string][]byte, len(m))
	}
	for _, sp := range spans {
		s.packed[sp.sec][sp.name] = buf[sp.at:sp.end:sp.end]
	}
	s.Components = nil
}

// Component returns the JSON of the component name in section ("schemas",
// "parameters", ...) of the components object.
func (s *Spec) Component(section, name string) (json.RawMessage, bool) {
	if s.packed == nil {
		raw, ok := s.Components[section][name]
		return raw, ok
	}
	packed, ok := s.packed[section][name]
	if !ok {
		return nil, false
	}
	raw, err := snappy.Decode(nil, packed)
	if err != nil {
		panic(err) // pack wrote it: a failure here is memory gone bad
	}
	return raw, true
}

// componentNames returns the names of section's components, unsorted, and
// whether the document has the section at all.
func (s *Spec) componentNames(section string) ([]string, bool) {
	var names []string
	if s.packed == nil {
		m, ok := s.Components[section]
		for name := range m {
			names = append(names, name)
		}
		return names, ok
	}
	m, ok := s.packed[section]
	for name := range m {
		names = append(names, name)
	}
	return names, ok
}
