package mcpserver

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// modernPost posts one 2026-07-28 tools/call of invoke to /mcp as token's
// holder and returns the status and body.
func modernPost(t *testing.T, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, "tools/call")
	req.Header.Set(mcp.HeaderName, "invoke")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// modernCall is a 2026-07-28 tools/call of invoke with args, requestState
// and inputResponses (raw JSON, as a client may send anything there).
func modernCall(args map[string]any, state, responses string) string {
	a, _ := json.Marshal(args)
	meta := `{"io.modelcontextprotocol/protocolVersion":"` + mcp.ProtocolVersion20260728 + `","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	params := `{"name":"invoke","arguments":` + string(a) + `,"_meta":` + meta
	if state != "" {
		s, _ := json.Marshal(state)
		params += `,"requestState":` + string(s) + `,"inputResponses":` + responses
	}
	return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":` + params + `}}`
}

// TestHTTPApprovalAnswerWithCaseTwinKeysIsRefused: an approval answer
// holding two keys that differ only in case, {"action": "decline",
// "Action": "accept"}, was read one way by the duplicate-key guard (exact
// duplicates only) and the other by mcp-go's struct decode (keys matched
// without case), as an accept, and the write was sent, on the 2025
// elicitation path and in a 2026-07-28 call's inputResponses alike. Now
// both are refused with HTTP 400 and nothing is sent.
func TestHTTPApprovalAnswerWithCaseTwinKeysIsRefused(t *testing.T) {
	twins := []string{
		`{"action":"decline","Action":"accept","content":{"approve":true}}`,
		`{"action":"decline","ACTION":"accept","content":{"approve":true}}`,
		`{"action":"accept","content":{"approve":false,"Approve":true}}`,
	}
	t.Run("2025 elicitation", func(t *testing.T) {
		f := newApprovalFixture(t)
		ts := sessionsServer(t, f, true, time.Now)
		res := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", legacyInit)
		id := res.Header.Get(server.HeaderKeySessionID)
		if res.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d, session %q", res.StatusCode, id)
		}
		rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "invoke", "arguments": addPetArgs}})
		stream := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, string(call))
		lines := bufio.NewScanner(stream.Body)
		var ask map[string]any
		for ask == nil && lines.Scan() {
			if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				json.Unmarshal([]byte(d), &ask)
			}
		}
		if ask["method"] != string(mcp.MethodElicitationCreate) {
			t.Fatalf("first event = %v, want the approval question", ask)
		}
		qid, _ := json.Marshal(ask["id"])
		for _, answer := range twins {
			r := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, `{"jsonrpc":"2.0","id":`+string(qid)+`,"result":`+answer+`}`)
			r.Body.Close()
			if r.StatusCode != http.StatusBadRequest || f.upstream.count() != 0 {
				t.Errorf("answer %s: %d, sent %d; want 400 and nothing sent", answer, r.StatusCode, f.upstream.count())
			}
		}
	})
	t.Run("2026-07-28 inputResponses", func(t *testing.T) {
		f := newApprovalFixture(t)
		ts := sessionsServer(t, f, false, time.Now)
		code, body := modernPost(t, ts.URL, "tok-ada", modernCall(addPetArgs, "", ""))
		var first struct {
			Result map[string]any `json:"result"`
		}
		json.Unmarshal(body, &first)
		state, _ := first.Result["requestState"].(string)
		if code != http.StatusOK || state == "" {
			t.Fatalf("first call: %d %s, want input_required with a requestState", code, body)
		}
		for _, answer := range twins {
			code, body := modernPost(t, ts.URL, "tok-ada", modernCall(addPetArgs, state, `{"approve":`+answer+`}`))
			if code != http.StatusBadRequest || f.upstream.count() != 0 {
				t.Errorf("answer %s: %d %s, sent %d; want 400 and nothing sent", answer, code, body, f.upstream.count())
			}
		}
	})
}
