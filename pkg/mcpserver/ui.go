package mcpserver

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/ui"
)

// UISource is what the governance page shows of this server: each
// upstream as rate_limit_status renders it, so the numbers agree, and
// every run in flight in this process, whoever started it.
func (s *Server) UISource() ui.Source { return uiSource{s} }

type uiSource struct{ s *Server }

var _ ui.Source = uiSource{}

func (u uiSource) State(_ context.Context, now time.Time) ui.State {
	s := u.s
	var out ui.State
	if lim := s.call.Limiter; lim != nil {
		ls := lim.StatusAt(now, nil)
		s.stats.mu.Lock()
		for _, up := range ls.Upstreams {
			out.Upstreams = append(out.Upstreams, uiUpstream(newUpstreamStatus(up, now, s.stats.ups[up.Key])))
		}
		s.stats.mu.Unlock()
	}
	s.stats.mu.Lock()
	for key, ps := range s.stats.who {
		p := ui.Principal{Name: principalName(key), Calls: ps.calls, QueueTurns: ps.queueTurns, QueueWaitMs: ps.queueWait.Milliseconds()}
		for scope, n := range ps.refused {
			if p.Refused == nil {
				p.Refused = map[string]int64{}
			}
			p.Refused[scope] = n
		}
		out.Principals = append(out.Principals, p)
	}
	s.stats.mu.Unlock()
	sort.Slice(out.Principals, func(i, j int) bool { return out.Principals[i].Name < out.Principals[j].Name })
	for _, rec := range s.runs.All() {
		if rec.Status != runs.Running {
			continue
		}
		p := progressOf(&rec, now)
		out.Runs = append(out.Runs, ui.Run{ID: rec.ID, Principal: principalName(rec.Principal), Status: string(rec.Status), Done: p.Done, Total: p.Total,
			Note: p.Note, ETASeconds: p.ETASeconds, Calls: p.Calls.Total, ByStatus: p.Calls.ByStatus,
			StartedAt: rec.Started.UTC().Format(time.RFC3339), WaitingForApproval: p.WaitingForApproval})
	}
	return out
}

// principalName names the principal of a key as the audit log does
// (subject, or subject@org); a key it cannot read is shown as it is.
func principalName(key string) string {
	org, subject, ok := strings.Cut(key, "/")
	if !ok {
		return key
	}
	o, err1 := url.PathUnescape(org)
	sub, err2 := url.PathUnescape(subject)
	if err1 != nil || err2 != nil {
		return key
	}
	return Principal{Subject: sub, Org: o}.String()
}

// uiUpstream takes the page's figures from rate_limit_status's rendering.
func uiUpstream(us UpstreamStatus) ui.Upstream {
	out := ui.Upstream{Key: us.Key, Used: us.RequestsUsed, Limit: us.Limits.RequestsPerWindow, Window: us.Limits.Window,
		InFlight: us.InFlight, QueueDepth: us.QueueDepth, Admitted: us.Admitted, Upstream429s: us.Upstream429s,
		RefusedByCode: us.RefusedByCode, NextAllowedSec: us.NextAllowedSeconds, Fallback: us.Fallback}
	if d, err := time.ParseDuration(us.Limits.Window); err == nil {
		out.WindowSeconds = d.Seconds()
	}
	for _, l := range us.Learned {
		if l.BlockSource != nil {
			out.Learned = append(out.Learned, ui.Learned{Resource: l.Resource, Kind: "block", ResetInSeconds: l.BlockedForSeconds, Source: *l.BlockSource})
		}
		for kind, q := range map[string]*LearnedQuota{"requests": l.Requests, "tokens": l.Tokens} {
			if q != nil {
				out.Learned = append(out.Learned, ui.Learned{Resource: l.Resource, Kind: kind, Limit: q.Limit, Remaining: q.Remaining,
					ResetInSeconds: q.ResetInSeconds, Source: q.Source})
			}
		}
	}
	if sh := us.Shadow; sh != nil {
		out.Shadow = &ui.Shadow{Calls: sh.Calls, WouldRefuse: sh.WouldRefuse, ByKind: sh.ByKind, RequestsUsed: sh.RequestsUsed,
			Limit: sh.Limits.RequestsPerWindow}
	}
	return out
}

// CancelRun cancels the run id, and writes an audit line naming the run's
// principal, the person who cancelled it and their address.
func (u uiSource) CancelRun(ctx context.Context, id string, by ui.Person) error {
	for _, rec := range u.s.runs.All() {
		if rec.ID == id {
			if _, err := u.s.runs.Cancel(ctx, rec.Principal, id); err != nil {
				return err
			}
			u.s.audit(ctx, auditRecord{Endpoint: "run_script", RunID: id, Principal: principalName(rec.Principal),
				Outcome: "cancelled", Approval: "on the governance page", By: by.Who, From: by.From})
			return nil
		}
	}
	return ui.ErrNotFound
}
