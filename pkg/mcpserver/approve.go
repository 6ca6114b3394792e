package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/ui"
)

// approvalID keys the one question in an input_required round trip.
const approvalID = "approve"

// defaultApprovalTTL is how long a requestState is good when
// Options.ApprovalTTL is zero.
const defaultApprovalTTL = 5 * time.Minute

// approvals signs and checks the requestStates that bind an answer to its
// call, and spends each accepted one once. Safe for concurrent use.
type approvals struct {
	key   []byte
	ttl   time.Duration
	spend func(ctx context.Context, id string, ttl time.Duration) (bool, error)

	mu    sync.Mutex
	spent map[string]time.Time // by state id, until it expires
}

func newApprovals(key []byte, ttl time.Duration, spend func(context.Context, string, time.Duration) (bool, error)) *approvals {
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key) // never fails (crypto/rand)
	}
	if ttl <= 0 {
		ttl = defaultApprovalTTL
	}
	return &approvals{key: key, ttl: ttl, spend: spend, spent: map[string]time.Time{}}
}

// use spends the accepted state: true the first time, false for a replay.
// With a shared spender (Redis), a replay to another replica is refused
// too; if it fails, this replica's own record is kept instead.
func (a *approvals) use(ctx context.Context, state string, now time.Time, log func(error)) bool {
	sum := sha256.Sum256([]byte(state))
	id := hex.EncodeToString(sum[:16])
	if a.spend != nil {
		first, err := a.spend(ctx, id, a.ttl)
		if err == nil {
			return first
		}
		log(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.spent) >= 1024 {
		for k, until := range a.spent {
			if now.After(until) {
				delete(a.spent, k)
			}
		}
	}
	if _, ok := a.spent[id]; ok {
		return false
	}
	a.spent[id] = now.Add(a.ttl)
	return true
}

// approvalState is what a requestState binds: who, which endpoint, which
// arguments (a digest), and until when.
type approvalState struct {
	Principal string `json:"p"`
	Endpoint  string `json:"e"`
	Args      string `json:"a"`
	Expires   int64  `json:"x"`
	// Nonce tells apart two questions about the same call in one second,
	// so that each state is spent on its own.
	Nonce string `json:"n,omitempty"`
}

// sign writes st as "v1.<payload>.<mac>", base64url.
func (a *approvals) sign(st approvalState) string {
	payload, _ := json.Marshal(st)
	p := base64.RawURLEncoding.EncodeToString(payload)
	return "v1." + p + "." + base64.RawURLEncoding.EncodeToString(a.mac(p))
}

func (a *approvals) mac(payload string) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte("specgate approval v1\x00" + payload))
	return m.Sum(nil)
}

