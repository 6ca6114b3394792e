package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/specgate/specgate/pkg/invoke"
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
	// By names the person who acted on the governance page (approved or
	// declined the call, or cancelled the run), From the address the
	// request came from (the socket's peer, or X-Forwarded-For's client
	// through http.trusted_proxies).
	By   string `json:"by,omitempty"`
	From string `json:"from,omitempty"`
}

// Principal is who is calling: a subject in an organisation, and its
// token's scopes. It is invoke's Principal: one type of caller.
type Principal = invoke.Principal

// WithPrincipal returns ctx carrying p as the caller (invoke.WithPrincipal:
// one principal in the context, for the audit log, what belongs to the
// caller, credentials and the wait queue alike).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return invoke.WithPrincipal(ctx, p)
}

func (s *Server) audit(ctx context.Context, rec auditRecord) {
	if s.opts.Audit == nil {
		return
	}
	rec.Time = s.now().UTC().Format(time.RFC3339Nano)
	if p, ok := invoke.PrincipalFrom(ctx); ok {
		rec.Principal = p.String()
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return
	}
	line = shellInert(line)
	s.audMu.Lock()
	defer s.audMu.Unlock()
	if _, err := s.opts.Audit.Write(append(line, '\n')); err != nil {
		s.log.Warn("audit log write failed", "err", err)
	}
}

// shellInert escapes '$' and '`' in a JSON line as \u0024 and \u0060: the
// same JSON, but a shell that reads the file (sourced by mistake, or a line
// pasted into a terminal) finds no expansion in its double-quoted strings,
// whatever a principal's name or a spec put there. encoding/json already
// escapes quotes, control characters, U+2028/U+2029 and <, >, &. Both bytes
// occur only inside strings in JSON, so replacing them is safe.
func shellInert(line []byte) []byte {
	line = bytes.ReplaceAll(line, []byte("$"), []byte(`\u0024`))
	return bytes.ReplaceAll(line, []byte("`"), []byte(`\u0060`))
}
