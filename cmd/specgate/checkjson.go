package main

import (
	"encoding/json"
	"strings"
)

// checkReport is check's answer with --json.
type checkReport struct {
	OK       bool           `json:"ok"`
	Specs    []checkedEntry `json:"specs"`
	Warnings []string       `json:"warnings,omitempty"`
}

// checkedEntry is one line of check's report with what belongs to it: a
// spec, upstreams, or semantic search.
type checkedEntry struct {
	Name     string   `json:"name"`
	OK       bool     `json:"ok"`
	Summary  string   `json:"summary,omitempty"`
	Error    string   `json:"error,omitempty"`
	Curation []string `json:"curation,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// checkJSON turns check's text report into JSON. The text is the one
// source of what check says, line by line in a fixed shape ("ok   NAME:",
// "FAIL NAME:", indented warnings and curation under their entry), so the
// two cannot say different things.
func checkJSON(text string, ok bool) []byte {
	rep := checkReport{OK: ok, Specs: []checkedEntry{}}
	var cur *checkedEntry
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "ok   "), strings.HasPrefix(line, "FAIL "):
			name, rest, _ := strings.Cut(line[5:], ": ")
			e := checkedEntry{Name: name, OK: strings.HasPrefix(line, "ok")}
			if e.OK {
				e.Summary = rest
			} else {
				e.Error = rest
			}
			rep.Specs = append(rep.Specs, e)
			cur = &rep.Specs[len(rep.Specs)-1]
		case strings.HasPrefix(line, "warning: "):
			rep.Warnings = append(rep.Warnings, strings.TrimPrefix(line, "warning: "))
		case strings.HasPrefix(line, "     warning: ") && cur != nil:
			cur.Warnings = append(cur.Warnings, strings.TrimPrefix(line, "     warning: "))
		case strings.HasPrefix(line, "     ") && cur != nil:
			cur.Curation = append(cur.Curation, strings.TrimSpace(line))
		}
	}
	data, _ := json.MarshalIndent(rep, "", "  ")
	return append(data, '\n')
}
