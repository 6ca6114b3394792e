package mcpserver

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
)

// console.log() with no text cost nothing of the 4 KiB log bound, and the
// logs were sent outside maxBytes: 100,000 empty lines made a 750 KB
// answer at maxBytes 1024. The logs now count against the answer's budget,
// the lines left out counted in logsDropped.
func TestRunScriptLogsCountAgainstMaxBytes(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	for _, tt := range []struct {
		name        string
		code        string
		wantDropped bool
	}{
		{"100,000 empty lines", `for (let i = 0; i < 100000; i++) console.log(); return "done";`, true},
		{"4 KiB of text", `for (let i = 0; i < 100; i++) console.log("line", i, "of forty bytes or so"); return "done";`, true},
		{"a few lines fit whole", `console.log("one"); console.log("two"); return "done";`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := callText(t, f.client, "run_script", map[string]any{"code": tt.code, "maxBytes": answer.MinResultBytes}).ok(t)
			if len(a.text) > answer.MinResultBytes {
				t.Errorf("the answer is %d bytes, over maxBytes %d", len(a.text), answer.MinResultBytes)
			}
			dropped, _ := a.m["logsDropped"].(float64)
			if a.m["result"] != "done" || (dropped > 0) != tt.wantDropped || tt.wantDropped && a.m["logsCut"] != true {
				t.Errorf("result %v, logsDropped %v, logsCut %v: want the result, dropped lines counted %v", a.m["result"], a.m["logsDropped"], a.m["logsCut"], tt.wantDropped)
			}
		})
	}
}

// A script that fails answered its logs outside maxBytes too: they are
// cut to half of it, the lines left out counted.
func TestRunScriptFailureLogsCountAgainstMaxBytes(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	a := callText(t, f.client, "run_script", map[string]any{"code": `for (let i = 0; i < 100; i++) console.log("line", i, "of forty bytes or so"); throw new Error("no");`,
		"maxBytes": answer.MinResultBytes}).code(t, codes.ScriptError)
	if len(a) == 0 {
		t.Fatal("no error object")
	}
	logs, _ := a["logs"].([]any)
	dropped, _ := a["logsDropped"].(float64)
	text, _ := json.Marshal(logs)
	if len(text) > answer.MinResultBytes/2 || len(logs) == 0 || int(dropped)+len(logs) < 90 {
		t.Errorf("%d lines of logs in %d bytes, %v dropped: want at most %d bytes, the rest counted", len(logs), len(text), dropped, answer.MinResultBytes/2)
	}
}

// A script's return value was not depth-capped: 1,000 nested objects came
// back 1,003 levels deep, where invoke's bodies nest at most
// MaxAnswerDepth. The value is previewed as invoke previews a deep body,
// however small it is.
func TestRunScriptDeepReturnValueIsCutAtMaxAnswerDepth(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	for _, tt := range []struct {
		name      string
		levels    int
		wantWhole bool
	}{
		{"1000 deep", 1000, false},
		{"65 deep", 65, false},
		{"64 deep shows whole", 64, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := callRaw(t, f.client, "run_script", map[string]any{"code": `let v = 1; for (let i = 0; i < ` +
				strconv.Itoa(tt.levels) + `; i++) v = {a: v}; return v;`})
			if res.IsError {
				t.Fatalf("tool error: %.300v", res.Content)
			}
			var m struct {
				Result json.RawMessage `json:"result"`
				Shaped *answer.Shaped  `json:"shaped"`
			}
			if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &m); err != nil {
				t.Fatal(err)
			}
			body, whole := jsonDepth(t, m.Result), resultDepth(t, res)
			if body > answer.MaxAnswerDepth || whole > answer.MaxAnswerDepth+6 {
				t.Errorf("result %d levels deep, whole answer %d: want at most %d and %d", body, whole, answer.MaxAnswerDepth, answer.MaxAnswerDepth+6)
			}
			if (m.Shaped == nil) != tt.wantWhole {
				t.Errorf("shaped %v, want it shown whole: %v", m.Shaped, tt.wantWhole)
			}
		})
	}
}
