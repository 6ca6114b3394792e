package ui

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Audit tail bounds.
const (
	// AuditLines is how many audit lines the page shows.
	AuditLines = 100
	// maxAuditLine bounds one line kept; audit lines are a few hundred
	// bytes, so a longer one is not an audit line.
	maxAuditLine = 16 << 10
)

// AuditTail keeps the last AuditLines JSON lines written to it, for the
// page: give it, beside the audit file, to whatever writes the audit log.
// The zero value is ready; a nil *AuditTail keeps nothing. It is safe for
// concurrent use.
type AuditTail struct {
	mu      sync.Mutex
	lines   [AuditLines]json.RawMessage
	next    int
	n       int
	partial []byte // a line not yet ended by '\n'
}

// Write keeps each whole JSON line of p; it never fails, so the audit log
// is never held up by the page.
func (a *AuditTail) Write(p []byte) (int, error) {
	if a == nil {
		return len(p), nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if len(a.partial)+len(rest) <= maxAuditLine {
				a.partial = append(a.partial, rest...)
			} else {
				a.partial = a.partial[:0]
			}
			break
		}
		line := rest[:i]
		rest = rest[i+1:]
		if len(a.partial) > 0 {
			line = append(a.partial, line...)
			a.partial = nil
		}
		if len(line) > maxAuditLine || !json.Valid(line) {
			continue
		}
		a.lines[a.next] = append(json.RawMessage(nil), line...)
		a.next = (a.next + 1) % AuditLines
		a.n = min(a.n+1, AuditLines)
	}
	return len(p), nil
}

// Lines returns the lines kept, oldest first.
func (a *AuditTail) Lines() []json.RawMessage {
	out := []json.RawMessage{}
	if a == nil {
		return out
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	start := (a.next - a.n + AuditLines) % AuditLines
	for i := range a.n {
		out = append(out, a.lines[(start+i)%AuditLines])
	}
	return out
}
