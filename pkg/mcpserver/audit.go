package mcpserver

import (
	"context"
	"encoding/json"
	"time"
)

// auditRecord is one line of the audit log. It never holds argument values
// or headers.
type auditRecord struct {
	Time     string `json:"time"`
	Endpoint string `json:"endpoint"`
	// RunID names the run_script run that made the call; empty for invoke.
	RunID         string `json:"runId,omitempty"`
	Principal     string `json:"principal,omitempty"`
	Outcome       string `json:"outcome"`
	Status        int    `json:"status,omitempty"`
	Scope         string `json:"scope,omitempty"`
	Limit         string `json:"limit,omitempty"`
	QueueWaitMs   int64  `json:"queueWaitMs"`
	Attempts      int    `json:"attempts"`
	LatencyMs     int64  `json:"latencyMs"`
	ResponseBytes int64  `json:"responseBytes,omitempty"`
	Cached        bool   `json:"cached,omitempty"`
	// Digest names, for an approval asked, given or refused, what was asked
	// about (method, path template, an argument hash, the body's size and
	// hash: no values); Approval says why one was refused.
	Digest   string `json:"digest,omitempty"`
	Approval string `json:"approval,omitempty"`
}

// principalKey is the context key of the caller, set by the HTTP
// transport when it knows who is calling.
type principalKey struct{}

// caller is who is calling: name for the audit log, key for what belongs
// to the caller (stored answers, cached results). The key is unambiguous
// where the name is not: subject "ada@acme" without an org and subject
// "ada" of org "acme" are both named ada@acme.
type caller struct{ name, key string }

// WithPrincipal returns ctx carrying p as the caller.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, caller{name: p.String(), key: p.Key()})
}

func (s *Server) audit(ctx context.Context, rec auditRecord) {
	if s.opts.Audit == nil {
		return
	}
	rec.Time = s.now().UTC().Format(time.RFC3339Nano)
	if c, ok := ctx.Value(principalKey{}).(caller); ok {
		rec.Principal = c.name
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return
	}
	s.audMu.Lock()
	defer s.audMu.Unlock()
	if _, err := s.opts.Audit.Write(append(line, '\n')); err != nil {
		s.log.Warn("audit log write failed", "err", err)
	}
}
