package mcpserver

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/serve"
)

// servedPosts wraps h and says on ended when each POST it served ended.
type servedPosts struct {
	h     http.Handler
	ended chan struct{}
}

func (s servedPosts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.h.ServeHTTP(w, r)
	if r.Method == http.MethodPost {
		s.ended <- struct{}{}
	}
}

// startSpinningRun posts ada's run_script (id 7) of a script that reports
// progress and then spins, answering only at its end, and returns the
// POST's stream, read past that progress, and a func that drops the
// connection.
func startSpinningRun(t *testing.T, url string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, drop := context.WithCancel(t.Context())
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_script","_meta":{"progressToken":"p"},` +
		`"arguments":{"code":"api.progress(0, 1, \"spinning\"); while (true) {}"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok-ada")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() && !strings.Contains(lines.Text(), "spinning") {
	}
	return res, drop
}

// TestRunScriptGoesOnWhenItsConnectionDrops: over HTTP a run_script whose
// client connection went away while it waited for the run was cancelled, as
// if the client had asked to stop, and every call it had made was lost (a
// proxy's idle cut or a client's network blip did it). A connection that
// drops asks nothing: the run goes on, for script_result to collect; the
// caller's own notifications/cancelled still stops it.
func TestRunScriptGoesOnWhenItsConnectionDrops(t *testing.T) {
	for _, explicit := range []bool{false, true} {
		t.Run(map[bool]string{false: "dropped", true: "cancelled"}[explicit], func(t *testing.T) {
			f := newApprovalFixture(t)
			f.srv.opts.Scripts.AnswerWithin = -1 // answer at the end: only the connection can end the wait
			f.srv.opts.Scripts.Timeout = time.Minute
			posts := servedPosts{h: serve.NewHandler(f.srv, serve.Options{Tokens: map[string]Principal{"tok-ada": {Subject: "ada"}}}),
				ended: make(chan struct{}, 4)}
			ts := httptest.NewServer(posts)
			t.Cleanup(ts.Close)
			res, drop := startSpinningRun(t, ts.URL)
			ada := Principal{Subject: "ada"}.Key()
			running := f.srv.runs.Running(ada)
			if len(running) != 1 {
				t.Fatalf("ada's runs: %d, want 1", len(running))
			}
			id := running[0].ID
			if explicit {
				rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", cancel7).Body.Close()
				<-posts.ended // the cancel's own POST
			} else {
				drop()
				res.Body.Close()
			}
			select {
			case <-posts.ended:
			case <-time.After(30 * time.Second):
				t.Fatal("run_script's POST did not end")
			}
			rec, err := f.srv.runs.Get(t.Context(), ada, id)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]runs.Status{false: runs.Running, true: runs.Cancelled}[explicit]; rec.Status != want {
				t.Errorf("run after the call's POST ended: %s, want %s", rec.Status, want)
			}
			if !explicit {
				rec, err = f.srv.runs.Cancel(t.Context(), ada, id)
				if err != nil || rec.Status != runs.Cancelled {
					t.Errorf("cancel of the run going on: %v, %v", rec, err)
				}
			}
			io.Copy(io.Discard, res.Body)
		})
	}
}
