package mcpserver

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/rpcmsg"
)

// localPrincipal owns stored answers when the transport names no caller
// (stdio, HTTP without auth).
const localPrincipal = invoke.LocalPrincipal

// principalOf returns the key of who is calling: the HTTP transport's
// principal (never "local": a principal's key holds a "/"), else the one
// local user.
func principalOf(ctx context.Context) string { return invoke.PrincipalKey(ctx) }

func (s *Server) resultBytes() int {
	if s.opts.ResultBytes > 0 {
		return s.opts.ResultBytes
	}
	return answer.DefaultResultBytes
}

// jqLimits bound a jq filter run for ctx's caller, who holds at most half
// of the slots.
func (s *Server) jqLimits(ctx context.Context) answer.JQLimits {
	return answer.JQLimits{Timeout: s.opts.JQTimeout, Slots: s.opts.JQSlots, Owner: principalOf(ctx)}
}

// answerResult renders a stored answer into out within the call's budget:
// the budget bounds the JSON text of the whole result, so the body gets
// what the rest of the answer leaves.
func (s *Server) answerResult(ctx context.Context, ans *answer.Answer, responseID string, a *invokeArgs, out *InvokeResult) *mcp.CallToolResult {
	out.ResponseID = responseID
	out.Headers = boundHeaders(out.Headers, headerBytes(a.maxBytes))
	opt := answer.RenderOptions{ResponseID: responseID, JQ: a.jq, JQLimits: s.jqLimits(ctx)}
	view, err := answer.NewView(ctx, ans, opt)
	if err != nil {
		// Not Strict: jq failures come back in the reply; anything else
		// is an answer that could not be rendered.
		out.Note = joinNote(out.Note, clip(err.Error(), 300))
		text, _ := json.Marshal(out)
		return mcp.NewToolResultStructured(json.RawMessage(text), string(text))
	}
	note := out.Note
	text, r := view.Fit(a.maxBytes, func(r *answer.Reply) []byte {
		out.Body, out.Shaped, out.Hint, out.JQError = r.Body, r.Shaped, r.Hint, r.JQError
		out.Note = joinNote(note, r.Note)
		b, _ := json.Marshal(out)
		return b
	})
	res := mcp.NewToolResultStructured(json.RawMessage(text), string(text))
	if r.Image != nil {
		res.Content = append(res.Content, mcp.NewImageContent(r.Image.Data, r.Image.MIMEType))
	}
	return res
}

// headerBytes is how much of an answer of total bytes the upstream's
// headers may take.
func headerBytes(total int) int { return min(maxHeaderBytes, total/4) }

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "; " + b
}

// ReadResult is the read_response tool's answer.
type ReadResult struct {
	ResponseID string            `json:"responseId"`
	EndpointID string            `json:"endpointId"`
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       any               `json:"body,omitempty"`
	Shaped     *answer.Shaped    `json:"shaped,omitempty"`
	NextOffset *int              `json:"nextOffset,omitempty"`
	NextPage   *NextPage         `json:"nextPage,omitempty"`
	Hint       string            `json:"hint,omitempty"`
	Note       string            `json:"note,omitempty"`
	Truncated  bool              `json:"truncated,omitempty"`
}

func (s *Server) handleReadResponse(ctx context.Context, req mcp.CallToolRequest, a *ReadResponseArgs) (*mcp.CallToolResult, error) {
	if bad := requireString("responseId", a.ResponseID); bad != nil {
		return bad, nil
	}
	id := a.ResponseID
	var jq *answer.JQ
	var maxBytes int
	if r := s.parseShapeArgs(a.JQ, a.MaxBytes, &jq, &maxBytes); r != nil {
		return r, nil
	}
	opt := answer.RenderOptions{ResponseID: id, JQ: jq, JQLimits: s.jqLimits(ctx), Strict: true}
	if a.Offset != nil {
		n, ok := intArg(*a.Offset, 0, 1<<40)
		if !ok {
			return argError("offset must be a whole number, 0 or more"), nil
		}
		opt.Window, opt.Offset = true, n
	}
	if a.Limit != nil {
		n, ok := intArg(*a.Limit, 1, 1<<40)
		if !ok {
			return argError("limit must be a whole number, 1 or more"), nil
		}
		opt.Window, opt.Limit = true, n
	}
	if opt.Window && jq != nil {
		return argError("give either jq or offset/limit, not both"), nil
	}
	if s.answers == nil {
		return errorResult(&ErrorObject{Code: codes.NotFound, Message: "answers are not stored by this specgate"}), nil
	}
	ans, err := s.answers.Get(ctx, principalOf(ctx), id)
	if err != nil {
		return errorResult(s.mapError(err)), nil
	}
	out := &ReadResult{ResponseID: id, EndpointID: ans.Endpoint, StatusCode: ans.StatusCode,
		Headers: boundHeaders(ans.Headers, headerBytes(maxBytes)), Truncated: ans.Truncated}
	var note string
	out.NextPage, note = nextPageOf(ans, id, maxBytes)
	view, err := answer.NewView(ctx, ans, opt)
	if err != nil {
		return errorResult(s.mapError(err)), nil
	}
	text, _ := view.Fit(maxBytes, func(r *answer.Reply) []byte {
		out.Body, out.Shaped, out.NextOffset, out.Hint, out.Note = r.Body, r.Shaped, r.NextOffset, r.Hint, joinNote(note, r.Note)
		b, _ := json.Marshal(out)
		return b
	})
	return mcp.NewToolResultStructured(json.RawMessage(text), string(text)), nil
}

// nextPageOf is what an answer of budget bytes says of ans's next page
// (answer.NextPageFor), and a note when there is one it cannot name.
func nextPageOf(ans *answer.Answer, responseID string, budget int) (*NextPage, string) {
	next := answer.NextPageFor(ans.NextPage, responseID, budget)
	if next == nil && ans.NextPage != nil {
		return nil, "the API has a next page, but its parameters are too large to show and the answer was not stored"
	}
	return next, ""
}

// Bounds on the response headers an answer repeats.
const (
	maxHeaderValue = 512
	maxHeaders     = 24
	maxHeaderBytes = 4096
)

// boundHeaders caps each header value and the set to at most limit bytes,
// so an upstream cannot fill the model's context through its headers.
func boundHeaders(h map[string]string, limit int) map[string]string {
	if len(h) == 0 {
		return nil
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	// The ones a model acts on first.
	rank := func(k string) int {
		switch {
		case k == "content-type", k == "location", k == "retry-after", k == "content-length":
			return 0
		case strings.HasPrefix(k, "x-ratelimit-") && len(k) < 32, strings.HasPrefix(k, "ratelimit"):
			return 1
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := rank(names[i]), rank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	out := make(map[string]string, min(len(names), maxHeaders))
	total := 0
	for i, k := range names {
		if i >= maxHeaders || len(k) > 64 {
			break
		}
		v := clip(h[k], min(maxHeaderValue, limit/2))
		if total+len(k)+len(v) > limit {
			break
		}
		total += len(k) + len(v)
		out[k] = v
	}
	if dropped := len(h) - len(out); dropped > 0 {
		out["x-specgate-omitted-headers"] = strconv.Itoa(dropped)
	}
	return out
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string { return rpcmsg.Clip(s, n) }