// check reports why a requestState does not approve want at now, or "".
func (a *approvals) check(state string, want approvalState, now time.Time) string {
	parts := strings.Split(state, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return "the requestState is not one specgate issued"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, a.mac(parts[1])) {
		return "the requestState is not one specgate issued"
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var got approvalState
	if err != nil || json.Unmarshal(raw, &got) != nil {
		return "the requestState is not one specgate issued"
	}
	switch {
	case got.Principal != want.Principal:
		return "the approval was given to another caller"
	case got.Endpoint != want.Endpoint:
		return "the approval was given for another endpoint (" + clip(got.Endpoint, 200) + ")"
	case got.Args != want.Args:
		return "the arguments changed since the approval was asked"
	case now.Unix() > got.Expires:
		return "the approval expired"
	}
	return ""
}

// approvalDigest is what the user reads of a call, and the hash of its
// arguments the approval binds: the method and the path with its values,
// the query, the header names, the body bounded with its size and hash, and
// the pages to follow. The hash covers every argument that changes what is
// sent (a nextPageOf is in the parameters it resolved to), so an approval
// of one request does not send five.
type approvalDigest struct {
	text string
	args string
	// short is the one line the audit keeps: no values.
	short string
	// page is what the governance page shows of the call: the text's parts.
	page ui.Approval
}

func digestCall(e *spec.Endpoint, in invoke.Args, pages int) approvalDigest {
	if pages <= 1 {
		pages = 0 // one page, the default: the digest of a call that gives none
	}
	canon, _ := json.Marshal(struct {
		P map[string]any    `json:"p,omitempty"`
		B any               `json:"b,omitempty"`
		H map[string]string `json:"h,omitempty"`
		C string            `json:"c,omitempty"`
		N int               `json:"n,omitempty"`
	}{in.Parameters, in.RequestBody, in.Headers, in.ContentType, pages})
	sum := sha256.Sum256(canon)
	d := approvalDigest{args: hex.EncodeToString(sum[:])}

	path := e.Path
	q := url.Values{}
	var headers []string
	for _, p := range e.Params {
		v, ok := in.Parameters[p.Name]
		if !ok || v == nil {
			continue
		}
		s := paramText(v)
		switch p.In {
		case "path":
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(s))
		case "query":
			q.Set(p.Name, s)
		case "header", "cookie":
			headers = append(headers, p.Name)
		}
	}
	for name := range in.Headers {
		headers = append(headers, name)
	}
	sort.Strings(headers)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Method, path)
	if len(q) > 0 {
		b.WriteString("?" + q.Encode())
	}
	fmt.Fprintf(&b, "\nendpoint: %s", e.ID)
	if e.Summary != "" {
		fmt.Fprintf(&b, " (%s)", clip(e.Summary, 200))
	}
	if len(headers) > 0 {
		fmt.Fprintf(&b, "\nheaders: %s", strings.Join(headers, ", "))
	}
	if pages > 1 {
		fmt.Fprintf(&b, "\npages: up to %d (a request each)", pages)
	}
	body := ""
	if in.RequestBody != nil {
		raw, _ := json.Marshal(in.RequestBody)
		bs := sha256.Sum256(raw)
		body = fmt.Sprintf("%d bytes, sha256 %s", len(raw), hex.EncodeToString(bs[:6]))
		fmt.Fprintf(&b, "\nbody (%s): %s", body, clip(string(raw), 300))
	}
	d.page = ui.Approval{Endpoint: e.ID, Summary: clip(e.Summary, 200), Method: e.Method, Path: path, Query: q.Encode(), Headers: headers, Pages: pages}
	if in.RequestBody != nil {
		raw, _ := json.Marshal(in.RequestBody)
		bs := sha256.Sum256(raw)
		d.page.Body, d.page.Size, d.page.SHA256 = clip(string(raw), 300), len(raw), hex.EncodeToString(bs[:6])
	}
	d.text = b.String()
	d.short = e.Method + " " + e.Path + " args " + d.args[:16]
	if pages > 1 {
		d.short += fmt.Sprintf(", %d pages", pages)
	}
	if body != "" {
		d.short += ", body " + body
	}
	return d
}

func paramText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// approvalQuestion is the form the user answers: one boolean.
func approvalQuestion(d approvalDigest) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Mode:    mcp.ElicitationModeForm,
		Message: "An agent asks specgate to send this request, which may change data:\n" + d.text + "\nSend it?",
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				approvalID: map[string]any{"type": "boolean", "title": "Send this request", "description": "true sends it once; false sends nothing"},
			},
			"required": []string{approvalID},
		},
	}
}

// approveNote tells the model, when some calls ask the user first, what a
// refusal means, so it does not retry one the user declined.
func approveNote(on bool) string {
	if !on {
		return ""
	}
	return "\nWrites (and some endpoints) ask the user before they are sent; a refusal is not_approved: nothing was sent, and retrying will not change the answer unless the user asks you to."
}

// backgroundRunKey marks the context of a call made by a run whose
// run_script already answered: no client waits on it to be asked.
type backgroundRunKey struct{}

// needsApproval reports whether a call of e asks the user first.
func (s *Server) needsApproval(e *spec.Endpoint) bool {
	return s.opts.Approve != nil && s.opts.Approve(e)
}

// notApproved is the refusal the model reads; why says what happened.
func notApproved(e *spec.Endpoint, why string) *ErrorObject {
	return &ErrorObject{Code: codes.NotApproved, Retryable: false,
		Message: fmt.Sprintf("%s needs the user's approval and %s; nothing was sent", e.ID, why),
		Hint:    "Only the user can approve it, through a client that supports MCP elicitation. Tell the user what you meant to send, or leave it."}
}

