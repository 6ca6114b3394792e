package mcpserver

import (
	"errors"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/ui"
)

// newPageApprovalFixture is newApprovalFixture with the governance page
// asking on channel, questions lasting ttl.
func newPageApprovalFixture(t *testing.T, channel string, ttl time.Duration) (*approvalFixture, *ui.Approvals) {
	t.Helper()
	rec := &recorder{}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	cat, ix, eps := servedCatalog(t, 0, petstoreAt(t, up.URL))
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	room := ui.NewApprovals(0, nil)
	f := &approvalFixture{upstream: rec, audit: &syncBuffer{}}
	f.srv = New(Options{SpecNames: []string{"petstore"}, Audit: f.audit,
		Approve:         func(e *spec.Endpoint) bool { return !e.Safe() },
		ApprovalTTL:     ttl,
		ApprovalChannel: channel,
		PageApprovals:   room,
		Caller:          invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}},
	})
	f.srv.Publish(cat, ix, nil)
	return f, room
}

// waitPending returns the approvals once n wait on the page.
func waitPending(t *testing.T, room *ui.Approvals, n int) []ui.Approval {
	t.Helper()
	for t.Context().Err() == nil {
		if got, total := room.Pending(); total == n {
			return got
		}
		runtime.Gosched()
	}
	t.Fatal("no approval appeared")
	return nil
}

func TestPageApproval(t *testing.T) {
	tests := []struct {
		name     string
		action   string // "approve", "decline", or "" to let the TTL pass
		sent     int
		why      string
		outcomes []string
	}{
		{"approve", "approve", 1, "", []string{"approval_asked", "approved", "ok"}},
		{"decline", "decline", 0, "the user declined on the governance page", []string{"approval_asked", "not_approved"}},
		{"nobody answers", "", 0, "no one approved it on the governance page within", []string{"approval_asked", "not_approved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ttl := time.Minute
			if tt.action == "" {
				ttl = 50 * time.Millisecond
			}
			f, room := newPageApprovalFixture(t, ChannelAuto, ttl)
			c := connectEra(t, f.srv, true, nil) // a client that cannot ask
			type answer struct {
				res   map[string]any
				isErr bool
			}
			done := make(chan answer, 1)
			go func() {
				res, isErr, err := toolCall(t.Context(), c, "invoke", addPetArgs, nil)
				if err != nil {
					t.Error(err)
				}
				done <- answer{res, isErr}
			}()
			var a answer
			if tt.action != "" {
				got := waitPending(t, room, 1)
				q := got[0]
				if q.Method != "POST" || q.Path != "/pet" || !strings.Contains(q.Body, `"name":"doggie"`) || q.Size == 0 || len(q.SHA256) != 12 || q.Endpoint != "petstore.addPet" {
					t.Errorf("the page shows %+v", q)
				}
				if f.upstream.count() != 0 {
					t.Fatal("sent before the person answered")
				}
				if err := room.Decide(q.ID, ui.Decision{Approved: tt.action == "approve", By: ui.Person{Who: "ada", From: "127.0.0.1"}}); err != nil {
					t.Fatal(err)
				}
				a = <-done
				if err := room.Decide(q.ID, ui.Decision{Approved: true, By: ui.Person{Who: "bob"}}); !errors.Is(err, ui.ErrNotFound) {
					t.Errorf("deciding again: %v, want ErrNotFound", err)
				}
			} else {
				a = <-done
			}
			if got := f.upstream.count(); got != tt.sent {
				t.Errorf("upstream received %d, want %d: %v", got, tt.sent, a.res)
			}
			if tt.why != "" {
				if e := errorOf(t, a.res); e["code"] != codes.NotApproved || !strings.Contains(e["message"].(string), tt.why) {
					t.Errorf("error %v, want not_approved saying %q", e, tt.why)
				}
			}
			lines := auditLines(t, f.audit)
			if got := outcomes(lines, "petstore.addPet"); strings.Join(got, ",") != strings.Join(tt.outcomes, ",") {
				t.Errorf("audit outcomes %v, want %v", got, tt.outcomes)
			}
			if tt.action != "" && (lines[1]["by"] != "ada" || lines[1]["from"] != "127.0.0.1") {
				t.Errorf("audit line %v: want who decided, and from where", lines[1])
			}
			if _, n := room.Pending(); n != 0 {
				t.Errorf("%d approvals still wait", n)
			}
		})
	}
}

// channel: elicit never waits for the page; auto asks a client that can
// ask, not the page.
func TestPageApprovalChannels(t *testing.T) {
	t.Run("elicit", func(t *testing.T) {
		f, room := newPageApprovalFixture(t, ChannelElicit, time.Minute)
		c := connectEra(t, f.srv, true, nil)
		res, _ := callTool(t, c, "invoke", addPetArgs)
		if e := errorOf(t, res); e["code"] != codes.NotApproved || !strings.Contains(e["message"].(string), "cannot ask") {
			t.Errorf("error %v", e)
		}
		if _, n := room.Pending(); n != 0 || f.upstream.count() != 0 {
			t.Errorf("%d on the page, %d sent", n, f.upstream.count())
		}
	})
	t.Run("auto with a client that can ask", func(t *testing.T) {
		f, room := newPageApprovalFixture(t, ChannelAuto, time.Minute)
		user := &answerer{action: mcp.ElicitationResponseActionAccept, value: true}
		c := connectEra(t, f.srv, true, user)
		if res, isErr := callTool(t, c, "invoke", addPetArgs); isErr {
			t.Fatalf("approved write failed: %v", res)
		}
		if _, n := room.Pending(); n != 0 || len(user.questions()) != 1 || f.upstream.count() != 1 {
			t.Errorf("%d on the page, %d asked by the client, %d sent", n, len(user.questions()), f.upstream.count())
		}
	})
}
