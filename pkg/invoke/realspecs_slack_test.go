package invoke

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/specgate/specgate/pkg/paging"
)

// Slack's Web API spec did not load at all (a tuple-style items array:
// "a JSON array where the format expects schema"). Its methods now go out
// as Slack takes them: a write as a form body (Slack answers JSON with 415),
// a read with its query, paged by response_metadata.next_cursor, and an
// answer whose fields were declared with tuple items (channel_actions_ts:
// [integer, null]) comes back whole.
func TestSlackOnTheWire(t *testing.T) {
	skipLargeSpecs(t)
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/chat.postMessage":
			fmt.Fprint(w, `{"ok":true,"channel":"C0123456789","ts":"1700000000.000100"}`)
		case "/api/conversations.history":
			next := ""
			if r.URL.Query().Get("cursor") == "" {
				next = "bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz"
			}
			fmt.Fprintf(w, `{"ok":true,"messages":[{"type":"message","text":"hi","ts":"1700000000.000100"}],"has_more":%t,"pin_count":0,"channel_actions_count":0,"channel_actions_ts":[1700000000,null],"response_metadata":{"next_cursor":%q}}`, next != "", next)
		default:
			http.NotFound(w, r)
		}
	})
	s := sharedSpec(t, "slack-web.json", up.URL+"/api")
	client := New(Options{})
	t.Cleanup(client.Close)

	call, err := client.Prepare(t.Context(), endpoint(t, s, "chat_postMessage"), Args{Parameters: map[string]any{"token": "xoxb-1"},
		RequestBody: map[string]any{"channel": "C0123456789", "text": "deploy done", "unfurl_links": false}})
	if err != nil {
		t.Fatal(err)
	}
	if !call.Validated() {
		t.Error("not validated against the schema")
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := up.last(t)
	if r.Method != "POST" || r.RawPath != "/api/chat.postMessage" {
		t.Errorf("%s %s", r.Method, r.RawPath)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type %q, want a form (Slack answers JSON with 415)", ct)
	}
	if tok := r.Header.Get("token"); tok != "xoxb-1" {
		t.Errorf("token header %q", tok)
	}
	if want := "channel=C0123456789&text=deploy+done&unfurl_links=false"; string(r.Body) != want {
		t.Errorf("body\n got %s\nwant %s", r.Body, want)
	}

	e := endpoint(t, s, "conversations_history")
	params := map[string]any{"channel": "C0123456789", "limit": 1, "inclusive": true}
	var queries []string
	for calls := 0; params != nil; calls++ {
		if calls == 3 {
			t.Fatal("paging does not end")
		}
		call, err := client.Prepare(t.Context(), e, Args{Parameters: params})
		if err != nil {
			t.Fatalf("page %d with %v: %v", calls+1, params, err)
		}
		res, err := call.Do(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, up.last(t).RawQuery)
		body := decodeBody(t, string(res.RawBody))
		if got, _ := json.Marshal(body.(map[string]any)["channel_actions_ts"]); string(got) != "[1700000000,null]" {
			t.Errorf("channel_actions_ts came back as %s", got)
		}
		params = paging.Next(paging.Request{Endpoint: e, URL: call.URL(), Params: params}, res.RawHeaders, body)
	}
	want := []string{"channel=C0123456789&inclusive=true&limit=1", "channel=C0123456789&cursor=bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz&inclusive=true&limit=1"}
	if len(queries) != len(want) {
		t.Fatalf("queries %q, want %q", queries, want)
	}
	for i := range want {
		if !sameQuery(queries[i], want[i]) {
			t.Errorf("page %d query %s, want %s", i+1, queries[i], want[i])
		}
	}
}