// approveCall asks the user about one call before it is sent, when its
// endpoint needs it. It returns (nil, nil) when the call may go; a result
// to answer the tools/call with (input_required) on MCP 2026-07-28; or the
// refusal. The answer to an input_required comes back on the retried
// request (req's inputResponses), with the requestState checked against the
// call it is for. A nil req is a run_script's call, which cannot be
// answered by a round trip: it asks by elicitation or is refused; runID
// names its run in the audit. pages is how many pages the call may follow.
func (s *Server) approveCall(ctx context.Context, req *mcp.CallToolRequest, e *spec.Endpoint, in invoke.Args, pages int, runID string) (*mcp.CallToolResult, *ErrorObject) {
	if !s.needsApproval(e) {
		return nil, nil
	}
	d := digestCall(e, in, pages)
	want := approvalState{Principal: principalDigest(principalOf(ctx)), Endpoint: e.ID, Args: d.args}
	rec := auditRecord{Endpoint: e.ID, RunID: runID, Digest: d.short}
	refuse := func(why string) (*mcp.CallToolResult, *ErrorObject) {
		rec.Outcome, rec.Approval = codes.NotApproved, why
		s.audit(ctx, rec)
		return nil, notApproved(e, why)
	}
	accepted := func(ans *mcp.ElicitationResult, state string) (*mcp.CallToolResult, *ErrorObject) {
		switch {
		case ans == nil:
			return refuse("the client sent no answer")
		case ans.Action == mcp.ElicitationResponseActionDecline:
			return refuse("the user declined")
		case ans.Action != mcp.ElicitationResponseActionAccept:
			return refuse("the user cancelled")
		}
		content, _ := ans.Content.(map[string]any)
		if ok, _ := content[approvalID].(bool); !ok {
			return refuse("the user declined")
		}
		if state != "" && !s.approvals.use(ctx, state, s.now(), func(err error) {
			s.log.Warn("approval not recorded in the store: a replay to another replica is not refused", "err", err)
		}) {
			return refuse("the approval was already used (each is good for one call)")
		}
		rec.Outcome = "approved"
		s.audit(ctx, rec)
		return nil, nil
	}

	if req != nil && (req.Params.RequestState != "" || len(req.Params.InputResponses) > 0) {
		if why := s.approvals.check(req.Params.RequestState, want, s.now()); why != "" {
			return refuse(why)
		}
		return accepted(server.ElicitationResponse(req.Params.InputResponses, approvalID), req.Params.RequestState)
	}

	// The page asks a person for clients that cannot (auto), or for all
	// (page); without a page served, the client's elicitation is all.
	cannotAsk := refuse
	if s.opts.PageApprovals != nil {
		page := func(string) (*mcp.CallToolResult, *ErrorObject) { return s.askPage(ctx, req, e, d, rec) }
		switch s.opts.ApprovalChannel {
		case ChannelPage:
			return page("")
		case ChannelAuto:
			cannotAsk = page
		}
	}

	if bg, _ := ctx.Value(backgroundRunKey{}).(bool); bg {
		return cannotAsk("a run in the background cannot ask the client (its run_script already answered); make this call with invoke, or approve it on the governance page (approvals.channel)")
	}
	if server.IsModernRequest(ctx) {
		info := server.RequestProtocolInfoFromContext(ctx)
		if info.ClientCapabilities == nil || info.ClientCapabilities.Elicitation == nil {
			return cannotAsk("the client cannot ask the user (no elicitation capability)")
		}
		if req == nil {
			return cannotAsk("a run_script on MCP 2026-07-28 cannot stop to ask the user; make this call with invoke")
		}
		want.Expires = s.now().Add(s.approvals.ttl).Unix()
		nonce := make([]byte, 8)
		rand.Read(nonce)
		want.Nonce = hex.EncodeToString(nonce)
		rec.Outcome = "approval_asked"
		s.audit(ctx, rec)
		return server.NewInputRequestBuilder(s.approvals.sign(want)).Elicit(approvalID, approvalQuestion(d)).ToolResult(), nil
	}

	session := server.ClientSessionFromContext(ctx)
	if sessions, overHTTP := serve.OverHTTP(ctx); overHTTP && (session == nil || session.SessionID() == "") {
		// A legacy request over HTTP without a session has nothing that
		// kept the client's capabilities, even when the client can ask.
		if !sessions {
			return cannotAsk("a legacy MCP request over HTTP cannot ask the user (specgate serves HTTP without sessions unless http.sessions is on; a client on MCP 2026-07-28, or on stdio, can)")
		}
		return cannotAsk("a legacy MCP request over HTTP without a session cannot ask the user (initialize over HTTP and send its Mcp-Session-Id; a client on MCP 2026-07-28 needs none)")
	}
	withInfo, ok := session.(server.SessionWithClientInfo)
	if !ok || withInfo.GetClientCapabilities().Elicitation == nil {
		return cannotAsk("the client cannot ask the user (no elicitation capability on this session)")
	}
	rec.Outcome = "approval_asked"
	s.audit(ctx, rec)
	ans, err := s.mcp.RequestElicitation(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)}, Params: approvalQuestion(d)})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return refuse("the question was cancelled")
		}
		s.log.Warn("approval not asked", "endpoint", e.ID, "err", err)
		return refuse("the client could not ask the user")
	}
	return accepted(ans, "")
}

// principalDigest names a principal in a requestState, which the client
// sees, without its name.
func principalDigest(key string) string {
	sum := sha256.Sum256([]byte("specgate principal\x00" + key))
	return hex.EncodeToString(sum[:12])
}
