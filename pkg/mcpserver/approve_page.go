package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/ui"
)

// Approval channels (approvals.channel).
const (
	ChannelElicit = "elicit"
	ChannelPage   = "page"
	ChannelAuto   = "auto"
)

// pageProgressEvery is how often a call waiting for the page tells its
// client it still waits, so neither gives up on a quiet call.
const pageProgressEvery = 5 * time.Second

// askPage puts the call on the governance page and waits until a person
// approves or declines it there, or the approval TTL passes. The one
// answer sends the call at most once: the waiting room hands each
// decision to its one waiter. req is nil for a run's call: the run's
// progress names the approval while it waits (markWaiting).
func (s *Server) askPage(ctx context.Context, req *mcp.CallToolRequest, e *spec.Endpoint, d approvalDigest, rec auditRecord) (*mcp.CallToolResult, *ErrorObject) {
	refuse := func(why string) (*mcp.CallToolResult, *ErrorObject) {
		rec.Outcome, rec.Approval = codes.NotApproved, why
		s.audit(ctx, rec)
		return nil, notApprovedOnPage(e, why)
	}
	a := d.page
	a.Principal, a.RunID = principalOf(ctx), rec.RunID
	if p, ok := principalFrom(ctx); ok {
		a.Principal = p
	}
	rec.Outcome, rec.Approval = "approval_asked", "on the governance page"
	s.audit(ctx, rec)
	rec.Approval = ""
	if req != nil {
		if send := s.progressSender(ctx, *req); send != nil {
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				start := time.Now()
				t := time.NewTicker(pageProgressEvery)
				defer t.Stop()
				for {
					send(map[string]any{"progress": time.Since(start).Seconds(), "total": s.approvals.ttl.Seconds(),
						"message": "waiting for a person to approve this write on specgate's governance page"})
					select {
					case <-t.C:
					case <-stop:
						return
					}
				}
			}()
		}
	}
	run, inRun := runs.FromContext(ctx)
	inRun = inRun && rec.RunID != "" && run.ID() == rec.RunID
	var asked func(string)
	if inRun {
		asked = func(string) { s.markWaiting(run) }
	}
	dec, err := s.opts.PageApprovals.AskNotify(ctx, a, s.approvals.ttl, asked)
	if inRun {
		s.markWaiting(run)
	}
	switch {
	case errors.Is(err, ui.ErrTooManyPending):
		return refuse("too many writes wait for approval on the governance page")
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return refuse("no one approved it on the governance page within " + s.approvals.ttl.String())
	case err != nil:
		return refuse("the question was cancelled")
	}
	rec.By, rec.From = dec.By.Who, dec.By.From
	if !dec.Approved {
		return refuse("the user declined on the governance page")
	}
	rec.Outcome = "approved"
	s.audit(ctx, rec)
	return nil, nil
}

// markWaiting writes into run's progress the approvals it waits for on the
// page, so script_result, tasks/get, rate_limit_status and the page say
// so while they wait and stop saying so once decided. The run's own
// progress updates keep the list (runTracker.progress).
func (s *Server) markWaiting(run *runs.Run) {
	run.EditProgress(func(old json.RawMessage) json.RawMessage {
		ids := s.opts.PageApprovals.WaitingFor(run.ID())
		var p RunProgress
		if len(old) > 0 && json.Unmarshal(old, &p) != nil {
			return old
		}
		p.WaitingForApproval = ids
		b, err := json.Marshal(p)
		if err != nil {
			return old
		}
		return b
	})
}

// principalFrom names the caller as the audit log does.
func principalFrom(ctx context.Context) (string, bool) {
	p, ok := invoke.PrincipalFrom(ctx)
	if !ok {
		return "", false
	}
	return p.String(), true
}

func notApprovedOnPage(e *spec.Endpoint, why string) *ErrorObject {
	o := notApproved(e, why)
	o.Hint = "Only a person can approve it, on specgate's governance page (/ui) or through a client that supports MCP elicitation. Tell the user what you meant to send, or leave it."
	return o
}
